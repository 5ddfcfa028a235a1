"""The documentation site loads nothing from outside itself (tools/docs_hooks.py, mkdocs.yml,
tools/docs_check.py). ``make docs-check`` opens the built site in Chromium offline; these
tests pin the parts that decide it without a build: the theme's offline plugin and the hook
configured as mkdocs.yml configures them, the vendored files' packages pinned, and the check
that flags a page reaching outside the site."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from mkdocs.config import load_config
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import docs_check  # noqa: E402
import docs_hooks  # noqa: E402


def _configured(**overrides: Any) -> Any:
    """mkdocs.yml after every plugin's on_config (the offline plugin's and the hook's)."""
    config = load_config(str(ROOT / "mkdocs.yml"), **overrides)
    return config.plugins.on_config(config)


def test_search_shim_is_the_copy_in_the_site() -> None:
    config = _configured()
    assert config["extra"]["polyfills"] == ["assets/javascripts/iframe-worker.shim.js"]
    assert "assets/javascripts/iframe-worker.shim.js" in docs_hooks.VENDORED


def test_without_the_copy_the_offline_plugin_reaches_for_unpkg_and_the_build_stops() -> None:
    with pytest.raises(PluginError, match=r"https://unpkg\.com/iframe-worker/shim"):
        _configured(extra={})


def test_every_vendored_file_comes_from_a_package_pinned_exactly() -> None:
    package = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    for source in docs_hooks.VENDORED.values():
        relative = source.relative_to(docs_hooks.NODE_MODULES).parts
        name = "/".join(relative[:2] if relative[0].startswith("@") else relative[:1])
        assert package[name] == lock[f"node_modules/{name}"]["version"], name
        assert package[name][0].isdigit(), f"{name} is pinned to a range: {package[name]}"


def test_resources_from_outside_the_site_are_named(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text(
        '<html><head><script src="https://unpkg.com/iframe-worker/shim"></script>'
        '<script src="../assets/local.js"></script>'
        '<link rel="stylesheet" href="//fonts.googleapis.com/css?family=Roboto">'
        '<link rel="canonical" href="https://example.org/page/">'
        "<style>@import url(https://cdn.example/x.css);</style></head>"
        '<body><a href="https://github.com/">a link is not a request</a>'
        '<img src="data:image/png;base64,AAAA"><img srcset="https://img.example/a.png 2x">'
        "</body></html>"
    )
    (tmp_path / "theme.css").write_text(
        '@font-face{src:url("https://fonts.example/a.woff2")} .x{background:url(data:a)}'
    )
    assert docs_check.external_resources(tmp_path) == [
        "sub/page.html: loads https://unpkg.com/iframe-worker/shim from outside the site",
        "sub/page.html: loads //fonts.googleapis.com/css?family=Roboto from outside the site",
        "sub/page.html: loads https://img.example/a.png from outside the site",
        "sub/page.html: loads https://cdn.example/x.css from outside the site",
        "theme.css: loads https://fonts.example/a.woff2 from outside the site",
    ]
