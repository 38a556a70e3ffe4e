"""The evidence manifest, evidence/<set>/manifest.json: its schema, read and written here only.

Format 3: one entry per recording. A run with `repeat = N` (N > 1) is recorded as the
entries NAME.r1 .. NAME.rN, each with its own file, exit code, wall time, start and end
time and hashes; the group NAME is what pages cite.

Each entry carries a `digest`, written by the refresh: the sha256 of the UTF-8 bytes of the
canonical JSON of `[NAME, FIELDS]`, where FIELDS is the entry's object without `digest`,
written with sorted keys, `","` and `":"` as separators (no whitespace), ASCII only (other
characters as \\u escapes) and no NaN or Infinity; a number keeps the text JSON gives its
value (`1.5`, `1.0`, `1`). The reader computes the same from what it parsed, so a hand edit
of any field (or moving an entry to another name) is refused, as an edited transcript is
refused by its sha256. The set's own fields (lesson, arch, build, refresh, provenance) carry
one more, `set_digest`: the same hash of `[FIELDS]`, FIELDS those five, so a hand edit of the
GPU's name or a toolkit's version is refused too. Formats 1 and 2 were written before entries carried a digest; they
are refused with the command that re-records the set, so that an edit cannot drop the
digests by lowering the format.

An entry whose digest holds is then checked for sense (each rule its own error), since the
refresh wrote it: wall_s agrees with ended - started, a timed-out run has no exit code and a
finished one has an integer one, date is started's UTC second. JSON's NaN and Infinity (and
numbers too large for a float) are refused anywhere in the file. That a gated run exited 0
is checked where runs.toml is known (lessonkit.evidence.sets.check_gates).

Input hashing lives here too, cached by file stat (in memory, and across processes in the
hash store of lessonkit.cache when a check or a build opened one), so the refresh, the check
and the tests hash the same inputs the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lessonkit import cache
from lessonkit.cache import HashStore
from lessonkit.errors import LessonError
from lessonkit.evidence.spec import LessonSpec, RunSpec
from lessonkit.textio import WRITTEN_BY_REFRESH, read_text

MANIFEST = "manifest.json"
FORMAT = 3
OLD_FORMATS = (1, 2)  # written before entries carried a digest: refused, naming the set's refresh command
BUILD_INPUT = "build line"
MISSING = "missing"

_FIELDS: dict[str, Any] = {
    "file": str, "command": str, "exit_code": (int, type(None)), "timed_out": bool,
    "wall_s": (int, float), "date": str, "inputs": dict, "sha256": str, "format": str,
    "group": str, "repeat": int, "repeats": int, "exclusive": bool,
    "started": (int, float), "ended": (int, float), "digest": str}
# The same, as the exact types JSON gives (the common case, checked first; _is decides the rest).
_EXACT_FIELDS = tuple((k, frozenset(v if isinstance(v, tuple) else (v,))) for k, v in _FIELDS.items())
_GROUP_FIELDS = ("group", "repeat", "repeats", "exclusive", "started", "ended")
_ABSENT = object()
# In the text of a manifest JSON refused for a non-finite number: each string (skipped, so a
# "NaN" inside one is no number) and each bare number or constant, to find the first one's line.
_NUMBER_RE = re.compile(r"""
    "(?:[^"\\]|\\.)*"
  | (?P<number>-?(?:Infinity|NaN|\d[\d.eE+-]*))""", re.VERBOSE | re.DOTALL)
_DATE_RE = re.compile(r"""\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\Z""", re.VERBOSE)
_DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# wall_s is time.monotonic() rounded to 0.01 s, started and ended are time.time() rounded to
# 0.001 s: they differ by the roundings (at most 0.006 s), by the moments between the readings
# and by the wall clock's slew. Measured on the four sets of format 2 (174 recordings, up to
# 150 s long): at most 0.005 s apart. Allowed: 0.05 s, plus the roundings, plus 0.1 % of the
# run (twice the 500 ppm that NTP may slew the clock by).
WALL_MARGIN_S = 0.05 + 0.006
WALL_SLEW = 0.001
# date is read just after started, truncated to the second, so started lies in date's second
# (or a moment before it, when the second ticked between the two readings; started is rounded
# to 0.001 s). Measured on the same sets: started - date from 0.008 to 0.996 s.
DATE_MARGIN_S = 0.05


class _NotFinite(ValueError):
    """A NaN, an Infinity or a number too large for a float, in a manifest's JSON."""


@dataclass(frozen=True)
class TranscriptEntry:
    """The manifest's record of one recording (one transcript or artifact file)."""

    name: str
    file: str
    command: str
    exit_code: int | None
    timed_out: bool
    wall_s: float
    date: str
    inputs: dict[str, str]
    sha256: str
    format: str = "text"
    group: str = ""
    repeat: int = 1
    repeats: int = 1
    exclusive: bool = False
    started: float | None = None
    ended: float | None = None
    refresh_id: str | None = None  # the refresh that made it (UTC start/pid): runs recorded together share it

    def fields(self) -> dict[str, Any]:
        """The values a page may quote about how the recording was made."""
        return {"command": self.command, "exit_code": self.exit_code, "timed_out": self.timed_out,
                "wall_s": self.wall_s, "date": self.date, "day": self.date[:10],
                "repeats": self.repeats, "exclusive": self.exclusive}

    def to_json(self) -> dict[str, Any]:
        """The entry as the manifest stores it (its name is the key, not a field)."""
        data = asdict(self)
        del data["name"]
        if data["refresh_id"] is None:  # recorded before refreshes were told apart: written as it was read
            del data["refresh_id"]
        return data


@dataclass(frozen=True)
class Manifest:
    """A whole manifest: the set's build and provenance, and one entry per recording."""

    lesson: str
    arch: str
    build: str
    refresh: str
    provenance: dict[str, Any]
    entries: dict[str, TranscriptEntry] = field(default_factory=dict)

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Group name -> its entry names in repeat order."""
        out: dict[str, list[TranscriptEntry]] = {}
        for entry in self.entries.values():
            out.setdefault(entry.group, []).append(entry)
        return {g: tuple(e.name for e in sorted(es, key=lambda e: e.repeat)) for g, es in sorted(out.items())}


def recording_name(group: str, repeat: int, repeats: int) -> str:
    """The entry name of recording `repeat` of `repeats`: NAME, or NAME.rK when repeated."""
    return group if repeats == 1 else f"{group}.r{repeat}"


def recording_file(file: str, repeat: int, repeats: int) -> str:
    """The file name of a recording: 'sweep.json' becomes 'sweep.r3.json' when repeated."""
    if repeats == 1:
        return file
    stem, dot, suffix = file.partition(".")
    return f"{stem}.r{repeat}{dot}{suffix}"


def _error(shown: str, message: str, line: int | None = None) -> LessonError:
    return LessonError(f"{shown}/{MANIFEST}", line, message, rank=0)


def _refuse_constant(name: str) -> float:
    raise _NotFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def _not_finite_line(text: str) -> int | None:
    """The line of the first number of `text` that is not a finite float (None when none is)."""
    for m in _NUMBER_RE.finditer(text):
        number = m.group("number")
        if number is not None and not math.isfinite(float(number)):
            return text.count("\n", 0, m.start()) + 1
    return None


def _load_json(text: str, shown: str) -> Any:
    """The manifest's JSON; NaN, Infinity and numbers beyond a float are refused (json.loads takes them)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise _error(shown, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc
    except _NotFinite as exc:
        raise _error(shown, f"not valid JSON: {str(exc)!r} is not a finite number; the refresh writes only "
                     "finite numbers", _not_finite_line(text)) from None
    except RecursionError:  # json.loads recurses once per level of nesting
        raise _error(shown, "nested too deeply to read; the refresh writes a JSON object two levels deep") from None


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def entry_digest(name: str, fields: dict[str, Any]) -> str:
    """The digest of entry `name` with these fields (any 'digest' among them left out): see the module's docstring."""
    return sha256_text(_canonical([name, {k: v for k, v in fields.items() if k != "digest"}]))


_SET_FIELDS = ("lesson", "arch", "build", "refresh", "provenance")


def set_digest(fields: dict[str, Any]) -> str:
    """The digest of a manifest's own fields (_SET_FIELDS, the rest left out): see the module's docstring."""
    return sha256_text(_canonical([{k: fields[k] for k in _SET_FIELDS}]))


def parse_manifest(text: str, shown: str) -> Manifest:
    """Parse a manifest's text; `shown` names the set's folder in messages. Raises LessonError."""
    data = _load_json(text, shown)
    if not isinstance(data, dict):
        raise _error(shown, "expected a JSON object at the top level")
    fmt = data.get("format")
    if (fmt != FORMAT and fmt not in OLD_FORMATS) or isinstance(fmt, bool):
        raise _error(shown, f"format {fmt!r} is not {FORMAT}; re-record the set")
    for key in ("lesson", "arch", "build", "refresh"):
        if not isinstance(data.get(key), str):
            raise _error(shown, f"'{key}' is missing or not a string")
    refresh = data["refresh"]
    if fmt in OLD_FORMATS:
        raise _error(shown, f"format {fmt}: recorded before entries carried a digest; re-record the set: {refresh}")
    if not isinstance(data.get("provenance"), dict) or not isinstance(data.get("transcripts"), dict):
        raise _error(shown, "'provenance' and 'transcripts' must be JSON objects")
    if data.get("set_digest") != set_digest(data):
        raise _error(shown, "the set's fields (lesson, arch, build, refresh, provenance) do not match its "
                     "set_digest: the manifest was edited after it was recorded; evidence is written only by the "
                     f"refresh: {refresh}")
    entries: dict[str, TranscriptEntry] = {}
    for name, raw in data["transcripts"].items():
        entries[name] = _parse_entry(shown, name, raw, refresh)
        _check_sense(shown, entries[name], refresh)
    _check_groups(shown, entries)
    return Manifest(data["lesson"], data["arch"], data["build"], refresh, dict(data["provenance"]), entries)


def _is(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _parse_entry(shown: str, name: str, raw: Any, refresh: str) -> TranscriptEntry:
    if not isinstance(raw, dict):
        raise _error(shown, f"transcript {name!r}: expected an object")
    for key, kinds in _EXACT_FIELDS:
        if type(raw.get(key, _ABSENT)) not in kinds and (key not in raw or not _is(raw[key], _FIELDS[key])):
            raise _error(shown, f"transcript {name!r}: field '{key}' is missing or of the wrong type")
    if "refresh_id" in raw and not isinstance(raw["refresh_id"], str):
        raise _error(shown, f"transcript {name!r}: field 'refresh_id' is not a string")
    if raw["digest"] != entry_digest(name, raw):
        raise _error(shown, f"transcript {name!r} does not match its digest: the entry was edited after it was "
                     f"recorded; evidence is written only by the refresh: {refresh}")
    if "/" in raw["file"] or raw["file"].startswith(".") or raw["file"] == MANIFEST:
        raise _error(shown, f"transcript {name!r}: file {raw['file']!r} must be a plain name in the set's folder")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw["inputs"].items()):
        raise _error(shown, f"transcript {name!r}: 'inputs' must map names to sha256 strings")
    extra = {k: raw[k] for k in _GROUP_FIELDS}
    if "refresh_id" in raw:
        extra["refresh_id"] = raw["refresh_id"]
    return TranscriptEntry(
        name=name, file=raw["file"], command=raw["command"], exit_code=raw["exit_code"],
        timed_out=raw["timed_out"], wall_s=float(raw["wall_s"]), date=raw["date"],
        inputs=dict(raw["inputs"]), sha256=raw["sha256"], format=raw["format"], **extra)


def _check_sense(shown: str, entry: TranscriptEntry, refresh: str) -> None:
    """What the refresh writes agrees with itself: times, exit and date (a refresh's bug, or a clock's step)."""
    fix = f"re-record the set: {refresh}"
    name = entry.name
    assert entry.started is not None and entry.ended is not None  # required by _FIELDS
    if entry.wall_s < 0:
        raise _error(shown, f"transcript {name!r}: wall_s {entry.wall_s} is negative; {fix}")
    took = entry.ended - entry.started
    allowed = WALL_MARGIN_S + WALL_SLEW * entry.wall_s
    if abs(entry.wall_s - took) > allowed:
        raise _error(shown, f"transcript {name!r}: wall_s {entry.wall_s} disagrees with ended - started "
                     f"= {took:.3f} s (allowed: {allowed:.3f} s apart); {fix}")
    if entry.timed_out and entry.exit_code is not None:
        raise _error(shown, f"transcript {name!r}: timed_out is true but exit_code is {entry.exit_code}; "
                     f"a run that timed out has no exit code (null); {fix}")
    if not entry.timed_out and entry.exit_code is None:
        raise _error(shown, f"transcript {name!r}: timed_out is false but exit_code is null; "
                     f"a run that finished has an integer exit code; {fix}")
    try:
        date = datetime.strptime(entry.date, _DATE_FORMAT).replace(tzinfo=UTC) if _DATE_RE.match(entry.date) else None
    except ValueError:
        date = None
    if date is None:
        raise _error(shown, f"transcript {name!r}: date {entry.date!r} is not a UTC time YYYY-MM-DDTHH:MM:SSZ; {fix}")
    if not -DATE_MARGIN_S <= entry.started - date.timestamp() <= 1 + DATE_MARGIN_S:
        raise _error(shown, f"transcript {name!r}: date {entry.date!r} is not the second of started "
                     f"{entry.started:.3f} ({_utc_second(entry.started)}); {fix}")


def _utc_second(timestamp: float) -> str:
    try:
        return datetime.fromtimestamp(timestamp, UTC).strftime(_DATE_FORMAT)
    except (OverflowError, OSError, ValueError):
        return "not a time"


def _check_groups(shown: str, entries: dict[str, TranscriptEntry]) -> None:
    """Every group has recordings 1..N under the names recording_name gives, one file each."""
    files: dict[str, str] = {}
    for entry in entries.values():
        if entry.file in files:
            raise _error(shown, f"transcripts {files[entry.file]!r} and {entry.name!r} share the file {entry.file!r}")
        files[entry.file] = entry.name
        if not 1 <= entry.repeat <= entry.repeats:
            raise _error(shown, f"transcript {entry.name!r}: repeat {entry.repeat} is not in 1..{entry.repeats}")
        if entry.name != recording_name(entry.group, entry.repeat, entry.repeats):
            raise _error(shown, f"transcript {entry.name!r}: expected the name "
                         f"{recording_name(entry.group, entry.repeat, entry.repeats)!r} for recording "
                         f"{entry.repeat} of {entry.repeats} of {entry.group!r}")
    by_group: dict[str, list[TranscriptEntry]] = {}
    for entry in entries.values():
        by_group.setdefault(entry.group, []).append(entry)
    for group, members in by_group.items():
        counts = {e.repeats for e in members}
        if len(counts) != 1 or len(members) != members[0].repeats:
            raise _error(shown, f"group {group!r} has {len(members)} recordings but they say "
                         f"{', '.join(str(c) for c in sorted(counts))} repeats")


def manifest_to_text(manifest: Manifest) -> str:
    """The manifest as the refresh writes it (sorted keys, one trailing newline), each entry with its digest."""
    transcripts = {}
    for name, entry in sorted(manifest.entries.items()):
        fields = entry.to_json()
        transcripts[name] = {**fields, "digest": entry_digest(name, fields)}
    data = {"format": FORMAT, "lesson": manifest.lesson, "arch": manifest.arch, "build": manifest.build,
            "refresh": manifest.refresh, "provenance": manifest.provenance, "transcripts": transcripts}
    data["set_digest"] = set_digest(data)
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def read_manifest(folder: Path, shown: str) -> Manifest:
    """Read folder/manifest.json; LessonError when it is missing or malformed."""
    try:
        text = read_text(folder / MANIFEST, f"{shown}/{MANIFEST}", WRITTEN_BY_REFRESH)
    except FileNotFoundError:
        raise _error(shown, "the manifest is missing; the set was not written by the refresh") from None
    except OSError as exc:
        raise _error(shown, f"cannot read the manifest: {exc}") from None
    return parse_manifest(text, shown)


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """Write folder/manifest.json, flushed to disk before it counts as written."""
    path = folder / MANIFEST
    with open(path, "w", encoding="utf-8") as f:
        f.write(manifest_to_text(manifest))
        f.flush()
        os.fsync(f.fileno())


# -- hashing --------------------------------------------------------------------------------

_stat_cache: dict[str, tuple[tuple[int, ...], str]] = {}
_hash_store: HashStore | None = None  # the cache on disk, when a check or a build opened one


def use_hash_store(store: HashStore | None) -> None:
    """Keep file hashes across processes in `store` (None: only in this process's memory)."""
    global _hash_store
    _hash_store = store


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes (used for build lines)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path | str, st: os.stat_result | None = None) -> str:
    """Hex sha256 of a file's bytes, cached while its inode, size, mtime and ctime stay the same.

    A file changed within the last two seconds is never served from a cache: a rewrite in
    the same clock tick, or one that restores the mtime (which still moves the ctime), would
    otherwise keep its old hash for the life of a `serve` process. The hash store on disk
    (lessonkit.cache), when one is in use, follows the same rule across processes. `st` is the
    file's stat when the caller just took it.
    """
    st = os.stat(path) if st is None else st
    key = cache.stamp(st)
    name = str(path)
    cached = _stat_cache.get(name)
    if cached is not None and cached[0] == key:
        return cached[1]
    store = _hash_store
    digest = store.lookup(name, st) if store is not None else None
    if digest is None:
        digest = _read_sha256(path)
        if store is not None:
            store.remember(name, st, digest)
    if cache.settled(st):
        _stat_cache[name] = (key, digest)
    return digest


def _read_sha256(path: Path | str) -> str:
    """sha256 of the file's bytes, read in large pieces straight into the hash (no copy of the
    whole file, no file object: a cold check hashes some 12,000 files)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))  # Windows: no newline translation
    try:
        h = hashlib.sha256()
        while piece := os.read(fd, 1 << 20):
            h.update(piece)
    finally:
        os.close(fd)
    return h.hexdigest()


def known_hashes() -> dict[str, tuple[tuple[int, ...], str]]:
    """The hashes this process keeps by stat (file -> (stamp, sha256)), as `adopt_hashes` takes them."""
    return dict(_stat_cache)


def adopt_hashes(entries: dict[str, tuple[tuple[int, ...], str]]) -> None:
    """Keep hashes another process worked out from these files (each of a file that had settled
    when it was hashed, by the stamp it had then), as if hashed here: in memory and in the hash
    store on disk when one is in use. A file's stat that moved since no longer finds its entry."""
    _stat_cache.update(entries)
    if _hash_store is not None:
        _hash_store.adopt(entries)


def regular_file_sha256(path: str) -> str | None:
    """sha256_file of `path` when it is a regular file (symlinks followed); None when it is
    missing or something else. One stat, shared with the hash caches."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return sha256_file(path, st) if stat.S_ISREG(st.st_mode) else None


def input_hashes(repo: Path, spec: LessonSpec, run: RunSpec, build_line: str) -> dict[str, str]:
    """The inputs a recording of `run` depends on, by the name the manifest uses, and their hashes."""
    hashes = {BUILD_INPUT: sha256_text(build_line)}
    folder = os.path.join(repo, "code", spec.lesson)
    for rel in spec.inputs + run.inputs:
        hashes[f"code/{spec.lesson}/{rel}"] = regular_file_sha256(os.path.join(folder, rel)) or MISSING
    return hashes

