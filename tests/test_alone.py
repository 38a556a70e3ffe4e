"""A test marked `alone` has the test run's CPUs to itself (conftest.py's locks): in a run of
two pytest-xdist workers, no other test is running while it runs; and the `alone` tests come last."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO

# Each test marks that it is running (a file of its own) while it looks, for half a second, for the other
# kind's marks; it notes what it saw. Without the locks the `alone` test starts while another worker
# runs one of the others, and one of them sees the other.
TESTS = '''
import os, time
from pathlib import Path
import pytest

RUNNING = Path(os.environ["ALONE_FOLDER"])

def look(mine: str, theirs: str) -> None:
    me = RUNNING / f"{mine}-{os.getpid()}-{time.monotonic_ns()}"
    me.touch()
    try:
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            seen = [p.name for p in RUNNING.iterdir() if p.name.startswith(theirs)]
            if seen:
                (RUNNING.parent / "overlaps").mkdir(exist_ok=True)
                (RUNNING.parent / "overlaps" / me.name).write_text(" ".join(seen))
                return
            time.sleep(0.01)
    finally:
        me.unlink()

@pytest.mark.parametrize("n", range(6))
def test_other(n):
    look("other", "alone")

@pytest.mark.alone
def test_timed():
    look("alone", "other")

@pytest.mark.parametrize("n", range(6))
def test_more(n):
    look("other", "alone")
'''

CONFTEST = '''
import importlib.util, sys
sys.path[:0] = [{tests!r}, {repo!r}]
spec = importlib.util.spec_from_file_location("project_conftest", {conftest!r})
project = importlib.util.module_from_spec(spec)
spec.loader.exec_module(project)
pytest_runtest_protocol = project.pytest_runtest_protocol
pytest_runtest_call = project.pytest_runtest_call
if {sort!r}:
    pytest_collection_modifyitems = project.pytest_collection_modifyitems

def pytest_configure(config):
    config.addinivalue_line("markers", "alone: the project's marker")
'''


def run_pytest(tmp_path: Path, sort: bool, *args: str) -> str:
    """pytest over TESTS in two workers, with the project's hooks (and its order of tests if `sort`)."""
    (tmp_path / "running").mkdir(exist_ok=True)
    (tmp_path / "conftest.py").write_text(CONFTEST.format(
        tests=str(REPO / "tests"), repo=str(REPO), conftest=str(REPO / "tests" / "conftest.py"), sort=sort),
        encoding="utf-8")
    (tmp_path / "test_beside.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                          "--basetemp", str(tmp_path / "base"), *args, str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "ALONE_FOLDER": str(tmp_path / "running")})
    assert run.returncode == 0, run.stdout + run.stderr
    return run.stdout


def test_the_alone_tests_come_last(tmp_path: Path):
    """So that the other workers are on their last tests, or done, while one runs."""
    listed = re.findall(r"<Function (\S+)>", run_pytest(tmp_path, True, "--collect-only"))
    assert listed[-1] == "test_timed" and len(listed) == 13, listed


def test_no_other_test_runs_beside_an_alone_test(tmp_path: Path):
    """In the order written (the `alone` test in the middle), so that the others run beside it but for the locks."""
    assert "13 passed" in run_pytest(tmp_path, False, "-q", "-n", "2")
    assert not (tmp_path / "overlaps").exists(), sorted(p.name for p in (tmp_path / "overlaps").iterdir())
