"""The narrow view of a GPU EKS cluster that add-ons, node groups, HyperPod and workloads
depend on, met by a cluster created here
(:class:`~fm_constructs.orchestration.GpuEksCluster`) and by an imported one
(:meth:`~fm_constructs.orchestration.GpuEksCluster.from_gpu_eks_cluster_attributes`)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard, runtime_checkable

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from fm_constructs.orchestration.addon_registry import AddonRegistry
from fm_constructs.orchestration.eks_charts import HelmChartSpec

if TYPE_CHECKING:
    pass


@runtime_checkable
class IGpuCluster(Protocol):
    """What consumers need from a cluster: names, the kubectl-capable ``icluster``, its VPC and
    security group, the zone of its accelerated capacity, the system nodes to run on, the Pod
    Identity agent, the add-on registry and the pinned charts installed so far; and the
    features workloads switch on (operators, device plugins, Lustre volumes, node peers)."""

    # A construct (constructs.IConstruct): warnings and dependencies attach to it.
    @property
    def node(self) -> Any: ...

    def with_(self, *mixins: Any) -> IConstruct: ...

    @property
    def cluster_name(self) -> str: ...

    @property
    def cluster_arn(self) -> str: ...

    @property
    def kubernetes_version(self) -> str: ...

    @property
    def gpu_availability_zone(self) -> str | None: ...

    @property
    def icluster(self) -> eks.ICluster: ...

    @property
    def addons_scope(self) -> Construct: ...

    @property
    def system_nodes(self) -> IConstruct: ...

    @property
    def pod_identity_agent(self) -> IConstruct | None: ...

    @property
    def addon_registry(self) -> AddonRegistry: ...

    @property
    def charts(self) -> Mapping[str, eks.HelmChart]: ...

    @property
    def cluster_security_group(self) -> ec2.ISecurityGroup: ...

    @property
    def connections(self) -> ec2.Connections: ...

    @property
    def vpc(self) -> ec2.IVpc: ...

    def managed_addon(self, name: str) -> IConstruct | None: ...

    def add_pinned_chart(
        self, spec: HelmChartSpec, values: Mapping[str, Any], *, wait: bool = False
    ) -> eks.HelmChart: ...

    def add_node_peer(self, peer: ec2.IConnectable) -> None: ...

    def add_lustre_volume(self, *args: Any, **kwargs: Any) -> eks.KubernetesManifest:
        """Mount an :class:`~fm_constructs.storage.ILustreFileSystem` into pods
        (:meth:`~fm_constructs.orchestration.cluster_features.GpuClusterFeatures.add_lustre_volume`:
        ``file_system``, ``name``, ``namespace``, ``scope``, ``volume_name``,
        ``create_namespace``)."""
        ...


#: The members :class:`IGpuCluster` asks for.
_MEMBERS = tuple(name for name in vars(IGpuCluster) if not name.startswith("_"))
_ABSENT = object()


def is_gpu_cluster(value: object) -> TypeGuard[IGpuCluster]:
    """Whether ``value`` has every member of :class:`IGpuCluster` (a cluster of this library,
    created or imported), not only an aws-cdk-lib ``eks.ICluster``.

    Looked up without reading them: ``isinstance`` against the runtime protocol calls every
    property, on a construct each a call into the CDK's JavaScript, and on an imported
    ``eks.ICluster`` some of them throw (``clusterSecurityGroup`` of a cluster imported
    without one), so that check failed or passed with the order of a set of names."""
    return all(inspect.getattr_static(value, name, _ABSENT) is not _ABSENT for name in _MEMBERS)
