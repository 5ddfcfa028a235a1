"""Estimated wall time of ``cdk deploy --all --concurrency N`` from synthesized templates.

Within a stack CloudFormation creates a resource once everything it references (``Ref``,
``Fn::GetAtt``, ``Fn::Sub``) and everything in its ``DependsOn`` exists, so a stack takes as
long as its longest chain of creation times. The CDK CLI starts a stack once every stack it
depends on is deployed, at most N at a time. The creation times below are planning figures
(first creation, typical case); the slow ones carry the estimate:

- EKS control plane about 10 minutes, FSx for Lustre 10-15 (15 taken), an AMP managed scraper
  up to 15, a SageMaker HyperPod cluster 20 or more (25 taken), a GPU managed node group about 8
  (instances boot, the NVIDIA/Neuron AMI's nodeadm joins them), a CPU node group about 3;
- Helm releases through the kubectl Lambda 1-2, managed add-ons 1, Lambda functions in a VPC 1
  (network interfaces), NAT gateways and interface endpoints 2, Grafana workspaces 5;
- everything else (IAM, security groups, subnets, S3, KMS, manifests, outputs) a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Creation minutes by CloudFormation type (see the module docstring).
RESOURCE_MINUTES: dict[str, float] = {
    "AWS::EKS::Cluster": 10.0,
    "AWS::FSx::FileSystem": 15.0,
    "AWS::FSx::DataRepositoryAssociation": 3.0,
    "AWS::APS::Scraper": 15.0,
    "AWS::SageMaker::Cluster": 25.0,
    "AWS::Grafana::Workspace": 5.0,
    "AWS::EKS::Addon": 1.0,
    "Custom::AWSCDK-EKS-HelmChart": 2.0,
    "Custom::AWSCDK-EKS-KubernetesResource": 0.5,
    "AWS::EC2::NatGateway": 2.0,
    "AWS::EC2::VPCEndpoint": 2.0,
    "AWS::APS::Workspace": 1.0,
    "AWS::Lambda::Function": 1.0,
}
GPU_NODE_GROUP_MINUTES = 8.0
CPU_NODE_GROUP_MINUTES = 3.0
DEFAULT_MINUTES = 0.1
_ACCELERATED_AMIS = ("NVIDIA", "NEURON")


def resource_minutes(resource: Mapping[str, Any]) -> float:
    kind = str(resource.get("Type", ""))
    if kind == "AWS::EKS::Nodegroup":
        ami = str(resource.get("Properties", {}).get("AmiType", ""))
        accelerated = any(family in ami for family in _ACCELERATED_AMIS)
        return GPU_NODE_GROUP_MINUTES if accelerated else CPU_NODE_GROUP_MINUTES
    return RESOURCE_MINUTES.get(kind, DEFAULT_MINUTES)


def _sub_names(body: Any) -> Iterator[str]:
    """The names of ``${Name}`` and ``${Name.Attribute}`` in an ``Fn::Sub`` string (its
    variables map is walked as any other node); pseudo parameters and ``${!Literal}`` are not
    logical ids."""
    text = body[0] if isinstance(body, list) else body
    for part in str(text).split("${")[1:]:
        name = part.split("}")[0].split(".")[0]
        if not name.startswith(("AWS::", "!")):
            yield name


def referenced_ids(node: Any) -> Iterator[str]:
    """Logical ids a template node references through ``Ref``, ``Fn::GetAtt`` and ``${...}``
    in ``Fn::Sub``, walked through every nested dict and list; a ``Ref`` to a pseudo parameter
    (``AWS::Region``) is none."""
    if isinstance(node, dict):
        ref = node.get("Ref")
        if isinstance(ref, str) and not ref.startswith("AWS::"):
            yield ref
        if "Fn::GetAtt" in node:
            target = node["Fn::GetAtt"]
            yield target[0] if isinstance(target, list) else str(target).split(".")[0]
        if "Fn::Sub" in node:
            yield from _sub_names(node["Fn::Sub"])
        for value in node.values():
            yield from referenced_ids(value)
    elif isinstance(node, list):
        for value in node:
            yield from referenced_ids(value)


def stack_minutes(template: Mapping[str, Any]) -> tuple[float, list[str]]:
    """Longest chain of creation times in ``template`` and the logical ids along it."""
    resources: Mapping[str, Any] = template.get("Resources", {})
    needs: dict[str, set[str]] = {}
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn", [])
        depends = [depends] if isinstance(depends, str) else list(depends)
        refs = set(referenced_ids(resource.get("Properties", {})))
        needs[logical_id] = {r for r in (*refs, *depends) if r in resources and r != logical_id}
    finish: dict[str, tuple[float, list[str]]] = {}

    def done(logical_id: str, seen: frozenset[str]) -> tuple[float, list[str]]:
        if logical_id in finish:
            return finish[logical_id]
        if logical_id in seen:
            raise ValueError(f"dependency cycle through {logical_id}")
        start, path = 0.0, []
        for upstream in needs[logical_id]:
            end, chain = done(upstream, seen | {logical_id})
            if end > start:
                start, path = end, chain
        finish[logical_id] = (start + resource_minutes(resources[logical_id]), [*path, logical_id])
        return finish[logical_id]

    best: tuple[float, list[str]] = (0.0, [])
    for logical_id in resources:
        result = done(logical_id, frozenset())
        if result[0] > best[0]:
            best = result
    return best


@dataclass(frozen=True)
class StackTiming:
    name: str
    start: float
    end: float
    path: tuple[str, ...]


def deployment_minutes(
    stacks: Mapping[str, tuple[Mapping[str, Any], Sequence[str]]], *, concurrency: int = 4
) -> dict[str, StackTiming]:
    """Start and end of every stack (``name -> (template, stacks it depends on)``) when at most
    ``concurrency`` deploy at once, each started as soon as its dependencies are done (ready
    stacks start in the order given)."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    own = {name: stack_minutes(template) for name, (template, _) in stacks.items()}
    timings: dict[str, StackTiming] = {}
    running: list[StackTiming] = []
    clock = 0.0
    while len(timings) < len(stacks):
        finished = {t.name for t in timings.values() if t.end <= clock}
        started = {t.name for t in timings.values()}
        active = [t for t in running if t.end > clock]
        for name, (_, deps) in stacks.items():
            if len(active) >= concurrency:
                break
            if name in started or not set(deps) <= finished:
                continue
            minutes, path = own[name]
            timing = StackTiming(name, clock, clock + minutes, tuple(path))
            timings[name] = timing
            active.append(timing)
        running = active
        upcoming = [t.end for t in running if t.end > clock]
        if not upcoming:
            if len(timings) < len(stacks):
                missing = sorted(set(stacks) - set(timings))
                raise ValueError(f"stacks wait on stacks that never deploy: {missing}")
            break
        clock = min(upcoming)
    return timings


def total_minutes(timings: Mapping[str, StackTiming]) -> float:
    return max((t.end for t in timings.values()), default=0.0)
