"""MkDocs hooks: the site's scripts served from the site itself, so it works offline.

Two scripts would otherwise come from a CDN when the site is opened from disk:

- Mermaid: mkdocs-material draws ``mermaid`` fences with a global ``mermaid`` object and
  downloads the library only when no such object exists. The pinned ``@mermaid-js/tiny``
  package defines it; mkdocs.yml loads the copy through ``extra_javascript``.
- iframe-worker: search runs in a Web Worker, which a browser refuses to start from a
  ``file://`` page. The theme's offline plugin loads the ``iframe-worker`` shim (a Worker run
  in a hidden iframe instead) from unpkg.com unless ``extra.polyfills`` already names one;
  mkdocs.yml names the copy of the pinned ``iframe-worker`` package.

Both packages are pinned in package.json/package-lock.json and installed by ``npm ci`` in
``make setup``; this hook adds their files to the site. After every plugin has configured the
site, it refuses a polyfill or extra script loaded from outside the site, so a theme update
that adds one fails the build instead of reaching for the network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
NODE_MODULES = ROOT / "node_modules"
#: Path in the built site -> the file of a pinned npm package (package.json) it is copied from.
VENDORED = {
    "assets/javascripts/mermaid.tiny.js": NODE_MODULES / "@mermaid-js/tiny/dist/mermaid.tiny.js",
    "assets/javascripts/iframe-worker.shim.js": NODE_MODULES / "iframe-worker/shim/index.js",
}


def _remote(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc)


@event_priority(-100)  # after the offline plugin, which adds its polyfill in on_config
def on_config(config: Any) -> Any:
    """Refuse scripts from outside the site: the polyfills and the extra scripts."""
    scripts = [str(script) for script in config.extra.get("polyfills", [])]
    scripts += [str(script) for script in config.extra_javascript]
    remote = [script for script in scripts if _remote(script)]
    if remote:
        raise PluginError(
            f"scripts loaded from outside the site: {', '.join(remote)}; the site is read "
            "offline: pin the package in package.json, add its file to VENDORED in "
            "tools/docs_hooks.py and name that copy in mkdocs.yml (extra.polyfills or "
            "extra_javascript)"
        )
    return config


def on_files(files: Files, config: Any) -> Files:
    """Add each vendored file to the site."""
    for site_path, source in VENDORED.items():
        if not source.is_file():
            raise PluginError(
                f"{source.relative_to(ROOT)} is missing: the site ships it as {site_path} "
                "from a package pinned in package.json; run make setup (npm ci) first"
            )
        files.append(File.generated(config, site_path, abs_src_path=str(source)))
    return files
