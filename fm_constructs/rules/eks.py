"""Rules of the EKS blocks' arguments: the Cluster Autoscaler's settings and image, the
managed add-ons' versions, a cluster's system nodes and zones, an imported cluster's name,
and what HyperPod on EKS needs of its region and the cluster's Kueue.

Each rule takes the construct's plain arguments and returns findings under the construct's
code, which the construct adopts; CDK tokens are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from fm_constructs.rules.constructs import ADDONS, AUTOSCALER, EKS_CLUSTER, HYPERPOD_EKS
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.tokens import is_unresolved

#: Cluster Autoscaler expanders that need no extra configuration (``priority`` needs a
#: priorities ConfigMap).
EXPANDERS = ("least-waste", "most-pods", "least-nodes", "random")
#: The autoscaler's duration settings.
AUTOSCALER_DURATIONS = (
    "scale_down_delay_after_add",
    "scale_down_unneeded_time",
    "max_node_provision_time",
)


def _error(code: str, key: str, value: object, allowed: str, fix: str = "") -> Finding:
    return Finding(code, Severity.ERROR, key, value, allowed, fix)


_DURATION = re.compile(r"^(\d+h)?(\d+m)?(\d+s)?$")


def autoscaler_settings(*, expander: str, durations: Mapping[str, str]) -> list[Finding]:
    """The autoscaler's expander (one of :data:`EXPANDERS`) and its durations (``durations``
    maps each of :data:`AUTOSCALER_DURATIONS` to its value), such as ``10m`` or ``1h30m``."""
    out: list[Finding] = []
    if expander not in EXPANDERS:
        out.append(
            _error(
                AUTOSCALER, "settings.expander", expander, f"must be one of {', '.join(EXPANDERS)}"
            )
        )
    for field, value in durations.items():
        if not value or not _DURATION.match(value):
            out.append(
                _error(
                    AUTOSCALER,
                    f"settings.{field}",
                    value,
                    "must be a duration such as '10m', '1h30m' or '90s'",
                )
            )
    return out


def autoscaler_image(kubernetes_version: str, pinned_versions: Collection[str]) -> list[Finding]:
    """The cluster's Kubernetes minor has a pinned Cluster Autoscaler image."""
    if kubernetes_version in pinned_versions:
        return []
    return [
        _error(
            AUTOSCALER,
            "cluster.kubernetes_version",
            kubernetes_version,
            "has no pinned Cluster Autoscaler image; use one of " + ", ".join(pinned_versions),
        )
    ]


def autoscaler_enabled_once(settings: object, existing: object) -> list[Finding]:
    """A second :meth:`ClusterAutoscaler.enable` passes no settings other than the first's
    (``settings`` None: none given)."""
    if settings is None or settings == existing:
        return []
    return [
        _error(
            AUTOSCALER,
            "settings",
            settings,
            f"must equal the settings the autoscaler is already enabled with "
            f"({existing}); enable it once per cluster",
        )
    ]


_ADDON_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+$")


def addon_versions(
    addon_versions: Mapping[str, str],
    *,
    managed: Sequence[str],
    vpc_cni: str,
    min_vpc_cni: tuple[int, int, int],
) -> list[Finding]:
    """Pinned add-on versions: only ``managed`` add-ons, in EKS's version form, and a vpc-cni
    (named ``vpc_cni``) no older than ``min_vpc_cni``."""
    out: list[Finding] = []
    for name, version in addon_versions.items():
        key = f"addon_versions[{name!r}]"
        if name not in managed:
            out.append(
                _error(
                    ADDONS,
                    key,
                    version,
                    "names an add-on this cluster does not manage; use one of "
                    + ", ".join(managed),
                )
            )
            continue
        if is_unresolved(version):
            continue
        match = _ADDON_VERSION.match(version)
        if match is None:
            out.append(
                _error(
                    ADDONS,
                    key,
                    version,
                    "must be an EKS add-on version such as 'v1.20.4-eksbuild.1' (aws eks "
                    "describe-addon-versions lists them), or be left out for the EKS default",
                )
            )
            continue
        numbers = tuple(int(part) for part in match.groups())
        if name == vpc_cni and numbers < min_vpc_cni:
            floor = ".".join(str(n) for n in min_vpc_cni)
            out.append(
                _error(
                    ADDONS,
                    key,
                    version,
                    f"must be v{floor} or newer (efa-only interfaces, SageMaker HyperPod)",
                )
            )
    return out


def system_node_count(count: int) -> list[Finding]:
    """A cluster's system node group holds 1 to 10 nodes."""
    if 1 <= count <= 10:
        return []
    return [_error(EKS_CLUSTER, "system_node_count", count, "must be between 1 and 10")]


def cluster_zones(zones: Sequence[str]) -> list[Finding]:
    """EKS places its control-plane interfaces in subnets of at least two zones (CreateCluster
    fails otherwise); zones that are tokens (an imported VPC) are not checked."""
    if any(is_unresolved(zone) for zone in zones) or len(set(zones)) >= 2:
        return []
    return [
        _error(
            EKS_CLUSTER,
            "vpc",
            sorted(set(zones)),
            "must have cluster subnets in at least two availability zones (EKS needs two)",
            fix="give the VPC two or more zones, such as GpuClusterVpc(availability_zones="
            "['us-east-1a', 'us-east-1b'])",
        )
    ]


#: An EKS cluster name.
EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")


def imported_cluster_name(cluster_name: str) -> list[Finding]:
    """An imported cluster is named by an EKS cluster name."""
    if is_unresolved(cluster_name) or EKS_NAME.match(cluster_name):
        return []
    return [_error(EKS_CLUSTER, "cluster_name", cluster_name, "must be an EKS cluster name")]


def hyperpod_eks(
    *,
    region: str,
    agent_regions: Collection[str],
    task_governance: bool,
    cluster_has_kueue: bool,
) -> list[Finding]:
    """HyperPod on EKS: a region where the health monitoring agent image is published
    (``agent_regions``; a token region is refused, the image account is chosen at synth), and
    task governance only on a cluster without its own Kueue chart."""
    out: list[Finding] = []
    if is_unresolved(region) or region not in agent_regions:
        out.append(
            _error(
                HYPERPOD_EKS,
                "region",
                region,
                "the HyperPod health monitoring agent image is published in "
                f"{', '.join(sorted(agent_regions))}; deploy the stack with an explicit "
                "env region from that list",
            )
        )
    if task_governance and cluster_has_kueue:
        out.append(
            _error(
                HYPERPOD_EKS,
                "task_governance",
                task_governance,
                "the task governance add-on installs its own Kueue; turn the cluster's Kueue "
                "chart off (GpuEksCluster(operators=WorkloadOperators(kueue=False)))",
            )
        )
    return out


#: A Kubernetes DNS label (a name or a namespace).
K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def lustre_volume_names(*, name: str, namespace: str) -> list[Finding]:
    """A Lustre volume's claim name and namespace are Kubernetes DNS labels."""
    return [
        _error(
            EKS_CLUSTER,
            key,
            value,
            "must be a Kubernetes DNS label (lowercase letters, digits and '-', at "
            "most 63 characters, starting and ending with a letter or digit)",
        )
        for key, value in (("name", name), ("namespace", namespace))
        if not is_unresolved(value) and not K8S_NAME.match(value)
    ]
