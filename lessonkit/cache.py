"""A cache on disk, in <repo>/.lessonkit-cache/ (git-ignored), so a new process need not redo
what an earlier one derived from the same files.

Two kinds of entry live there:

- results derived from files (a page's errors or expanded page, the site's own errors), each
  stored under a name with the key it was computed for: the sha256 of everything it was derived
  from (file contents, not their stats) and of `core_version()`, which changes with any edit
  of lessonkit's own source. An entry is served only for exactly that key;
- the sha256 of files by their stat (`HashStore`): (device, inode, size, mtime_ns, ctime_ns).
  A write always moves the change time, so a file whose stat is unchanged has unchanged
  bytes, except within the file system's timestamp granularity: a file changed in the last
  two seconds (`RACY_NS`) is hashed from its bytes every time and never stored.
  `LESSONKIT_RACY_MS` shortens that window for a file system whose timestamps are finer than a
  tick of a few milliseconds (Linux's local ones), down to 100 ms; the tests use 250 ms.

Every file carries a checksum of its payload: a truncated, corrupt or unreadable file is a
miss (and is rewritten), never an error. Writers write a temporary file beside the entry and
rename it over the entry (`os.replace`), so a reader sees the old entry or the new one, whole.
`LESSONKIT_CACHE=off` (or 0, no, false) turns the cache off: nothing is read or written, and
every result is computed from the files, as on a fresh clone.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

FOLDER = ".lessonkit-cache"
ENV = "LESSONKIT_CACHE"
OFF_VALUES = ("0", "off", "no", "false")
RACY_ENV = "LESSONKIT_RACY_MS"
RACY_FLOOR_MS = 100


def _racy_ns() -> int:
    """The window in which a file's stat does not yet stand for its bytes: LESSONKIT_RACY_MS (at least
    RACY_FLOOR_MS) when it is a whole number, else two seconds."""
    text = os.environ.get(RACY_ENV, "").strip()
    return max(int(text), RACY_FLOOR_MS) * 1_000_000 if text.isdigit() else 2_000_000_000


RACY_NS = _racy_ns()  # a file changed this recently may change again with the same stat
_MAGIC = b"lessonkit-cache 1\n"
_CORE = Path(__file__).resolve().parent


def enabled() -> bool:
    """Whether the environment allows the cache (LESSONKIT_CACHE is not off)."""
    return os.environ.get(ENV, "").strip().lower() not in OFF_VALUES


@lru_cache(maxsize=1)
def core_version() -> str:
    """sha256 over lessonkit's source files and the Python that reads the entries."""
    h = hashlib.sha256(f"{sys.version}\0{marshal.version}\0".encode())
    for path in sorted(_CORE.rglob("*.py")):  # the base modules and every subpackage's
        h.update(path.relative_to(_CORE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


# marshal's format 2: its bytes are a function of the value alone. From format 3 on, marshal writes
# an object met twice as a back-reference, and an interned string with another type code, so equal
# values built differently (a result computed, or read back from an entry) gave different keys.
KEY_FORMAT = 2


def value_bytes(value: Any) -> bytes:
    """`value` (strings, numbers, None, nested tuples, lists and dicts) as bytes that depend on what it
    is, not on how it was built."""
    return marshal.dumps(value, KEY_FORMAT)


def digest(*parts: Any) -> str:
    """A key: sha256 over the core's version and `parts` (strings, numbers, None, nested tuples)."""
    h = hashlib.sha256(core_version().encode())
    h.update(value_bytes(parts))
    return h.hexdigest()


def stamp(st: os.stat_result) -> tuple[int, ...]:
    """What identifies a file's bytes while it is settled: device, inode, size, mtime, ctime."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def settled(st: os.stat_result, now_ns: int | None = None) -> bool:
    """Whether a file was last changed long enough ago (RACY_NS, the one window of every cache) for its
    stat to stand for its bytes."""
    now = time.time_ns() if now_ns is None else now_ns
    return now - max(st.st_mtime_ns, st.st_ctime_ns) > RACY_NS


class Store:
    """Entries under one folder: `get` the value stored for a key, `put` one (atomically)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder  # None: the cache is off

    @classmethod
    def for_repo(cls, repo: Path) -> Store:
        """The repository's cache, or an inactive one when LESSONKIT_CACHE is off."""
        return cls(Path(repo) / FOLDER if enabled() else None)

    def _path(self, kind: str, name: str) -> Path:
        assert self.folder is not None
        return self.folder / kind / name

    def get(self, kind: str, name: str, key: str) -> Any:
        """The value stored as kind/name for `key`; None when there is none, for another key,
        or the file is unreadable, truncated or corrupt."""
        if self.folder is None:
            return None
        head = len(_MAGIC) + 64 + 1 + 64 + 1
        try:
            with open(self._path(kind, name), "rb") as f:
                first = f.read(head)  # an entry for another key is not read further
                if len(first) < head or not first.startswith(_MAGIC + key.encode()):
                    return None
                payload = f.read()
        except OSError:
            return None
        if hashlib.sha256(payload).hexdigest().encode() != first[head - 65:head - 1]:
            return None
        try:
            return marshal.loads(payload)
        except (EOFError, ValueError, TypeError):
            return None

    def put(self, kind: str, name: str, key: str, value: Any) -> None:
        """Store `value` (plain data: str, int, float, bool, None, bytes, tuples, lists, dicts,
        sets) as kind/name for `key`. Failing to write only costs the next process the work."""
        if self.folder is None:
            return
        payload = marshal.dumps(value)
        data = b"".join((_MAGIC, key.encode(), b"\n", hashlib.sha256(payload).hexdigest().encode(),
                         b"\n", payload))
        target = self._path(kind, name)
        tmp = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=target.parent)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
            tmp = None
        except OSError:
            pass
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass


class HashStore:
    """sha256 of files by stat, read from the store once and written back when it grew."""

    KIND, NAME = "hashes", "files"

    def __init__(self, store: Store) -> None:
        self.store = store
        self._known: dict[str, tuple[tuple[int, ...], str]] | None = None
        self._dirty = False

    def _entries(self) -> dict[str, tuple[tuple[int, ...], str]]:
        if self._known is None:
            stored = self.store.get(self.KIND, self.NAME, digest("hashes"))
            self._known = {}
            if isinstance(stored, dict):
                for path, entry in stored.items():
                    if (isinstance(path, str) and isinstance(entry, tuple) and len(entry) == 2
                            and isinstance(entry[0], tuple) and isinstance(entry[1], str)):
                        self._known[path] = entry
        return self._known

    def lookup(self, path: str, st: os.stat_result) -> str | None:
        """The stored sha256 of `path` if its stat is the one it was stored with and it has
        settled since; else None (hash its bytes)."""
        if self.store.folder is None or not settled(st):
            return None
        entry = self._entries().get(path)
        return entry[1] if entry is not None and entry[0] == stamp(st) else None

    def remember(self, path: str, st: os.stat_result, sha256: str) -> None:
        """Note the sha256 of `path` as read with stat `st` (only if it had settled by then)."""
        if self.store.folder is None or not settled(st):
            return
        entries = self._entries()
        entry = (stamp(st), sha256)
        if entries.get(path) != entry:
            entries[path] = entry
            self._dirty = True

    def adopt(self, entries: dict[str, tuple[tuple[int, ...], str]]) -> None:
        """Note hashes of settled files, each by the stamp it was hashed with (another process's)."""
        if self.store.folder is None:
            return
        known = self._entries()
        for path, entry in entries.items():
            if known.get(path) != entry:
                known[path] = entry
                self._dirty = True

    def save(self) -> None:
        """Write the entries back if any was added or changed."""
        if self._dirty and self._known is not None:
            alive = {p: e for p, e in self._known.items() if os.path.exists(p)}
            self.store.put(self.KIND, self.NAME, digest("hashes"), alive)
            self._dirty = False
