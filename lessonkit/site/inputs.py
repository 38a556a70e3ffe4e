"""What a page's check result depends on, and how to tell when that changed (for CheckedSite).

A page's result depends on its Markdown, the evidence sets it names inside double braces, the
code files its region and diagram lines read, and the list of sets. `FileDigests` identifies a
file cheaply and soundly across rebuilds; `name_words` and `region_files` read a page's inputs
off its text before it is checked.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lessonkit import cache
from lessonkit.pages.scan import tokens

_NAME_TOKEN_RE = re.compile(r"""[\w.-]+""", re.VERBOSE)
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


def _bodies(markdown: str) -> list[str]:
    """The text inside each `{{ … }}` of the page, as the page's scanner reads them (a claim or a
    directive may run over lines)."""
    return [t.body for t in tokens(markdown)]


def region_files(markdown: str) -> set[str]:
    """The paths under code/ that the page's `{{ region PATH NAME }}` and `{{ diagram PATH }}` directives read
    (a page also reads the runs.toml of each set it names, for its display names: see CheckedSite._inputs)."""
    paths = set()
    for body in _bodies(markdown):
        args = body.split()
        if not args or args[0] not in ("region", "diagram"):
            continue
        args = args[1:]
        if any(q in body for q in "\"'\\"):
            try:
                args = shlex.split(body)[1:]
            except ValueError:
                pass  # the page check reports the unreadable directive
        if args:
            paths.add(args[0])
    return paths


_SOURCE_REF_RE = re.compile(r"""@\s*(?P<ref>[\w./-]+\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp|py))\s*:""")


def constant_files(markdown: str, lessons: Iterable[str]) -> set[str]:
    """The paths under code/ whose constants the page's claims quote ('{{ 4 @ racecheck.cu:kTiles }}'):
    LESSON/FILE as written, a bare FILE in each of `lessons` (the lessons of the sets it names)."""
    paths = set()
    for body in _bodies(markdown):
        for m in _SOURCE_REF_RE.finditer(body):
            ref = m.group("ref")
            if ref.startswith("lessonkit/"):
                continue  # the core's own constant: every cache key holds the core's version already
            if "/" in ref:
                paths.add(ref)
            else:
                paths.update(f"{lesson}/{ref}" for lesson in lessons)
    return paths


def name_words(markdown: str) -> set[str]:
    """Every word inside the page's double braces that could name a set: each run of letters,
    digits, '-' and '.', taken whole, without its outer dots, and split at its dots (a set name
    may hold a dot: 'day62-racecheck-cuda12.4'; 'day62-racecheck.' ends a sentence). A page can
    only cite a set by naming it there ('{{ evidence day62-racecheck }}', '{{ 3 @ SET/RUN:... }}')."""
    words = set(_NAME_TOKEN_RE.findall(" ".join(_bodies(markdown))))
    for token in [t for t in words if "." in t]:
        words.add(token.strip("."))
        words.update(token.split("."))
    return words


@dataclass(frozen=True)
class PageInputs:
    """What a page's result was computed from: its text, its source file, the sets it cites or
    names, the code files of its regions, and the list of sets (a page naming no set says which
    exist); for `check`, which audits the page as rendered, also the file's text above the
    Markdown (its front matter, where the page declares its narrative figures)."""

    markdown: str
    offset: int
    source: tuple[str, str]
    catalog: str
    sets: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]
    front: str = ""
