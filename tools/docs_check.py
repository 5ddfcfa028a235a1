"""Check the built documentation site (site/) the way a reader opens it: from disk, offline.

1. Links: every relative ``href``/``src`` in every page resolves to a file in site/ (a link to
   a folder opens a directory listing from disk, not a page).
2. Pages: no Sphinx role (``:class:``) and no swallowed placeholder (``<name>``) in the text.
3. Browser: headless Chromium opens pages with Mermaid diagrams from ``file://`` with every
   host name unresolvable (no network at all), and each diagram must be drawn (the theme
   replaces a diagram's source only once Mermaid has drawn it); screenshots land in
   site/screenshots/. Skipped, with the reason printed, when Chromium is
   not installed (``.ci/run`` installs Debian's ``chromium``).

Run by ``make docs-check`` (part of ``make test``). Exit status 1 on any failure.
"""

from __future__ import annotations

import concurrent.futures
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
#: Pages whose diagrams are drawn in the browser, and one API page, screenshotted.
BROWSER_PAGES = ("architecture/default.html", "reference/orchestration.html", "configuration.html")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
    # Offline for real: a page that reaches for a CDN fails to draw its diagrams.
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in {"href", "src"} and value:
                self.links.append(value)


def broken_links(site: Path) -> list[str]:
    """Relative links of every page that do not lead to a file."""
    problems: list[str] = []
    for page in sorted(site.rglob("*.html")):
        if page.name == "404.html":  # served by a web server for any path: root-relative links
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                kind = "a folder" if target.is_dir() else "nothing"
                problems.append(f"{page.relative_to(site)}: {link} leads to {kind}")
    return problems


def text_problems(site: Path) -> list[str]:
    """Sphinx roles shown literally, and the configuration placeholders missing."""
    problems: list[str] = []
    role = re.compile(r":(?:class|func|meth|mod|attr):`")
    for page in sorted((site / "reference").rglob("*.html")):
        if role.search(page.read_text(encoding="utf-8")):
            problems.append(f"{page.relative_to(site)}: a Sphinx role is shown literally")
    configuration = (site / "configuration.html").read_text(encoding="utf-8")
    for placeholder in ("&lt;name&gt;-platform", "[&lt;workload&gt;.capacity]"):
        if placeholder not in configuration:
            problems.append(f"configuration.html: {placeholder!r} is missing")
    return problems


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_problems(site: Path, chromium: str) -> list[str]:
    """Open each page offline; every Mermaid block must have become an SVG. The pages open in
    parallel, each in one Chromium run."""
    shots = site / "screenshots"
    shots.mkdir(exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(BROWSER_PAGES)) as pool:
        found = pool.map(lambda relative: _page_problems(site, chromium, relative), BROWSER_PAGES)
        return [problem for problems in found for problem in problems]


def _page_problems(site: Path, chromium: str, relative: str) -> list[str]:
    """One page opened in its own Chromium profile: its diagrams drawn, its screenshot taken."""
    problems: list[str] = []
    shots = site / "screenshots"
    page = site / relative
    url = page.as_uri()
    expected = page.read_text(encoding="utf-8").count('class="mermaid"')
    with tempfile.TemporaryDirectory(prefix="fm-docs-chromium-") as profile:
        common = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        common.append("--virtual-time-budget=20000")
        name = relative.replace("/", "-").removesuffix(".html")
        # One run both prints the DOM and takes the screenshot, once the budget has run out.
        dom = subprocess.run(
            [
                *common,
                "--dump-dom",
                "--window-size=1400,1800",
                f"--screenshot={shots / name}.png",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
    # The theme swaps each <pre class="mermaid"> for a <div class="mermaid"> holding the
    # drawn SVG in a closed shadow root, and only once Mermaid has drawn it: a page that
    # could not load the library keeps the <pre> with the diagram's source as text.
    drawn = len(re.findall(r'<div class="mermaid"></div>', dom))
    if expected and drawn < expected:
        problems.append(f"{relative}: {drawn} of {expected} Mermaid diagrams drawn offline")
    if "flowchart LR" in dom and drawn == 0:
        problems.append(f"{relative}: the diagram source is shown as text")
    if not (shots / f"{name}.png").is_file():
        problems.append(f"{relative}: no screenshot taken")
    return problems


def main() -> int:
    if not (SITE / "index.html").is_file():
        print("docs-check: site/ is not built; run make docs first", file=sys.stderr)
        return 1
    problems = broken_links(SITE) + text_problems(SITE)
    chromium = os.environ.get("CHROMIUM") or _chromium()
    if chromium is None:
        print("docs-check: browser check skipped: no chromium on PATH (apt-get install chromium)")
    else:
        problems += browser_problems(SITE, chromium)
    for problem in problems:
        print(f"docs-check: {problem}", file=sys.stderr)
    if not problems:
        checked = "links, text" + ("" if chromium is None else ", diagrams in Chromium")
        print(f"docs-check: site/ OK ({checked})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
