"""The evidence manifest, evidence/<set>/manifest.json: its schema, read and written here only.

Format 4: a set holds GPU sessions. A session is one refresh on one start of a GPU machine: every
run it recorded, with its repeats, and the session's own provenance (the GPU's UUID, PCI bus id,
clocks, power limit, temperatures, modes, the other processes on the GPU around each exclusive
run, the driver and package versions, a hash of the machine's boot and of its host;
lessonkit.evidence.gpuinfo). Sessions are named s1, s2, ... in the order they were recorded (a
name is never used again in the set's history), and their recordings live in a folder each:
evidence/<set>/s2/sweep.r3.json is recording 3 of the run sweep in session s2, the entry
`s2/sweep.r3`. A run with `repeat = N` (N > 1) is recorded as NAME.r1 .. NAME.rN in each session;
the group NAME, every recording of every session, is what pages cite. The set's own provenance
holds what every session shares by construction (the GPU's name and compute capability, nvcc,
compute-sanitizer and the toolkit folders): a session recorded with another of these starts a new
history. `retired` lists the sessions a refresh dropped and why (inputs changed, older than the
sessions the lesson keeps, a later refresh on the same machine start).

Each entry carries a `digest`, written by the refresh: the sha256 of the UTF-8 bytes of the
canonical JSON of `[NAME, FIELDS]`, where FIELDS is the entry's object without `digest`,
written with sorted keys, `","` and `":"` as separators (no whitespace), ASCII only (other
characters as \\u escapes) and no NaN or Infinity; a number keeps the text JSON gives its
value (`1.5`, `1.0`, `1`). The reader computes the same from what it parsed, so a hand edit
of any field (or moving an entry to another name) is refused, as an edited transcript is
refused by its sha256. Each session carries one too, the hash of `[ID, PROVENANCE]`, and the
set's own fields (lesson, arch, build, refresh, provenance, the session names and `retired`) carry
`set_digest`: the same hash of `[FIELDS]`, so a hand edit of a GPU's UUID, a toolkit's version or
the list of sessions is refused too. Formats 1 and 2 were written before entries carried a digest;
they are refused with the command that re-records the set, so that an edit cannot drop the
digests by lowering the format. Format 3 (one refresh, no session provenance) is read as one
session, `s0`, whose provenance is what the set recorded; the next refresh retires it.

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
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lessonkit import cache, jsonkeys
from lessonkit.cache import HashStore
from lessonkit.errors import LessonError
from lessonkit.evidence.spec import LessonSpec, RunSpec
from lessonkit.textio import WRITTEN_BY_REFRESH, read_text

MANIFEST = "manifest.json"
FORMAT = 4
ONE_REFRESH_FORMAT = 3  # one refresh, no session provenance: read as the session LEGACY_SESSION
OLD_FORMATS = (1, 2)  # written before entries carried a digest: refused, naming the set's refresh command
LEGACY_SESSION = "s0"
_SESSION_RE = re.compile(r"""\As(?P<n>0|[1-9][0-9]{0,5})\Z""")
# The provenance a set holds fixed (its history): a refresh that finds another value for one of these
# starts a new history, retiring every session before it. Every other field is a session's own.
HISTORY_KEYS = ("gpu", "compute_capability", "nvcc", "compute_sanitizer", "toolkit", "sanitizer_toolkit")


def split_provenance(provenance: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the set's fields, the session's fields) of one refresh's provenance."""
    return ({k: v for k, v in provenance.items() if k in HISTORY_KEYS},
            {k: v for k, v in provenance.items() if k not in HISTORY_KEYS})
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
    session: str = LEGACY_SESSION  # the GPU session it belongs to (format 3: the one session s0)

    @property
    def recording(self) -> str:
        """Its name within its session: NAME or NAME.rK (the entry's name less the session's folder)."""
        return self.name.rpartition("/")[2]

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
class Session:
    """One GPU session of a set: a refresh on one start of a GPU machine, and what it ran on."""

    id: str
    provenance: dict[str, Any]

    @property
    def number(self) -> int:
        """Its place in the set's history (s3: 3; the format-3 session s0: 0)."""
        return session_number(self.id)

    @property
    def shared(self) -> bool:
        """Whether another process was on the GPU around one of its exclusive runs (--allow-shared-gpu)."""
        return self.provenance.get("shared") is True

    @property
    def started(self) -> str:
        """When its first run started (UTC), or '' when not recorded (format 3)."""
        return str(self.provenance.get("started", ""))

    def label(self) -> str:
        """How messages name it: 'session s2 (2026-12-03T21:04:11Z)'."""
        return f"session {self.id}" + (f" ({self.started})" if self.started else "")


def session_number(session_id: str) -> int:
    """The number of session `session_id` ('s12': 12; the format-3 session s0: 0); -1 for what is no
    session name."""
    m = _SESSION_RE.match(session_id)
    return int(m.group("n")) if m else -1


@dataclass(frozen=True)
class Manifest:
    """A whole manifest: the set's build and provenance, its sessions, and one entry per recording."""

    lesson: str
    arch: str
    build: str
    refresh: str
    provenance: dict[str, Any]
    entries: dict[str, TranscriptEntry] = field(default_factory=dict)
    sessions: dict[str, Session] = field(default_factory=dict)
    retired: tuple[dict[str, Any], ...] = ()  # {"session", "started", "why"} of each session a refresh dropped
    format: int = FORMAT

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Group name -> its entry names, session by session in the order recorded, each in repeat order."""
        out: dict[str, list[TranscriptEntry]] = {}
        for entry in self.entries.values():
            out.setdefault(entry.group, []).append(entry)
        return {g: tuple(e.name for e in sorted(es, key=lambda e: (session_number(e.session), e.repeat)))
                for g, es in sorted(out.items())}


def recording_name(group: str, repeat: int, repeats: int) -> str:
    """The name of recording `repeat` of `repeats` within its session: NAME, or NAME.rK when repeated."""
    return group if repeats == 1 else f"{group}.r{repeat}"


def entry_name(session: str, recording: str) -> str:
    """The manifest's name of a session's recording: 's2/sweep.r3' (a format-3 manifest names its
    recordings without their session)."""
    return f"{session}/{recording}"


LEGACY_NOTE = ("Session s0 was recorded before sessions were kept: its GPU's UUID, clocks and temperatures were not "
               "recorded, nor whether another process used the GPU during its runs.")


def in_sessions(old: Manifest) -> tuple[Manifest, dict[str, str]]:
    """`old` as format 4 would hold it, and each entry's file as it lies today (by its format-4 name).

    A format-3 manifest becomes the one session s0: its recordings move to the folder s0/ under the
    names s0/NAME, unchanged (their sha256 says so), and the session's provenance is what the set
    recorded beyond its history (driver, package versions), the earliest recording's date, and a
    note of what such a session lacks. A format-4 manifest is returned as it is."""
    if old.format != ONE_REFRESH_FORMAT:
        return old, {name: e.file for name, e in old.entries.items()}
    fixed, own = split_provenance(old.provenance)
    entries, sources = {}, {}
    for name, entry in old.entries.items():
        new = entry_name(LEGACY_SESSION, name)
        entries[new] = replace(entry, name=new, file=f"{LEGACY_SESSION}/{entry.file}", session=LEGACY_SESSION)
        sources[new] = entry.file
    dates = sorted(e.date for e in old.entries.values())
    provenance = {**own, "started": dates[0] if dates else "", "ended": dates[-1] if dates else "",
                  "note": LEGACY_NOTE}
    session = Session(LEGACY_SESSION, provenance)
    return replace(old, provenance=fixed, entries=entries, sessions={LEGACY_SESSION: session},
                   format=FORMAT), sources


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
        return jsonkeys.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)
    except jsonkeys.DuplicateKey as exc:
        raise _error(shown, f"the key {exc.key!r} appears twice in one object; the refresh writes each key once, so "
                     "the manifest was edited after it was recorded", exc.line) from None
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
    """The digest of a manifest's own fields (_SET_FIELDS, and from format 4 the session names and
    `retired`; the rest left out): see the module's docstring."""
    own = {k: fields[k] for k in _SET_FIELDS}
    if fields.get("format") == FORMAT:
        own["session_ids"] = sorted(fields.get("sessions", {}), key=session_number)
        own["retired"] = fields.get("retired", [])
    return sha256_text(_canonical([own]))


def session_digest(session_id: str, provenance: dict[str, Any]) -> str:
    """The digest of one session: the hash of [ID, PROVENANCE] (see the module's docstring)."""
    return sha256_text(_canonical([session_id, provenance]))


def parse_manifest(text: str, shown: str) -> Manifest:
    """Parse a manifest's text; `shown` names the set's folder in messages. Raises LessonError."""
    data = _load_json(text, shown)
    fmt = _check_top(data, shown)
    refresh = data["refresh"]
    if data.get("set_digest") != set_digest(data):
        raise _error(shown, "the set's fields (lesson, arch, build, refresh, provenance, the sessions' names and "
                     "retired) do not match its set_digest: the manifest was edited after it was recorded; "
                     f"evidence is written only by the refresh: {refresh}")
    sessions = _parse_sessions(shown, data, refresh) if fmt == FORMAT else {
        LEGACY_SESSION: Session(LEGACY_SESSION, dict(data["provenance"]))}
    entries: dict[str, TranscriptEntry] = {}
    for name, raw in data["transcripts"].items():
        entries[name] = _parse_entry(shown, name, raw, refresh, fmt, sessions)
        _check_sense(shown, entries[name], refresh)
    _check_groups(shown, entries, fmt)
    for session in sessions:
        if not any(e.session == session for e in entries.values()):
            raise _error(shown, f"session {session!r} has no recordings; a refresh drops a session it leaves "
                         f"empty; re-record the set: {refresh}")
    retired = tuple(dict(r) for r in data.get("retired", []) if isinstance(r, dict))
    return Manifest(data["lesson"], data["arch"], data["build"], refresh, dict(data["provenance"]), entries,
                    sessions, retired, fmt)


def _check_top(data: Any, shown: str) -> int:
    """The manifest's format, once its top level holds what that format needs, of the right types."""
    if not isinstance(data, dict):
        raise _error(shown, "expected a JSON object at the top level")
    fmt = data.get("format")
    if (fmt not in (FORMAT, ONE_REFRESH_FORMAT) and fmt not in OLD_FORMATS) or isinstance(fmt, bool):
        raise _error(shown, f"format {fmt!r} is not {FORMAT}; re-record the set")
    for key in ("lesson", "arch", "build", "refresh"):
        if not isinstance(data.get(key), str):
            raise _error(shown, f"'{key}' is missing or not a string")
    if fmt in OLD_FORMATS:
        raise _error(shown, f"format {fmt}: recorded before entries carried a digest; re-record the set: "
                     f"{data['refresh']}")
    if not isinstance(data.get("provenance"), dict) or not isinstance(data.get("transcripts"), dict):
        raise _error(shown, "'provenance' and 'transcripts' must be JSON objects")
    if fmt == FORMAT and (not isinstance(data.get("sessions"), dict) or not isinstance(data.get("retired", []), list)):
        raise _error(shown, "'sessions' must be a JSON object and 'retired' a list")
    return fmt


def _parse_sessions(shown: str, data: dict[str, Any], refresh: str) -> dict[str, Session]:
    """The sessions of a format-4 manifest, each held to its digest, in the order recorded."""
    sessions: dict[str, Session] = {}
    for sid in sorted(data["sessions"], key=session_number):
        raw = data["sessions"][sid]
        if not _SESSION_RE.match(sid):
            raise _error(shown, f"session {sid!r} is not a session name (s1, s2, ...); re-record the set: {refresh}")
        if not isinstance(raw, dict) or not isinstance(raw.get("provenance"), dict) or set(raw) != {"provenance",
                                                                                                    "digest"}:
            raise _error(shown, f"session {sid!r}: expected an object of 'provenance' and 'digest'")
        if raw["digest"] != session_digest(sid, raw["provenance"]):
            raise _error(shown, f"session {sid!r} does not match its digest: its provenance was edited after it was "
                         f"recorded; evidence is written only by the refresh: {refresh}")
        sessions[sid] = Session(sid, dict(raw["provenance"]))
    return sessions


def _is(value: Any, kind: Any) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        return False
    return isinstance(value, kinds)


def _parse_entry(shown: str, name: str, raw: Any, refresh: str, fmt: int = FORMAT,
                 sessions: dict[str, Session] | None = None) -> TranscriptEntry:
    if not isinstance(raw, dict):
        raise _error(shown, f"transcript {name!r}: expected an object")
    session = _session_of(shown, name, raw, fmt, sessions)
    for key, kinds in _EXACT_FIELDS:
        if type(raw.get(key, _ABSENT)) not in kinds and (key not in raw or not _is(raw[key], _FIELDS[key])):
            raise _error(shown, f"transcript {name!r}: field '{key}' is missing or of the wrong type")
    if "refresh_id" in raw and not isinstance(raw["refresh_id"], str):
        raise _error(shown, f"transcript {name!r}: field 'refresh_id' is not a string")
    if raw["digest"] != entry_digest(name, raw):
        raise _error(shown, f"transcript {name!r} does not match its digest: the entry was edited after it was "
                     f"recorded; evidence is written only by the refresh: {refresh}")
    _check_place(shown, name, raw["file"], fmt, session)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw["inputs"].items()):
        raise _error(shown, f"transcript {name!r}: 'inputs' must map names to sha256 strings")
    extra = {k: raw[k] for k in _GROUP_FIELDS}
    if "refresh_id" in raw:
        extra["refresh_id"] = raw["refresh_id"]
    extra["session"] = session
    return TranscriptEntry(
        name=name, file=raw["file"], command=raw["command"], exit_code=raw["exit_code"],
        timed_out=raw["timed_out"], wall_s=float(raw["wall_s"]), date=raw["date"],
        inputs=dict(raw["inputs"]), sha256=raw["sha256"], format=raw["format"], **extra)


def _session_of(shown: str, name: str, raw: dict, fmt: int, sessions: dict[str, Session] | None) -> str:
    """The session a recording's entry names (one of the set's), or LEGACY_SESSION in a set of one refresh."""
    if fmt != FORMAT:
        return LEGACY_SESSION
    session = raw.get("session")
    if not isinstance(session, str) or session not in (sessions or {}):
        raise _error(shown, f"transcript {name!r}: field 'session' names no session of the set "
                     f"({', '.join(sessions or {}) or 'none'})")
    return session


def _check_place(shown: str, name: str, file: str, fmt: int, session: str) -> None:
    """A recording's file is a plain name in its session's folder (in the set's, in a set of one
    refresh), and its name begins with its session's."""
    folder, _, base = file.rpartition("/")
    expected_folder = "" if fmt == ONE_REFRESH_FORMAT else session
    if folder != expected_folder or not base or base.startswith(".") or "/" in base or base == MANIFEST:
        where = "in the set's folder" if fmt == ONE_REFRESH_FORMAT else f"in its session's folder {session}/"
        raise _error(shown, f"transcript {name!r}: file {file!r} must be a plain name {where}")
    if fmt == FORMAT and not name.startswith(session + "/"):
        raise _error(shown, f"transcript {name!r}: a recording of session {session!r} is named {session}/NAME")


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
        # The pattern fixes the form; fromisoformat reads that form (some 50 times quicker than
        # strptime: a manifest of a hundred lessons has 46,000 dates) and refuses a day or time that does not exist.
        date = datetime.fromisoformat(entry.date) if _DATE_RE.match(entry.date) else None
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


def _check_groups(shown: str, entries: dict[str, TranscriptEntry], fmt: int = FORMAT) -> None:
    """Every group has recordings 1..N under the names recording_name gives, one file each."""
    files: dict[str, str] = {}
    for entry in entries.values():
        if entry.file in files:
            raise _error(shown, f"transcripts {files[entry.file]!r} and {entry.name!r} share the file {entry.file!r}")
        files[entry.file] = entry.name
        if not 1 <= entry.repeat <= entry.repeats:
            raise _error(shown, f"transcript {entry.name!r}: repeat {entry.repeat} is not in 1..{entry.repeats}")
        recording = recording_name(entry.group, entry.repeat, entry.repeats)
        expected = recording if fmt == ONE_REFRESH_FORMAT else entry_name(entry.session, recording)
        if entry.name != expected:
            raise _error(shown, f"transcript {entry.name!r}: expected the name {expected!r} for recording "
                         f"{entry.repeat} of {entry.repeats} of {entry.group!r}")
    by_group: dict[tuple[str, str], list[TranscriptEntry]] = {}
    for entry in entries.values():
        by_group.setdefault((entry.session, entry.group), []).append(entry)
    for (session, group), members in by_group.items():
        counts = {e.repeats for e in members}
        if len(counts) != 1 or len(members) != members[0].repeats:
            where = "" if fmt == ONE_REFRESH_FORMAT else f" in session {session!r}"
            raise _error(shown, f"group {group!r} has {len(members)} recordings{where} but they say "
                         f"{', '.join(str(c) for c in sorted(counts))} repeats")


def manifest_to_text(manifest: Manifest) -> str:
    """The manifest as the refresh writes it (sorted keys, one trailing newline), each entry and each
    session with its digest; a format-3 manifest (one refresh, read as the session s0) as it was read."""
    transcripts = {}
    for name, entry in sorted(manifest.entries.items()):
        fields = entry.to_json()
        if manifest.format != FORMAT:
            del fields["session"]
        transcripts[name] = {**fields, "digest": entry_digest(name, fields)}
    data: dict[str, Any] = {"format": manifest.format, "lesson": manifest.lesson, "arch": manifest.arch,
                            "build": manifest.build, "refresh": manifest.refresh, "provenance": manifest.provenance,
                            "transcripts": transcripts}
    if manifest.format == FORMAT:
        data["sessions"] = {sid: {"provenance": s.provenance, "digest": session_digest(sid, s.provenance)}
                            for sid, s in manifest.sessions.items()}
        data["retired"] = list(manifest.retired)
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

    A file changed within the racy window (lessonkit.cache.RACY_NS: two seconds unless
    LESSONKIT_RACY_MS sets it) is never served from a cache: a rewrite in
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

