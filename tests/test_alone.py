"""A test marked `alone` runs with the machine's CPUs to itself (conftest.py's locks): in a run of
two pytest-xdist workers, no other test is running while it runs."""

from __future__ import annotations

import os
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

CONFTEST = f'''
import importlib.util, sys
sys.path[:0] = [{str(REPO / "tests")!r}, {str(REPO)!r}]
spec = importlib.util.spec_from_file_location("project_conftest", {str(REPO / "tests" / "conftest.py")!r})
project = importlib.util.module_from_spec(spec)
spec.loader.exec_module(project)
pytest_runtest_protocol = project.pytest_runtest_protocol

def pytest_configure(config):
    config.addinivalue_line("markers", "alone: the project's marker")
'''


def test_no_other_test_runs_beside_an_alone_test(tmp_path: Path):
    (tmp_path / "running").mkdir()
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_beside.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                          "--basetemp", str(tmp_path / "base"), str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "ALONE_FOLDER": str(tmp_path / "running")})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "13 passed" in run.stdout
    assert not (tmp_path / "overlaps").exists(), sorted(p.name for p in (tmp_path / "overlaps").iterdir())
