"""Rebuilds under `mkdocs serve`: an incremental check reports what a full check reports, a dirty
reload re-checks the pages whose evidence changed, and an edit of the core takes effect."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import (
    BARE,
    PAGE,
    RACE,
    README,
    REPO,
    RUNS,
    SOURCE,
    mkdocs_yml,
    record_set,
    rehashed,
    sigint_as_at_a_terminal,
    wait_settled,
    write_tree,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from lessonkit import cache
from lessonkit.errors import LessonError
from lessonkit.site.check import CheckedSite, check_site
from lessonkit.site.inputs import FileDigests

OTHER_PAGE = """\
# Other

{{ 0 @ demo/bare:rows[threads=32,kernel=k].mismatches }} mismatches in one warp.

{{ region two/two.cu step }}
"""
TWO_SOURCE = "// lesson two\n// snippet: step\nint x;\n// end snippet\n"
TWO_RUNS = '''lesson = "two"
inputs = ["two.cu"]

[build]
sm_90 = "nvcc -arch=sm_90 -o two two.cu"

[[run]]
name = "bare"
command = "./two"
'''
TWO_README = "# two\n\n```console\nnvcc -arch=sm_90 -o two two.cu\n./two\n```\n"


def two_lessons(root: Path) -> Path:
    """The demo lesson, a second lesson 'two' and two pages: a small site to edit."""
    write_tree(root, {
        "code/demo/demo.cu": SOURCE, "code/demo/runs.toml": RUNS, "code/demo/README.md": README,
        "code/two/two.cu": TWO_SOURCE, "code/two/runs.toml": TWO_RUNS, "code/two/README.md": TWO_README,
        "docs/index.md": PAGE, "docs/other.md": OTHER_PAGE,
    })
    record_set(root, "demo", {"race": RACE, "bare": BARE})
    record_set(root, "two", {"bare": BARE})
    return root


def toggle(path: Path, a: str, b: str) -> None:
    """Replace a by b in the file, or b by a if a is not there (nothing if the file is gone)."""
    if not path.is_file():
        return
    text = path.read_text()
    path.write_text(text.replace(a, b) if a in text else text.replace(b, a))


def retext_and_rehash(repo: Path, name: str, a: str, b: str) -> None:
    """Edit a transcript and write its new sha256 into the manifest, as a forger would."""
    path, manifest = repo / "evidence/demo/s1" / name, repo / "evidence/demo/manifest.json"
    if not (path.is_file() and manifest.is_file()):
        return
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    toggle(path, a, b)
    after = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        text = rehashed(manifest, before, after)
    except (LessonError, AssertionError):
        return  # a manifest broken by another edit, or no entry of those bytes: the forger's tool cannot rewrite it
    manifest.write_text(text)


def move(a: Path, b: Path) -> None:
    """Move a to b, or back if a is not there."""
    if a.exists():
        a.rename(b)
    elif b.exists():
        b.rename(a)


EDITS = {
    "claim": lambda r: toggle(r / "docs/index.md", "{{ 120 @", "{{ 121 @"),
    "forged transcript": lambda r: retext_and_rehash(r, "race.txt", "[120 hazards]", "[121 hazards]"),
    "hand-edited transcript": lambda r: toggle(r / "evidence/demo/s1/race.txt", "[8 hazards]", "[9 hazards]"),
    "renamed region": lambda r: toggle(r / "code/demo/demo.cu", "snippet: body\n", "snippet: body2\n"),
    "renamed region, other lesson": lambda r: toggle(r / "code/two/two.cu", "snippet: step\n", "snippet: stop\n"),
    "same bytes written again": lambda r: toggle(r / "docs/index.md", "# Demo", "# Demo"),
    "new page": lambda r: move(r / "docs/other.md", r / "docs/moved.md"),
    "stray evidence file": lambda r: move(r / "evidence/demo/manifest.json", r / "evidence/demo/.manifest"),
    "broken manifest": lambda r: toggle(r / "evidence/demo/manifest.json", '"format"', '"formát"'),
    "set renamed": lambda r: move(r / "evidence/demo", r / "evidence/demo2"),
    "changed command": lambda r: toggle(r / "code/demo/runs.toml", 'command = "./demo"', 'command = "./demo all"'),
    "README": lambda r: toggle(r / "code/demo/README.md", "\n./demo\n", "\n./demo --all\n"),
    "default set": lambda r: toggle(r / "docs/index.md", "{{ evidence demo }}", "{{ evidence demo2 }}"),
}


def as_text(errors) -> list[str]:
    return sorted(str(e) for e in errors)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(sorted(EDITS)), min_size=1, max_size=10))
def test_incremental_errors_equal_a_full_check(edits: list[str]):
    with tempfile.TemporaryDirectory() as tmp:
        repo = two_lessons(Path(tmp))
        incremental = CheckedSite(repo)
        assert as_text(incremental.check()) == as_text(check_site(repo))
        for name in edits:
            EDITS[name](repo)
            assert as_text(incremental.check()) == as_text(check_site(repo)), name


def test_only_the_edited_page_is_checked_again(tmp_path: Path):
    repo = two_lessons(tmp_path)
    site = CheckedSite(repo)
    assert site.check() == [] and (site.checks, site.reloads) == (2, 1)
    assert site.check() == [] and (site.checks, site.reloads) == (2, 1)
    EDITS["claim"](repo)
    assert [str(e) for e in site.check()] == [
        ("docs/index.md:7: claim '121' (race:reports[severity=Error].hazards) disagrees with "
        "evidence/demo/s1/race.txt; it says '120' (line 7)")]
    assert (site.checks, site.reloads) == (3, 1)
    EDITS["renamed region, other lesson"](repo)  # code changed: evidence reloaded, only other.md re-checked
    errors = site.check()  # the claim, the missing region, and lesson two's evidence, now stale
    assert len(errors) == 3 and (site.checks, site.reloads) == (4, 2)
    assert {e.path for e in errors} == {"docs/index.md", "docs/other.md", "evidence/two/manifest.json"}


def test_an_edit_within_the_same_timestamp_is_seen(tmp_path: Path):
    path = tmp_path / "a.txt"
    path.write_text("120")
    digests = FileDigests()
    first = digests.digest(path)
    stat = os.stat(path)
    path.write_text("121")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size, same mtime: a racy edit
    assert digests.digest(path) != first


def test_a_settled_file_is_known_by_its_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "a.txt"
    path.write_text("old")
    # The clock past the racy window after the file's last change. (Its change time cannot be set
    # back: a clock that runs ahead stands for the wait.)
    monkeypatch.setattr(cache, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + cache.RACY_NS + 500_000_000))
    digests = FileDigests()
    first = digests.digest(path)
    assert first.startswith("stat:") and digests.digest(path) == first  # not read: known by its stat
    path.write_text("new")
    os.utime(path, (1_000_000_000, 1_000_000_000))  # the change time moves, whatever mtime says
    assert digests.digest(path) not in (first, digests.digest(tmp_path / "gone"))


# Under `mkdocs serve`: whole processes, as an author runs them.

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    """`python -m mkdocs serve` in repo, its log read as it grows."""

    def __init__(self, repo: Path, *args: str, engine: str = "mkdocs", **more_env: str):
        self.log_path = repo / "serve.log"
        self.log = open(self.log_path, "w")  # noqa: SIM115 (open while the server runs)
        env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO), **more_env)  # lessonkit.site.mdext
        self.port = free_port()
        with sigint_as_at_a_terminal():  # close() sends Ctrl-C
            self.proc = subprocess.Popen([sys.executable, "-m", engine, "serve", *args, "-a",
                                          f"127.0.0.1:{self.port}"], cwd=repo, env=env,
                                         stdout=self.log, stderr=subprocess.STDOUT)
        self.seen = 0
        self.first = self.expect("Serving on")  # the first build's log comes before it

    def url(self, path: str = "") -> str:
        """The served address of `path` (e.g. "other/")."""
        return f"http://127.0.0.1:{self.port}/{path}"

    def expect(self, needle: str, timeout: float = 60) -> str:
        """Wait until `needle` appears in the log after what was read; return the new text."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.log_path.read_text()
            at = text.find(needle, self.seen)
            if at >= 0:
                new, self.seen = text[self.seen:at + len(needle)], at + len(needle)
                return new
            assert self.proc.poll() is None, text
            time.sleep(0.02)
        raise AssertionError(f"{needle!r} not in the serve log:\n{self.log_path.read_text()[self.seen:]}")

    def close(self) -> None:
        """Stop the server as Ctrl-C does: it removes its build folder (mkdocs_*) on the way out;
        terminated, it would leave it in the temporary folder. It was started with SIGINT at its
        default, so this holds where the test runner ignores SIGINT."""
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


SERVED = "strict: true\n" + mkdocs_yml() + "watch:\n  - code\n  - evidence\n"


FORGED = re.compile(
    r"""lessonkit\ found\ problems\ \(rebuild\ (?P<n>\d+)\):\n
        docs/index\.md:7:\ claim\ '120'\ \(race:reports\[severity=Error\]\.hazards\)\ disagrees\ with\ 
        evidence/demo/s1/race\.txt;\ it\ says\ '121'\ \(line\ 7\)\n1\ error\ found""", re.VERBOSE)


def test_dirty_reload_rechecks_pages_whose_evidence_changed(tmp_path: Path):
    repo = two_lessons(tmp_path)
    (repo / "mkdocs.yml").write_text(SERVED)
    serve = Serve(repo, "--dirtyreload")
    try:
        assert "Documentation built in" in serve.first and "WARNING" not in serve.first
        assert "lessonkit: dirty rebuild" in serve.first  # strict, and a dirty build does not abort
        retext_and_rehash(repo, "race.txt", "[120 hazards]", "[121 hazards]")
        first = FORGED.search(serve.expect("it says '121' (line 7)\n1 error found"))
        assert first, serve.log_path.read_text()
        retext_and_rehash(repo, "race.txt", "[120 hazards]", "[121 hazards]")
        assert "lessonkit found problems" not in serve.expect("Reloading browsers")
        # The same error again is shown again (MkDocs logs a repeated message only once).
        retext_and_rehash(repo, "race.txt", "[120 hazards]", "[121 hazards]")
        again = FORGED.search(serve.expect("it says '121' (line 7)\n1 error found"))
        assert again and int(again.group("n")) > int(first.group("n"))
    finally:
        serve.close()


EDITED_CORE = '''

_original_page = Site.page


def _edited_page(self, markdown, path, line_offset=0):
    result = _original_page(self, markdown, path, line_offset)
    result.errors.append(LessonError(path, 1, "the edited core rejects every page"))
    return result


Site.page = _edited_page
'''


def test_an_edit_of_the_core_takes_effect_on_the_next_rebuild(tmp_path: Path):
    repo = two_lessons(tmp_path)
    for folder in ("lessonkit", "hooks"):
        shutil.copytree(REPO / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "mkdocs.yml").write_text(SERVED.replace(f"hooks:\n  - {REPO}/hooks/lessonkit_hooks.py\n",
                                                    "hooks:\n  - hooks/lessonkit_hooks.py\n")
                                     + "  - lessonkit\n")
    serve = Serve(repo)
    try:
        assert "Documentation built in" in serve.first and "lessonkit found" not in serve.first
        with open(repo / "lessonkit/site/check.py", "a") as f:
            f.write(EDITED_CORE)
        report = serve.expect("errors found")
        assert ("docs/index.md:1: the edited core rejects every page\n"
                "docs/other.md:1: the edited core rejects every page\n2 errors found") in report
    finally:
        serve.close()


def test_a_rebuild_after_a_page_edit_takes_the_last_scan_and_one_after_a_recording_edit_scans(tmp_path: Path):
    """Under `serve` (inotify), a rebuild whose watcher reported changes under docs/ alone does not
    scan evidence/ and code/ again (lessonkit.site.changes); one after a recording was edited
    does, and reports it."""
    repo = two_lessons(tmp_path / "repo")
    (repo / "mkdocs.yml").write_text(SERVED)
    timings = tmp_path / "timings.jsonl"
    wait_settled(repo)  # a scan of unsettled files is not taken again

    def builds() -> list[dict]:
        return [json.loads(line) for line in timings.read_text().splitlines()] if timings.exists() else []

    def rebuilt(edit) -> dict:
        done = len(builds())
        edit()
        serve.expect("Reloading browsers")
        return builds()[done]

    def edit_page() -> None:
        page = repo / "docs/other.md"
        page.write_text(page.read_text() + "\nOne more sentence.\n")

    serve = Serve(repo, LESSONKIT_TIMINGS=str(timings))
    try:
        assert builds()[0]["tree_scans"] == 1
        assert rebuilt(edit_page)["tree_scans"] == 1  # the first since the folders were watched
        assert rebuilt(edit_page)["tree_scans"] == 0
        assert rebuilt(edit_page)["tree_scans"] == 0
        forged = rebuilt(lambda: retext_and_rehash(repo, "race.txt", "[120 hazards]", "[121 hazards]"))
        assert forged["tree_scans"] == 1 and not forged["ok"]
        assert FORGED.search(serve.log_path.read_text())
    finally:
        serve.close()
