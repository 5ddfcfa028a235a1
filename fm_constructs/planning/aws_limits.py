"""The AWS limits a large accelerated deployment runs into, each with its source.

Every figure is the documented default of a quota (``adjustable``: raised through Service
Quotas with ``quota_code``) or a fixed limit of the service. The constructs shape resources to
stay inside the fixed ones (node groups are split at :data:`NODES_PER_MANAGED_NODE_GROUP`),
``fmc plan`` prints every limit a profile reaches :data:`WARN_AT` of, and synthesis refuses a
profile that exceeds a fixed limit. ``quota_code`` is the Service Quotas code of an adjustable
quota (``aws service-quotas get-service-quota --service-code <code's service> --quota-code
<code>``); fixed limits have none.

Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Share of a limit at which ``fmc plan`` reports it.
WARN_AT = 0.8

EKS_QUOTAS = "https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html"
VPC_QUOTAS = "https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html"
EC2_PLACEMENT = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-groups.html"
EC2_CAPACITY_BLOCKS = "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html"
FSX_LUSTRE_LIMITS = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/limits.html"
FSX_PERFORMANCE = "https://docs.aws.amazon.com/fsx/latest/LustreGuide/performance.html"
AMP_QUOTAS = "https://docs.aws.amazon.com/prometheus/latest/userguide/AMP_quotas.html"
CFN_QUOTAS = (
    "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html"
)


@dataclass(frozen=True)
class AwsLimit:
    """One limit: ``value`` in ``unit``, per ``scope`` (what it counts in)."""

    key: str
    name: str
    service: str
    value: int
    unit: str
    scope: str
    adjustable: bool
    quota_code: str
    source: str
    note: str = ""


def _limit(*args: object, **kwargs: object) -> AwsLimit:
    limit = AwsLimit(*args, **kwargs)  # type: ignore[arg-type]
    LIMITS[limit.key] = limit
    return limit


#: Every limit by key.
LIMITS: dict[str, AwsLimit] = {}

NODES_PER_MANAGED_NODE_GROUP = _limit(
    "eks.nodes_per_managed_node_group",
    "Nodes per managed node group",
    "Amazon EKS",
    450,
    "nodes",
    "managed node group",
    True,
    "L-BD136A63",
    EKS_QUOTAS,
    "the library splits a larger pool into several node groups behind one ResourceFlavor",
)
MANAGED_NODE_GROUPS_PER_CLUSTER = _limit(
    "eks.managed_node_groups_per_cluster",
    "Managed node groups per cluster",
    "Amazon EKS",
    30,
    "node groups",
    "cluster",
    True,
    "L-6D54EA21",
    EKS_QUOTAS,
)
NETWORK_INTERFACES_PER_REGION = _limit(
    "vpc.network_interfaces_per_region",
    "Network interfaces per Region",
    "Amazon VPC",
    5000,
    "network interfaces",
    "Region",
    True,
    "L-DF5E4CA3",
    VPC_QUOTAS,
    "every EFA and efa-only interface is a network interface (the count per node is above)",
)
IPV4_CIDR_BLOCKS_PER_VPC = _limit(
    "vpc.ipv4_cidr_blocks_per_vpc",
    "IPv4 CIDR blocks per VPC",
    "Amazon VPC",
    5,
    "CIDR blocks",
    "VPC",
    True,
    "L-83CA0A9D",
    VPC_QUOTAS,
    "custom networking adds one (platform.pod_cidr), each extra node subnet of the GPU zone "
    "one (a /16 it spans)",
)
PLACEMENT_GROUPS_PER_REGION = _limit(
    "ec2.placement_groups_per_region",
    "Placement groups per Region",
    "Amazon EC2",
    500,
    "placement groups",
    "account and Region",
    False,
    "",
    EC2_PLACEMENT,
    "a cluster placement group lies in one zone and has no published instance maximum, but "
    "EC2 promises no capacity in it: instances launched later, or many at once, can fail "
    "with InsufficientInstanceCapacity. Reserved capacity (Capacity Blocks, ODCRs created in "
    "the group) is what guarantees a large group",
)
CAPACITY_BLOCK_INSTANCES = _limit(
    "ec2.capacity_block_instances",
    "Instances in one Capacity Block",
    "Amazon EC2",
    64,
    "instances",
    "Capacity Block",
    False,
    "",
    EC2_CAPACITY_BLOCKS,
    "block sizes are 1, 2, 4, 8, 16, 32 or 64 instances; a larger node pool needs several "
    "blocks (one node pool per block)",
)
FSX_LUSTRE_STORAGE_PER_ACCOUNT = _limit(
    "fsx.lustre_storage_gib_per_account",
    "Lustre Persistent_2 storage capacity",
    "Amazon FSx",
    100_800,
    "GiB",
    "account and Region",
    True,
    "L-8F1B9C74",
    FSX_LUSTRE_LIMITS,
    "the file systems the library builds are PERSISTENT_2, whose storage Service Quotas counts "
    "under this code (service code fsx; SCRATCH and PERSISTENT_1 have codes of their own); "
    "throughput grows with storage (at most 1000 MB/s per TiB on PERSISTENT_2), so this quota "
    "bounds it too",
)
AMP_ACTIVE_SERIES_PER_WORKSPACE = _limit(
    "amp.active_series_per_workspace",
    "Active series per workspace",
    "Amazon Managed Service for Prometheus",
    10_000_000,
    "active series",
    "workspace",
    True,
    "L-5A151448",
    AMP_QUOTAS,
    "service code aps; the default is applied per 2 hours of reported series",
)
AMP_INGESTION_RATE_PER_WORKSPACE = _limit(
    "amp.ingestion_samples_per_second_per_workspace",
    "Ingestion rate per workspace",
    "Amazon Managed Service for Prometheus",
    170_000,
    "samples/s",
    "workspace",
    True,
    "L-F4BCE0BA",
    AMP_QUOTAS,
    "service code aps; samples/s = active series / scrape interval",
)
CFN_RESOURCES_PER_STACK = _limit(
    "cloudformation.resources_per_stack",
    "Resources per stack",
    "AWS CloudFormation",
    500,
    "resources",
    "stack",
    False,
    "",
    CFN_QUOTAS,
)
CFN_TEMPLATE_BYTES = _limit(
    "cloudformation.template_body_bytes",
    "Template body size in an S3 object",
    "AWS CloudFormation",
    1_000_000,
    "bytes",
    "template",
    False,
    "",
    CFN_QUOTAS,
    "cdk deploy uploads templates to the bootstrap bucket",
)


@dataclass(frozen=True)
class LimitUsage:
    """How much of ``limit`` a deployment takes: ``used`` of ``limit.value``."""

    limit: AwsLimit
    used: int
    what: str

    @property
    def share(self) -> float:
        return self.used / self.limit.value

    @property
    def reached(self) -> bool:
        """At or beyond :data:`WARN_AT` of the limit."""
        return self.share >= WARN_AT

    @property
    def exceeded(self) -> bool:
        return self.used > self.limit.value

    def line(self) -> str:
        """``Nodes per managed node group (Amazon EKS, L-BD136A63): 342 of 450 (76%)``."""
        code = f", {self.limit.quota_code}" if self.limit.quota_code else ""
        kind = "adjustable" if self.limit.adjustable else "fixed"
        return (
            f"{self.limit.name} ({self.limit.service}{code}, {kind}): {self.used:,} of "
            f"{self.limit.value:,} {self.limit.unit} per {self.limit.scope} "
            f"({self.share:.0%}) - {self.what}"
        )


def split_sizes(desired: int, minimum: int, maximum: int, parts: int) -> list[tuple[int, int, int]]:
    """(desired, min, max) of each of ``parts`` node groups sharing a pool's sizes as evenly as
    whole nodes allow (the first groups take the remainders)."""

    def share(total: int, index: int) -> int:
        return total // parts + (1 if index < total % parts else 0)

    return [(share(desired, i), share(minimum, i), share(maximum, i)) for i in range(parts)]


def node_groups_for(max_nodes: int) -> int:
    """Managed node groups a pool of up to ``max_nodes`` nodes needs."""
    return max(1, -(-max_nodes // NODES_PER_MANAGED_NODE_GROUP.value))
