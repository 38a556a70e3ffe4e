#!/usr/bin/env python3
"""What each page of a built site weighs, and how long a slow phone takes to show it.

Usage: .venv/bin/python scripts/page_weight.py [--site SITE_DIR] [--rounds 3] [--json]

Without --site it builds the repository's site first (`mkdocs build` into a temporary folder).
For every page the navigation lists it prints the HTML bytes and their gzip size, and for the
site the bytes of Material's search index (`search/search_index.json`) and that per lesson.
Then, in Debian's Chromium (headless, driven by Playwright), each page is loaded at 390 px wide
with the CPU slowed 4x (the DevTools protocol's Emulation.setCPUThrottlingRate), from a local
HTTP server, with a fresh browser context each time (no cache): DOMContentLoaded (the navigation
timing's domContentLoadedEventEnd) and the largest contentful paint, both in ms from the start
of the navigation. The pages are loaded in turn, round after round (`--rounds`), so a slow
moment of a shared machine falls on every page alike; each figure is the median of its rounds.
`dcl_ratio` is paired by round: the median, over rounds, of a lesson page's load over the lightest
lesson's (the smallest median) in the same round.

A lesson page is a page of mkdocs.yml's nav that cites evidence (lessonkit's check of it cites a
run), as tests/test_light_pages.py defines it; its share of the search index is the bytes of
its entries (its location and its sections'). The lessons DOMContentLoaded is compared with are
the lesson pages a learner opens day by day: not the home page, which quotes lessons to introduce
them, nor the reference pages (`reference/...`), which quote evidence to describe the tools
(`course_lessons`); beside an almost empty page every lesson would be "heavy". The budgets of
issue 29 (at most 400 KB of HTML a lesson page, at most 60 KB of search index a lesson page,
DOMContentLoaded of each lesson page within 1.5x of the lightest lesson's) are printed as held or
not; the exit status is 1 when one fails. tests/test_light_pages.py holds the site to the same
budgets with these functions.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTH, HEIGHT, SLOWDOWN = 390, 844, 4
HTML_BUDGET = 400 * 1000          # bytes of HTML a lesson page
SEARCH_BUDGET = 60 * 1000         # bytes of search index a lesson
DCL_BUDGET = 1.5                  # a lesson's DOMContentLoaded over the lightest lesson's


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def build(dest: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(dest)], cwd=REPO,
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"page_weight: the site did not build:\n{done.stderr}")


def pages(site: Path) -> list[str]:
    """The URL path of each page of the built site ('' for the home page), 404 page left out."""
    found = [p.parent.relative_to(site).as_posix() for p in site.rglob("index.html")]
    return sorted("" if p == "." else p + "/" for p in found)


def lesson_paths(site: Path) -> set[str]:
    """The URL paths of the nav's pages that cite evidence, less those of a lesson not recorded yet."""
    sys.path.insert(0, str(REPO))
    from lessonkit.site.check import CheckedSite
    from lessonkit.site.config import nav_pages
    from lessonkit.site.verify import built_page

    session = CheckedSite(REPO)
    session.refresh()
    found = set()
    for name, _ in nav_pages((REPO / "mkdocs.yml").read_text(encoding="utf-8")):
        built = built_page(site, name)
        result = session.check_page_file(f"docs/{name}", REPO / "docs" / name) if built is not None else None
        if result is not None and result.cited and not result.unrecorded:
            found.add(built.parent.relative_to(site).as_posix().removeprefix(".") + "/" if built.name == "index.html"
                      else built.relative_to(site).as_posix())
    return {p.lstrip("/") for p in found}


def course_lessons(lesson_pages: Iterable[str]) -> list[str]:
    """The lessons among `lesson_pages` (URL paths): less the home page and the reference pages."""
    return sorted(p for p in lesson_pages if p != "" and not p.startswith("reference/"))


def dcl_ratios(dcl_ms: dict[str, float], lessons: Iterable[str],
               rounds: dict[str, list[float]] | None = None) -> dict[str, float]:
    """Each page's DOMContentLoaded (`dcl_ms`, medians by URL path) over that of the lightest of `lessons`
    (the smallest median) in the same run. With `rounds` (each page's loads, round by round, the pages
    loaded in turn within a round), the ratios are paired: the median over rounds of a page's load over
    the lightest's in the same round, so a slow moment of a shared machine, which falls on one round,
    weighs on both sides of its ratio."""
    lightest = min(lessons, key=lambda p: dcl_ms[p])
    if rounds is None:
        return {p: round(ms / dcl_ms[lightest], 2) for p, ms in dcl_ms.items()}
    return {p: round(statistics.median(a / b for a, b in zip(rounds[p], rounds[lightest], strict=True)), 2)
            for p in dcl_ms}


def weights(site: Path) -> dict:
    """Bytes per page, its share of the search index, and the index's whole size."""
    lessons = lesson_paths(site)
    index = site / "search" / "search_index.json"
    entries = json.loads(index.read_text(encoding="utf-8"))["docs"] if index.exists() else []
    per_page = {}
    for path in pages(site):
        data = (site / path / "index.html").read_bytes()
        share = sum(len(json.dumps(e, separators=(",", ":"))) for e in entries if e["location"].split("#")[0] == path)
        per_page[path] = {"html_bytes": len(data), "gzip_bytes": len(gzip.compress(data, 6)),
                          "search_bytes": share, "lesson": path in lessons}
    return {"pages": per_page, "search_bytes": index.stat().st_size if index.exists() else 0,
            "lessons": len(lessons)}


# Read once the page has loaded (so DOMContentLoaded has ended), after the next frame and a moment
# more, for the largest paint, which the browser reports after the frame that shows it.
_TIMING_JS = """() => new Promise(resolve => {
  let lcp = null;
  new PerformanceObserver(list => { for (const e of list.getEntries()) lcp = e.startTime; })
    .observe({type: 'largest-contentful-paint', buffered: true});
  const nav = performance.getEntriesByType('navigation')[0];
  requestAnimationFrame(() => setTimeout(() => resolve({dcl: nav.domContentLoadedEventEnd, lcp: lcp}), 50));
})"""


_DCL_JS = "() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
_DCL_ENDED_JS = "() => performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd > 0"


def browser_timings(site: Path, paths: list[str], rounds: int, lcp: bool = True) -> dict[str, dict[str, float | None]]:
    """Median DOMContentLoaded and largest paint (ms) of each page, pages alternating round by round, and
    each page's DOMContentLoaded in each round (`dcl_rounds`, in order).
    With `lcp` false, only DOMContentLoaded: read as soon as its handlers have run (polled), without
    waiting for the page's load or a paint."""
    from playwright.sync_api import sync_playwright

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    samples: dict[str, dict[str, list[float]]] = {p: {"dcl": [], "lcp": []} for p in paths}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for _ in range(rounds):
                for path in paths:
                    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                    page = context.new_page()
                    cdp = context.new_cdp_session(page)
                    cdp.send("Emulation.setCPUThrottlingRate", {"rate": SLOWDOWN})
                    if lcp:
                        page.goto(base + path, wait_until="load")
                        got = page.evaluate(_TIMING_JS)
                    else:
                        page.goto(base + path, wait_until="domcontentloaded")
                        page.wait_for_function(_DCL_ENDED_JS)  # polls until the event's handlers have run
                        got = {"dcl": page.evaluate(_DCL_JS), "lcp": None}
                    samples[path]["dcl"].append(got["dcl"])
                    if got["lcp"] is not None:
                        samples[path]["lcp"].append(got["lcp"])
                    context.close()
            browser.close()
    finally:
        server.shutdown()
    return {p: {k: (round(statistics.median(v), 1) if v else None) for k, v in s.items()} | {"dcl_rounds": s["dcl"]}
            for p, s in samples.items()}


def measure(site: Path, rounds: int, browser: bool = True) -> dict:
    result = weights(site)
    if browser:
        timed = browser_timings(site, list(result["pages"]), rounds)
        for path, figures in timed.items():
            result["pages"][path].update(dcl_ms=figures["dcl"], lcp_ms=figures["lcp"])
        per_round = {p: f["dcl_rounds"] for p, f in timed.items()}
        lessons = [p for p, f in result["pages"].items() if f["lesson"]]
        course = course_lessons(lessons)
        if course:
            ratios = dcl_ratios({p: result["pages"][p]["dcl_ms"] for p in lessons}, course, per_round)
            for p in lessons:
                result["pages"][p]["dcl_ratio"] = ratios[p]
            result["lightest_lesson"] = min(course, key=lambda p: result["pages"][p]["dcl_ms"])
    result["rounds"] = rounds
    return result


def budgets(result: dict) -> dict[str, bool]:
    lessons = {p: f for p, f in result["pages"].items() if f["lesson"]}
    held = {
        "every lesson page at most 400 KB of HTML": all(f["html_bytes"] <= HTML_BUDGET for f in lessons.values()),
        "search index at most 60 KB a lesson page": all(f["search_bytes"] <= SEARCH_BUDGET for f in lessons.values()),
    }
    if all("dcl_ratio" in f for f in lessons.values()):
        held["DOMContentLoaded of each lesson page within 1.5x of the lightest lesson"] = all(
            f["dcl_ratio"] <= DCL_BUDGET for f in lessons.values())
    return held


def table(result: dict) -> str:
    rows = ["| page | lesson | HTML KB | gzip KB | search KB | DCL ms | LCP ms | DCL / lightest |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    def cell(f: dict, key: str) -> str:
        return "" if f.get(key) is None else f"{f[key]:,}"

    for path, f in result["pages"].items():
        rows.append(f"| /{path} | {'yes' if f['lesson'] else 'no'} | {f['html_bytes'] / 1000:,.0f} | "
                    f"{f['gzip_bytes'] / 1000:,.0f} | {f['search_bytes'] / 1000:,.1f} | {cell(f, 'dcl_ms')} | {cell(f, 'lcp_ms')} | {cell(f, 'dcl_ratio')} |")
    rows.append(f"\nsearch/search_index.json: {result['search_bytes'] / 1000:,.0f} KB in all; "
                f"{result['lessons']} lesson pages")
    if result.get("lightest_lesson") is not None:
        rows.append(f"DCL / lightest: over /{result['lightest_lesson']}, the lightest lesson "
                    f"(medians of {result['rounds']} rounds)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build the repository's)")
    parser.add_argument("--rounds", type=int, default=3, help="loads of each page, pages alternating")
    parser.add_argument("--no-browser", action="store_true", help="bytes only")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="page-weight-") as tmp:
        site = args.site
        if site is None:
            site = Path(tmp) / "site"
            build(site)
        result = measure(site, args.rounds, browser=not args.no_browser)
    held = budgets(result)
    result["budgets"] = held
    print(json.dumps(result) if args.json else table(result), flush=True)
    for name, ok in held.items():
        print(f"{'holds' if ok else 'FAILS'}: {name}", file=sys.stderr)
    return 0 if all(held.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
