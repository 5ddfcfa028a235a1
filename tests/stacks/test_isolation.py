"""Over every profile: what runs as root and what workloads write cannot be changed by a
principal that should not: the HyperPod lifecycle bucket writable only by the deployment, with
a key only it may encrypt with, access-logged; no role (evaluated over every identity policy
of the profile) and no file-system export writes another workload's outputs or the served
models."""

from __future__ import annotations

from typing import Any

import pytest

from fm_constructs.config.options import DATA_INPUTS, DATA_OUTPUTS
from tests.iam_policies import (
    ACCOUNT,
    Templates,
    identity_allows,
    resource_policy_denies,
    role_arn,
    role_statements,
    roles,
    statements,
)
from tests.stacks.profiles import profile_params, synthesize

#: A principal with broad S3 and KMS rights in the account (an administrator, a CI role).
OTHER = f"arn:aws:iam::{ACCOUNT}:role/Administrator"


def _cfn_exec_role(region: str) -> str:
    """The bootstrap role CloudFormation deploys with (DefaultStackSynthesizer, default
    qualifier)."""
    return f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-{region}"


def _lifecycle_buckets(templates: Templates) -> list[tuple[str, str]]:
    """(stack, logical id) of every HyperPod lifecycle bucket the profile creates."""
    return [
        (stack, logical_id)
        for stack, template in templates.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::S3::Bucket" and "LifecycleBucket" in logical_id
    ]


def _bucket_policy(templates: Templates, stack: str, bucket_id: str) -> dict[str, Any]:
    for resource in templates.templates[stack]["Resources"].values():
        if resource["Type"] == "AWS::S3::BucketPolicy" and resource["Properties"]["Bucket"] == {
            "Ref": bucket_id
        }:
            policy: dict[str, Any] = templates.render(stack, resource["Properties"])
            return policy["PolicyDocument"]
    raise AssertionError(f"{stack}/{bucket_id} has no bucket policy")


def _deployment_role(templates: Templates, stack: str) -> str:
    """The ARN of the stack's BucketDeployment handler role."""
    found = [
        logical_id
        for logical_id, resource in templates.templates[stack]["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
        and logical_id.startswith("CustomCDKBucketDeployment")
    ]
    assert len(found) == 1, found
    return f"arn:aws:iam::{ACCOUNT}:role/{found[0]}"


@pytest.mark.parametrize("profile", profile_params())
def test_lifecycle_bucket_is_written_only_by_the_deployment(profile: str) -> None:
    result = synthesize(profile)
    templates = Templates(result.templates)
    buckets = _lifecycle_buckets(templates)
    on_hyperpod = any(
        w.orchestrator.value.startswith("hyperpod") for w in result.profile.enabled_workloads
    )
    cfn_exec = _cfn_exec_role(result.profile.platform.region)
    assert bool(buckets) == on_hyperpod
    for stack, bucket_id in buckets:
        arn = f"arn:aws:s3:::{bucket_id}"
        objects = f"{arn}/hyperpod-lifecycle/x/on_create.sh"
        policy = statements(_bucket_policy(templates, stack, bucket_id))
        writer = _deployment_role(templates, stack)
        for action in ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion"):
            assert resource_policy_denies(policy, OTHER, action, objects), (stack, action)
            assert resource_policy_denies(policy, cfn_exec, action, objects), (stack, action)
            assert not resource_policy_denies(policy, writer, action, objects), (stack, action)
        for action in (
            "s3:PutBucketPolicy",
            "s3:DeleteBucketPolicy",
            "s3:PutEncryptionConfiguration",
            "s3:PutBucketLogging",
            "s3:DeleteBucket",
        ):
            assert resource_policy_denies(policy, OTHER, action, arn), (stack, action)
            assert resource_policy_denies(policy, writer, action, arn), (stack, action)
            assert not resource_policy_denies(policy, cfn_exec, action, arn), (stack, action)
        # Reading stays with IAM: the policy denies no read.
        assert not resource_policy_denies(policy, OTHER, "s3:GetObject", objects)

        bucket = templates.resource(stack, bucket_id)["Properties"]
        (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
        key_id = rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]["Fn::GetAtt"][0]
        key = templates.render(stack, templates.resource(stack, key_id)["Properties"]["KeyPolicy"])
        encryptors = [
            statement["Principal"]
            for statement in key["Statement"]
            if statement["Effect"] == "Allow"
            and any(
                a in ("kms:*", "kms:Encrypt", "kms:GenerateDataKey*", "kms:GenerateDataKey")
                for a in (
                    statement["Action"]
                    if isinstance(statement["Action"], list)
                    else [statement["Action"]]
                )
            )
        ]
        assert encryptors == [{"AWS": writer}], (stack, encryptors)

        logging = bucket["LoggingConfiguration"]
        log_bucket = logging["DestinationBucketName"]["Ref"]
        assert templates.resource(stack, log_bucket)["Type"] == "AWS::S3::Bucket"
        assert templates.resource(stack, log_bucket)["DeletionPolicy"] == "Retain"


def _data_bucket_arn(templates: Templates) -> str:
    (found,) = [
        logical_id
        for template in templates.templates.values()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::S3::Bucket"
        and logical_id.startswith("Data")
        and "AccessLogs" not in logical_id
    ]
    return f"arn:aws:s3:::{found}"


def _workload_of_stack(result: Any) -> dict[str, str]:
    """Stack name -> the workload it belongs to (file-system and compute stacks)."""
    owners = {stack.stack_name: name for name, stack in result.stacks.workloads.items()}
    owners.update({stack.stack_name: name for name, stack in result.stacks.computes.items()})
    return owners


@pytest.mark.parametrize("profile", profile_params())
def test_no_role_writes_another_workloads_outputs_or_the_models(profile: str) -> None:
    """Evaluate every role's identity policies of the profile: a write or delete under a
    workload's output prefix is allowed only to that workload's own role, and nothing may
    write ``models/`` or ``datasets/``."""
    result = synthesize(profile)
    templates = Templates(result.templates)
    bucket = _data_bucket_arn(templates)
    owners = _workload_of_stack(result)
    prefixes = {p for kind in DATA_INPUTS for p in (*DATA_INPUTS[kind], *DATA_OUTPUTS[kind])}
    writers: dict[str, set[str]] = {}
    for stack, role_id, _resource in roles(templates):
        found = role_statements(templates, stack, role_id)
        for prefix in sorted(prefixes):
            key = f"{bucket}/{prefix}step-100/model.safetensors"
            for action in ("s3:PutObject", "s3:DeleteObject"):
                if identity_allows(found, action, key):
                    writers.setdefault(prefix, set()).add(f"{stack}/{role_id}")
                    workload = owners.get(stack)
                    assert workload is not None, (stack, role_id, action, prefix)
                    assert prefix in DATA_OUTPUTS[workload], (stack, role_id, action, prefix)
                    assert "WorkloadRole" in role_id, (stack, role_id, action, prefix)
    # The check saw the grants it is about: each workload on EKS writes its own outputs.
    for name, compute in result.stacks.computes.items():
        for prefix in DATA_OUTPUTS[name]:
            assert any(w.startswith(compute.stack_name + "/") for w in writers[prefix]), name
    assert "models/" not in writers
    assert "datasets/" not in writers


@pytest.mark.parametrize("profile", profile_params())
def test_file_systems_export_only_their_workloads_outputs(profile: str) -> None:
    """FSx writes the bucket with its own role: a data repository association that exports
    must link a directory to its workload's own output prefix, every other one imports only."""
    result = synthesize(profile)
    templates = Templates(result.templates)
    bucket = _data_bucket_arn(templates).removeprefix("arn:aws:s3:::")
    owners = _workload_of_stack(result)
    exported: set[str] = set()
    for stack, template in templates.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] != "AWS::FSx::DataRepositoryAssociation":
                continue
            props = templates.render(stack, resource["Properties"])
            path = props["DataRepositoryPath"]
            assert path.startswith(f"s3://{bucket}/"), (stack, logical_id, path)
            prefix = path.removeprefix(f"s3://{bucket}/")
            workload = owners[stack]
            if props.get("S3", {}).get("AutoExportPolicy"):
                assert prefix in DATA_OUTPUTS[workload], (stack, logical_id, prefix)
                exported.add(prefix)
            else:
                assert prefix in DATA_INPUTS[workload], (stack, logical_id, prefix)
    for workload in result.profile.enabled_workloads:
        if workload.storage.enabled and not workload.reuses_pretraining_storage:
            assert set(DATA_OUTPUTS[workload.name]) <= exported, workload.name


@pytest.mark.parametrize("profile", profile_params())
def test_flow_log_role_trusts_only_this_accounts_flow_logs(profile: str) -> None:
    templates = Templates(synthesize(profile).templates)
    trusts = [
        statement
        for _stack, _role_id, resource in roles(templates)
        for statement in resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        if statement.get("Principal", {}).get("Service") == "vpc-flow-logs.amazonaws.com"
    ]
    assert trusts
    for statement in trusts:
        assert "aws:SourceAccount" in statement["Condition"]["StringEquals"]
        assert ":vpc-flow-log/" in str(statement["Condition"]["ArnLike"]["aws:SourceArn"])


@pytest.mark.parametrize("profile", profile_params())
def test_pod_identity_roles_trust_only_their_service_accounts(profile: str) -> None:
    """Every role EKS Pod Identity may assume names the cluster, the namespace and the service
    account it is for (session tags), one subject a statement, so an association of someone
    else's service account, or of the same names on another cluster, cannot use it."""
    templates = Templates(synthesize(profile).templates)
    checked = 0
    for _stack, role_id, resource in roles(templates):
        for statement in resource["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
            if statement.get("Principal", {}).get("Service") != "pods.eks.amazonaws.com":
                continue
            tags = statement.get("Condition", {}).get("StringEquals", {})
            for tag in ("kubernetes-namespace", "kubernetes-service-account", "eks-cluster-name"):
                value = tags.get(f"aws:RequestTag/{tag}")
                assert value and not isinstance(value, list), (role_id, tag, value)
            checked += 1
    assert checked or not synthesize(profile).stacks.clusters


# ----------------------------------------------------------------------------- data perimeter

#: The FSx service-linked role of one file system (one per file system that has an association).
FSX_ROLE = (
    f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
    "AWSServiceRoleForFSxS3Access_fs-0123456789abcdef0"
)
#: A request an AWS service makes on a principal's behalf (CloudFormation creating an FSx
#: association, S3 calling KMS for the caller).
VIA_SERVICE = {"aws:viaawsservice": "true"}
DATA_PROBES = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:ListBucket")


def _data_bucket_policies(templates: Templates) -> tuple[str, list[Any], list[Any], str, str]:
    """(stack, bucket policy statements, key policy statements, bucket ARN, key ARN) of the
    data bucket."""
    bucket_arn = _data_bucket_arn(templates)
    bucket_id = bucket_arn.removeprefix("arn:aws:s3:::")
    (stack,) = [s for s, t in templates.templates.items() if bucket_id in t["Resources"]]
    bucket = templates.resource(stack, bucket_id)["Properties"]
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    key_id = rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]["Fn::GetAtt"][0]
    key = templates.render(stack, templates.resource(stack, key_id)["Properties"]["KeyPolicy"])
    policy = statements(_bucket_policy(templates, stack, bucket_id))
    key_arn = templates.render(stack, {"Fn::GetAtt": [key_id, "Arn"]})
    return stack, policy, statements(key), bucket_arn, key_arn


@pytest.mark.parametrize("profile", profile_params())
def test_the_data_perimeter_lets_in_only_the_deployments_principals(profile: str) -> None:
    """On the synthesized templates: the bucket and key policies deny the data actions to a
    broad role of the account and to the deployer's direct calls, and deny nothing to FSx's
    S3 access role, to AWS services, to the deployer through a service, to the listed
    break-glass and perimeter roles, and to every role of the profile whose identity policies
    grant it the bucket or the key (none is locked out)."""
    result = synthesize(profile)
    templates = Templates(result.templates)
    platform = result.profile.platform
    _stack, policy, key_policy, bucket, key = _data_bucket_policies(templates)
    objects = f"{bucket}/checkpoints/pretraining/step-100/model.safetensors"

    def denied(arn: str, context: dict[str, str] | None = None) -> dict[str, bool]:
        found = {
            action: resource_policy_denies(
                policy, arn, action, bucket if action == "s3:ListBucket" else objects, context
            )
            for action in DATA_PROBES
        }
        for action in ("kms:Decrypt", "kms:GenerateDataKey"):
            found[action] = resource_policy_denies(key_policy, arn, action, "*", context)
        return found

    if not platform.data_perimeter:
        assert not any(denied(OTHER).values())
        return
    assert all(denied(OTHER).values()), denied(OTHER)
    deployer = _cfn_exec_role(platform.region)
    assert all(denied(deployer).values()), denied(deployer)
    for inside in (FSX_ROLE, *platform.data_perimeter_principals):
        assert not any(denied(inside).values()), (inside, denied(inside))
    if platform.break_glass_role_arn:
        assert not any(denied(platform.break_glass_role_arn).values())
    assert not any(denied(deployer, VIA_SERVICE).values())
    assert not any(denied(OTHER, {"aws:principalisawsservice": "true"}).values())
    # Every role the profile grants the bucket or its key is inside.
    granted = 0
    for role_stack, role_id, resource in roles(templates):
        found = role_statements(templates, role_stack, role_id)
        uses = [
            action
            for action in DATA_PROBES
            if identity_allows(found, action, bucket if action == "s3:ListBucket" else objects)
            or any(
                identity_allows(found, action, f"{bucket}/{prefix}x")
                for kind in DATA_INPUTS
                for prefix in (*DATA_INPUTS[kind], *DATA_OUTPUTS[kind], "models/")
            )
        ] + [a for a in ("kms:Decrypt", "kms:GenerateDataKey") if identity_allows(found, a, key)]
        if not uses:
            continue
        arn = role_arn(role_id, resource["Properties"].get("Path", "/"))
        if arn == OTHER:
            continue
        verdicts = denied(arn)
        locked = [a for a in uses if a.startswith("kms:") and verdicts[a]]
        for action in (a for a in uses if a.startswith("s3:")):
            key_name = bucket if action == "s3:ListBucket" else None
            for prefix in [""] if key_name else ["checkpoints/", "datasets/", "models/"]:
                target = key_name or f"{bucket}/{prefix}x"
                if identity_allows(found, action, target) and resource_policy_denies(
                    policy, arn, action, target
                ):
                    locked.append(f"{action} {target}")
        assert not locked, (role_stack, role_id, locked)
        granted += 1
    assert granted or not result.stacks.computes, "no role of the profile uses the bucket"
