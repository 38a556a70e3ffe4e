"""The supervisor of one run of the refresh: the run's processes end when the run or the refresh does.

The refresh (lessonkit.evidence.runner) starts `python3 supervise.py --parent PID --status FD --
COMMAND...` in a session of its own for each run. The supervisor asks Linux to send it SIGTERM
when the refresh dies, even by SIGKILL (PR_SET_PDEATHSIG, which reaches only the direct child, so
a supervisor is needed for the command's own children; it fires when the forking thread ends, and
the refresh's pool threads outlive their runs). It starts the command in a new process group and
kills that whole group with SIGKILL (so a grandchild that ignores SIGTERM, such as the program
under compute-sanitizer, goes too) on SIGTERM, SIGHUP or SIGINT, at the refresh's death, and when
the command exits; then it kills every other process below it in the process tree (one that left
the group with setsid() and kept the output pipe open, too) and waits until they are all gone (it
is their subreaper, so orphans become its children and none escapes the tree). The
command inherits the supervisor's standard streams, so its transcript is exactly what it wrote:
the supervisor writes nothing to them, and exits as the command did (the same code, or killed by
the same signal).

On FD it writes one line: `started PID START` (START: the command's start time in clock ticks
after boot, /proc/PID/stat field 22, or `-` where there is no /proc) or `failed ERRNO FILENAME`
when the command cannot be started. Standard library only, and run by path (no lessonkit import):
it must start fast and see the run's environment unchanged.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from typing import NamedTuple

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_CHILD_SUBREAPER = 36
ENDING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)

_program: subprocess.Popen | None = None
_ending = False


class ProcStat(NamedTuple):
    """What /proc/PID/stat says of a process: its state letter (Z: a zombie), group and start."""

    state: str
    pgrp: int
    start: int  # clock ticks after boot (field 22): with the PID, names one process for good
    ppid: int = 0


def read_stat(pid: int) -> ProcStat | None:
    """Process `pid`'s /proc/PID/stat; None when there is no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces or ')'; count after the last ')'.
    fields = stat[stat.rindex(b")") + 2:].split()
    return ProcStat(fields[0].decode(), int(fields[2]), int(fields[19]), int(fields[1]))


def descendants(root: int) -> list[int]:
    """Every process below `root` in the process tree (from /proc; empty without it), whatever its
    group or session: a child that called setsid() is still a descendant."""
    children: dict[int, list[int]] = {}
    try:
        pids = [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        stat = read_stat(pid)
        if stat is not None:
            children.setdefault(stat.ppid, []).append(pid)
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks after boot (/proc/PID/stat field 22); None if unknown."""
    stat = read_stat(pid)
    return None if stat is None else stat.start


def supervisor_argv(command: list[str], parent: int, status_fd: int) -> list[str]:
    """The command line that runs `command` under the supervisor, for the refresh of process `parent`."""
    # -S: no site (faster, nothing of the environment's packages); -P: no script folder on sys.path.
    return [sys.executable, "-S", "-P", os.path.abspath(__file__), "--parent", str(parent),
            "--status", str(status_fd), "--", *command]


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _end(signum: int, frame: object) -> None:
    global _ending
    _ending = True
    if _program is not None:
        _kill_group(_program.pid)


def _die_when_parent_dies(parent: int) -> bool:
    """Ask for SIGTERM at the refresh's death, and for the command's orphans as children (so they
    can be waited for); False when the refresh has died already."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    return os.getppid() == parent  # a death before prctl left us to init (or a subreaper)


def _end_group(pgid: int) -> int:
    """Kill what is left of the command: its group, and every other descendant (one that left the group
    with setsid() too); wait until each of them is gone; the command's exit code."""
    global _program
    _kill_group(pgid)
    _program = None  # from here the group's ID may be freed: a late signal must not kill by it
    me, returncode = os.getpid(), 0
    while True:
        # Every descendant is below us in the tree (orphans are re-parented to us, the subreaper), so
        # killing what the tree shows, again after each reaped child, leaves none, whatever it forks.
        for pid in descendants(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            if not descendants(me):
                return returncode
            time.sleep(0.01)  # a killed descendant's own children are being handed to us
            continue
        if pid == pgid:
            returncode = os.waitstatus_to_exitcode(status)


def _exit_as(returncode: int) -> None:
    """Exit as the command did: with its code, or killed by its signal."""
    if returncode >= 0:
        os._exit(returncode)
    sig = -returncode
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the command's crash, not ours, may dump core
    if sig in ENDING:  # our handler would catch it; SIGKILL and the rest have none
        signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)  # a signal that does not kill (the command was killed by one that does)


def main(argv: list[str]) -> None:
    """Run the command after `--` as described above; never returns."""
    global _program
    split = argv.index("--")
    options, command = dict(zip(argv[0:split:2], argv[1:split:2])), argv[split + 1:]
    parent, status_fd = int(options["--parent"]), int(options["--status"])
    for sig in ENDING:
        signal.signal(sig, _end)
    if not _die_when_parent_dies(parent) or _ending:
        os._exit(128 + signal.SIGTERM)
    try:
        program = subprocess.Popen(command, process_group=0)
    except OSError as exc:
        os.write(status_fd, f"failed {exc.errno} {exc.filename}\n".encode("utf-8", "surrogateescape"))
        os._exit(127)
    _program = program
    if _ending:  # a signal came while the command was being started
        _kill_group(program.pid)
    start = start_ticks(program.pid)
    os.write(status_fd, f"started {program.pid} {'-' if start is None else start}\n".encode())
    os.close(status_fd)
    # Wait without reaping: while the command is a zombie its group's ID cannot be taken by another
    # process group, so what it left in the group is killed, and nothing else.
    os.waitid(os.P_PID, program.pid, os.WEXITED | os.WNOWAIT)
    _exit_as(_end_group(program.pid))


if __name__ == "__main__":
    main(sys.argv[1:])
