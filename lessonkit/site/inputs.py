"""What a page's check result depends on, and how to tell when that changed (for CheckedSite).

A page's result depends on its Markdown, the list of sets (and what else a page may name that does
not exist yet), and what its check read: the evidence sets it looked up or cited, and the code files
its directives and claims read, as the check records them (PageResult.looked_up, .cited, .sources).
`FileDigests` identifies a file cheaply and soundly across rebuilds.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lessonkit import cache

MISSING = "missing"


class FileDigests:
    """A file's identity for change detection, cheap to ask again and again.

    A file last changed more than a second before it was first seen is identified by its stat
    (inode, size, modification and change times): any later write changes the change time.
    A file seen within a second of its last change could change again without its stat
    changing (the file system's timestamps are coarse; git calls this "racy"), so it is
    identified by a hash of its bytes, read again on every look until it has settled.
    """

    def __init__(self) -> None:
        self._known: dict[str, tuple[tuple[int, ...], str, bool]] = {}

    def digest(self, path: Path | str) -> str:
        """The file's identity: 'stat:...' or 'sha256:...' (same file, same answer), or 'missing'."""
        key = os.fspath(path)
        try:
            st = os.stat(key)
        except OSError:
            self._known.pop(key, None)
            return MISSING
        return self._identity(key, st)

    def _identity(self, key: str, st: os.stat_result) -> str:
        stamp = (*cache.stamp(st), st.st_mode)
        known = self._known.get(key)
        if known is not None and known[0] == stamp and known[2]:
            return known[1]
        settled = cache.settled(st)  # one written within the cache's racy window is hashed again next time
        if (known is None or known[0] != stamp) and settled:
            identity = "stat:" + ":".join(map(str, stamp))
            self._known[key] = (stamp, identity, True)
            return identity
        try:
            with open(key, "rb") as f:
                identity = "sha256:" + hashlib.sha256(f.read()).hexdigest()
        except IsADirectoryError:
            identity = "directory"
        except OSError:
            return MISSING
        self._known[key] = (stamp, identity, settled)
        return identity


def combine(items: Iterable[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for key, value in items:
        h.update(f"{key}\0{value}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


@dataclass(frozen=True)
class PageInputs:
    """What a page's result was computed from: its text, its source file, the catalog (the list of
    sets: a page naming no set says which exist), and, once checked, the sets and code files it read;
    for `check`, which audits the page as rendered, also the file's text above the
    Markdown (its front matter, where the page declares its narrative figures)."""

    markdown: str
    offset: int
    source: tuple[str, str]
    catalog: str
    sets: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]
    front: str = ""
