"""Griffe extension for the API reference: Sphinx roles in docstrings become links.

Docstrings name other objects the way Sphinx does (:class:`GpuEksCluster`,
:func:`~fm_constructs.planning.fsx_sizing.size_fsx_lustre`); mkdocstrings shows such roles
literally. This extension rewrites each role into an autorefs cross-reference to the object's
full path (resolved from the docstring's own scope, as Sphinx resolves it), so it renders as a
link where the object is documented and as plain code where it is not. A leading ``~`` shows the
last name only, as in Sphinx.

Loaded by mkdocs.yml (mkdocstrings handler option ``extensions``).
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|data|obj|exc|const):`(?P<target>[^`]+)`")


def _resolve(obj: griffe.Object, name: str) -> str:
    """The full path of ``name`` seen from ``obj`` (its members, imports and parents)."""
    if name.startswith("fm_constructs."):
        return name
    head, _, rest = name.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        try:
            base = scope.members[head].path if head in scope.members else scope.resolve(head)
        except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
            scope = scope.parent
            continue
        return f"{base}.{rest}" if rest else base
    return name


def rewrite_roles(obj: griffe.Object, text: str) -> str:
    """``text`` with every Sphinx role replaced by an optional autorefs reference."""

    def replace(match: re.Match[str]) -> str:
        target = match["target"].strip()
        short = target.startswith("~")
        name = target.lstrip("~")
        title = name.rsplit(".", 1)[-1] if short else name
        identifier = _resolve(obj, name)
        return (
            f'<autoref identifier="{html.escape(identifier)}" optional>'
            f"<code>{html.escape(title)}</code></autoref>"
        )

    return _ROLE.sub(replace, text)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        self._walk(pkg, seen=set())

    def _walk(self, obj: griffe.Object, seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = rewrite_roles(obj, obj.docstring.value)
        for member in obj.members.values():
            if isinstance(member, griffe.Alias):
                continue
            self._walk(member, seen)
