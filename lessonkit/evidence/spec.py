"""A lesson's run specification, code/<lesson>/runs.toml: the one source of its commands.

The refresh runs exactly these commands; the manifest records them; pages and the
lesson README show them; the build checks that all of these agree.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from lessonkit import cache
from lessonkit.errors import LessonError
from lessonkit.evidence.display import Display, parse_display
from lessonkit.evidence.harness import HarnessFormat, parse_harness
from lessonkit.evidence.tomlpos import key_line, unknown_key
from lessonkit.textio import read_text

_NAME_RE = re.compile(r"\A[a-z0-9][a-z0-9-]*\Z")
MAX_SESSIONS = 20
# The most a run may print (stdout and stderr together) when its runs.toml names no max_output.
DEFAULT_MAX_OUTPUT = 16 * 1024 * 1024
# Three sessions by default: the fewest that can show one session disagreeing with two others (two
# can only disagree with each other, not say which is the odd one); a Day 62 set's session is 0.5 to 2.3 MB, so three keep the whole evidence folder near 27 MB, which still travels
# to a GPU machine beside the 40 MB CUDA 12.4 toolkit (scripts/cuda-toolkit.sh) when the sets not
# being refreshed stay behind.
DEFAULT_SESSIONS = 3


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
    repeat: int = 1          # independent recordings of the same command
    exclusive: bool = False  # the GPU to itself: no other run of the refresh overlaps it
    max_output: int = DEFAULT_MAX_OUTPUT  # bytes of output (its transcript's size) past which nothing is recorded
    sets: tuple[str, ...] | None = None  # the evidence sets that record it (None: every set of the lesson)

    @property
    def uses_sanitizer(self) -> bool:
        """Whether the command runs compute-sanitizer (one of its words is that program): then each of
        its recordings holds the tool's output (lessonkit.evidence.transcript, require_tool)."""
        return any(word.rsplit("/", 1)[-1] == "compute-sanitizer" for word in self.command.split())

    def recorded_in(self, set_name: str) -> bool:
        """Whether evidence set `set_name` records this run (`sets` in runs.toml; every set when absent)."""
        return self.sets is None or set_name in self.sets

    def passes_gate(self, exit_code: int | None) -> bool:
        """Whether a recording that ended with `exit_code` (None: timed out) may stand: a gated run must exit 0."""
        return not self.gate or exit_code == 0


@dataclass(frozen=True)
class CompareSpec:
    """A `[[compare]]` table: an evidence set the lesson's page compares, and the toolkit it is recorded with.

    `toolkit` is nvcc's release ('12.4'): the set's recorded nvcc must be of it. `toolkit_dir`,
    when given, is the toolkit folder the refresh is run with (`--toolkit DIR`); without it the
    set is recorded with the GPU machine's own toolkit. `line` is the table's line in runs.toml.
    """

    set: str
    toolkit: str
    toolkit_dir: str | None = None
    line: int | None = None
    # A crossed set: the runs use compute-sanitizer of release `sanitizer` ('2025.3') from the
    # toolkit folder `sanitizer_dir` (`--sanitizer-from`), and record only `runs` (all when None).
    sanitizer: str | None = None
    sanitizer_dir: str | None = None
    runs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class LessonSpec:
    """code/<lesson>/runs.toml as data."""

    lesson: str
    path: str
    inputs: tuple[str, ...]
    build: dict[str, str]
    runs: tuple[RunSpec, ...]
    compare: tuple[CompareSpec, ...] = ()
    # How the program's own lines are read ([harness]); not hashed into freshness: it changes how
    # evidence is read, not what was recorded.
    harness: HarnessFormat | None = None
    display: Display = field(default_factory=Display)
    # How many GPU sessions each set keeps (`sessions = K`): a refresh adds one, the oldest beyond K retire.
    sessions: int = DEFAULT_SESSIONS

    def compared(self, set_name: str) -> CompareSpec | None:
        """The `[[compare]]` declaration of `set_name`, or None."""
        return next((c for c in self.compare if c.set == set_name), None)

    def run(self, name: str) -> RunSpec | None:
        """The run that records transcript or artifact `name`, or None."""
        for r in self.runs:
            if r.name == name or any(a.name == name for a in r.artifacts):
                return r
        return None

    def runs_of_set(self, set_name: str) -> tuple[RunSpec, ...]:
        """The runs evidence set `set_name` records: its [[compare]] `runs` when it lists them, and
        never a run whose `sets` leaves the set out."""
        decl = self.compared(set_name)
        return tuple(r for r in self.runs if r.recorded_in(set_name)
                     and (decl is None or decl.runs is None or r.name in decl.runs))


MAX_REPEAT = 50

# The keys each table of runs.toml may hold (tomllib drops nothing, so a typo would drop its setting).
# [build], [names], [labels.*], [formats] and [units] have keys of the lesson's own choosing;
# [harness] is checked by lessonkit.evidence.harness.
TOP_KEYS = ("lesson", "inputs", "build", "sessions", "run", "compare", "harness", "names", "labels", "formats",
            "units")
RUN_KEYS = ("name", "command", "timeout", "gate", "inputs", "artifacts", "repeat", "exclusive", "max_output",
            "sets")
ARTIFACT_KEYS = ("name", "file", "format")
COMPARE_KEYS = ("set", "toolkit", "toolkit_dir", "sanitizer", "sanitizer_dir", "runs")


def _known_keys(table: object, known: tuple[str, ...], text: str, source: str, where: str,
                toml_table: str, index: int | None = None) -> None:
    """LessonError at the line of the first key of `table` that is not `known`, with the closest known one."""
    if not isinstance(table, dict):
        return  # not a table: the reader of its values says so
    for key in table:
        if key not in known:
            raise LessonError(source, key_line(text, toml_table, index, key), f"{where}: {unknown_key(key, known)}")


def parse_spec(text: str, source: str) -> LessonSpec:
    """Parse runs.toml text; raises LessonError naming the file and, where known, the line."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise LessonError(source, int(m.group(1)) if m else None, f"not valid TOML: {exc}") from exc
    except RecursionError:  # tomllib recurses once per level of nested arrays and inline tables
        raise LessonError(source, None, "not valid TOML for runs.toml: nested too deeply to read; "
                          "expected tables of settings") from None

    need, strings = _needs(text, source)
    _known_keys(data, TOP_KEYS, text, source, "top level", "")
    lesson = need(data, "lesson", str, "top level")
    inputs = strings(need(data, "inputs", list, "top level"), "top level", "inputs")
    build = need(data, "build", dict, "top level")
    if not all(isinstance(v, str) for v in build.values()):
        bad = next(k for k, v in build.items() if not isinstance(v, str))
        raise LessonError(source, key_line(text, "build", None, bad), "[build]: every build line must be a string")
    sessions = need(data, "sessions", int, "top level", DEFAULT_SESSIONS)
    if not 1 <= sessions <= MAX_SESSIONS:
        raise LessonError(source, key_line(text, "", None, "sessions"), f"top level: 'sessions' must be from 1 to "
                          f"{MAX_SESSIONS} (the GPU sessions each evidence set keeps), not {sessions}")
    runs: list[RunSpec] = []
    for i, raw in enumerate(need(data, "run", list, "top level"), start=1):
        runs.append(_run(raw, i, runs, text, source, need, strings))
    compare = _compare(data.get("compare", []), text, source, need)
    for decl in compare:
        for name in decl.runs or ():
            if not any(r.name == name for r in runs):
                raise LessonError(source, decl.line, f"[[compare]] of set {decl.set!r}: runs names {name!r}, which is "
                                  f"no run of this file; runs: {', '.join(r.name for r in runs)}")
    harness = parse_harness(data.get("harness"), text, source)
    display = parse_display(data, source, {name: r.command for r in runs
                                           for name in (r.name, *(a.name for a in r.artifacts))}, text)
    return LessonSpec(lesson, source, inputs, dict(build), tuple(runs), compare, harness, display, sessions)


def _needs(text: str, source: str):
    """`need` and `strings`, the checked readers of a key of runs.toml `text` (file `source`)."""

    def need(table: object, key: str, kind: type | tuple, where: str, default: object = None,
             at: tuple[str, int | None] = ("", None)):
        """table[key] when it is of `kind` (default when absent); else an error at the key's line.
        `at`: the TOML table (dotted name, "" for the top level) and array index the key is in."""
        if not isinstance(table, dict):
            raise LessonError(source, key_line(text, *at, key) if at[0] else None, f"{where}: expected a table")
        value = table.get(key, default)
        if not isinstance(value, kind) or isinstance(value, bool) and kind in (int, float, (int, float)):
            kinds = kind if isinstance(kind, tuple) else (kind,)
            kinds = tuple(k for k in kinds if not (k is int and float in kinds))  # an integer is a number
            names = " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in kinds)
            line = key_line(text, *at, key) if key in table or at[0] else None
            if key not in table:
                raise LessonError(source, line, f"{where}: '{key}' is missing; expected {names}")
            raise LessonError(source, line, f"{where}: '{key}' is {_toml_type(value)} {_shown(value)}; "
                              f"expected {names}")
        return value

    def strings(values: list, where: str, key: str, at: tuple[str, int | None] = ("", None)) -> tuple[str, ...]:
        if not all(isinstance(v, str) for v in values):
            raise LessonError(source, key_line(text, *at, key), f"{where}: every entry of '{key}' must be a string")
        return tuple(values)

    return need, strings


def _run(raw: object, i: int, earlier: list[RunSpec], text: str, source: str, need, strings) -> RunSpec:
    """The `i`-th [[run]] table (`earlier`: the runs before it, whose names it must not repeat), read
    with parse_spec's checked readers (`_needs`)."""
    where = f"[[run]] number {i}"
    at = ("run", i)
    _known_keys(raw, RUN_KEYS, text, source, where, "run", i)
    name = need(raw, "name", str, where, at=at)

    def line(key: str) -> int | None:  # located only for a message
        return key_line(text, "run", i, key)

    if not _NAME_RE.match(name):
        raise LessonError(source, line("name"), f"{where}: name {name!r} must be lowercase letters, digits and '-'")
    if any(r.name == name for r in earlier):
        raise LessonError(source, line("name"), f"{where}: duplicate run name {name!r}")
    artifacts = []
    for j, art in enumerate(need(raw, "artifacts", list, where, [], at=at), start=1):
        _known_keys(art, ARTIFACT_KEYS, text, source, f"{where}, artifact {j}", "run", i)
        art_name, art_file = need(art, "name", str, where, at=at), need(art, "file", str, where, at=at)
        if not _NAME_RE.match(art_name) or "/" in art_file:
            raise LessonError(source, line("artifacts"), f"{where}: artifact {art_name!r} needs a plain name and file")
        artifacts.append(Artifact(art_name, art_file, need(art, "format", str, where, "text", at=at)))
    sets = need(raw, "sets", (list, type(None)), where, at=at)
    if sets is not None and (not sets or not all(isinstance(v, str) and _SET_RE.match(v) for v in sets)):
        raise LessonError(source, line("sets"), f"{where}: 'sets' must be a non-empty list "
                          "of evidence set names, e.g. [\"day62-racecheck\"]")
    return RunSpec(
        name=name,
        command=need(raw, "command", str, where, at=at),
        timeout=_timeout(need(raw, "timeout", (int, float), where, 300, at=at), source, where,
                         lambda: line("timeout")),
        gate=need(raw, "gate", bool, where, False, at=at),
        inputs=strings(need(raw, "inputs", list, where, [], at=at), where, "inputs", at),
        artifacts=tuple(artifacts),
        repeat=_repeat(need(raw, "repeat", int, where, 1, at=at), source, where, lambda: line("repeat")),
        exclusive=need(raw, "exclusive", bool, where, False, at=at),
        max_output=_max_output(need(raw, "max_output", int, where, RunSpec.max_output, at=at), source, where,
                               lambda: line("max_output")),
        sets=tuple(sets) if sets is not None else None,
    )


_RELEASE_RE = re.compile(r"""\A\d+\.\d+\Z""")
_SET_RE = re.compile(r"""\A[a-z0-9][a-z0-9-]*(?:\.[0-9]+[a-z0-9-]*)*\Z""")
_SANITIZER_RELEASE_RE = re.compile(r"""\A\d{4}\.\d+\Z""")
_COMPARE_HEADER_RE = re.compile(r"""^\s*\[\[\s*compare\s*\]\]""")


def _compare(raw: object, text: str, source: str, need) -> tuple[CompareSpec, ...]:
    """The `[[compare]]` tables, each with its line (the n-th `[[compare]]` header of the text)."""
    if not isinstance(raw, list):
        raise LessonError(source, None, "'compare' must be an array of tables: [[compare]]")
    headers = [i for i, line in enumerate(text.splitlines(), start=1) if _COMPARE_HEADER_RE.match(line)]
    found: list[CompareSpec] = []
    for i, table in enumerate(raw):
        line = headers[i] if i < len(headers) else None
        where = f"[[compare]] number {i + 1}"
        _known_keys(table, COMPARE_KEYS, text, source, where, "compare", i + 1)
        at = ("compare", i + 1)
        try:
            name = need(table, "set", str, where, at=at)
            release = need(table, "toolkit", str, where, at=at)
            folder = need(table, "toolkit_dir", (str, type(None)), where, at=at)
            sanitizer = need(table, "sanitizer", (str, type(None)), where, at=at)
            sanitizer_dir = need(table, "sanitizer_dir", (str, type(None)), where, at=at)
            runs = need(table, "runs", (list, type(None)), where, at=at)
        except LessonError as exc:
            raise LessonError(source, exc.line or line, exc.message) from None
        problem = _sanitizer_problem(sanitizer, sanitizer_dir) or _toolkit_problem(runs, name, release, folder)
        if problem is not None:
            raise LessonError(source, line, f"{where}: {problem}")
        if any(c.set == name for c in found):
            raise LessonError(source, line, f"{where}: set {name!r} is declared twice")
        found.append(CompareSpec(name, release, folder, line, sanitizer, sanitizer_dir,
                                 tuple(runs) if runs is not None else None))
    return tuple(found)


def _toolkit_problem(runs: list | None, name: str, release: str, folder: str | None) -> str | None:
    """What is wrong with a [[compare]] table's runs, set name, toolkit release and folder, if anything."""
    if runs is not None and (not runs or not all(isinstance(r, str) for r in runs)):
        return "runs must be a non-empty list of run names"
    if not _SET_RE.match(name):
        return f"set {name!r} is not a set name (lowercase letters, digits, '-', and a release such as cuda12.4)"
    if not _RELEASE_RE.match(release):
        return f"toolkit {release!r} is not nvcc's release MAJOR.MINOR, e.g. \"12.4\""
    if folder is not None and not folder.startswith("/"):
        return f"toolkit_dir {folder!r} must be an absolute path on the GPU machine, e.g. \"/opt/cuda-12.4\""
    return None


def _sanitizer_problem(sanitizer: str | None, folder: str | None) -> str | None:
    """What is wrong with a [[compare]] table's compute-sanitizer release and folder, if anything."""
    if (sanitizer is None) != (folder is None):
        return ("sanitizer and sanitizer_dir go together: the release of the compute-sanitizer the runs use, "
                "and the toolkit folder it comes from")
    if sanitizer is not None and not _SANITIZER_RELEASE_RE.match(sanitizer):
        return f"sanitizer {sanitizer!r} is not compute-sanitizer's release YEAR.N, e.g. \"2025.3\""
    if folder is not None and not folder.startswith("/"):
        return f"sanitizer_dir {folder!r} must be an absolute path on the GPU machine"
    return None


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "an array",
               dict: "a table", type(None): "nothing (leave the key out)"}


def _toml_type(value: object) -> str:
    """What TOML calls the type of a value tomllib read."""
    for kind, name in ((bool, "a boolean"), (str, "a string"), (int, "an integer"), (float, "a float"),
                       (list, "an array"), (dict, "a table")):
        if isinstance(value, kind):
            return name
    return "a date or time"


def _shown(value: object) -> str:
    """A value as a message quotes it, in TOML's spelling where Python's differs."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = json.dumps(value) if isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# Each check below takes the line of its key as a function: a key is located only for a message.
def _timeout(value: float, source: str, where: str, line: Callable[[], int | None]) -> float:
    if not 0 < value < float("inf"):
        raise LessonError(source, line(), f"{where}: 'timeout' must be a positive number of seconds, not {value!r}")
    return float(value)


def _max_output(value: int, source: str, where: str, line: Callable[[], int | None]) -> int:
    if value < 1:
        raise LessonError(source, line(), f"{where}: 'max_output' must be a positive number of bytes, "
                          f"e.g. 16_777_216 (16 MiB), not {value}")
    return value


def _repeat(value: int, source: str, where: str, line: Callable[[], int | None]) -> int:
    if not 1 <= value <= MAX_REPEAT:
        raise LessonError(source, line(), f"{where}: 'repeat' must be from 1 to {MAX_REPEAT}, not {value}")
    return value


_spec_cache: dict[str, tuple[tuple[int, ...], LessonSpec]] = {}


def load_spec(code_root: Path, lesson: str) -> LessonSpec:
    """Load code/<lesson>/runs.toml (parsed once while its inode, size, mtime and ctime stay the
    same; a file changed within the racy window, lessonkit.cache.RACY_NS, is parsed again every
    time)."""
    path = code_root / lesson / "runs.toml"
    shown = f"code/{lesson}/runs.toml"
    try:
        st = os.stat(path)
        key = cache.stamp(st)
        cached = _spec_cache.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1]
        text = read_text(path, shown)
    except OSError as exc:
        raise LessonError(shown, None, f"cannot read the lesson's run specification: {exc.strerror}",
                          rank=0) from exc
    try:
        spec = parse_spec(text, shown)
    except LessonError as exc:  # a broken spec is a cause: report it before its consequences
        raise replace(exc, rank=0) from None
    if cache.settled(st):  # as for file hashes: a recent change hides in a stat
        _spec_cache[str(path)] = (key, spec)
    return spec
