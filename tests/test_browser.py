"""The real site in headless Chromium: every page in both colour schemes passes axe-core's
rules (every impact), fits a 390 px screen, loads cleanly; code regions wrap, keep their file
line numbers and copy as the file's text; a transcript opens. With LESSONKIT_SCREENSHOTS=1,
screenshots of every page at 1280 and 390 px in both schemes go to tests/artifacts/
(gitignored) for a person to look at; they assert nothing, so CI does not take them.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO

from lessonkit.pages.regions import parse_regions

ARTIFACTS = REPO / "tests" / "artifacts"
SCREENSHOTS = os.environ.get("LESSONKIT_SCREENSHOTS") == "1"  # a person's look at every page, not a check
DESKTOP, MOBILE = 1280, 390
# prefers-color-scheme as the browser reports it -> the Material scheme the page must then show
SCHEMES = {"light": "default", "dark": "slate"}
# Every impact axe-core reports: a moderate finding (a landmark for each listing, none named) is a
# finding too.
BLOCKING = ("minor", "moderate", "serious", "critical")


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


class LoadProblems(list):
    """A page's load problems (console errors, page errors, failed requests) as they come, and the
    requests it made that have not ended."""

    def __init__(self, page) -> None:
        super().__init__()
        self.open: set = set()
        page.on("request", lambda r: self.open.add(r))
        page.on("requestfinished", lambda r: self.open.discard(r))
        page.on("requestfailed", lambda r: self._failed(r))
        page.on("console", lambda m: self.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.append(f"page error: {e}"))

    def _failed(self, request) -> None:
        self.open.discard(request)
        self.append(f"request failed: {request.url}")

    def settle(self, page, timeout_s: float = 30.0) -> None:
        """Poll until every request the page made so far has ended: what Playwright's
        "networkidle" waits for, without its half second of quiet after the last one."""
        deadline = time.monotonic() + timeout_s
        while self.open:
            assert time.monotonic() < deadline, f"still loading: {sorted(r.url for r in self.open)}"
            page.wait_for_timeout(10)  # Playwright delivers the page's events while it waits


def open_page(browser, url: str, width: int = DESKTOP, scheme: str = "light"):
    """A page loaded at `width` px in `scheme` (its load event fired and every request it made by
    then ended), and the list its load problems go to."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    problems = LoadProblems(page)
    # networkidle: the favicon is asked for after the load event, and leaving the page before it
    # came would abort it (a failed request no site change caused).
    page.goto(url, wait_until="networkidle")
    problems.settle(page)
    return page, problems


def blocking_violations(page, where: str) -> list[str]:
    """axe-core's findings on `page`, of every impact, one line per rule and element."""
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


SHARDS = 4  # the pages in this many tests, which pytest-xdist runs side by side


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_page_in_both_schemes(shard, served_site, built_site, browser):
    """axe-core, page width, load problems and code geometry, at both widths in both schemes: every
    page of the built site is in exactly one shard (its index in the sorted list, modulo SHARDS)."""
    ARTIFACTS.mkdir(exist_ok=True)
    pages = site_pages(built_site)
    assert {"", "day62-racecheck/", "deeper-weak-behaviours/"} <= set(pages)
    failures: list[str] = []
    for path in pages[shard::SHARDS]:
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
                if SCREENSHOTS:
                    page.screenshot(path=str(ARTIFACTS / f"{artifact_name(path)}-{scheme}-{width}.png"), full_page=True)
                problems.settle(page)  # a request made since the load has ended too
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
        "> summary", has_text="racecheck, analysis mode, buggy kernels (")).first
    assert details.get_attribute("open") is None
    details.locator("> summary").click()
    assert details.get_attribute("open") is not None
    assert "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" in details.inner_text()
    n = int(re.search(r"\((\d+) recordings", details.locator("> summary").inner_text()).group(1))
    assert n >= 10 and details.locator("table.lk-recordings > tbody > tr").count() == n
    assert details.locator("table.lk-recordings a.lk-evidence").count() == n
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


# -- recordings loaded when opened ---------------------------------------------------------------

HAZARD_BOX = "racecheck, hazard mode, buggy kernels ("  # Day 62: several recordings, the first cut


def transcript_box(page, title: str):
    return page.locator("details.lk-transcript", has=page.locator("> summary", has_text=title)).first


def recording_text(built_site: Path, href: str, page_url: str = "day62-racecheck/") -> str:
    """The text of the published file that `href` (relative to the page) names, as the page shows it."""
    path = (built_site / page_url / href).resolve()
    assert path.is_relative_to(built_site / "evidence") and path.is_file(), href
    return path.read_text(encoding="utf-8").removesuffix("\n")


def test_every_recording_of_a_transcript_loads_when_opened(served_site, built_site, browser):
    """With JavaScript: each recording after the first shows its file's text below the first once
    asked for (by keyboard, from its row of the table), one at a time, a status says so, and the
    link stays; the first, shown in part, loads whole."""
    page, problems = open_page(browser, f"{served_site}/day62-racecheck/")
    box = transcript_box(page, HAZARD_BOX)
    box.locator("> summary").focus()
    page.keyboard.press("Enter")
    assert box.get_attribute("open") is not None
    rows = box.locator("table.lk-recordings > tbody > tr")
    n = rows.count()
    assert n >= 3
    assert rows.nth(0).locator("button").count() == 0  # the first is on the page already
    for k in range(1, n):  # Recording 2 of n .. n of n
        link = rows.nth(k).locator("a.lk-evidence")
        href = link.get_attribute("href")
        assert link.inner_text() == str(k + 1)
        assert box.locator("section.lk-recording").count() == 1  # nothing loaded before it is asked for
        button = rows.nth(k).get_by_role("button", name=f"Show recording {k + 1} here")
        assert button.inner_text() == "Show"
        button.focus()
        page.keyboard.press("Enter")
        shown = box.locator("section.lk-recording").nth(1)
        code = shown.locator("pre.lk-transcript-text > samp")
        code.wait_for()  # polls until the fetched text is in
        assert code.text_content() == recording_text(built_site, href)
        assert shown.locator("> .lk-recording-file").inner_text().startswith(f"Recording {k + 1} of {n} (")
        lines = recording_text(built_site, href).count("\n") + 1
        assert shown.locator("[role=status]").text_content() == f"Loaded, {lines} lines."
        assert shown.locator("a.lk-evidence").get_attribute("href") == href  # the file stays one click away
        assert button.get_attribute("aria-expanded") == "true"
        page.keyboard.press("Enter")  # and the same button hides it again
        assert box.locator("section.lk-recording").count() == 1 and button.get_attribute("aria-expanded") == "false"
    # Showing one recording, then another, shows the second only.
    rows.nth(1).get_by_role("button").click()
    rows.nth(2).get_by_role("button").click()
    box.locator("section.lk-recording").nth(1).locator("pre").wait_for()
    assert box.locator("section.lk-recording").count() == 2
    assert rows.nth(1).get_by_role("button").get_attribute("aria-expanded") == "false"
    assert box.locator("section.lk-recording").nth(1).inner_text().startswith(f"Recording 3 of {n} (")
    # The first recording, shown in part, loads whole when asked (a button, by keyboard).
    first = box.locator("section.lk-recording").nth(0)
    more = first.locator(".lk-transcript-more")
    href = more.locator("a.lk-evidence").get_attribute("href")
    whole = recording_text(built_site, href)
    shown = first.locator("pre.lk-transcript-text > samp").text_content()
    assert whole.startswith(shown) and len(shown) < len(whole)
    button = more.get_by_role("button", name=f"Show all {whole.count(chr(10)) + 1} lines here")
    button.focus()
    page.keyboard.press("Enter")
    button.wait_for(state="hidden")  # polls: hidden once the whole text is in
    assert first.locator("pre.lk-transcript-text > samp").text_content() == whole
    assert more.locator("[role=status]").text_content() == f"Loaded, {whole.count(chr(10)) + 1} lines."
    assert page.evaluate("document.activeElement.matches('pre.lk-transcript-text > samp')")
    assert problems == []


def test_a_recording_that_fails_to_load_says_so_and_keeps_its_link(served_site, browser):
    page, problems = open_page(browser, f"{served_site}/day62-racecheck/")
    page.route("**/evidence/**", lambda route: route.fulfill(status=404, body="gone"))
    box = transcript_box(page, HAZARD_BOX)
    box.locator("> summary").click()
    box.get_by_role("button", name="Show recording 2 here").click()
    shown = box.locator("section.lk-recording").nth(1)
    status = shown.locator("[role=status].lk-load-failed")
    status.wait_for()
    assert status.text_content() == ("Could not load this recording (the server answered 404); "
                                     "the link opens its file.")
    assert shown.locator("pre").count() == 0 and shown.locator("a.lk-evidence").is_visible()
    assert [p for p in problems if "404" not in p] == []  # the browser logs the failed fetch itself


def test_without_javascript_each_recording_links_its_file(served_site, built_site, browser):
    """With JavaScript off, each row of a transcript's table of recordings links its file, and the
    link leads to the file's text; so does the first recording's note of its lines not shown."""
    context = browser.new_context(viewport={"width": DESKTOP, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{served_site}/day62-racecheck/", wait_until="load")
    box = transcript_box(page, HAZARD_BOX)
    box.locator("> summary").click()  # <details> opens without JavaScript
    rows = box.locator("table.lk-recordings > tbody > tr")
    n = rows.count()
    assert n >= 3
    assert box.locator("button").count() == 0 and box.locator("[role=status]").count() == 0
    # Row k+1 of n, then the first recording's link to its whole text.
    links = [rows.nth(k).locator("a.lk-evidence") for k in range(n)] + [box.locator(".lk-transcript-more a.lk-evidence")]
    assert [k for k, link in enumerate(links) if not link.is_visible()] == []
    hrefs = [link.get_attribute("href") for link in links]
    assert len(set(hrefs)) == n  # the first row and the note name the same file
    # A link followed as a reader does, by a click; then each link's address, without loading the page again.
    links[0].click()
    page.wait_for_load_state()
    assert page.url == f"{served_site}/{hrefs[0].removeprefix('../')}"
    for href in hrefs:
        if page.url != f"{served_site}/{href.removeprefix('../')}":
            page.goto(f"{served_site}/{href.removeprefix('../')}", wait_until="load")
        assert page.locator("body").inner_text().rstrip("\n") == recording_text(built_site, href)
    context.close()


def test_day62_with_recordings_loaded_passes_axe(served_site, browser):
    """axe-core on Day 62 at both widths in both schemes, with a transcript opened, its recordings
    loaded and its first recording shown whole (the button, the statuses, the loaded texts)."""
    failures: list[str] = []
    for scheme in SCHEMES:
        for width in (DESKTOP, MOBILE):
            where = f"/day62-racecheck/ ({scheme}, {width} px, recordings loaded)"
            page, problems = open_page(browser, f"{served_site}/day62-racecheck/", width, scheme)
            box = transcript_box(page, HAZARD_BOX)
            box.locator("> summary").click()
            box.get_by_role("button", name="Show recording 2 here").click()
            box.locator("section.lk-recording").nth(1).locator("pre.lk-transcript-text").wait_for()
            box.locator(".lk-transcript-more button").click()
            box.locator(".lk-transcript-more [role=status]").filter(has_text="Loaded").wait_for()
            failures += blocking_violations(page, where)
            failures += [f"{where}: {p}" for p in problems]
            page.context.close()
    assert failures == []


@pytest.mark.parametrize(("width", "scheme"), [(DESKTOP, "light"), (DESKTOP, "dark"), (MOBILE, "light"),
                                               (MOBILE, "dark")])
def test_what_backs_a_figure_opens_by_keyboard_and_by_tap(served_site, browser, width, scheme):
    """Every produced figure says what backs it (lessonkit.pages.meaning): focused from the keyboard
    (desktop) or tapped (phone), a tooltip shows those words and the figure names it as its
    description; Escape closes it; axe-core finds nothing serious with it open."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                  has_touch=width == MOBILE)
    page = context.new_page()
    page.goto(f"{served_site}/day62-racecheck/", wait_until="load")
    figures = page.locator(".lk-v[data-lk-why]")
    assert figures.count() > 100  # claims, generated values and table cells alike
    figure = page.locator('span.lk-v[data-lk-why*="set day62-racecheck"]').nth(20)  # one of the page's own set, in its text
    figure.scroll_into_view_if_needed()
    if width == MOBILE:
        figure.tap()
    else:
        page.keyboard.press("Tab")
        figure.focus()
    tip = page.locator("#lk-why")
    tip.wait_for(state="visible")
    words = figure.get_attribute("data-lk-why")
    assert tip.inner_text() == words and "recording" in words and "set day62-racecheck" in words
    assert figure.get_attribute("aria-describedby") == "lk-why" and tip.get_attribute("role") == "tooltip"
    box, shown = tip.bounding_box(), page.viewport_size
    assert box["x"] >= 0 and box["x"] + box["width"] <= shown["width"]  # on the screen at 390 px too
    assert blocking_violations(page, f"day62 {width} {scheme} with a figure's backing open") == []
    if SCREENSHOTS:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"day62-why-{width}-{scheme}.png"))
    page.keyboard.press("Escape")
    assert not tip.is_visible() and figure.get_attribute("aria-describedby") is None
    context.close()


@pytest.mark.parametrize("word", ["racecheck", "synccheck", "fence"])
def test_search_finds_the_lesson_sections_and_no_transcript_record(served_site, browser, word):
    """Material's search, as a reader uses it: the results for a tool's name are the sections of
    the lessons about it, not the thousands of records its transcripts hold (lessonkit.pages.render
    keeps recordings out of the index)."""
    page, problems = open_page(browser, f"{served_site}/")
    page.keyboard.press("s")  # Material's shortcut to the search box
    box = page.locator("input.md-search__input")
    box.wait_for(state="visible")
    box.type(word, delay=30)  # as typed: Material's search reads key events
    results = page.locator(".md-search-result__item")
    results.first.wait_for(state="visible", timeout=20_000)
    page.wait_for_function("() => document.querySelector('.md-search-result__meta') && "
                           "/\\d/.test(document.querySelector('.md-search-result__meta').textContent)")
    links = [a.get_attribute("href") for a in page.locator(".md-search-result__link").all()]
    texts = page.locator(".md-search-result__list").inner_text()
    pages = {href.split("#")[0].rstrip("/").rsplit("/", 1)[-1] for href in links}
    assert pages & {"day62-racecheck", "day27-global-reduction", "deeper-weak-behaviours"}, links
    for record in ("=========", "Race reported between", "hazard detected at", "Barrier error detected",
                   "threads | kernel |", "Saved host backtrace"):
        assert record not in texts, f"{word}: a transcript record in the results: {record!r}"
    assert problems == []
