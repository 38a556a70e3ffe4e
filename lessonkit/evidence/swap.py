"""The refresh's swap: a complete new evidence set takes the old one's place, atomically where the
file system can, and a refresh that died is tidied up by the next (lessonkit.evidence.refresh).

Standard library only, as the refresh.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import sys
from pathlib import Path

from lessonkit.evidence.sets import OLD_PREFIX, SCRATCH_PREFIX

# Test hooks: stop the process dead at a named point of the swap, send it a signal there
# (POINT:SIGNAL, as a person's Ctrl-C or a `kill` might arrive), or pretend renameat2 is missing.
CRASH_AT_ENV = "LESSONKIT_REFRESH_CRASH_AT"
SIGNAL_AT_ENV = "LESSONKIT_REFRESH_SIGNAL_AT"
NO_EXCHANGE_ENV = "LESSONKIT_REFRESH_NO_EXCHANGE"
CRASH_POINTS = ("scratch-written", "exchanged", "old-moved", "new-moved")


def crash_point(name: str) -> None:
    """Die here, as a SIGKILL would, when the test hook names this point; or signal this process."""
    if os.environ.get(CRASH_AT_ENV) == name:
        os._exit(137)
    point, _, sig = os.environ.get(SIGNAL_AT_ENV, "").partition(":")
    if point == name:
        os.kill(os.getpid(), getattr(signal, sig))


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    if os.environ.get(NO_EXCHANGE_ENV):
        return False
    libc_name = ctypes.util.find_library("c")
    if not libc_name or sys.platform != "linux":
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    fn = getattr(libc, "renameat2", None)
    if fn is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    rc = fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return rc == 0


def old_folder(target: Path) -> Path:
    """Where the fallback swap parks the previous set: evidence/.old.<set> (hidden from the build
    while the set itself exists; read in its place while it does not)."""
    return target.with_name(OLD_PREFIX + target.name)


def scratch_folder(target: Path) -> Path:
    """This process's work in progress for set `target`: evidence/.refresh.<set>.<pid>."""
    return target.with_name(f"{SCRATCH_PREFIX}{target.name}.{os.getpid()}")


def swap_in(new: Path, target: Path) -> None:
    """Make the complete folder `new` the set at `target`; the old set is removed.

    At every instant one complete set is findable: with renameat2 the exchange is atomic; without
    it, target moves to .old.<set> (which the build and the next refresh read as the set while
    target is missing), new moves to target, and only then is the old one deleted.
    """
    if not target.exists():
        os.rename(new, target)
        return
    if _exchange(new, target):
        crash_point("exchanged")
        shutil.rmtree(new)  # `new` now holds the old evidence
        return
    old = old_folder(target)
    if old.exists():
        shutil.rmtree(old)  # left by a crash after a completed swap (recover removes it first)
    os.rename(target, old)
    crash_point("old-moved")
    os.rename(new, target)
    crash_point("new-moved")
    shutil.rmtree(old)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(target: Path) -> list[str]:
    """Put a set back in order after a refresh that died; returns what it did, one line each.

    Exactly one set remains: the old one restored when the crash came between the two renames,
    the new one when it came after. Scratch folders of dead refreshes of this set are removed
    (another set's scratch never matches: names are .refresh.<set>.<pid>, and set names hold no dot).
    """
    did: list[str] = []
    old = old_folder(target)
    if old.exists():
        if target.exists():
            shutil.rmtree(old)
            did.append(f"removed {old.name} (a swap had completed)")
        else:
            os.rename(old, target)
            did.append(f"restored {target.name} from {old.name} (a swap was interrupted)")
    prefix = f"{SCRATCH_PREFIX}{target.name}."
    for scratch in sorted(target.parent.glob(prefix + "*")) if target.parent.is_dir() else []:
        pid = scratch.name[len(prefix):]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            shutil.rmtree(scratch, ignore_errors=True)
            did.append(f"removed {scratch.name} (a refresh that did not finish)")
    return did
