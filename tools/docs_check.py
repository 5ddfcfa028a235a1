"""Check the built documentation site (site/) the way a reader opens it: from disk, offline.

1. Links: every relative ``href``/``src`` in every page resolves to a file in site/ (a link to
   a folder opens a directory listing from disk, not a page).
2. Pages: no Sphinx role (``:class:``) and no swallowed placeholder (``<name>``) in the text.
3. Self-contained: no page loads a script, style sheet, font, image or frame from outside the
   site, and no style sheet imports or points ``url()`` outside it.
4. Browser: one headless Chromium, driven over the DevTools protocol (tools/docs_browser.py),
   opens the pages from ``file://`` with every host name unresolvable (no network at all), as
   a reader's browser would (no ``--allow-file-access-from-files``). On pages with Mermaid
   diagrams each diagram must be drawn (the theme replaces a diagram's source only once
   Mermaid has drawn it). Then search, as a reader uses it: on the home page and on a nested
   page a query is typed into the search box, and the results must list the page that
   answers it and lead to files of the site. Every request the pages made must stay inside
   the site. Screenshots land in site/screenshots/. Skipped, with the reason printed, when
   Chromium is not installed (``.ci/run`` installs Debian's ``chromium``).

Run by ``make docs-check`` (part of ``make test``). Exit status 1 on any failure.
"""

from __future__ import annotations

import functools
import html.parser
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

from docs_browser import Browser, BrowserError

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
    # As a reader's browser opens a page from disk: no --allow-file-access-from-files, which
    # would let a file:// page start a Web Worker that no browser starts by default (search
    # runs in one: the iframe-worker shim stands in for it).
    # Offline for real: a page that reaches for a CDN fails to draw its diagrams or to search.
    "--host-resolver-rules=MAP * ~NOTFOUND",
)
#: Pages search is used from (the home page and one a folder down: the paths differ), the query
#: typed, and a page its results must list.
SEARCH_FROM = ("index.html", "operations/checkpoints.html")
SEARCH_QUERY = "capacity block"
SEARCH_ANSWER = "operations/capacity-blocks.html"
#: Schemes a page offline may request: its own files and what it builds in memory.
LOCAL_SCHEMES = {"file", "data", "blob", "about"}
#: ``<link rel>`` values that make the browser fetch the link's target.
FETCHING_RELS = {
    "stylesheet",
    "preload",
    "modulepreload",
    "prefetch",
    "preconnect",
    "dns-prefetch",
    "icon",
    "apple-touch-icon",
    "manifest",
}


class _Page(html.parser.HTMLParser):
    """A page's links (every ``href``/``src``), what it makes the browser fetch (scripts, style
    sheets, fonts, icons, images, frames) and its inline CSS."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.fetched: list[str] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self.links += [values[name] for name in ("href", "src") if values.get(name)]
        if tag == "link" and FETCHING_RELS & set(values.get("rel", "").lower().split()):
            self.fetched.append(values.get("href", ""))
        elif tag in {"script", "img", "iframe", "source", "audio", "video", "embed", "track"}:
            self.fetched.append(values.get("src", ""))
            self.fetched += [
                part.split()[0] for part in values.get("srcset", "").split(",") if part
            ]
        elif tag == "object":
            self.fetched.append(values.get("data", ""))
        self.styles.append(values.get("style", ""))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


@functools.cache
def _parsed(page: Path) -> _Page:
    """A page parsed once for every check that reads it."""
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(site: Path) -> list[str]:
    """Relative links of every page that do not lead to a file."""
    problems: list[str] = []
    for page in sorted(site.rglob("*.html")):
        if page.name == "404.html":  # served by a web server for any path: root-relative links
            continue
        for link in _parsed(page).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                kind = "a folder" if target.is_dir() else "nothing"
                problems.append(f"{page.relative_to(site)}: {link} leads to {kind}")
    return problems


#: ``url(...)`` and ``@import "..."`` in CSS.
_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")


def _outside(url: str) -> bool:
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or (bool(parts.scheme) and parts.scheme not in LOCAL_SCHEMES)


def _css_urls(css: str) -> list[str]:
    return [match.group(1) or match.group(2) for match in _CSS_URL.finditer(css)]


def external_resources(site: Path) -> list[str]:
    """Scripts, style sheets, fonts, images and frames loaded from outside the site, per page,
    and ``url()``/``@import`` outside it in any style sheet."""
    problems: list[str] = []
    for page in sorted(site.rglob("*.html")):
        parsed = _parsed(page)
        for url in parsed.fetched + [url for css in parsed.styles for url in _css_urls(css)]:
            if _outside(url):
                problems.append(f"{page.relative_to(site)}: loads {url} from outside the site")
    for sheet in sorted(site.rglob("*.css")):
        for url in _css_urls(sheet.read_text(encoding="utf-8")):
            if _outside(url):
                problems.append(f"{sheet.relative_to(site)}: loads {url} from outside the site")
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
    """One Chromium, offline, opens the pages in turn as a reader would: every Mermaid block of
    BROWSER_PAGES must have become an SVG, search must answer from each page of SEARCH_FROM,
    and no request may leave the site. One browser for every page: on a shared machine its
    start-up costs more than a page."""
    problems: list[str] = []
    (site / "screenshots").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fm-docs-chromium-") as profile:
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1400,1800"]
        try:
            with Browser(chromium, flags, timeout=90) as browser:
                for relative in BROWSER_PAGES:
                    problems += _diagram_problems(site, browser, relative)
                for relative in SEARCH_FROM:
                    problems += _search_from(site, browser, relative)
                problems += [
                    f"the pages requested {url} from outside the site"
                    for url in dict.fromkeys(browser.requests)
                    if urlsplit(url).scheme not in LOCAL_SCHEMES
                ]
        except BrowserError as error:
            problems.append(f"Chromium: {error}")
    return problems


#: How many Mermaid diagrams the theme has drawn: it swaps each <pre class="mermaid"> for a
#: <div class="mermaid"> holding the SVG in a closed shadow root, and only once Mermaid has
#: drawn it; a page that could not load the library keeps the <pre> with the source as text.
_DRAWN = 'document.querySelectorAll("div.mermaid").length'


def _diagram_problems(site: Path, browser: Browser, relative: str) -> list[str]:
    """One page opened: its diagrams drawn, its screenshot taken."""
    problems: list[str] = []
    page = site / relative
    expected = page.read_text(encoding="utf-8").count('class="mermaid"')
    browser.open(page.as_uri())
    drawn: int = browser.evaluate(_DRAWN)
    if drawn < expected:
        browser.wait_for(f"{_DRAWN} >= {expected}", seconds=20)
        drawn = browser.evaluate(_DRAWN)
    if expected and drawn < expected:
        problems.append(f"{relative}: {drawn} of {expected} Mermaid diagrams drawn offline")
    source_shown = browser.evaluate('document.body.innerText.includes("flowchart LR")')
    if source_shown and drawn == 0:
        problems.append(f"{relative}: the diagram source is shown as text")
    name = relative.replace("/", "-").removesuffix(".html")
    browser.screenshot(site / "screenshots" / f"{name}.png")
    return problems


#: The search results once the theme has answered: its summary line and each result's link.
_RESULTS = """(() => {
  const meta = document.querySelector(".md-search-result__meta");
  if (!meta || !/matching/.test(meta.textContent)) return null;
  const links = document.querySelectorAll(".md-search-result__item > a");
  return { meta: meta.textContent.trim(), links: [...links].map((link) => link.href) };
})()"""


def _search_from(site: Path, browser: Browser, relative: str) -> list[str]:
    """One page opened, its search box clicked, the query typed key by key, the results read
    (and screenshotted)."""
    browser.open((site / relative).as_uri())
    browser.click("input.md-search__input")
    browser.type(SEARCH_QUERY)
    results = browser.wait_for(_RESULTS, seconds=15)
    where = f"search from {relative} for {SEARCH_QUERY!r}"
    name = relative.replace("/", "-").removesuffix(".html")
    browser.screenshot(site / "screenshots" / f"search-{name}.png")
    if not results:
        summary = browser.evaluate(
            'document.querySelector(".md-search-result__meta")?.textContent.trim() ?? "none"'
        )
        return [f"{where}: no results offline (the search box says {summary!r})"]
    pages = [urlsplit(link) for link in results["links"]]
    problems = [
        f"{where}: a result leads to {link.geturl()}, not a file of the site"
        for link in pages
        if link.scheme != "file"
        or not Path(unquote(link.path)).is_relative_to(site)
        or not Path(unquote(link.path)).is_file()
    ]
    if (site / SEARCH_ANSWER).as_uri() not in {
        link._replace(fragment="").geturl() for link in pages
    }:
        problems.append(f"{where}: {SEARCH_ANSWER} is not among the results ({results['meta']})")
    return problems


def main() -> int:
    if not (SITE / "index.html").is_file():
        print("docs-check: site/ is not built; run make docs first", file=sys.stderr)
        return 1
    problems = broken_links(SITE) + text_problems(SITE) + external_resources(SITE)
    chromium = os.environ.get("CHROMIUM") or _chromium()
    if chromium is None:
        print("docs-check: browser check skipped: no chromium on PATH (apt-get install chromium)")
    else:
        problems += browser_problems(SITE, chromium)
    for problem in problems:
        print(f"docs-check: {problem}", file=sys.stderr)
    if not problems:
        checked = "links, text, no resource from outside" + (
            "" if chromium is None else ", diagrams and search in Chromium"
        )
        print(f"docs-check: site/ OK ({checked})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
