"""One registry of add-ons per cluster: each installed once, found again by its id.

Charts, operators and controllers that several workloads (or patterns) want on the same cluster
register here instead of checking the construct tree themselves; the first caller creates the
add-on, later callers get the same object. Add-ons depend on the narrow
:class:`~fm_constructs.orchestration.cluster_interface.IGpuCluster` interface, never on the
concrete cluster class, so no module imports the cluster and is imported by it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from constructs import Construct

T = TypeVar("T", bound=Construct)


class AddonRegistry:
    """Add-ons of one cluster by id. ``scope`` is the construct add-ons are created under (the
    cluster), so they deploy with the cluster whatever stack asks for them."""

    def __init__(self, scope: Construct) -> None:
        self._scope = scope
        self._addons: dict[str, Construct] = {}

    def install(self, addon_id: str, factory: Callable[[Construct, str], T]) -> T:
        """The add-on ``addon_id``: created by ``factory(scope, addon_id)`` on the first call,
        the same object afterwards (an add-on that must be configured once checks its own
        settings against :meth:`get` first)."""
        existing = self._addons.get(addon_id)
        if existing is not None:
            return existing  # type: ignore[return-value]
        addon = factory(self._scope, addon_id)
        self._addons[addon_id] = addon
        return addon

    def get(self, addon_id: str) -> Construct | None:
        return self._addons.get(addon_id)

    def __contains__(self, addon_id: object) -> bool:
        return addon_id in self._addons

    @property
    def ids(self) -> tuple[str, ...]:
        """Ids of the installed add-ons, in installation order."""
        return tuple(self._addons)
