"""Evidence sets: evidence/<set>/manifest.json plus the transcripts the refresh recorded.

Loading checks integrity (every file is the one the refresh wrote) and freshness
(every input is today's). Problems come back as a list, so a build reports all of them.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lessonkit import cache
from lessonkit.errors import LessonError
from lessonkit.evidence.declared import check_declared
from lessonkit.evidence.harness import HarnessFormat
from lessonkit.evidence.jsontranscript import parse_json_transcript
from lessonkit.evidence.manifest import (  # noqa: F401
    BUILD_INPUT,
    MANIFEST,
    MISSING,
    Manifest,
    Session,
    TranscriptEntry,
    input_hashes,
    read_manifest,
    regular_file_sha256,
    sha256_file,
)
from lessonkit.evidence.manifest import parse_manifest as _parse_manifest_text
from lessonkit.evidence.spec import LessonSpec, load_spec
from lessonkit.evidence.transcript import NO_TOOL_OUTPUT, Transcript, parse_transcript
from lessonkit.evidence.unrecorded import Unrecorded, find_unrecorded, unused_folders
from lessonkit.textio import WRITTEN_BY_REFRESH, decode_utf8

OLD_PREFIX = ".old."         # evidence/.old.<set>: the previous set while a refresh swaps (fallback path)
SCRATCH_PREFIX = ".refresh."  # evidence/.refresh.<set>.<pid>: a refresh's work in progress

# Parsed transcripts by (sha256 of the file, format, harness format, whether the tool's output is
# required): a rebuild re-parses only what changed, and bytes recorded twice (two sets, two lessons
# declaring the same harness) are parsed once. Only a file that had settled and did not change while
# it was read is kept here, with the size in bytes of what was parsed.
_parse_cache: dict[tuple[str, str, HarnessFormat | None, bool], tuple[Transcript, int]] = {}


@dataclass
class EvidenceSet:
    """One evidence folder: its manifest's facts and lazily parsed recordings."""

    name: str
    root: Path
    lesson: str
    arch: str
    build: str
    refresh: str
    provenance: dict[str, Any]
    entries: dict[str, TranscriptEntry]
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # The GPU sessions, in the order recorded (a format-3 set: its one refresh, s0).
    sessions: dict[str, Session] = field(default_factory=dict)
    retired: tuple[dict[str, Any], ...] = ()
    # How the lesson's program lines are read (its runs.toml's [harness]); None: they are not.
    harness: HarnessFormat | None = None
    # The runs whose commands invoke compute-sanitizer (runs.toml): their text recordings must hold its output.
    tool_runs: frozenset[str] = frozenset()
    _parsed: dict[str, Transcript] = field(default_factory=dict, repr=False, compare=False)
    _sizes: dict[str, int] = field(default_factory=dict, repr=False, compare=False)  # bytes, of texts read whole
    # What queries worked out from this set's recordings (lessonkit.pages.query), kept with them.
    memo: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def shown(self) -> str:
        """The folder as messages name it."""
        return f"evidence/{self.name}"

    def recordings(self, group: str) -> list[str]:
        """The entry names of `group` (a run or artifact name, or one recording's own name): every
        recording of every session, session by session in the order recorded."""
        if group in self.groups:
            return list(self.groups[group])
        return [group] if group in self.entries else []

    def session_of(self, name: str) -> Session:
        """The session recording `name` belongs to."""
        return self.sessions[self.entries[name].session]

    def latest_session(self) -> Session:
        """The session recorded last."""
        return next(reversed(self.sessions.values()))

    def view(self, sessions: frozenset[str] | None = None, shared_backs: str = "all") -> EvidenceSet:
        """The same set, seen through fewer recordings: those of `sessions` (all when None), and of a
        session recorded with the GPU shared (lessonkit.evidence.refresh, --allow-shared-gpu) only the
        recordings of runs that were not exclusive (`shared_backs="shared runs"`) or none ("nothing").
        Parsed recordings are shared with this set; what queries work out is kept per view."""
        if sessions is None and (shared_backs == "all" or not any(s.shared for s in self.sessions.values())):
            return self
        key = ("view", sessions, shared_backs)
        known = self.memo.get(key)
        if known is not None:
            return known

        def kept(entry: TranscriptEntry) -> bool:
            if sessions is not None and entry.session not in sessions:
                return False
            shared = self.sessions[entry.session].shared
            return not shared or shared_backs == "all" or (shared_backs == "shared runs" and not entry.exclusive)

        entries = {n: e for n, e in self.entries.items() if kept(e)}
        groups = {g: tuple(n for n in names if n in entries) for g, names in self.groups.items()}
        view = replace(self, entries=entries, groups={g: ns for g, ns in groups.items() if ns},
                       sessions={sid: s for sid, s in self.sessions.items()
                                 if any(e.session == sid for e in entries.values())},
                       _parsed=self._parsed, _sizes=self._sizes, memo={})
        self.memo[key] = view
        return view

    def left_out(self, group: str, view: EvidenceSet) -> str:
        """Why `view` holds no recording of `group` that this set holds (for a message)."""
        shared = sorted({self.entries[n].session for n in self.recordings(group)
                         if self.sessions[self.entries[n].session].shared})
        if shared:
            return (f"every recording of {group} that is left comes from a session recorded with the GPU shared "
                    f"({', '.join(shared)}), which backs no timing and no exclusive run's figure")
        return f"the session named holds no recording of {group}"

    def transcript_path(self, name: str) -> str:
        """evidence/<set>/<file> for recording `name`."""
        return f"{self.shown}/{self.entries[name].file}"

    def refresh_command(self, only: str | list[str] | None = None) -> str:
        """The command an author runs on a GPU machine to re-record this set (or some of its runs)."""
        if only is None or (isinstance(only, list) and not only):
            return self.refresh
        names = [only] if isinstance(only, str) else only
        groups = sorted({self.entries[n].group if n in self.entries else n for n in names})
        if set(groups) >= set(self.groups):
            return self.refresh
        return self.refresh + " --only " + ",".join(groups)

    def _file(self, name: str) -> str:
        """The path of recording `name`'s file, as a string (the hash caches' name for it)."""
        return os.path.join(self.root, self.entries[name].file)

    def transcript_text(self, name: str) -> str:
        """The recording's text; LessonError if it cannot be read, is a symbolic link, is not UTF-8
        or holds a NUL byte."""
        shown = self.transcript_path(name)
        try:
            with os.fdopen(os.open(self._file(name), os.O_RDONLY | _NOFOLLOW), "rb") as f:
                data = f.read()
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a link
                raise LessonError(shown, None, _symlink_message(self, name), rank=0) from None
            raise LessonError(shown, None, f"cannot read transcript {name!r}: {exc.strerror}; "
                              f"re-record it: {self.refresh_command(name)}") from exc
        text = decode_utf8(data, shown, WRITTEN_BY_REFRESH)
        if "\x00" in text:
            at = text.index("\x00")
            raise LessonError(shown, text.count("\n", 0, at) + 1, "holds a NUL byte (0x00); expected the text "
                              "a run printed, which has none", rank=0, column=at - text.rfind("\n", 0, at))
        self._sizes[name] = len(data)
        return text

    def transcript_size(self, name: str) -> int:
        """The recording's size in bytes, once its text was read whole as transcript_text reads
        it (and fails as it fails): read once per loaded set, and not at all when these bytes
        (by their sha256) were parsed already, here or in another set."""
        size = self._sizes.get(name)
        if size is None:
            known = self._parse_key(name)
            if known is not None and known[0] in _parse_cache:
                self.transcript(name)  # a copy of that parse: it knows the size
            else:
                self.transcript_text(name)
            size = self._sizes[name]
        return size

    def _parse_key(self, name: str) -> tuple[tuple[str, str, HarnessFormat | None, bool], os.stat_result] | None:
        """What the parse cache knows recording `name`'s parse by (its bytes' sha256 and how it is
        read) and the stat that hash is of; None when the file cannot be stat'ed or read."""
        entry = self.entries[name]
        path = self._file(name)
        try:
            st = os.stat(path)
            text = entry.format == "text"
            return (sha256_file(path, st), entry.format, self.harness if text else None, self._tool_run(name)), st
        except OSError:
            return None

    def _tool_run(self, name: str) -> bool:
        """Whether recording `name` is the text of a run that invokes compute-sanitizer."""
        entry = self.entries[name]
        return entry.format == "text" and entry.group in self.tool_runs

    def transcript(self, name: str) -> Transcript:
        """The parsed recording `name` (parsed once per content, across rebuilds)."""
        mine = self._parsed.get(name)
        if mine is not None:  # this set was loaded for one build: its files do not change under it
            return mine
        entry = self.entries[name]
        known = self._parse_key(name)
        key, st = known if known is not None else (None, None)
        shown = self.transcript_path(name)
        if key is not None and key in _parse_cache:
            parsed, self._sizes[name] = _parse_cache[key]
            self._parsed[name] = parsed.read_from(shown)
            return self._parsed[name]
        text = self.transcript_text(name)
        if entry.format == "json":
            parsed = parse_json_transcript(text, shown)
        elif entry.format == "text":
            try:
                parsed = parse_transcript(text, shown, self.harness, require_tool=self._tool_run(name))
            except LessonError as exc:
                if exc.message != NO_TOOL_OUTPUT:
                    raise
                raise replace(exc, message=f"{exc.message}; re-record it: {self.refresh_command(name)}") from None
        else:  # kept for readers and tools (XML records); quoted only as text
            parsed = Transcript(shown, tuple(text.splitlines()))
        if key is not None and st is not None and _unchanged(self._file(name), st):  # parsed = hashed bytes
            _parse_cache[key] = (parsed, self._sizes[name])
        self._parsed[name] = parsed
        return parsed


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _symlink_message(ev: EvidenceSet, name: str | None) -> str:
    """What is wrong with an evidence file that is a symbolic link, and the fix."""
    return ("is a symbolic link; evidence is the files the refresh wrote, never a link to another file: "
            f"remove it and re-record: {ev.refresh_command(name)}")


def _unchanged(path: str, before: os.stat_result) -> bool:
    """Whether `path` had settled when stat'ed as `before` and its stat has not moved since
    (then no write came between: any write moves the change time)."""
    try:
        now = os.stat(path)
    except OSError:
        return False
    return cache.stamp(before) == cache.stamp(now) and cache.settled(before)


def _from_manifest(set_name: str, root: Path, m: Manifest) -> EvidenceSet:
    return EvidenceSet(set_name, root, m.lesson, m.arch, m.build, m.refresh, dict(m.provenance),
                       dict(m.entries), m.groups(), dict(m.sessions), m.retired)


def parse_manifest(text: str, set_name: str, root: Path) -> EvidenceSet:
    """Parse a manifest's text into an EvidenceSet; raises LessonError on any malformed field."""
    return _from_manifest(set_name, root, _parse_manifest_text(text, f"evidence/{set_name}"))


def load_evidence_set(repo: Path, set_name: str, folder: Path | None = None) -> EvidenceSet:
    """Read evidence/<set_name>/manifest.json (or the manifest in `folder`, e.g. a set mid-swap)."""
    root = folder or repo / "evidence" / set_name
    shown = f"evidence/{set_name}"
    if not root.is_dir():
        raise LessonError(shown, None, "no such evidence set", rank=0)
    ev = _from_manifest(set_name, root, read_manifest(root, shown))
    try:
        spec = load_spec(repo / "code", ev.lesson)
    except LessonError:
        return ev  # load_all_evidence reports it; without a spec the program's lines are not read
    ev.harness = spec.harness
    ev.tool_runs = frozenset(r.name for r in spec.runs if r.uses_sanitizer)
    return ev


def check_integrity(ev: EvidenceSet) -> list[LessonError]:
    """Errors for recordings that are missing, symbolic links, edited since recording, or not in the
    manifest (and for a manifest that is a symbolic link)."""
    errors = []
    listed = {e.file for e in ev.entries.values()} | {MANIFEST}
    if os.path.islink(os.path.join(ev.root, MANIFEST)):
        errors.append(LessonError(f"{ev.shown}/{MANIFEST}", None, _symlink_message(ev, None), rank=0))
    for entry in ev.entries.values():
        shown = f"{ev.shown}/{entry.file}"
        if os.path.islink(os.path.join(ev.root, entry.file)):
            errors.append(LessonError(shown, None, _symlink_message(ev, entry.name), rank=0))
            continue
        digest = regular_file_sha256(os.path.join(ev.root, entry.file))
        if digest is None:
            errors.append(LessonError(shown, None, f"transcript {entry.name!r} is missing; "
                                      f"re-record it: {ev.refresh_command(entry.name)}"))
        elif digest != entry.sha256:
            errors.append(LessonError(shown, None, "does not match the sha256 in the manifest: it was "
                                      "edited after it was recorded; evidence is written only by the "
                                      f"refresh: {ev.refresh_command(entry.name)}"))
    folders = {e.file.rpartition("/")[0] for e in ev.entries.values()} - {""}
    for file in sorted(os.listdir(ev.root)):
        if file in folders and not os.path.islink(os.path.join(ev.root, file)):
            for inner in sorted(os.listdir(os.path.join(ev.root, file))):
                if f"{file}/{inner}" not in listed:
                    errors.append(_unlisted(ev, f"{file}/{inner}"))
        elif file not in listed:
            errors.append(_unlisted(ev, file))
    return errors


def _unlisted(ev: EvidenceSet, file: str) -> LessonError:
    """A file (or folder) in the set's folder that the manifest does not list."""
    return LessonError(f"{ev.shown}/{file}", None, "is not in the manifest: the refresh did not write it; remove "
                       f"it or re-record the set: {ev.refresh_command()}")


def check_freshness(ev: EvidenceSet, repo: Path, spec: LessonSpec) -> list[LessonError]:
    """One error per changed input or command, naming every transcript it makes stale."""
    shown = f"{ev.shown}/{MANIFEST}"
    build = spec.build.get(ev.arch)
    if build is None:
        return [LessonError(shown, None, f"arch {ev.arch!r} has no build line in {spec.path}")]
    mine = spec.runs_of_set(ev.name)
    errors = [LessonError(shown, None, _stale_message(cause, groups, ev, spec))
              for cause, groups in _stale_causes(ev, repo, spec, build, mine).items()]
    for run in mine:  # a set may record some runs only (a crossed toolkit, a run's `sets`)
        if run.name not in ev.groups:
            errors.append(LessonError(shown, None, f"run {run.name!r} of {spec.path} has no transcript; "
                                      f"record it: {ev.refresh_command([run.name])}"))
    return errors


def _stale_causes(ev: EvidenceSet, repo: Path, spec: LessonSpec, build: str,
                  mine: list) -> dict[tuple[str, ...], list[str]]:
    """Each cause that makes recordings of the set stale (a run gone or no longer the set's, a command,
    an input, a repeat count or the GPU to itself changed), with the runs it makes stale, in order."""
    causes: dict[tuple[str, ...], list[str]] = {}
    for group, names in ev.groups.items():
        entry = ev.entries[names[0]]
        run = spec.run(group)
        if run is None:
            causes.setdefault(("norun", group), []).append(group)
            continue
        if run not in mine:
            causes.setdefault(("notmine", group, run.name), []).append(group)
            continue
        if run.command != entry.command:
            causes.setdefault(("command", group, entry.command, run.command), []).append(group)
        expected = input_hashes(repo, spec, run, build)
        for name in names:
            recorded = ev.entries[name].inputs
            for key in sorted(set(expected) | set(recorded)):
                now, then = expected.get(key), recorded.get(key)
                if now != then:
                    cause = ("input", key, str(now), str(then))
                    if group not in causes.setdefault(cause, []):
                        causes[cause].append(group)
        recorded_repeats = entry.repeats
        if run.name == group and run.repeat != recorded_repeats:
            causes.setdefault(("repeat", group, str(recorded_repeats), str(run.repeat)), []).append(group)
        if any(ev.entries[n].exclusive != run.exclusive for n in names):
            causes.setdefault(("exclusive", run.name, str(run.exclusive).lower()), []).append(group)
    return causes


def _stale_message(cause: tuple[str, ...], groups: list[str], ev: EvidenceSet, spec: LessonSpec) -> str:
    """What `cause` makes stale (`groups`), and the refresh that records it again."""
    fix = f"refresh on a GPU machine: {ev.refresh_command(_runs_of(spec, groups))}"
    kind = cause[0]
    if kind == "norun":
        return f"transcript {cause[1]!r} has no run in {spec.path}; re-record the set: {ev.refresh_command()}"
    if kind == "notmine":
        return (f"transcript {cause[1]!r} is of run {cause[2]!r}, which {spec.path} no longer records in set "
                f"{ev.name!r} (its sets, or the set's [[compare]] runs, leave it out); re-record the set: "
                f"{ev.refresh_command()}")
    if kind == "command":
        return f"transcript {cause[1]!r} is stale: recorded with {cause[2]!r}, {spec.path} now says {cause[3]!r}; {fix}"
    if kind == "exclusive":
        return (f"run {cause[1]!r} is stale: recorded {'without' if cause[2] == 'true' else 'with'} the GPU to "
                f"itself, {spec.path} now says exclusive = {cause[2]}; {fix}")
    if kind == "repeat":
        return (f"transcript {cause[1]!r} is stale: recorded {cause[2]} time(s), {spec.path} now asks for "
                f"repeat = {cause[3]}; {fix}")
    _, key, now, then = cause
    if now == "None":
        what = f"{key} is no longer an input (recorded at sha256 {_short(then)})"
    elif then == "None":
        what = f"{key} is a new input (sha256 {_short(now)} today, not recorded)"
    elif now == MISSING:
        what = f"{key} is missing today (recorded at sha256 {_short(then)})"
    else:
        what = f"{key} has sha256 {_short(now)} today but was recorded at {_short(then)}"
    return f"{what}: {_count(groups, 'transcript')} stale ({', '.join(groups)}); {fix}"


def check_gates(ev: EvidenceSet, spec: LessonSpec) -> list[LessonError]:
    """One error per recording of a gated run that did not exit 0 (the refresh records none; a
    gate set in runs.toml after the recording, or a refresh before gates, may leave one)."""
    errors = []
    for entry in ev.entries.values():
        run = spec.run(entry.group)
        if run is None or run.name != entry.group or run.passes_gate(entry.exit_code):
            continue  # an artifact shares its run's exit code: its run's transcript is the one reported
        ended = "timed out" if entry.exit_code is None else f"exited {entry.exit_code}"
        errors.append(LessonError(f"{ev.shown}/{MANIFEST}", None,
                                  f"transcript {entry.name!r} {ended}, but its run is gated (gate = true in "
                                  f"{spec.path}) and a gated run must exit 0; fix the program, then re-record "
                                  f"it: {ev.refresh_command(entry.name)}"))
    return errors


def _runs_of(spec: LessonSpec, groups: list[str]) -> list[str]:
    """The run names that re-record `groups` (an artifact is re-recorded by its run)."""
    names = []
    for g in groups:
        run = spec.run(g)
        name = run.name if run is not None else g
        if name not in names:
            names.append(name)
    return names


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'s' if len(items) != 1 else ''}"


def _short(digest: str | None) -> str:
    return "(none)" if digest in (None, "None") else digest[:12]


@dataclass
class Evidence:
    """All evidence sets of a repository, loaded and checked once."""

    sets: dict[str, EvidenceSet]
    errors: list[LessonError]
    # folders whose manifest could not be read, and lessons with no set whose runs.toml cannot be
    unreadable: set[str] = field(default_factory=set)
    unrecorded: dict[str, Unrecorded] = field(default_factory=dict)  # lessons with no set yet


def set_folders(repo: Path) -> dict[str, Path]:
    """Each set's folder: evidence/<set>, or evidence/.old.<set> when a refresh stopped mid-swap.

    A swap without an atomic exchange renames the old set aside before it moves the new one in;
    a crash between the two renames leaves only the old set, under its hidden name. It is the
    complete previous evidence, so it is read in place (the next refresh moves it back).
    """
    base = repo / "evidence"
    found: dict[str, Path] = {}
    if not base.is_dir():
        return found
    for folder in sorted(p for p in base.iterdir() if p.is_dir()):
        if not folder.name.startswith("."):
            found[folder.name] = folder
    for folder in sorted(base.glob(OLD_PREFIX + "*")):
        name = folder.name[len(OLD_PREFIX):]
        if folder.is_dir() and name not in found:
            found[name] = folder
    return found


ReadSets = tuple[dict[str, EvidenceSet], list[LessonError], set[str]]


def read_evidence_sets(repo: Path) -> ReadSets:
    """Every set's manifest (and its lesson's runs.toml) read, nothing hashed or checked yet: the
    sets, the errors of those that cannot be read, and their names (the first part of
    load_all_evidence, which a caller may run while the files are hashed elsewhere)."""
    sets: dict[str, EvidenceSet] = {}
    errors: list[LessonError] = []
    unreadable: set[str] = set()
    for name, folder in set_folders(repo).items():
        try:
            ev = load_evidence_set(repo, name, folder)
        except LessonError as exc:
            errors.append(replace(exc, rank=0))
            unreadable.add(name)
            continue
        sets[ev.name] = ev
    return sets, errors, unreadable


def load_all_evidence(repo: Path, read: ReadSets | None = None) -> Evidence:
    """Load every evidence set and check its integrity and freshness, and the sets lessons declare
    (lessonkit.evidence.declared): a declared set that is missing or recorded with the wrong toolkit is one
    error, and counts as unreadable (its claims are not checked); so does a set whose lesson's
    runs.toml cannot be read. `read`: what read_evidence_sets
    gave for the files as they are now (then not read again)."""
    sets, errors, unreadable = read if read is not None else read_evidence_sets(repo)
    declared_errors, refused = check_declared(repo, sets, unreadable)
    errors.extend(declared_errors)
    for name in refused:
        sets.pop(name, None)
        unreadable.add(name)
    recorded = set(sets) | unreadable | {ev.lesson for ev in sets.values()}
    for name, ev in list(sets.items()):
        errors.extend(check_integrity(ev))
        try:
            spec = load_spec(repo / "code", ev.lesson)
        except LessonError as exc:
            # The set is read by its runs.toml (its [harness], its names): what a page claims of it
            # follows from this one error, so, as a refused set, its claims are not checked.
            errors.append(exc)
            sets.pop(name)
            unreadable.add(name)
            continue
        errors.extend(check_freshness(ev, repo, spec))
        errors.extend(check_gates(ev, spec))
    unrecorded, unread = find_unrecorded(repo, recorded)
    errors.extend(unused_folders(repo))
    # A lesson whose runs.toml cannot be read has one error, at runs.toml (the lesson READMEs'
    # check reports it); what its page cites of it follows from that error, so it is not checked.
    return Evidence(sets, errors, unreadable | unread, unrecorded)
