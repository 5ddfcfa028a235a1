"""MkDocs hooks: the Mermaid library served from the built site, so diagrams render offline.

mkdocs-material draws ``mermaid`` fences with a global ``mermaid`` object and downloads the
library from a CDN only when no such object exists. The pinned ``@mermaid-js/tiny`` package
(package.json; installed by ``npm ci`` in ``make setup``) defines it: this hook adds its one
file to the site as ``assets/javascripts/mermaid.tiny.js``, which mkdocs.yml loads through
``extra_javascript``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
MERMAID = ROOT / "node_modules" / "@mermaid-js" / "tiny" / "dist" / "mermaid.tiny.js"
SITE_PATH = "assets/javascripts/mermaid.tiny.js"


def on_files(files: Files, config: Any) -> Files:
    if not MERMAID.is_file():
        raise PluginError(
            f"{MERMAID.relative_to(ROOT)} is missing: the docs draw diagrams with the pinned "
            "@mermaid-js/tiny package; run make setup (npm ci) first"
        )
    files.append(File.generated(config, SITE_PATH, abs_src_path=str(MERMAID)))
    return files
