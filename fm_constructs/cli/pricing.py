"""The list-price table ``fmc plan`` estimates cost with: checked in, dated, overridable.

Prices are copied on a date from the public source each region's ``sources`` names (the AWS
Price List API, AWS's pricing pages); they are not live. A region keeps only the figures its
source gives: none is carried over from another region. What a source lacks is listed under
the region's ``no_price`` with the reason, so ``fmc plan`` can say why a line has no price.
``--prices FILE`` takes a JSON document of the same shape; its entries replace the built-in
ones per region and key (a partial file is fine), and its ``as_of``/``source`` are shown instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from fm_constructs.cli.exit_codes import CliError, ExitCode

#: Hours in a month as AWS prices monthly storage (365 x 24 / 12).
HOURS_PER_MONTH = 730


@dataclass(frozen=True)
class PriceTable:
    """On-Demand $/hour per instance type and FSx for Lustre $/GB-month per tier, per region."""

    as_of: str
    source: str
    currency: str
    regions: Mapping[str, Mapping[str, Any]]
    #: Where each kind of price comes from, by table or platform key (a page to check it on).
    sources: Mapping[str, str] = field(default_factory=dict)

    def on_demand_usd_per_hour(self, region: str, instance_type: str) -> float | None:
        """List price of one instance-hour, or None when the table has no figure."""
        table = self.regions.get(region, {}).get("on_demand_usd_per_hour", {})
        value = table.get(instance_type)
        return float(value) if value is not None else None

    def fsx_usd_per_gb_month(self, region: str, deployment_type: str, tier: int) -> float | None:
        """List price of one GB-month of FSx for Lustre storage at ``tier`` MB/s/TiB."""
        table = self.regions.get(region, {}).get("fsx_lustre_usd_per_gb_month", {})
        value = table.get(deployment_type, {}).get(str(tier))
        return float(value) if value is not None else None

    def platform_usd(self, region: str, key: str) -> float | None:
        """A platform list price (``platform_usd`` table: NAT gateway hour, interface endpoint
        AZ-hour, EKS cluster hour, Grafana editor-month, ...), or None when the table has none."""
        value = self.regions.get(region, {}).get("platform_usd", {}).get(key)
        return float(value) if value is not None else None

    def source_of(self, key: str, region: str | None = None) -> str:
        """Where prices of kind ``key`` come from: the region's own ``sources`` entry, else the
        table-wide one, else the table's ``source``."""
        if region is not None:
            regional = self.regions.get(region, {}).get("sources", {}).get(key)
            if regional:
                return str(regional)
        return self.sources.get(key, self.source)

    def no_price_reason(self, region: str, item: str) -> str:
        """Why the table has no figure for ``item`` (an instance type, or ``fsx_lustre``) in
        ``region``: the region's ``no_price`` entry, or a plain statement that it lacks one."""
        reason = self.regions.get(region, {}).get("no_price", {}).get(item)
        if reason:
            return str(reason)
        if region not in self.regions:
            return f"the built-in table covers {', '.join(sorted(self.regions))}, not {region}"
        return "the built-in table has no figure for it"

    def as_of_for(self, region: str) -> str:
        """The date of the region's figures (its own ``as_of``, else the table's)."""
        return str(self.regions.get(region, {}).get("as_of", self.as_of))

    def describe(self) -> str:
        return f"list prices as of {self.as_of} ({self.source})"


def _read_builtin() -> dict[str, Any]:
    text = resources.files("fm_constructs.cli").joinpath("data/prices.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Override per region and per key (nested tables merge; values replace)."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(dict(merged[key]), value)
        else:
            merged[key] = value
    return merged


def load_prices(override_path: str | Path | None = None) -> PriceTable:
    """The built-in table, with ``override_path`` (a JSON file) merged over it when given."""
    data = _read_builtin()
    if override_path is not None:
        path = Path(override_path)
        try:
            override = json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise CliError(
                f"--prices: cannot read {str(path)!r}: {error.strerror}", ExitCode.USAGE
            ) from None
        except json.JSONDecodeError as error:
            raise CliError(
                f"--prices: {str(path)!r} is not valid JSON: {error}", ExitCode.USAGE
            ) from None
        if not isinstance(override, dict) or not isinstance(override.get("regions", {}), dict):
            raise CliError(
                f"--prices: {str(path)!r} must be a JSON object with a 'regions' object "
                "(same shape as fm_constructs/cli/data/prices.json)",
                ExitCode.USAGE,
            )
        if "as_of" in override:
            # The file's date replaces the built-in regions' own dates (unless it gives them).
            for region in data.get("regions", {}).values():
                region.pop("as_of", None)
        data = _merge(data, override)
    return PriceTable(
        as_of=str(data.get("as_of", "unknown")),
        source=str(data.get("source", "unknown")),
        currency=str(data.get("currency", "USD")),
        regions=data.get("regions", {}),
        sources=data.get("sources", {}),
    )
