"""A lesson's run specification, code/<lesson>/runs.toml: the one source of its commands.

The refresh runs exactly these commands; the manifest records them; pages and the
lesson README show them; the build checks that all of these agree.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


@dataclass(frozen=True)
class Artifact:
    """A file a run writes beside its transcript (JSON results, XML records), recorded too."""

    name: str
    file: str
    format: str  # "json" is parsed into queryable data; anything else is kept as text


@dataclass(frozen=True)
class RunSpec:
    """One recorded command: its transcript name, command line, and how it is judged."""

    name: str
    command: str
    timeout: float
    gate: bool
    inputs: tuple[str, ...]
    artifacts: tuple[Artifact, ...] = ()


@dataclass(frozen=True)
class LessonSpec:
    """code/<lesson>/runs.toml as data."""

    lesson: str
    path: str
    inputs: tuple[str, ...]
    build: dict[str, str]
    runs: tuple[RunSpec, ...]

    def run(self, name: str) -> RunSpec | None:
        """The run that records transcript or artifact `name`, or None."""
        for r in self.runs:
            if r.name == name or any(a.name == name for a in r.artifacts):
                return r
        return None


def sha256_text(text: str) -> str:
    """Hex sha256 of a string's UTF-8 bytes (used for build lines)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_spec(text: str, source: str) -> LessonSpec:
    """Parse runs.toml text; raises LessonError naming the file and, where known, the line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise LessonError(source, int(m.group(1)) if m else None, f"not valid TOML: {exc}") from exc

    def need(table: dict, key: str, kind: type, where: str):
        value = table.get(key)
        if not isinstance(value, kind):
            raise LessonError(source, None, f"{where}: '{key}' is missing or not a {kind.__name__}")
        return value

    lesson = need(data, "lesson", str, "top level")
    inputs = tuple(need(data, "inputs", list, "top level"))
    build = need(data, "build", dict, "top level")
    runs = []
    for i, raw in enumerate(need(data, "run", list, "top level"), start=1):
        where = f"[[run]] number {i}"
        name = need(raw, "name", str, where)
        if not _NAME_RE.match(name):
            raise LessonError(source, None, f"{where}: name {name!r} must be lowercase letters, digits and '-'")
        if any(r.name == name for r in runs):
            raise LessonError(source, None, f"{where}: duplicate run name {name!r}")
        artifacts = []
        for art in raw.get("artifacts", ()):
            art_name, art_file = need(art, "name", str, where), need(art, "file", str, where)
            if not _NAME_RE.match(art_name) or "/" in art_file:
                raise LessonError(source, None, f"{where}: artifact {art_name!r} needs a plain name and file")
            artifacts.append(Artifact(art_name, art_file, str(art.get("format", "text"))))
        runs.append(RunSpec(
            name=name,
            command=need(raw, "command", str, where),
            timeout=float(raw.get("timeout", 300)),
            gate=bool(raw.get("gate", False)),
            inputs=tuple(raw.get("inputs", ())),
            artifacts=tuple(artifacts),
        ))
    return LessonSpec(lesson, source, inputs, {str(k): str(v) for k, v in build.items()}, tuple(runs))


def load_spec(code_root: Path, lesson: str) -> LessonSpec:
    """Load code/<lesson>/runs.toml."""
    path = code_root / lesson / "runs.toml"
    shown = f"code/{lesson}/runs.toml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LessonError(shown, None, f"cannot read the lesson's run specification: {exc.strerror}") from exc
    return parse_spec(text, shown)
