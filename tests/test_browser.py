"""The real site in headless Chromium: no console errors, file line numbers, the diagram, a transcript that opens."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest

from conftest import REPO, mkdocs_build

ARTIFACTS = REPO / "tests" / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def served_site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    done = mkdocs_build(REPO, "--strict", "-d", str(out))
    assert done.returncode == 0, done.stderr
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    page.goto(url, wait_until="networkidle")
    return page, problems


def test_day62_page_in_chromium(served_site, browser):
    page, problems = open_page(browser, f"{served_site}/day62-racecheck/")
    # The racy region is numbered with racecheck.cu's own lines and names the file and range.
    racy = page.locator("table.highlighttable", has=page.locator("th.filename", has_text="(racy-step)"))
    assert racy.locator("th.filename").inner_text().startswith("racecheck.cu, lines 49")
    numbers = racy.locator("td.linenos").inner_text().split()
    assert numbers[0] == "49" and "52" in numbers
    # The highlighted line is the one racecheck names.
    assert "tile[tid] += tile[tid - offset]" in racy.locator(".hll").inner_text()
    # The diagram is displayed.
    img = page.locator("figure.lk-figure img")
    assert img.evaluate("i => i.complete && i.naturalWidth > 0")
    assert img.bounding_box()["width"] > 300
    # A collapsed transcript opens when clicked.
    details = page.locator("details", has=page.locator("summary", has_text="Transcript day62-racecheck/racecheck-buggy-analysis"))
    assert details.get_attribute("open") is None
    details.locator("summary").click()
    assert details.get_attribute("open") is not None
    assert "RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)" in details.inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "day62-racecheck.png"), full_page=True)
    assert problems == []


@pytest.mark.parametrize("path", ["", "reference/harness/", "reference/checking/", "deeper-weak-behaviours/"])
def test_other_pages_load_cleanly(served_site, browser, path):
    page, problems = open_page(browser, f"{served_site}/{path}")
    assert page.locator("h1").count() == 1
    assert problems == []
