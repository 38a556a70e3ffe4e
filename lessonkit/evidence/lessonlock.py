"""What a refresh holds while it runs: its lesson's lock, and the ledger of its live runs.

Both live in $TMPDIR/100-days-of-gpu/ (lessons_root: /tmp when TMPDIR is unset, never a fallback), beside the lesson's build folder, where the next refresh
of the lesson finds them: `<lesson>.lock` (flock, so the lock dies with its holder; the file
names the holder's PID, start time and command line) and `<lesson>.pids` (one JSON line per
live run: its process group, the start time of the group's leader, the refresh and the command).
A refresh that takes the lock first ends the groups a dead holder's ledger names whose leader's
start time still matches, so a PID reused since is never killed.

Standard library only, as the refresh.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shlex
import signal
import sys
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Self

from lessonkit.evidence.plan import RefreshError
from lessonkit.evidence.supervise import read_stat, start_ticks

ROOT_NAME = "100-days-of-gpu"
HOLDER_WAIT_S = 2.0  # a holder writes its name just after it locks: a refusal waits this long for it
REAP_WAIT_S = 10.0   # a killed group's processes are gone within this (a GPU context takes a moment)


def lessons_root() -> Path:
    """$TMPDIR/100-days-of-gpu (/tmp/100-days-of-gpu when TMPDIR is unset): the lessons' build folders,
    locks and run ledgers. One fixed place: not tempfile.gettempdir(), which falls back to another
    folder without a word when TMPDIR cannot be written, where a second refresh of a lesson would
    take a second lock. A refresh that cannot write here refuses (LessonLock.acquire)."""
    return Path(os.environ.get("TMPDIR") or "/tmp") / ROOT_NAME


def cannot_write(path: Path, exc: OSError) -> RefreshError:
    """A failed write of the refresh's own files ($TMPDIR full or read-only) as its one message."""
    return RefreshError(f"cannot write {path}: {exc.strerror or exc}; the refresh keeps its lock, its run ledger "
                        "and its build folder there (TMPDIR, else /tmp); the old evidence is kept and nothing was "
                        "recorded")


def started_text(ticks: int | None) -> str:
    """A start time in clock ticks after boot, as UTC ('2025-05-09T07:35:25Z'); 'unknown' without /proc."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return "unknown"
    if ticks is None:
        return "unknown"
    when = boot + ticks / os.sysconf("SC_CLK_TCK")
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class RunRecord:
    """One live run in the ledger: the group its command leads, and who started it."""

    pgid: int
    start: int | None      # the leader's start time, clock ticks after boot
    refresh: int           # the refresh's PID
    refresh_start: int | None
    command: str


class RunLedger:
    """The `<lesson>.pids` file: the live runs of the refresh holding the lock, rewritten whole on each change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[int, RunRecord] = {}

    def add(self, record: RunRecord) -> None:
        """Note a run that has started."""
        self.records[record.pgid] = record
        self._write()

    def remove(self, pgid: int) -> None:
        """Forget a run whose processes are all gone."""
        if self.records.pop(pgid, None) is not None:
            self._write()

    def delete(self) -> None:
        """Remove the ledger's file (and a half-written one a killed refresh left)."""
        self.path.unlink(missing_ok=True)
        self._part().unlink(missing_ok=True)

    def _part(self) -> Path:
        return self.path.with_name(self.path.name + ".part")

    def _write(self) -> None:
        text = "".join(json.dumps(asdict(r)) + "\n" for r in self.records.values())
        try:
            self._part().write_text(text, encoding="utf-8")
            os.replace(self._part(), self.path)  # a refresh killed while writing leaves the whole previous ledger
        except OSError as exc:
            self._part().unlink(missing_ok=True)
            raise cannot_write(self.path, exc) from None


def read_ledger(path: Path) -> list[RunRecord]:
    """The runs a ledger names (none when there is no ledger); a line that is not a record is skipped."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    records = []
    for line in lines:
        try:
            records.append(RunRecord(**json.loads(line)))
        except (ValueError, TypeError):
            pass
    return records


def _live_members(pgid: int) -> list[int]:
    """The processes of group `pgid` that are not zombies."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = read_stat(int(entry))
            if stat is not None and stat.pgrp == pgid and stat.state != "Z":
                found.append(int(entry))
    return found


def reap(ledger: Path) -> list[str]:
    """End the process groups a dead refresh's ledger names, where the leader is still the same
    process; returns one line for each group ended. The ledger is removed."""
    ended = []
    for record in read_ledger(ledger):
        stat = read_stat(record.pgid)
        if record.start is None or stat is None or stat.start != record.start or stat.pgrp != record.pgid:
            continue  # gone, or the PID is another process's now
        # The leader lives (or is an unreaped zombie), so the group ID is still this run's.
        try:
            os.killpg(record.pgid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + REAP_WAIT_S
        while _live_members(record.pgid) and time.monotonic() < deadline:
            time.sleep(0.05)
        ended.append(f"ended process group {record.pgid} left by refresh {record.refresh} "
                     f"(started {started_text(record.refresh_start)}): {record.command}")
    ledger.unlink(missing_ok=True)
    return ended


@dataclass(frozen=True)
class Holder:
    """Who holds a lesson's lock."""

    pid: int
    start: int | None
    command: str


def _read_holder(fd: int) -> Holder | None:
    """The holder a lock file names, if it is the live process it says; None while it is not written yet."""
    try:
        holder = Holder(**json.loads(os.pread(fd, 65536, 0).decode("utf-8")))
    except (ValueError, TypeError, UnicodeDecodeError):
        return None
    return holder if start_ticks(holder.pid) == holder.start else None


class LessonLock:
    """A lesson's lock: one refresh of a lesson at a time; a second is refused at once, naming the first."""

    def __init__(self, lesson: str, root: Path | None = None) -> None:
        self.lesson = lesson
        root = root or lessons_root()
        self.path = root / f"{lesson}.lock"
        self.ledger = RunLedger(root / f"{lesson}.pids")
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise RefreshError naming the refresh that holds it."""
        while True:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by the runs
            except FileNotFoundError:
                continue  # another lesson's refresh removed the empty folder as it let go
            except OSError as exc:
                raise cannot_write(self.path, exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                message = self._refusal(fd)
                os.close(fd)
                raise RefreshError(message) from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)  # its holder removed that file as it let go: lock the one there now
        self._fd = fd
        me = Holder(os.getpid(), start_ticks(os.getpid()), shlex.join(sys.orig_argv))
        data = json.dumps(asdict(me)).encode("utf-8")
        try:
            os.ftruncate(fd, 0)
            if os.pwrite(fd, data, 0) != len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        except OSError as exc:
            self.release()
            raise cannot_write(self.path, exc) from None

    def _refusal(self, fd: int) -> str:
        deadline = time.monotonic() + HOLDER_WAIT_S
        holder = _read_holder(fd)
        while holder is None and time.monotonic() < deadline:
            time.sleep(0.02)
            holder = _read_holder(fd)
        who = ("a refresh whose lock file names no live process" if holder is None else
               f"PID {holder.pid}, started {started_text(holder.start)}: {holder.command}")
        end = "" if holder is None else f", or end it: kill {holder.pid}"
        return (f"another refresh of {self.lesson} is running ({who}); nothing was run; "
                f"wait for it to finish{end}")

    def release(self) -> None:
        """Let go of the lock; the ledger goes too unless a run outlived its supervisor's end."""
        if self._fd is None:
            return
        if not self.ledger.records:
            self.ledger.delete()
        self.path.unlink(missing_ok=True)  # before unlocking: a waiter that opened it locks anew
        os.close(self._fd)
        self._fd = None
        try:
            self.path.parent.rmdir()  # leave $TMPDIR as it was, once no lesson uses the folder
        except OSError:
            pass

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
