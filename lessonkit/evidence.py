"""Evidence sets: evidence/<set>/manifest.json plus the transcripts the refresh recorded.

Loading checks integrity (every file is the one the refresh wrote) and freshness
(every input is today's). Problems come back as a list, so a build reports all of them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.spec import LessonSpec, load_spec, sha256_file, sha256_text
from lessonkit.transcript import Transcript, parse_transcript
from lessonkit.jsontranscript import parse_json_transcript

MANIFEST = "manifest.json"
FORMAT = 1
BUILD_INPUT = "build line"
_ENTRY_FIELDS = {"file": str, "command": str, "exit_code": (int, type(None)), "timed_out": bool,
                 "wall_s": (int, float), "date": str, "inputs": dict, "sha256": str}


@dataclass(frozen=True)
class TranscriptEntry:
    """The manifest's record of one transcript."""

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

    def fields(self) -> dict[str, Any]:
        """The values a page may quote about how the transcript was recorded."""
        return {"command": self.command, "exit_code": self.exit_code, "timed_out": self.timed_out,
                "wall_s": self.wall_s, "date": self.date, "day": self.date[:10]}


@dataclass
class EvidenceSet:
    """One evidence folder: its manifest's facts and lazily parsed transcripts."""

    name: str
    root: Path
    lesson: str
    arch: str
    build: str
    refresh: str
    provenance: dict[str, Any]
    entries: dict[str, TranscriptEntry]
    _parsed: dict[str, Transcript] = field(default_factory=dict)

    @property
    def shown(self) -> str:
        """The folder as messages name it."""
        return f"evidence/{self.name}"

    def transcript_path(self, name: str) -> str:
        """evidence/<set>/<file> for transcript `name`."""
        return f"{self.shown}/{self.entries[name].file}"

    def refresh_command(self, only: str | None = None) -> str:
        """The command an author runs on a GPU machine to re-record this set (or one transcript)."""
        return self.refresh + (f" --only {only}" if only else "")

    def transcript_text(self, name: str) -> str:
        """The transcript's text; LessonError if the file cannot be read."""
        try:
            return (self.root / self.entries[name].file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise LessonError(self.transcript_path(name), None,
                              f"cannot read transcript {name!r}: {exc.strerror}; "
                              f"re-record it: {self.refresh_command(name)}") from exc

    def transcript(self, name: str) -> Transcript:
        """The parsed transcript `name` (parsed once per build)."""
        if name not in self._parsed:
            entry = self.entries[name]
            text = self.transcript_text(name)
            shown = self.transcript_path(name)
            if entry.format == "json":
                self._parsed[name] = parse_json_transcript(text, shown)
            elif entry.format == "text":
                self._parsed[name] = parse_transcript(text, shown)
            else:  # kept for readers and tools (XML records); quoted only as text
                self._parsed[name] = Transcript(shown, tuple(text.splitlines()))
        return self._parsed[name]


def _manifest_error(shown: str, message: str, line: int | None = None) -> LessonError:
    return LessonError(f"{shown}/{MANIFEST}", line, message)


def parse_manifest(text: str, set_name: str, root: Path) -> EvidenceSet:
    """Parse a manifest's text into an EvidenceSet; raises LessonError on any malformed field."""
    shown = f"evidence/{set_name}"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _manifest_error(shown, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from exc
    if not isinstance(data, dict):
        raise _manifest_error(shown, "expected a JSON object at the top level")
    if data.get("format") != FORMAT:
        raise _manifest_error(shown, f"format {data.get('format')!r} is not {FORMAT}; re-record the set")
    for key in ("lesson", "arch", "build", "refresh"):
        if not isinstance(data.get(key), str):
            raise _manifest_error(shown, f"'{key}' is missing or not a string")
    if not isinstance(data.get("provenance"), dict) or not isinstance(data.get("transcripts"), dict):
        raise _manifest_error(shown, "'provenance' and 'transcripts' must be JSON objects")
    entries: dict[str, TranscriptEntry] = {}
    for name, raw in data["transcripts"].items():
        if not isinstance(raw, dict):
            raise _manifest_error(shown, f"transcript {name!r}: expected an object")
        for key, kind in _ENTRY_FIELDS.items():
            if key not in raw or not isinstance(raw[key], kind):
                raise _manifest_error(shown, f"transcript {name!r}: field '{key}' is missing or of the wrong type")
        if "/" in raw["file"] or raw["file"].startswith("."):
            raise _manifest_error(shown, f"transcript {name!r}: file {raw['file']!r} must be a plain name in the set's folder")
        entries[name] = TranscriptEntry(name, raw["file"], raw["command"], raw["exit_code"],
                                        raw["timed_out"], float(raw["wall_s"]), raw["date"],
                                        dict(raw["inputs"]), raw["sha256"], str(raw.get("format", "text")))
    return EvidenceSet(set_name, root, data["lesson"], data["arch"], data["build"], data["refresh"],
                       dict(data["provenance"]), entries)


def load_evidence_set(repo: Path, set_name: str) -> EvidenceSet:
    """Read evidence/<set_name>/manifest.json."""
    root = repo / "evidence" / set_name
    shown = f"evidence/{set_name}"
    if not root.is_dir():
        raise LessonError(shown, None, "no such evidence set")
    try:
        text = (root / MANIFEST).read_text(encoding="utf-8")
    except OSError:
        raise _manifest_error(shown, "the manifest is missing; the set was not written by the refresh") from None
    return parse_manifest(text, set_name, root)


def check_integrity(ev: EvidenceSet) -> list[LessonError]:
    """Errors for transcripts that are missing, edited since recording, or not in the manifest."""
    errors = []
    listed = {e.file for e in ev.entries.values()} | {MANIFEST}
    for entry in ev.entries.values():
        path = ev.root / entry.file
        shown = f"{ev.shown}/{entry.file}"
        if not path.is_file():
            errors.append(LessonError(shown, None, f"transcript {entry.name!r} is missing; "
                                      f"re-record it: {ev.refresh_command(entry.name)}"))
        elif sha256_file(path) != entry.sha256:
            errors.append(LessonError(shown, None, "does not match the sha256 in the manifest: it was "
                                      "edited after it was recorded; evidence is written only by the "
                                      f"refresh: {ev.refresh_command(entry.name)}"))
    for path in sorted(ev.root.iterdir()):
        if path.name not in listed:
            errors.append(LessonError(f"{ev.shown}/{path.name}", None,
                                      "is not in the manifest: the refresh did not write it; remove it "
                                      f"or re-record the set: {ev.refresh_command()}"))
    return errors


def check_freshness(ev: EvidenceSet, repo: Path, spec: LessonSpec) -> list[LessonError]:
    """Errors for transcripts recorded from other inputs or commands than today's."""
    errors = []
    shown = f"{ev.shown}/{MANIFEST}"
    build = spec.build.get(ev.arch)
    if build is None:
        return [LessonError(shown, None, f"arch {ev.arch!r} has no build line in {spec.path}")]
    for entry in ev.entries.values():
        fix = f"refresh it on a GPU machine: {ev.refresh_command(entry.name)}"
        run = spec.run(entry.name)
        if run is None:
            errors.append(LessonError(shown, None, f"transcript {entry.name!r} has no run in {spec.path}; {fix}"))
            continue
        if run.command != entry.command:
            errors.append(LessonError(shown, None, f"transcript {entry.name!r} is stale: recorded with "
                                      f"{entry.command!r}, {spec.path} now says {run.command!r}; {fix}"))
        expected = {BUILD_INPUT: sha256_text(build)}
        for rel in spec.inputs + run.inputs:
            path = repo / "code" / spec.lesson / rel
            expected[f"code/{spec.lesson}/{rel}"] = sha256_file(path) if path.is_file() else "missing"
        for key in sorted(set(expected) | set(entry.inputs)):
            now, then = expected.get(key), entry.inputs.get(key)
            if now != then:
                errors.append(LessonError(shown, None, f"transcript {entry.name!r} is stale: {key} has "
                                          f"sha256 {_short(now)} today but was recorded at {_short(then)}; {fix}"))
    for run in spec.runs:
        if run.name not in ev.entries:
            errors.append(LessonError(shown, None, f"run {run.name!r} of {spec.path} has no transcript; "
                                      f"record it: {ev.refresh_command(run.name)}"))
    return errors


def _short(digest: str | None) -> str:
    return "(none)" if digest is None else digest[:12]


@dataclass
class Evidence:
    """All evidence sets of a repository, loaded and checked once."""

    sets: dict[str, EvidenceSet]
    errors: list[LessonError]
    unreadable: set[str] = field(default_factory=set)  # folders whose manifest could not be read


def load_all_evidence(repo: Path) -> Evidence:
    """Load every evidence/<set>/ and check its integrity and freshness."""
    sets: dict[str, EvidenceSet] = {}
    errors: list[LessonError] = []
    unreadable: set[str] = set()
    base = repo / "evidence"
    for folder in sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []:
        if folder.name.startswith("."):
            continue  # the refresh's scratch folders
        try:
            ev = load_evidence_set(repo, folder.name)
        except LessonError as exc:
            errors.append(exc)
            unreadable.add(folder.name)
            continue
        sets[ev.name] = ev
        errors.extend(check_integrity(ev))
        try:
            spec = load_spec(repo / "code", ev.lesson)
        except LessonError as exc:
            errors.append(exc)
            continue
        errors.extend(check_freshness(ev, repo, spec))
    return Evidence(sets, errors, unreadable)
