"""`check` in several processes: the same errors, in the same order, as in one; and when it must stay in one."""

from __future__ import annotations

import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import PAGE, REPO, wait_settled, write_tree

from lessonkit.cache import Store
from lessonkit.errors import LessonError, LessonErrors
from lessonkit.site import check as site_check
from lessonkit.site.check import PAGES_PER_JOB, CheckedSite
from lessonkit.site.verdict import docs_pages

PAGES = 3 * PAGES_PER_JOB  # enough for three workers


@pytest.fixture
def many_pages(demo_repo: Path) -> Path:
    """demo_repo with PAGES pages, every third one claiming a count the evidence refutes, every file
    settled (a check that starts within the cache's racy window and ends after it would see its files
    change from racy to settled between two checks)."""
    pages = {}
    for k in range(PAGES):
        text = PAGE.replace("{{ 2 @ race:#reports }}", "{{ 3 @ race:#reports }}") if k % 3 == 1 else PAGE
        pages[f"docs/p{k:02d}.md"] = text.replace("# Demo", f"# Demo {k}")
    write_tree(demo_repo, pages)
    wait_settled(demo_repo)
    return demo_repo


def checked(repo: Path, jobs: int) -> tuple[list[str], CheckedSite]:
    site = CheckedSite(repo, store=Store(None), keep="errors", jobs=jobs)
    return [str(e) for e in site.check()], site


def test_pages_checked_in_three_processes_give_the_errors_one_process_gives(many_pages: Path):
    one, serial = checked(many_pages, 1)
    three, forked = checked(many_pages, 3)
    assert sum("claim '3'" in e for e in one) == PAGES // 3  # the wrong claims are found
    assert three == one  # the same errors in the same order
    assert serial.forked == 0 and forked.forked == 3
    assert forked.checks == serial.checks == PAGES + 1  # every page checked once, in some process


def test_a_result_from_a_worker_is_kept_like_one_checked_here(many_pages: Path):
    _, forked = checked(many_pages, 2)
    assert forked.forked == 2
    again = forked.check()  # nothing changed: every page's result is the one a worker sent back
    assert forked.forked == 2 and forked.checks == PAGES + 1
    assert sum("claim '3'" in str(e) for e in again) == PAGES // 3


def test_few_pages_are_checked_here(demo_repo: Path):
    _, site = checked(demo_repo, 8)  # one page: starting a worker would cost more than it saves
    assert site.forked == 0 and site.checks == 1


def test_no_worker_is_forked_while_another_thread_runs(many_pages: Path):
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        errors, site = checked(many_pages, 3)
    finally:
        stop.set()
        other.join()
    assert site.forked == 0
    assert errors == checked(many_pages, 1)[0]


def test_a_page_whose_check_fails_in_a_worker_fails_the_check(many_pages: Path, monkeypatch):
    real = CheckedSite.check_page_file

    def broken(self, path, source):
        if path.endswith("p05.md"):
            raise RuntimeError("checker bug on p05")
        return real(self, path, source)

    monkeypatch.setattr(CheckedSite, "check_page_file", broken)  # before the fork: the workers have it
    site = CheckedSite(many_pages, store=Store(None), keep="errors", jobs=2)
    with pytest.raises(RuntimeError, match="checker bug on p05"):
        site.check()
    assert site_check._FORKED is None  # nothing of the failed check is left for a later one


def test_a_worker_that_dies_loses_no_page(many_pages: Path, monkeypatch):
    import os
    parent = os.getpid()
    real = CheckedSite.check_page_file

    def dies_in_a_worker(self, path, source):
        if path.endswith("p05.md") and os.getpid() != parent:
            os._exit(9)  # as a worker the kernel killed would: no exception, no result
        return real(self, path, source)

    monkeypatch.setattr(CheckedSite, "check_page_file", dies_in_a_worker)
    errors, site = checked(many_pages, 2)
    assert site.forked == 0  # the pool broke: every page was checked here
    assert site.checks == PAGES + 1
    monkeypatch.setattr(CheckedSite, "check_page_file", real)
    assert errors == checked(many_pages, 1)[0]


def test_the_command_line_takes_a_count_of_processes(many_pages: Path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "lessonkit", "check", "--repo", str(many_pages),
                               "--no-cache", *args], capture_output=True, text=True, timeout=120,
                              env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    one, two = run("--jobs", "1"), run("--jobs", "2")
    assert one.returncode == two.returncode == 1
    assert one.stderr == two.stderr and "claim '3'" in one.stderr
    refused = run("--jobs", "0")
    assert refused.returncode == 2 and "'0' is not a whole number of at least 1" in refused.stderr


def test_every_page_is_listed_once_whatever_the_number_of_workers(many_pages: Path):
    pages = [p for p, _ in docs_pages(many_pages)]
    for jobs in (2, 3, 5):
        _, site = checked(many_pages, jobs)
        assert sorted(site._pages) == sorted(pages)


def test_errors_cross_a_process_boundary_whole():
    error = LessonError("docs/p.md", 12, "claim '3' disagrees", rank=2, warning=True)
    assert pickle.loads(pickle.dumps(error)) == error
    both = pickle.loads(pickle.dumps(LessonErrors([error, LessonError("a.cu", None, "x")])))
    assert [str(e) for e in both.errors] == ["docs/p.md:12: warning: claim '3' disagrees", "a.cu: x"]


def test_a_warm_check_answers_from_the_disk_without_evidence_or_workers(many_pages: Path):
    wait_settled(many_pages)  # every file settled: results may be stored for them
    first = CheckedSite(many_pages, keep="errors", jobs=3)
    want = [str(e) for e in first.check()]
    assert first.forked == 3 and first.checks == PAGES + 1
    again = CheckedSite(many_pages, keep="errors", jobs=3)
    assert [str(e) for e in again.check()] == want
    assert again.forked == 0 and again.checks == 0 and again.reloads == 0
    assert again.cache_hits == 1  # the whole verdict: no page is read, no file hashed
    # Without the stored verdict, each page's result is read back instead.
    Path(again.store._path("errors", "verdict")).unlink()
    third = CheckedSite(many_pages, keep="errors", jobs=3)
    assert [str(e) for e in third.check()] == want
    assert third.forked == 0 and third.checks == 0 and third.reloads == 0
    assert third.cache_hits == PAGES + 2  # the site's own errors and every page


def test_a_check_with_some_pages_stored_checks_only_the_others_in_its_workers(many_pages: Path):
    wait_settled(many_pages)
    want = [str(e) for e in CheckedSite(many_pages, keep="errors", jobs=1).check()]
    edited = [f"docs/p{k:02d}.md" for k in range(2 * PAGES_PER_JOB + 1)]  # more than the pre-pass looks for
    for page in edited:
        path = many_pages / page
        path.write_text(path.read_text() + "\nOne more line.\n")
    again = CheckedSite(many_pages, keep="errors", jobs=2)
    assert [str(e) for e in again.check()] == want
    assert again.forked == 2
    assert again.checks == len(edited)  # the workers answered every other page from the disk
    assert again.cache_hits == PAGES + 1 - len(edited) + 1  # those pages and the site's own errors


# -- hashing beside ---------------------------------------------------------------------------------

def test_files_hashed_beside_count_as_hashed_here(tmp_path: Path):
    import hashlib
    import os

    from lessonkit import cache
    from lessonkit.evidence import manifest
    from lessonkit.site import sitecache
    files = []
    for k in range(3):
        files.append(tmp_path / f"f{k}.txt")
        files[-1].write_bytes(os.urandom(5000 + k))
    wait_settled(tmp_path)  # settled: a hash may be kept for its stat
    ran: list[int] = []
    digests, where = sitecache.beside(lambda: ([manifest.sha256_file(f) for f in files], os.getpid()), (),
                                      lambda: ran.append(os.getpid()))
    assert ran == [os.getpid()] and where != os.getpid()  # the hashing ran in another process
    assert digests == [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    known = manifest.known_hashes()
    for f, digest in zip(files, digests):
        assert known[str(f)][1] == digest  # adopted: the integrity check will not hash them again
        assert known[str(f)][0] == cache.stamp(f.stat())  # by the stamp the file still has


def test_hashing_beside_falls_back_to_this_process(tmp_path: Path):
    import os

    from lessonkit.site import sitecache
    parent = os.getpid()

    def dies_in_the_child() -> int:
        if os.getpid() != parent:
            os._exit(9)  # killed: no answer comes back
        return os.getpid()

    ran: list[int] = []
    assert sitecache.beside(dies_in_the_child, (), lambda: ran.append(1)) == parent
    assert ran == [1]  # what the caller does meanwhile runs once either way
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:  # another thread runs: no fork at all
        assert sitecache.beside(os.getpid, (), lambda: ran.append(2)) == parent
    finally:
        stop.set()
        other.join()
    assert ran == [1, 2]


def test_a_cold_check_in_processes_reads_the_manifests_while_the_files_are_hashed(many_pages: Path, monkeypatch):
    from lessonkit.site import sitecache
    used: list[bool] = []
    real = sitecache.beside
    monkeypatch.setattr(sitecache, "beside", lambda *a: used.append(True) or real(*a))
    errors, site = checked(many_pages, 2)
    assert used == [True] and site.reloads == 1 and site._manifests is None  # read once, used once
    assert errors == checked(many_pages, 1)[0]
    assert used == [True]  # one process: no hashing beside
