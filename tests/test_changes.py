"""A rebuild of `serve` takes the last scan of evidence/ and code/ only when its file watcher says
nothing there can have changed (lessonkit.site.changes): every other case scans."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from conftest import HOOKS
from watchdog import events

from lessonkit.site import changes, verdict
from lessonkit.site.changes import Changes, unchanged_since_last_scan


def watched(repo: Path, *names: str, recursive: bool = True) -> Changes:
    """Changes of a watcher of `names` under repo whose reports a rebuild has taken once."""
    noted = Changes()
    for name in names:
        noted.watching(str(repo / name), recursive)
    noted.take()
    return noted


def unchanged(noted: Changes, repo: Path, links: bool = False) -> bool:
    return unchanged_since_last_scan(noted.take(), str(repo), str(repo / "docs"), links)


def test_only_reports_under_docs_leave_the_last_scan_standing(tmp_path: Path):
    noted = watched(tmp_path, "docs", "evidence", "code")
    assert unchanged(noted, tmp_path)  # nothing reported
    noted.reported([str(tmp_path / "docs/index.md")])
    assert unchanged(noted, tmp_path)
    for changed in ("evidence/demo/s1/race.txt", "code/demo/demo.cu", "mkdocs.yml", "docs-old/index.md"):
        noted.reported([str(tmp_path / "docs/index.md"), str(tmp_path / changed)])
        assert not unchanged(noted, tmp_path), changed
        assert unchanged(noted, tmp_path)  # the next rebuild has the reports from then on


def test_what_the_watcher_cannot_vouch_for_is_scanned(tmp_path: Path):
    # Before a rebuild first took the reports, and after a folder is watched anew or no longer.
    assert not unchanged(Changes(), tmp_path)
    noted = watched(tmp_path, "docs", "evidence", "code")
    noted.watching(str(tmp_path / "lessonkit"), True)
    assert not unchanged(noted, tmp_path) and unchanged(noted, tmp_path)
    noted.unwatched(str(tmp_path / "lessonkit"), True)
    assert not unchanged(noted, tmp_path) and unchanged(noted, tmp_path)
    # evidence/ or code/ not watched, or not recursively: a change there has no report.
    assert not unchanged(watched(tmp_path, "docs", "code"), tmp_path)
    assert not unchanged(watched(tmp_path, "docs", "evidence"), tmp_path)
    assert not unchanged(watched(tmp_path, "docs", "evidence", "code", recursive=False), tmp_path)
    assert unchanged(watched(tmp_path, "docs", ""), tmp_path)  # the repository, recursively
    # A lost report, too many reports, a symbolic link in the last scan.
    noted = watched(tmp_path, "docs", "evidence", "code")
    noted.lost()
    assert not unchanged(noted, tmp_path)
    noted.reported(str(tmp_path / f"docs/{k}.md") for k in range(changes.MOST_PATHS + 1))
    assert not unchanged(noted, tmp_path)
    assert not unchanged(noted, tmp_path, links=True)


def test_the_scan_names_the_symbolic_links_it_reads_through(tmp_path: Path):
    (tmp_path / "evidence/demo/s1").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/race.txt").write_text("text\n")
    (tmp_path / "code/demo").mkdir(parents=True)
    links: list[str] = []
    verdict.scan_tree(tmp_path, links)
    assert links == []
    os.symlink(tmp_path / "elsewhere", tmp_path / "evidence/demo/s2")
    os.symlink(tmp_path / "elsewhere/race.txt", tmp_path / "code/demo/race.txt")
    scans = verdict.scan_tree(tmp_path, links)
    assert sorted(links) == ["demo/race.txt", f"demo{os.sep}s2"]
    assert f"demo{os.sep}s2{os.sep}race.txt" in scans[0]  # read through, as before


def test_a_lost_report_is_passed_on_as_a_change_and_forgets_the_reports(tmp_path: Path):
    """The server ignores a folder's lost report; it gets a change instead, so it rebuilds."""
    spec = importlib.util.spec_from_file_location("lessonkit_hooks_for_changes", HOOKS)
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    noted = watched(tmp_path, "docs", "evidence", "code")
    page = events.FileModifiedEvent(str(tmp_path / "docs/index.md"))
    assert hooks._noted(noted, page) is page
    moved = events.FileMovedEvent(str(tmp_path / "docs/a.md"), str(tmp_path / "evidence/a.md"))
    assert hooks._noted(noted, moved) is moved
    assert not unchanged(noted, tmp_path)  # the move's destination is under evidence/
    passed = hooks._noted(noted, events.EventsLostEvent(str(tmp_path / "evidence"), is_directory=True))
    assert isinstance(passed, events.FileModifiedEvent) and not passed.is_directory
    assert not unchanged(noted, tmp_path)
