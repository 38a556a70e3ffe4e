"""The real site in headless Chromium: every page in both colour schemes passes axe-core's
serious and critical rules, fits a 390 px screen, loads cleanly; code regions wrap, keep their
file line numbers and copy as the file's text; a transcript opens. Screenshots of every page
at 1280 and 390 px in both schemes go to tests/artifacts/ (gitignored) for a person to look at.
"""

from __future__ import annotations

import functools
import http.server
import re
import textwrap
import threading
from pathlib import Path

import pytest
from conftest import REPO

from lessonkit.pages.regions import parse_regions

ARTIFACTS = REPO / "tests" / "artifacts"
DESKTOP, MOBILE = 1280, 390
# prefers-color-scheme as the browser reports it -> the Material scheme the page must then show
SCHEMES = {"light": "default", "dark": "slate"}
BLOCKING = ("serious", "critical")


class Quiet(http.server.SimpleHTTPRequestHandler):
    """Serves the built site without logging every request to stderr."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served_site(built_site: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(built_site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def site_pages(site: Path) -> list[str]:
    """The URL path of every page of the built site, "" for the home page."""
    pages = [p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")]
    return sorted("" if p == "." else p + "/" for p in pages)


def artifact_name(path: str) -> str:
    return path.strip("/").replace("/", "-") or "index"


def open_page(browser, url: str, width: int = DESKTOP, scheme: str = "light"):
    """A page loaded at `width` px in `scheme`, and the list its load problems go to."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(url, wait_until="networkidle")
    return page, problems


def blocking_violations(page, where: str) -> list[str]:
    """axe-core's serious and critical findings on `page`, one line per rule and element."""
    from axe_playwright_python.sync_playwright import Axe
    results = Axe().run(page).response
    return [f"{where}: {v['impact']} {v['id']} at {', '.join(map(str, node['target']))}: {v['help']}"
            for v in results["violations"] if v["impact"] in BLOCKING for node in v["nodes"]]


# The geometry of code blocks, measured in the page: copy buttons beside or above the code,
# region lines that wrap instead of scrolling, each number level with the first row of its line.
CODE_GEOMETRY_JS = """() => {
  const problems = [];
  const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  document.querySelectorAll(".md-typeset .highlight").forEach((block, i) => {
    const title = block.querySelector(".filename");
    const name = title ? title.textContent : `untitled block ${i}`;
    const grid = block.querySelector(".lk-region tr:has(> td.code)");
    const code = grid || block.querySelector("pre > code");
    const nav = block.querySelector(".md-code__nav");
    if (nav && code && overlap(nav.getBoundingClientRect(), code.getBoundingClientRect())) {
      problems.push(`${name}: the copy button covers the code`);
    }
    if (!grid) return;
    if (grid.scrollWidth > grid.clientWidth + 1) {
      problems.push(`${name}: scrolls sideways (${grid.scrollWidth} px in ${grid.clientWidth} px)`);
    }
    const numbers = [...block.querySelectorAll(".linenodiv pre > span:not(:empty)")];
    const lines = [...block.querySelectorAll("td.code code > span")];
    if (numbers.length !== lines.length) {
      problems.push(`${name}: ${numbers.length} line numbers for ${lines.length} lines`);
    }
    numbers.forEach((n, k) => {
      const line = lines[k];
      if (line && Math.abs(n.getBoundingClientRect().top - line.getBoundingClientRect().top) > 1) {
        problems.push(`${name}: line number ${n.textContent} is not level with its line`);
      }
    });
  });
  return problems;
}"""


def test_every_page_in_both_schemes(served_site, built_site, browser):
    """axe-core, page width, load problems and code geometry, at both widths in both schemes."""
    ARTIFACTS.mkdir(exist_ok=True)
    pages = site_pages(built_site)
    assert {"", "day62-racecheck/", "deeper-weak-behaviours/"} <= set(pages)
    failures: list[str] = []
    for path in pages:
        for scheme, material_scheme in SCHEMES.items():
            for width in (DESKTOP, MOBILE):
                where = f"/{path} ({scheme}, {width} px)"
                page, problems = open_page(browser, f"{served_site}/{path}", width, scheme)
                shown = page.evaluate("document.body.getAttribute('data-md-color-scheme')")
                if shown != material_scheme:
                    failures.append(f"{where}: shows colour scheme {shown!r}; expected {material_scheme!r}")
                if page.locator("h1").count() != 1:
                    failures.append(f"{where}: {page.locator('h1').count()} h1 elements; expected 1")
                failures += blocking_violations(page, where)
                scroll_width = page.evaluate("document.documentElement.scrollWidth")
                if scroll_width > width:
                    failures.append(f"{where}: the page is {scroll_width} px wide; expected at most {width}")
                failures += [f"{where}: {p}" for p in page.evaluate(CODE_GEOMETRY_JS)]
                page.screenshot(path=str(ARTIFACTS / f"{artifact_name(path)}-{scheme}-{width}.png"), full_page=True)
                failures += [f"{where}: {p}" for p in problems]
                page.context.close()
    assert failures == []


def racy_region(page):
    return page.locator(".lk-region", has=page.locator("th.filename", has_text="(racy-step)"))


def test_day62_page_in_chromium(served_site, browser):
    page, problems = open_page(browser, f"{served_site}/day62-racecheck/")
    # The racy region is numbered with racecheck.cu's own lines and names the file and range.
    racy = racy_region(page)
    assert racy.locator("th.filename").inner_text().startswith("racecheck.cu, lines 49")
    numbers = racy.locator("td.linenos").inner_text().split()
    assert numbers[0] == "49" and "52" in numbers
    # The highlighted line is the one racecheck names.
    assert "tile[tid] += tile[tid - offset]" in racy.locator(".hll").inner_text()
    # Every diagram is displayed inline, at a readable width, its figures marked as produced.
    diagrams = page.locator("figure.lk-figure .lk-diagram svg")
    assert diagrams.count() >= 3
    for i in range(diagrams.count()):
        svg = diagrams.nth(i)
        assert svg.bounding_box()["width"] > 300 and svg.bounding_box()["height"] > 200
    assert "{{" not in page.locator("figure.lk-figure").first.inner_html()
    assert page.locator("figure.lk-figure .lk-diagram tspan.lk-v").count() > 5
    # A collapsed transcript, titled in plain words, opens when clicked and holds every recording.
    details = page.locator("details", has=page.locator(
        "> summary", has_text="racecheck, analysis mode, buggy kernels (5 recordings")).first
    assert details.get_attribute("open") is None
    details.locator("> summary").click()
    assert details.get_attribute("open") is not None
    assert "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" in details.inner_text()
    assert "Recording 5 of 5" in details.inner_text()
    assert problems == []


@pytest.mark.parametrize("width", [DESKTOP, MOBILE])
def test_region_copies_as_the_file_says(served_site, browser, width):
    """The copy button copies the region's lines, dedented, one line break each, wrapped or not."""
    source = REPO / "code" / "day62-racecheck" / "racecheck.cu"
    region = parse_regions(source.read_text(encoding="utf-8"), "racecheck.cu")["racy-step"]
    page, problems = open_page(browser, f"{served_site}/day62-racecheck/", width)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served_site)
    racy = racy_region(page)
    # At 390 px long lines wrap (a line is more than one row high), at 1280 px none does.
    rows = racy.locator("td.code code > span").evaluate_all(
        "lines => lines.map(l => l.getBoundingClientRect().height / parseFloat(getComputedStyle(l).lineHeight))")
    assert any(r > 1.5 for r in rows) == (width == MOBILE)
    racy.locator(".md-code__button").click()
    assert page.evaluate("navigator.clipboard.readText()") == textwrap.dedent(region.text).rstrip()
    assert problems == []


def test_search_dialog_override_follows_material():
    """overrides/partials/search.html is Material's own partial plus the dialog's aria-label."""
    import material
    theirs = (Path(material.__file__).parent / "templates" / "partials" / "search.html").read_text(encoding="utf-8")
    ours = (REPO / "overrides" / "partials" / "search.html").read_text(encoding="utf-8")
    comment = re.compile(r"""\A\{\#-.*?-\#\}\n""", re.DOTALL)
    dialog = '<div class="md-search" data-md-component="search" role="dialog"'
    labelled = dialog + ' aria-label="{{ lang.t(\'search\') }}"'
    assert comment.sub("", ours) == comment.sub("", theirs).replace(dialog, labelled, 1)
