"""What changed on disk between two rebuilds of `serve`, as its file watcher (inotify) reported it.

A rebuild scans every file under evidence/ and code/ (lessonkit.site.verdict.scan: some 48,000
stats at a hundred lessons, a quarter of a second) to see whether a recording or a program
changed. Under `serve` the watcher already reports every change there, so a rebuild after an edit
under docs/ alone may take the last scan as it is. `Changes` keeps what the watcher reported;
`unchanged_since_last_scan` says when that is safe, and otherwise the rebuild scans:

- the watcher must have watched evidence/ and code/, recursively, since before that scan: a
  folder watched later, or no longer, may have changed unseen;
- every reported change lies under docs/;
- the watcher lost no report (the kernel's queue overflowed): then anything may have changed;
- the last scan met no symbolic link under evidence/ or code/: the scan reads through a link,
  while inotify reports changes to the link, not to what it points at.

A change that lands while a scan runs is reported after the rebuild took the reports, so the next
rebuild scans again. Nothing here imports the watcher: the hooks tell `Changes` what it said, and
take the scan a rebuild refreshes with from `rebuild_scan`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from lessonkit.site import verdict

# Reports kept between two rebuilds before they count as lost (a checkout of another branch).
MOST_PATHS = 10_000


class Changes:
    """The paths the watcher reported since `take` (None: unknown), and the folders it watches."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: set[str] | None = None  # unknown until a rebuild has taken the reports once
        self._watched: list[tuple[str, bool]] = []  # (real path, recursive)
        self.links = True  # whether the last scan met a symbolic link (True until a scan says)

    def watching(self, path: str, recursive: bool) -> None:
        """The watcher watches `path` from now on: what changed there before is unknown."""
        with self._lock:
            self._watched.append((os.path.realpath(path), recursive))
            self._paths = None

    def unwatched(self, path: str, recursive: bool) -> None:
        with self._lock:
            real = os.path.realpath(path)
            if (real, recursive) in self._watched:
                self._watched.remove((real, recursive))
            self._paths = None

    def reported(self, paths: Iterable[str]) -> None:
        """The watcher reported a change at each of `paths`."""
        with self._lock:
            if self._paths is not None:
                self._paths.update(p for p in paths if p)
                if len(self._paths) > MOST_PATHS:
                    self._paths = None

    def lost(self) -> None:
        """The watcher lost reports: anything may have changed."""
        with self._lock:
            self._paths = None

    def take(self) -> tuple[set[str] | None, list[tuple[str, bool]]]:
        """The reports since the last take (None: unknown) and the folders watched; the next take
        has the reports from now on."""
        with self._lock:
            found, self._paths = self._paths, set()
            return found, list(self._watched)


def _covered(folder: str, watched: list[tuple[str, bool]]) -> bool:
    real = os.path.realpath(folder)
    return any(recursive and (real == top or real.startswith(top.rstrip(os.sep) + os.sep)) for top, recursive in watched)


def unchanged_since_last_scan(taken: tuple[set[str] | None, list[tuple[str, bool]]], repo: str, docs: str,
                              links: bool) -> bool:
    """Whether nothing under evidence/ and code/ of `repo` can have changed since the scan before
    the take that gave `taken`: every report lies under `docs`, none was lost, both folders were
    watched recursively, and that scan met no symbolic link (`links`)."""
    paths, watched = taken
    if paths is None or links:
        return False
    inside = os.path.abspath(docs).rstrip(os.sep) + os.sep
    return (all(os.path.abspath(p).startswith(inside) for p in paths)
            and _covered(os.path.join(repo, "evidence"), watched) and _covered(os.path.join(repo, "code"), watched))


def rebuild_scan(changes: Changes | None, repo: Path, docs: str,
                 last: tuple[int, verdict.Scans] | None) -> tuple[tuple[int, verdict.Scans], bool]:
    """The scan of evidence/ and code/ a rebuild refreshes with, and whether it is a new one:
    `last` (the last refresh's, lessonkit.site.check.CheckedSite.last_scan) when `changes`, what
    the watcher reported, vouches that nothing there changed since; otherwise a scan now (without
    a watcher, always)."""
    taken = changes.take() if changes is not None else (None, [])
    if last is not None and changes is not None and unchanged_since_last_scan(taken, str(repo), docs, changes.links):
        return last, False
    links: list[str] = []
    scanned = time.time_ns(), verdict.scan_tree(repo, links)
    if changes is not None:
        changes.links = bool(links)
    return scanned, True
