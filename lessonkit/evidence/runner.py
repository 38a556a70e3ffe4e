"""A refresh's recordings, run: each command under its supervisor (lessonkit.evidence.supervise)
with a timeout, the shared ones concurrently, then each exclusive one with the GPU to itself.

Every live run is noted in the lesson's ledger (lessonkit.evidence.lessonlock) until its
processes are gone, and `Runs.end_all` ends every one of them; the refresh calls it in a
`finally`, so no run outlives the refresh, whatever ends it.

Standard library only, as the refresh.
"""

from __future__ import annotations

import os
import select
import shlex
import signal
import subprocess
import threading
import time
from concurrent import futures
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from lessonkit.evidence.lessonlock import RunLedger, RunRecord, cannot_write
from lessonkit.evidence.manifest import recording_name
from lessonkit.evidence.plan import RefreshError
from lessonkit.evidence.spec import RunSpec
from lessonkit.evidence.supervise import start_ticks, supervisor_argv

END_WAIT_S = 10.0  # a supervisor told to end is gone within this, or is killed


@dataclass(frozen=True)
class Job:
    """One recording to make: repeat `repeat` of `run`."""

    run: RunSpec
    repeat: int

    @property
    def name(self) -> str:
        """The recording's entry name (NAME, or NAME.rK when the run repeats)."""
        return recording_name(self.run.name, self.repeat, self.run.repeat)


@dataclass
class RunResult:
    """What one recording did."""

    job: Job
    output: str
    exit_code: int | None
    timed_out: bool
    wall_s: float
    date: str
    started: float
    ended: float
    cwd: Path
    raw: bytes = b""  # the output as printed (the transcript is its bytes when they are UTF-8 text)
    over_cap: bool = False  # it printed more than the run's max_output; only that much was kept

    @property
    def run(self) -> RunSpec:
        """The run this is a recording of."""
        return self.job.run


def utc_now() -> str:
    """Now, as the manifest writes dates: '2025-05-09T07:35:25Z'."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Runs:
    """The supervisors a refresh has started and not yet seen end, noted in the lesson's ledger."""

    def __init__(self, ledger: RunLedger) -> None:
        self.ledger = ledger
        self._live: dict[subprocess.Popen, int | None] = {}  # supervisor -> its command's group
        self._lock = threading.Lock()
        self._ending = False
        self._pid, self._start = os.getpid(), start_ticks(os.getpid())  # this refresh, for the ledger

    def start(self, command: str, cwd: Path, env: dict[str, str] | None) -> subprocess.Popen:
        """Start `command` under a supervisor in a session of its own, stdout and stderr together,
        and note it in the ledger; raise the OSError that starting it raised, as subprocess would."""
        status_r, status_w = os.pipe()
        try:
            with self._lock:  # end_all either sees this run or stops it from starting
                if self._ending:
                    raise RefreshError("the refresh is ending; no run is started")
                proc = subprocess.Popen(supervisor_argv(shlex.split(command), os.getpid(), status_w), cwd=cwd,
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        start_new_session=True, pass_fds=(status_w,))
                self._live[proc] = None
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        try:
            with os.fdopen(status_r, "rb") as status:
                word = status.read().decode("utf-8", "surrogateescape").rstrip("\n").split(" ", 2)
            if word[0] == "failed":
                errno = int(word[1])
                raise OSError(errno, os.strerror(errno), word[2])
        except BaseException:
            self.finish(proc, ended=False)
            raise
        if word[0] == "started":  # else the supervisor ended before it started the command
            pgid, start = int(word[1]), word[2]
            with self._lock:
                self._live[proc] = pgid
                self.ledger.add(RunRecord(pgid=pgid, start=None if start == "-" else int(start),
                                          refresh=self._pid, refresh_start=self._start, command=command))
        return proc

    def finish(self, proc: subprocess.Popen, ended: bool) -> None:
        """Forget a run once its processes are gone; unless it `ended` (output read to the end,
        supervisor reaped), end it first."""
        orphaned = False
        if not ended:
            self.end(proc)
            try:
                proc.communicate(timeout=END_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                proc.stdout.close()
                orphaned = True  # its command's group stays in the ledger, for the next refresh to end
        with self._lock:
            pgid = self._live.pop(proc, None)
            if pgid is not None and not orphaned:
                self.ledger.remove(pgid)

    def end(self, proc: subprocess.Popen) -> None:
        """Tell a supervisor to kill its command's whole group (it does so with SIGKILL) and exit."""
        if proc.returncode is None:  # while unreaped, its PID is still this supervisor's
            try:
                proc.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass

    def end_all(self) -> None:
        """End every live run, and start no more."""
        with self._lock:
            self._ending = True
            for proc in list(self._live):
                self.end(proc)


BUILD_OUTPUT_CAP = 16 * 1024 * 1024  # the build's output kept in memory, at most


@dataclass
class Collected:
    """What a run printed, read while it ran: at most `cap` bytes are kept."""

    data: bytes
    timed_out: bool  # the deadline came before the output ended
    over_cap: bool   # it printed more than the cap; the rest was not kept


def collect(proc: subprocess.Popen, runs: Runs, timeout: float | None, cap: int) -> Collected:
    """Read `proc`'s output as it comes, keeping at most `cap` bytes, until it ends, the timeout passes or
    the cap is passed; in the last two cases the run is ended (the supervisor kills every process of
    it), what it still prints is drained for at most END_WAIT_S without being kept, and the pipe is let
    go, so no process that keeps it open can hold the refresh. The supervisor is reaped either way."""
    fd = proc.stdout.fileno()
    kept = bytearray()
    deadline = None if timeout is None else time.monotonic() + timeout
    timed_out = over = False
    while True:
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([fd], [], [], wait)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        if len(kept) + len(chunk) > cap:
            kept += chunk[:cap + 1 - len(kept)]
            over = True
            break
        kept += chunk
    if timed_out or over:
        runs.end(proc)
        drain_until = time.monotonic() + END_WAIT_S
        while (left := drain_until - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
            if not os.read(fd, 1 << 16):
                break
    proc.stdout.close()
    try:
        proc.wait(timeout=END_WAIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()  # its command's group stays in the ledger (Runs.finish), for the next refresh to end
        proc.wait()
    return Collected(bytes(kept), timed_out, over)


def run_to_end(command: str, cwd: Path, runs: Runs, env: dict[str, str] | None = None) -> tuple[str, int]:
    """Run `command` (the build) under a supervisor until it exits: its output, stdout and stderr
    together (at most BUILD_OUTPUT_CAP bytes of it), and its exit code."""
    proc = runs.start(command, cwd, env)
    ended = False
    try:
        got = collect(proc, runs, None, BUILD_OUTPUT_CAP)
        ended = True
    finally:
        runs.finish(proc, ended)
    return got.data.decode("utf-8", errors="replace"), proc.returncode


def execute(job: Job, cwd: Path, runs: Runs, env: dict[str, str] | None = None) -> RunResult:
    """Run one recording with a timeout; stdout and stderr together, in order, read as they come and
    capped at the run's max_output; a hang is killed and recorded."""
    run = job.run
    started = time.time()
    start = time.monotonic()
    date = utc_now()
    proc = runs.start(run.command, cwd, env)
    ended = False
    try:
        got = collect(proc, runs, run.timeout, run.max_output)
        ended = True
    finally:
        runs.finish(proc, ended)
    wall = time.monotonic() - start
    raw = got.data
    if got.timed_out:
        raw += f"\n[refresh: no exit after {run.timeout:g} s; the process group was killed]\n".encode()
    timed_out = got.timed_out
    return RunResult(job, raw.decode("utf-8", errors="replace"), None if timed_out else proc.returncode, timed_out,
                     wall, date, started, time.time(), cwd, raw, got.over_cap)


def _job_dir(build_dir: Path, runs_dir: Path, job: Job) -> Path:
    """A working folder of its own for each recording (repeats write the same artifact names)."""
    cwd = runs_dir / job.name
    try:
        cwd.mkdir(parents=True)
        for path in build_dir.iterdir():
            (cwd / path.name).symlink_to(path)
    except OSError as exc:
        raise cannot_write(cwd, exc) from None
    return cwd


def run_all(specs: list[RunSpec], build_dir: Path, runs_dir: Path, out, runs: Runs,
            env: dict[str, str] | None = None, guard=None) -> list[RunResult]:
    """Every recording: the shared ones concurrently, then each exclusive one with the GPU to itself.
    `guard` (lessonkit.evidence.refresh.GpuGuard), when given, is asked before and after each
    exclusive recording whether anything else holds the GPU; it may refuse (RefreshError)."""
    jobs = [Job(r, k) for r in specs for k in range(1, r.repeat + 1)]
    shared = [j for j in jobs if not j.run.exclusive]
    exclusive = [j for j in jobs if j.run.exclusive]
    results: list[RunResult] = []

    def report(res: RunResult) -> None:
        results.append(res)
        status = "timed out" if res.timed_out else f"exit {res.exit_code}"
        mode = " exclusive" if res.run.exclusive else ""
        out(f"run     {res.job.name:<28} {status:<10} {res.wall_s:8.2f} s{mode}")

    start = time.monotonic()
    workers = max(1, min(len(shared), os.cpu_count() or 4))
    with futures.ThreadPoolExecutor(max_workers=workers) as pool:
        pending = [pool.submit(execute, j, _job_dir(build_dir, runs_dir, j), runs, env) for j in shared]
        try:
            for fut in futures.as_completed(pending):
                report(fut.result())
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)  # the queued runs never start
            runs.end_all()
            raise
    concurrent = time.monotonic() - start
    for job in exclusive:  # after the pool has drained: nothing else of the refresh is running
        if guard is not None:
            guard.before(job.name)
        result = execute(job, _job_dir(build_dir, runs_dir, job), runs, env)
        if guard is not None:
            guard.after(job.name)
        report(result)
    total = time.monotonic() - start
    longest = max((r.wall_s for r in results if not r.run.exclusive), default=0.0)
    out(f"total   {len(results)} recordings in {total:.2f} s: {len(shared)} concurrent in {concurrent:.2f} s "
        f"(longest {longest:.2f} s), {len(exclusive)} exclusive in {total - concurrent:.2f} s")
    order = {j.name: i for i, j in enumerate(jobs)}
    return sorted(results, key=lambda r: order[r.job.name])
