"""A built site proves itself: `verify-site --repo` renders every page again from the repository and
refuses a built page whose content differs (a figure, a table cell, a script), an HTML page the
build did not make, and a search-index entry the build did not make."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO

from lessonkit.site.verify import verify_site

DAY62 = "day62-racecheck/index.html"


def edit_figure(site: Path) -> None:
    page = site / DAY62
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<span class="lk-v"[^>]*>(\d+)</span>', text)
    page.write_text(text[:m.start(1)] + str(int(m.group(1)) + 1) + text[m.end(1):], encoding="utf-8")


def edit_cell(site: Path) -> None:
    page = site / DAY62
    text = page.read_text(encoding="utf-8")
    m = re.search(r'<td><span class="lk-v"[^>]*>([^<]+)</span></td>', text)
    page.write_text(text[:m.start(1)] + m.group(1) + " (edited)" + text[m.end(1):], encoding="utf-8")


def add_script(site: Path) -> None:
    page = site / DAY62
    text = page.read_text(encoding="utf-8")
    at = text.index("<p>", text.index("lessonkit: page"))
    page.write_text(text[:at] + "<script>document.title = 'x'</script>" + text[at:], encoding="utf-8")


def add_page(site: Path) -> None:
    (site / "extra").mkdir()
    (site / "extra/index.html").write_text("<html><body><p>All 4 kernels pass.</p></body></html>", encoding="utf-8")


def edit_search_entry(site: Path) -> None:
    index = site / "search/search_index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    entry = next(e for e in data["docs"] if e["location"].startswith("day62-racecheck/") and re.search(r"\d", e["text"]))
    entry["text"] = re.sub(r"\d", "7", entry["text"], count=1) + " "
    index.write_text(json.dumps(data), encoding="utf-8")


def add_search_entry(site: Path) -> None:
    index = site / "search/search_index.json"
    data = json.loads(index.read_text(encoding="utf-8"))
    data["docs"].append({"location": "nowhere/", "title": "Nowhere", "text": "racecheck found 9 races"})
    index.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(("change", "said"), [
    (edit_figure, f"{DAY62}: was changed after the build: it shows"),
    (edit_cell, f"{DAY62}: was changed after the build: it shows"),
    (add_script, (f"{DAY62}: was changed after the build: it shows \"<script> document.title = 'x' </script>\", "
                 "which its Markdown does not render")),
    (add_page, "extra/index.html: is a page the build did not make"),
    (edit_search_entry, "search/search_index.json: entry"),
    (add_search_entry, "search/search_index.json: entry"),
], ids=lambda v: v.__name__ if callable(v) else None)
def test_a_built_site_changed_after_the_build_is_refused(built_site: Path, tmp_path: Path,
                                                         change: Callable[[Path], None], said: str):
    site = tmp_path / "site"
    shutil.copytree(built_site, site)
    change(site)
    found = [str(e) for e in verify_site(site, REPO)]
    assert any(said in e for e in found), found


def test_the_site_as_built_passes(built_site: Path):
    assert verify_site(built_site, REPO) == []
