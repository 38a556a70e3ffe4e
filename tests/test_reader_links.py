"""What a reader of a Material site expects of it, in the real site built for a sub-path and opened
in headless Chromium: a sitemap of every page at the site's address, previous and next links at
the foot of each page in the nav's order, a Source link on each lesson page that leads to the
program's own bytes, an edit link only where a repository is named, and a 404 page that is
styled where the site is served under a sub-path (screenshots of it in tests/artifacts/).
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from http import HTTPStatus
from pathlib import Path

import pytest
from conftest import REPO, mkdocs_build
from test_browser import ARTIFACTS, DESKTOP, MOBILE, SCHEMES, blocking_violations, open_page

from lessonkit.site.config import nav_pages
from lessonkit.site.programs import program_files

PREFIX = "/course/"
SETTINGS = ("LESSONKIT_SITE_URL", "LESSONKIT_REPO_URL", "LESSONKIT_EDIT_URI")
# The programs each page shows (its Source links); a page not named here shows none.
PROGRAMS = {
    "day27-global-reduction.md": ["day27-global-reduction"],
    "day62-racecheck.md": ["day62-racecheck"],
    "deeper-weak-behaviours.md": ["deeper-weak-memory"],
    "reference/harness.md": ["day62-racecheck"],  # cites Day 62's evidence, shows no region
    "index.md": [],  # the home page introduces lessons: it has no program of its own
    "reference/checking.md": [],  # its directives are examples, shown escaped
    "reference/writing-a-lesson.md": [],
}
# Material's header from its own stylesheet, in the site's primary colour from lessonkit.css.
HEADER_STYLE_JS = """() => {
  const header = getComputedStyle(document.querySelector(".md-header"));
  return {position: header.position, background: header.backgroundColor};
}"""


class SubPathSite(http.server.SimpleHTTPRequestHandler):
    """Serves a built site under PREFIX, as a host serving it at a sub-path does: any other path,
    and any missing file, is answered with the site's 404.html and status 404."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self):
        if not urllib.parse.urlsplit(self.path).path.startswith(PREFIX):
            self.send_error(HTTPStatus.NOT_FOUND)
            return None
        return super().send_head()

    def translate_path(self, path: str) -> str:
        return super().translate_path("/" + urllib.parse.urlsplit(path).path.removeprefix(PREFIX))

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        if code != HTTPStatus.NOT_FOUND:
            super().send_error(code, message, explain)
            return
        body = (Path(self.directory) / "404.html").read_bytes()
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def build(out: Path, **settings: str) -> None:
    """Build the real site into `out` with exactly these LESSONKIT_* settings in the environment."""
    with pytest.MonkeyPatch.context() as env:
        for name in SETTINGS:
            if name in settings:
                env.setenv(name, settings[name])
            else:
                env.delenv(name, raising=False)
        done = mkdocs_build(REPO, "--strict", "-d", str(out))
    assert done.returncode == 0, done.stderr


@pytest.fixture(scope="module")
def course_site(tmp_path_factory):
    """The site built for http://127.0.0.1:PORT/course/ and served there: (its address, its folder)."""
    out = tmp_path_factory.mktemp("course")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(SubPathSite, directory=str(out)))
    url = f"http://127.0.0.1:{server.server_address[1]}{PREFIX}"
    build(out, LESSONKIT_SITE_URL=url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield url, out
    server.shutdown()
    thread.join()
    server.server_close()


_SHOWN_RE = re.compile(r"""(?<!\\)\{\{\s*(?:region|diagram)\s+([\w.-]+)/|@\s*([\w.-]+)/[\w./-]+\.(?:cu|cuh|cpp|h|py)\s*:""")


def programs_of(name: str) -> list[str]:
    """The lessons whose programs page `name` shows: as listed above, or, for a page added later, the
    lessons its regions, diagrams and constant claims name in its Markdown."""
    if name in PROGRAMS:
        return PROGRAMS[name]
    text = (REPO / "docs" / name).read_text(encoding="utf-8")
    return sorted({a or b for a, b in _SHOWN_RE.findall(text)})


_NOINDEX = '<meta name="robots" content="noindex">'


def built_html(out: Path, name: str) -> str:
    """The built page of `name` (relative to docs/) in the site folder `out`."""
    stem = name.removesuffix(".md")
    page = out / ("index.html" if stem == "index" else stem.removesuffix("/index") + "/index.html")
    return page.read_text(encoding="utf-8")


def nav() -> list[str]:
    """The pages of mkdocs.yml's nav, in its order (relative to docs/)."""
    return [name for name, _ in nav_pages((REPO / "mkdocs.yml").read_text(encoding="utf-8"))]


def page_url(site_url: str, name: str) -> str:
    """The address of page `name` (relative to docs/) with directory URLs."""
    stem = name.removesuffix(".md")
    return site_url + ("" if stem == "index" else stem.removesuffix("/index") + "/")


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_the_sitemap_lists_every_page_at_the_sites_address(course_site):
    url, out = course_site
    locations = [e.text for e in ET.parse(out / "sitemap.xml").getroot().iter(
        "{http://www.sitemaps.org/schemas/sitemap/0.9}loc")]
    unrecorded = {name for name in nav() if _NOINDEX in built_html(out, name)}  # a lesson not recorded yet
    assert {page_url(url, name) for name in nav() if name not in unrecorded} <= set(locations)
    assert not {page_url(url, name) for name in unrecorded} & set(locations)
    assert [loc for loc in locations if not loc.startswith(url)] == []
    assert [(loc, status) for loc in locations if (status := fetch(loc)[0]) != HTTPStatus.OK] == []


def test_each_page_links_its_neighbours_in_the_nav_and_its_programs(course_site, browser):
    url, _ = course_site
    pages = nav()
    assert set(PROGRAMS) <= set(pages)
    found = []
    for i, name in enumerate(pages):
        page, problems = open_page(browser, page_url(url, name))
        links = {rel: page.locator(f"a.md-footer__link--{rel}").evaluate_all("links => links.map(a => a.href)")
                 for rel in ("prev", "next")}
        sources = page.locator("a.lk-source").evaluate_all("links => links.map(a => [a.href, a.innerText.trim()])")
        found.append((name, links, sources, problems))
        page.context.close()
    assert found == [
        (name, {"prev": [page_url(url, pages[i - 1])] if i > 0 else [],
                "next": [page_url(url, pages[i + 1])] if i + 1 < len(pages) else []},
         [[f"{url}code/{lesson}/", "Source"] for lesson in programs_of(name)], [])
        for i, name in enumerate(pages)]


@pytest.mark.parametrize("lesson", sorted({lesson for lessons in PROGRAMS.values() for lesson in lessons}))
def test_the_source_link_leads_to_the_programs_bytes(course_site, browser, lesson: str):
    url, _ = course_site
    name = next(name for name, lessons in PROGRAMS.items() if lesson in lessons)
    page, problems = open_page(browser, page_url(url, name))
    page.locator("a.lk-source").click()
    page.wait_for_url(f"{url}code/{lesson}/")
    page.wait_for_load_state("networkidle")
    problems.settle(page)
    assert page.locator("h1 code").inner_text() == f"code/{lesson}/"
    rows = page.locator("article table a").evaluate_all("links => links.map(a => [a.innerText, a.href])")
    expected = program_files(REPO, lesson)
    assert [text for text, _ in rows] == [f.name for f in expected]
    assert "runs.toml" in {f.name for f in expected} and "README.md" not in {f.name for f in expected}
    assert any(f.name.endswith(".cu") for f in expected)
    for (_, href), file in zip(rows, expected, strict=True):
        answer = page.request.get(href)
        assert (answer.status, answer.body()) == (HTTPStatus.OK, file.path.read_bytes()), href
    assert blocking_violations(page, f"code/{lesson}/") == []
    assert problems == []


def test_the_edit_link_is_there_only_when_a_repository_is_named(course_site, tmp_path: Path):
    _, plain = course_site
    edits = re.compile(r"""<a\ href="(?P<href>[^"]*)"\ title="Edit\ this\ page"[^>]*\ rel="edit">""", re.VERBOSE)
    assert [p for p in plain.rglob("*.html") if 'rel="edit"' in p.read_text(encoding="utf-8")] == []
    out = tmp_path / "site"
    build(out, LESSONKIT_REPO_URL="https://git.example.org/gpu/100-days", LESSONKIT_EDIT_URI="edit/main/docs/")
    for name in nav():
        html = (out / page_url("", name) / "index.html").read_text(encoding="utf-8")
        assert [m.group("href") for m in edits.finditer(html)] == [
            f"https://git.example.org/gpu/100-days/edit/main/docs/{name}"], name
    for program in (out / "code").glob("*/index.html"):  # made by the hooks: no file to edit
        assert 'rel="edit"' not in program.read_text(encoding="utf-8")
    # No LESSONKIT_SITE_URL: the sitemap names the address `mkdocs serve` serves the site at.
    assert "<loc>http://127.0.0.1:8000/day62-racecheck/</loc>" in (out / "sitemap.xml").read_text(encoding="utf-8")


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("width", [DESKTOP, MOBILE])
def test_the_404_page_is_styled_under_a_sub_path(course_site, browser, scheme: str, width: int):
    url, _ = course_site
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    missing = f"{url}no/such/page/"
    failed: list[str] = []  # what the page loads besides itself (its own answer is the 404)
    page.on("requestfailed", lambda r: failed.append(f"failed: {r.url}"))
    page.on("response", lambda r: failed.append(f"{r.status}: {r.url}") if r.status >= 400 and r.url != missing else None)
    page.on("pageerror", lambda e: failed.append(f"page error: {e}"))
    answer = page.goto(missing, wait_until="networkidle")
    assert answer.status == HTTPStatus.NOT_FOUND
    assert page.locator("h1").inner_text() == "404 - Not found"
    assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == SCHEMES[scheme]
    assert page.evaluate(HEADER_STYLE_JS) == {"position": "sticky", "background": "rgb(0, 105, 92)"}
    # Every stylesheet the page names came from the site (a 404.html in its place would not parse as CSS).
    sheets = page.evaluate("[...document.querySelectorAll('link[rel=stylesheet]')].map(l => [l.href, !!l.sheet])")
    assert len(sheets) >= 3 and all(loaded and href.startswith(url) for href, loaded in sheets), sheets
    assert blocking_violations(page, f"404 ({scheme}, {width} px)") == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    links = page.locator("a[href]").evaluate_all("links => links.map(a => a.href)")
    inside = sorted({link.split("#")[0] for link in links if link.startswith(url)})
    assert page_url(url, "day62-racecheck.md") in inside
    assert [(link, status) for link in inside if (status := fetch(link)[0]) != HTTPStatus.OK] == []
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"404-course-{scheme}-{width}.png"), full_page=True)
    assert failed == []
    context.close()
