"""The refresh under faults, with the GPU tools faked: it owns its processes (none outlives it, even
killed by SIGKILL; a killed one's leftovers are ended by the next) and one refresh of a lesson runs
at a time. Waits poll with generous ceilings; the tests signal with SIGTERM, SIGHUP and SIGKILL only
(a CI runner started with nohup ignores SIGINT)."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import REPO, snapshot
from fake_gpu import make_lab

from lessonkit.evidence.lessonlock import LessonLock, RunRecord, reap, started_text
from lessonkit.evidence.plan import RefreshError
from lessonkit.evidence.sets import load_all_evidence
from lessonkit.evidence.supervise import read_stat, start_ticks

CEILING_S = 60.0
OLD_KEPT = "refresh: interrupted before the swap; evidence/demo holds the old evidence, untouched\n"


@pytest.fixture
def lab(tmp_path: Path):
    return make_lab(tmp_path, slow=True)


@pytest.fixture
def strays() -> Iterator[Callable[..., None]]:
    """PIDs a test started through a refresh: any still there at the end (the test failed) are killed."""
    pids: list[int] = []
    starts: dict[int, int | None] = {}

    def note(*new: int) -> None:
        for pid in new:
            starts[pid] = start_ticks(pid)
        pids.extend(new)
    yield note
    for pid in pids:
        if not gone(pid) and start_ticks(pid) == starts[pid]:
            os.kill(pid, signal.SIGKILL)


def command(repo: Path) -> list[str]:
    return [sys.executable, str(REPO / "scripts/refresh.py"), "demo", "--repo", str(repo)]


def start(repo: Path, env: dict, **extra: str) -> subprocess.Popen:
    return subprocess.Popen(command(repo), env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def refresh(repo: Path, env: dict, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(repo), env={**env, **extra}, capture_output=True, text=True, timeout=120)


def wait_until(check: Callable[[], object], what: str, ceiling: float = CEILING_S) -> None:
    deadline = time.monotonic() + ceiling
    while not check():
        assert time.monotonic() < deadline, f"waited {ceiling:g} s for {what}"
        time.sleep(0.05)


def gone(pid: int) -> bool:
    stat = read_stat(pid)
    return stat is None or stat.state == "Z"


def run_pids(path: Path, proc: subprocess.Popen) -> tuple[int, int, int]:
    """The slow run's supervisor, program and grandchild, once the program has written them."""
    wait_until(lambda: path.exists() or proc.poll() is not None, "the slow run to start")
    assert proc.poll() is None, proc.communicate()
    supervisor, program, grandchild = map(int, path.read_text().split())
    return supervisor, program, grandchild


def ledger(env: dict) -> Path:
    return Path(env["TMPDIR"]) / "100-days-of-gpu" / "demo.pids"




# -- the supervisor --------------------------------------------------------------------------

def test_a_refresh_killed_by_sigkill_takes_its_runs_with_it(lab, tmp_path, strays):
    repo, env = lab
    proc = start(repo, env, FAKE_SLEEP="300", FAKE_PIDS=str(tmp_path / "pids"))
    strays(proc.pid)
    supervisor, program, grandchild = run_pids(tmp_path / "pids", proc)
    strays(supervisor, program, grandchild)
    proc.kill()
    proc.communicate(timeout=CEILING_S)
    wait_until(lambda: gone(supervisor) and gone(program) and gone(grandchild),
               "the run, its grandchild (which ignores SIGTERM) and its supervisor to end")


def test_a_timeout_kills_a_grandchild_that_ignores_sigterm(lab, tmp_path, strays):
    repo, env = lab
    runs = repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('command = "./demo slow"\ntimeout = 30', 'command = "./demo slow"\ntimeout = 1'))
    proc = start(repo, env, FAKE_SLEEP="300", FAKE_PIDS=str(tmp_path / "pids"))
    strays(proc.pid)
    supervisor, program, grandchild = run_pids(tmp_path / "pids", proc)
    strays(supervisor, program, grandchild)
    out, err = proc.communicate(timeout=CEILING_S)
    assert proc.returncode == 0, out + err
    assert "run     slow                         timed out" in out
    # The supervisor waits for the whole group before it exits, and the refresh for the supervisor.
    assert (gone(supervisor), gone(program), gone(grandchild)) == (True, True, True)
    entry = json.loads((repo / "evidence/demo/manifest.json").read_text())["transcripts"]["s1/slow"]
    assert (entry["timed_out"], entry["exit_code"]) == (True, None)
    assert (repo / "evidence/demo/s1/slow.txt").read_text() == (
        "device: Fake GPU | compute capability 9.0 | warp size 32\nmode: slow\n\n"
        "[refresh: no exit after 1 s; the process group was killed]\n")


def test_the_supervisor_changes_no_transcript_exit_code_or_environment(lab):
    repo, env = lab
    runs, readme = repo / "code/demo/runs.toml", repo / "code/demo/README.md"
    added = {"code": "sh -c 'echo out; echo err >&2; exit 3'", "killed": "sh -c 'echo bye; kill -TERM $$'",
             "env": "env"}
    for name, line in added.items():
        runs.write_text(runs.read_text() + f'\n[[run]]\nname = "{name}"\ncommand = "{line}"\ntimeout = 30\n')
        readme.write_text(readme.read_text().replace("./demo slow\n", f"./demo slow\n{line}\n"))
    refresh(repo, env)
    entries = json.loads((repo / "evidence/demo/manifest.json").read_text())["transcripts"]
    assert (entries["s1/code"]["exit_code"], (repo / "evidence/demo/s1/code.txt").read_text()) == (3, "out\nerr\n")
    assert (entries["s1/killed"]["exit_code"], (repo / "evidence/demo/s1/killed.txt").read_text()) == (-15, "bye\n")
    seen = dict(line.split("=", 1) for line in (repo / "evidence/demo/s1/env.txt").read_text().splitlines())
    assert seen == {**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"}


# -- ending the runs with the refresh --------------------------------------------------------

@pytest.mark.parametrize("exclusive", [False, True], ids=["shared", "exclusive"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_during_a_run_ends_it_and_keeps_the_old_evidence(lab, tmp_path, strays, sig, exclusive):
    repo, env = lab
    runs = repo / "code/demo/runs.toml"  # a timeout far past the ceiling: only the signal ends the run
    slow = 'name = "slow"\ncommand = "./demo slow"\ntimeout = 600'
    if exclusive:  # run by the refresh's main thread, after the pool
        slow = slow.replace('name = "slow"', 'name = "slow"\nexclusive = true')
    runs.write_text(runs.read_text().replace('name = "slow"\ncommand = "./demo slow"\ntimeout = 30', slow))
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    proc = start(repo, env, FAKE_SLEEP="300", FAKE_PIDS=str(tmp_path / "pids"))
    strays(proc.pid)
    supervisor, program, grandchild = run_pids(tmp_path / "pids", proc)
    strays(supervisor, program, grandchild)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=CEILING_S)
    assert (proc.returncode, err) == (128 + sig, OLD_KEPT)
    # Gone when the refresh has exited: it ended the run and waited, not left it to the kernel.
    assert (gone(supervisor), gone(program), gone(grandchild)) == (True, True, True)
    assert snapshot(repo / "evidence/demo") == before
    assert sorted(p.name for p in (repo / "evidence").iterdir()) == ["demo"]
    assert list(Path(env["TMPDIR"]).iterdir()) == []  # build folder, lock and ledger: all gone


# -- the reaper ------------------------------------------------------------------------------

def test_the_next_refresh_ends_what_a_killed_refresh_and_supervisor_left(lab, tmp_path, strays):
    """A run whose supervisor died with the refresh (both killed by SIGKILL) is ended, and named,
    by the next refresh of the lesson before it runs anything."""
    repo, env = lab
    proc = start(repo, env, FAKE_SLEEP="300", FAKE_PIDS=str(tmp_path / "pids"))
    strays(proc.pid)
    supervisor, program, grandchild = run_pids(tmp_path / "pids", proc)
    strays(supervisor, program, grandchild)
    wait_until(lambda: f'"pgid": {program},' in ledger(env).read_text(), "the ledger to name the slow run")
    started = started_text(start_ticks(proc.pid))
    os.kill(supervisor, signal.SIGKILL)  # first, or it would end the run when the refresh dies
    proc.kill()
    proc.communicate(timeout=CEILING_S)
    assert (gone(program), gone(grandchild)) == (False, False)  # orphans now, with nobody to end them
    done = refresh(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == (f"reap    ended process group {program} left by refresh {proc.pid} "
                                           f"(started {started}): ./demo slow")
    assert not done.stdout.splitlines()[1].startswith("reap")
    assert (gone(program), gone(grandchild)) == (True, True)
    assert not ledger(env).exists()


def test_the_reaper_kills_no_process_whose_start_time_differs(tmp_path, strays):
    """A ledger's PID that names another process now (a reused PID) is left alone."""
    sleeper = subprocess.Popen(["sleep", "300"], process_group=0)
    strays(sleeper.pid)
    path = tmp_path / "demo.pids"
    same = RunRecord(sleeper.pid, start_ticks(sleeper.pid), 987, None, "./demo slow")
    path.write_text(json.dumps({**asdict(same), "start": same.start - 1}) + "\n")
    assert reap(path) == [] and not gone(sleeper.pid) and not path.exists()
    path.write_text(json.dumps(asdict(same)) + "\n")
    assert reap(path) == [f"ended process group {sleeper.pid} left by refresh 987 (started unknown): ./demo slow"]
    sleeper.wait(timeout=CEILING_S)
    assert sleeper.returncode == -signal.SIGKILL


# -- one refresh of a lesson at a time -------------------------------------------------------

def refusal(holder: subprocess.Popen, repo: Path) -> str:
    return (f"refresh: another refresh of demo is running (PID {holder.pid}, started "
            f"{started_text(start_ticks(holder.pid))}: {shlex.join(command(repo))}); nothing was run; "
            f"wait for it to finish, or end it: kill {holder.pid}\n")


def one_complete_set(repo: Path) -> None:
    ev = load_all_evidence(repo)
    assert ev.errors == [] and list(ev.sets) == ["demo"]
    assert sorted(p.name for p in (repo / "evidence").iterdir()) == ["demo"]
    assert sorted(json.loads((repo / "evidence/demo/manifest.json").read_text())["transcripts"]) == [
        "s1/bare", "s1/race", "s1/slow"]


def test_a_refresh_started_while_another_runs_is_refused_at_once(lab, tmp_path, strays):
    repo, env = lab
    gate = tmp_path / "gate"
    first = start(repo, env, FAKE_WAIT_FOR=str(gate))
    strays(first.pid)
    wait_until(lambda: ledger(env).exists() or first.poll() is not None, "the first refresh to run")
    second = refresh(repo, env)
    assert first.poll() is None  # the second did not wait for the first
    assert (second.returncode, second.stdout, second.stderr) == (2, "", refusal(first, repo))
    gate.touch()
    out, err = first.communicate(timeout=CEILING_S)
    assert first.returncode == 0, out + err
    one_complete_set(repo)


def test_of_two_refreshes_started_together_one_records(lab, tmp_path, strays):
    repo, env = lab
    gate = tmp_path / "gate"
    both = [start(repo, env, FAKE_WAIT_FOR=str(gate)), start(repo, env, FAKE_WAIT_FOR=str(gate))]
    strays(*(p.pid for p in both))
    wait_until(lambda: any(p.poll() is not None for p in both), "one refresh to refuse")
    refused = next(p for p in both if p.poll() is not None)
    holder = next(p for p in both if p is not refused)
    assert holder.poll() is None
    out, err = refused.communicate()
    assert (refused.returncode, out, err) == (2, "", refusal(holder, repo))
    gate.touch()
    out, err = holder.communicate(timeout=CEILING_S)
    assert holder.returncode == 0, out + err
    one_complete_set(repo)


def test_the_lock_names_its_holder(tmp_path):
    root = tmp_path / "100-days-of-gpu"
    with LessonLock("demo", root), pytest.raises(RefreshError) as refused:
        LessonLock("demo", root).acquire()
    me = os.getpid()
    assert str(refused.value) == (f"another refresh of demo is running (PID {me}, started "
                                  f"{started_text(start_ticks(me))}: {shlex.join(sys.orig_argv)}); nothing was run; "
                                  f"wait for it to finish, or end it: kill {me}")
    assert not root.exists()  # released: the lock file and its (empty) folder are gone
    with LessonLock("demo", root):  # and it can be taken again
        pass


# -- what a run prints, and what it leaves behind ---------------------------------------------

def add_run(repo: Path, name: str, line: str, **keys: object) -> None:
    """A run of `line` in the demo lesson (its README lists it, as the site's check asks)."""
    runs, readme = repo / "code/demo/runs.toml", repo / "code/demo/README.md"
    extra = "".join(f"\n{k} = {v}" for k, v in {"timeout": 30, **keys}.items())
    runs.write_text(runs.read_text() + f'\n[[run]]\nname = "{name}"\ncommand = "{line}"{extra}\n')
    readme.write_text(readme.read_text().replace("./demo slow\n", f"./demo slow\n{line}\n"))


@pytest.mark.parametrize(("printf", "said"), [
    (r"printf 'ok\\000no'", "a NUL byte at byte offset 2"),
    (r"printf 'ok\\377no'", "a byte that is not UTF-8 (0xff) at byte offset 2"),
])
def test_output_that_is_not_utf8_text_is_refused_before_the_swap(lab, printf, said):
    repo, env = lab
    assert refresh(repo, env).returncode == 0
    before = snapshot(repo / "evidence/demo")
    add_run(repo, "bytes", f"sh -c \\\"{printf}\\\"")
    done = refresh(repo, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (f"refresh: run 'bytes' printed {said}; a transcript is UTF-8 text, which every reader of "
                           "the evidence takes as it is, so this output cannot be recorded; the old evidence is kept "
                           "and nothing was recorded\n")
    assert snapshot(repo / "evidence/demo") == before


def test_output_is_capped_while_it_is_read(lab):
    """`yes` prints without end: the run is stopped once it passes max_output, long before its timeout,
    and no more than that is held."""
    repo, env = lab
    add_run(repo, "endless", "yes", timeout=300, max_output=100_000)
    start = time.monotonic()
    done = refresh(repo, env)
    assert done.returncode == 2 and time.monotonic() - start < 60, done.stdout + done.stderr
    assert done.stderr == ("refresh: run 'endless' printed more than its max_output of 100000 bytes "
                           "(code/demo/runs.toml); it was stopped there, the old evidence is kept and nothing was "
                           "recorded; raise max_output there if this much output is meant\n")
    assert not (repo / "evidence/demo").exists()


# A child in a session of its own (setsid), its PID in the file $1, holding the run's output pipe open.
ESCAPE = """setsid sh -c 'echo $$ > "$0"; exec sleep 300' "$1" &
while [ ! -s "$1" ]; do sleep 0.01; done
"""


def test_a_descendant_that_left_the_group_dies_at_the_timeout(lab, tmp_path, strays):
    """A child that calls setsid() leaves the run's process group and keeps its output pipe open: it is
    killed at the timeout all the same, and the refresh stops reading."""
    repo, env = lab
    pid_file = tmp_path / "escaped"
    (repo / "code/demo/escape.sh").write_text(ESCAPE + "sleep 300\n")
    add_run(repo, "escape", f"sh escape.sh {pid_file}", timeout=2)
    start = time.monotonic()
    proc = subprocess.run(command(repo), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and time.monotonic() - start < 40, proc.stdout + proc.stderr
    escaped = int(pid_file.read_text())
    strays(escaped)
    assert "run     escape                       timed out" in proc.stdout
    wait_until(lambda: gone(escaped), "the run's setsid() descendant to be killed", 10)


def test_a_descendant_that_left_the_group_dies_when_the_command_exits(lab, tmp_path, strays):
    """The command exits at once, its setsid() child keeps the pipe open: the run still ends then."""
    repo, env = lab
    pid_file = tmp_path / "escaped"
    (repo / "code/demo/daemon.sh").write_text(ESCAPE + "echo started\n")
    add_run(repo, "daemon", f"sh daemon.sh {pid_file}", timeout=120)
    start = time.monotonic()
    proc = subprocess.run(command(repo), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and time.monotonic() - start < 40, proc.stdout + proc.stderr
    escaped = int(pid_file.read_text())
    strays(escaped)
    assert gone(escaped)
    assert (repo / "evidence/demo/s1/daemon.txt").read_text() == "started\n"
