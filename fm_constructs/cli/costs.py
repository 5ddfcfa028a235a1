"""The cost lines of ``fmc plan``: every hourly charge a profile's stacks create, one line each,
with quantity, unit price and where the price comes from.

Workload lines (accelerated instances, FSx for Lustre) come from the workload plans; platform
lines count what the stacks build around them: NAT gateways, interface VPC endpoints (billed
per endpoint and zone), EKS control planes and their system node groups, the Managed Grafana
workspace and the Managed Prometheus workspace (usage-billed: shown, not in the total). The
counts below describe what the stacks build; tests/stacks/test_plan_costs.py checks each one
against the synthesized templates of every shipped profile, so they cannot drift apart.

A missing price is never a zero: the line says ``no price for WHAT in REGION`` with the
reason the price table gives, and the plan's total covers the rest, marked partial.
"""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs.cli.pricing import HOURS_PER_MONTH, PriceTable
from fm_constructs.config import NatGateways, Profile
from fm_constructs.config.options import deployment_options

#: Interface endpoints the VPC gets when ``platform.interface_endpoints`` is on
#: (fm_constructs.network.gpu_vpc.PRIVATE_CLUSTER_ENDPOINTS), each in every zone of the VPC.
INTERFACE_ENDPOINTS = 12
#: The system (CPU) node group of every EKS cluster (GpuEksCluster's defaults).
SYSTEM_INSTANCE_TYPE = "m7i.xlarge"
SYSTEM_NODE_COUNT = 2
#: Managed Grafana bills per active editor a month; the estimate assumes one.
GRAFANA_EDITORS = 1


@dataclass(frozen=True)
class CostLine:
    """One hourly charge: ``quantity`` x ``unit_usd_per_hour``; None when no price is known."""

    item: str
    quantity: float
    unit: str
    unit_usd_per_hour: float | None
    source: str
    #: What this line leaves out because it is billed by use (data processed, samples).
    usage: str = ""
    #: True for lines billed only by use: their figure is 0 and not a missing price.
    usage_only: bool = False
    #: What the unit price is the price of (an instance type, an FSx tier); default: ``item``.
    priced: str = ""
    #: Who the line is for (a workload name), shown with a missing price.
    owner: str = ""
    #: Why the price table has no figure (only read when ``unit_usd_per_hour`` is None).
    no_price: str = ""

    @property
    def usd_per_hour(self) -> float | None:
        if self.usage_only:
            return 0.0
        if self.unit_usd_per_hour is None:
            return None
        return self.quantity * self.unit_usd_per_hour

    def missing_message(self, region: str) -> str | None:
        """``no price for WHAT in REGION (OWNER): WHY``, or None when the line has a figure."""
        if self.usd_per_hour is not None:
            return None
        owner = f" ({self.owner})" if self.owner else ""
        why = f": {self.no_price}" if self.no_price else ""
        return f"no price for {self.priced or self.item} in {region}{owner}{why}"

    def to_json(self) -> dict[str, object]:
        return {
            "item": self.item,
            "quantity": self.quantity,
            "unit": self.unit,
            "unit_usd_per_hour": self.unit_usd_per_hour,
            "usd_per_hour": self.usd_per_hour,
            "source": self.source,
            "usage": self.usage,
            "usage_only": self.usage_only,
            "priced": self.priced or self.item,
            "no_price": self.no_price if self.usd_per_hour is None else "",
        }


def eks_cluster_count(profile: Profile) -> int:
    """EKS control planes the stacks build: the shared cluster plus each dedicated one, from
    the mapping the stacks build from (:func:`fm_constructs.config.options.deployment_options`)."""
    return len(deployment_options(profile).clusters)


def nat_gateway_count(profile: Profile) -> int:
    """One NAT gateway per zone of the VPC, or a single one (``platform.nat_gateways``)."""
    platform = profile.platform
    if platform.nat_gateways is NatGateways.PER_AZ:
        return len(platform.availability_zones)
    return 1


def interface_endpoint_zones(profile: Profile) -> int:
    """Billed endpoint-zones: every interface endpoint has an interface in each VPC zone."""
    platform = profile.platform
    if not platform.interface_endpoints:
        return 0
    return INTERFACE_ENDPOINTS * len(platform.availability_zones)


def _priced(
    prices: PriceTable, region: str, key: str, *, item: str, quantity: float, unit: str, usage: str
) -> CostLine:
    return CostLine(
        item=item,
        quantity=quantity,
        unit=unit,
        unit_usd_per_hour=prices.platform_usd(region, key),
        source=prices.source_of(key, region),
        usage=usage,
        no_price=prices.no_price_reason(region, key),
    )


def instance_hours(
    prices: PriceTable, region: str, instance_type: str, *, item: str, quantity: int, owner: str
) -> CostLine:
    """``quantity`` On-Demand instances of ``instance_type`` by the hour, for ``owner``."""
    return CostLine(
        item=item,
        quantity=quantity,
        unit="instance-hour",
        unit_usd_per_hour=prices.on_demand_usd_per_hour(region, instance_type),
        source=prices.source_of("on_demand_usd_per_hour", region),
        priced=instance_type,
        owner=owner,
        no_price=prices.no_price_reason(region, instance_type),
    )


def platform_cost_lines(profile: Profile, prices: PriceTable) -> list[CostLine]:
    """What the platform and the clusters cost by the hour, whatever the workloads run."""
    region = profile.platform.region
    lines: list[CostLine] = []
    nat = nat_gateway_count(profile)
    lines.append(
        _priced(
            prices,
            region,
            "nat_gateway_hour",
            item="NAT gateways",
            quantity=nat,
            unit="gateway-hour",
            usage="data processed per GB",
        )
    )
    endpoint_zones = interface_endpoint_zones(profile)
    if endpoint_zones:
        lines.append(
            _priced(
                prices,
                region,
                "interface_endpoint_az_hour",
                item=f"interface VPC endpoints ({INTERFACE_ENDPOINTS} x "
                f"{len(profile.platform.availability_zones)} zones)",
                quantity=endpoint_zones,
                unit="endpoint-zone-hour",
                usage="data processed per GB",
            )
        )
    clusters = eks_cluster_count(profile)
    if clusters:
        lines.append(
            _priced(
                prices,
                region,
                "eks_cluster_hour",
                item="EKS control planes",
                quantity=clusters,
                unit="cluster-hour",
                usage="",
            )
        )
        lines.append(
            instance_hours(
                prices,
                region,
                SYSTEM_INSTANCE_TYPE,
                item=f"EKS system nodes ({SYSTEM_INSTANCE_TYPE})",
                quantity=clusters * SYSTEM_NODE_COUNT,
                owner="EKS system nodes",
            )
        )
    if profile.platform.observability:
        samples = prices.platform_usd(region, "prometheus_ingestion_per_10m_samples")
        rate = "no price" if samples is None else f"${samples:.2f} per 10 million samples"
        lines.append(
            CostLine(
                item="Managed Prometheus workspace",
                quantity=1,
                unit="workspace",
                unit_usd_per_hour=None,
                source=prices.source_of("prometheus_ingestion_per_10m_samples", region),
                usage=f"samples ingested ({rate}), storage, queries",
                usage_only=True,
            )
        )
    if profile.platform.grafana:
        editor_month = prices.platform_usd(region, "grafana_editor_month")
        lines.append(
            CostLine(
                item=f"Managed Grafana workspace ({GRAFANA_EDITORS} editor)",
                quantity=GRAFANA_EDITORS,
                unit="editor-hour",
                unit_usd_per_hour=None if editor_month is None else editor_month / HOURS_PER_MONTH,
                source=prices.source_of("grafana_editor_month", region),
                no_price=prices.no_price_reason(region, "grafana_editor_month"),
                usage="more editors; viewers",
            )
        )
    return lines


def missing_prices(lines: list[CostLine], region: str) -> list[str]:
    """One ``no price for WHAT in REGION (OWNER): WHY`` message per line without a price."""
    return [m for m in (line.missing_message(region) for line in lines) if m is not None]
