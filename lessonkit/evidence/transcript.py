"""Transcripts parsed into data: compute-sanitizer reports and summaries; the program's own lines
are read by the lesson's declared harness format (lessonkit.evidence.harness).

Lines are classified by their content, never by their position: compute-sanitizer
prints reports in an order that changes from run to run, and the program's own
output is interleaved with the tool's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.evidence.harness import HarnessFormat, HarnessReader

PREFIX = "========="

# How the continuation lines of a host or device backtrace begin: no record reads them.
_BACKTRACE = ("Host Frame:", "Device Frame:", "in ", "Saved host backtrace")
_ACCESS_RE = re.compile(
    r"""(?P<kernel>.+?)\+0x(?P<offset>[0-9a-fA-F]+)(?:\s+in\s+(?P<file>.+?):(?P<line>\d+))?""",
    re.VERBOSE)
# The same in a device-debug (-G) build: `0x1f20 in FILE:LINE:FUNCTION`, the function last.
_DEBUG_ACCESS_RE = re.compile(
    r"""0x(?P<offset>[0-9a-fA-F]+)\s+in\s+(?P<file>[^:]+?):(?P<line>\d+):(?P<kernel>.+)""",
    re.VERBOSE)
# Severities: Error and Warning by default; `--racecheck-detect-level info` adds the lowest level,
# whose word is read as printed.
_RACE_RE = re.compile(
    r"""^(?P<severity>Error|Warning|Info\w*):\s+Race\ reported\ between\s+(?P<kind>Read|Write)\ access\ at\s+(?P<rest>.*)$""",
    re.VERBOSE)
_RACE_AND_RE = re.compile(
    r"""^and\s+(?P<kind>Read|Write)\ access\ at\s+(?P<rest>.*?)\s*\[(?P<hazards>\d+)\ hazards?\]\s*$""",
    re.VERBOSE)
_HAZARD_RE = re.compile(
    r"""^(?P<severity>Error|Warning|Info\w*):\s+(?P<warp>\(Warp\ Level\ Programming\)\s+)?Potential\s+
        (?P<type>RAW|WAR|WAW)\ hazard\ detected\ at\s+__shared__\s+0x(?P<address>[0-9a-fA-F]+)\s+
        in\ block\s+\((?P<block>[\d,\s]+)\)\s*:?\s*$""",
    re.VERBOSE)
_HAZARD_ACCESS_RE = re.compile(
    r"""^(?P<kind>Read|Write)\s+Thread\s+\((?P<thread>[\d,\s]+)\)\s+at\s+(?P<rest>.*)$""", re.VERBOSE)
_BARRIER_RE = re.compile(
    r"""^Barrier\ error\ detected\.\s+(?P<what>.+?)\.?\s*$""", re.VERBOSE)
_BARRIER_AT_RE = re.compile(r"""^at\s+(?P<rest>.*)$""")
_BARRIER_BY_RE = re.compile(
    r"""^by\s+thread\s+\((?P<thread>[\d,\s]+)\)\s+in\s+block\s+\((?P<block>[\d,\s]+)\)\s*$""",
    re.VERBOSE)
_RACECHECK_SUMMARY_RE = re.compile(
    r"""RACECHECK\ SUMMARY:\s+(?P<displayed>\d+)\ hazards?\ displayed\s+
        \((?P<errors>\d+)\ errors?,\s+(?P<warnings>\d+)\ warnings?(?:,\s+(?P<infos>\d+)\ infos?)?\)""",
    re.VERBOSE)
# initcheck: `Uninitialized __global__ memory read of size 4 bytes` (or __shared__ with
# `--initcheck-address-space shared`), then `at KERNEL+0xOFF in FILE:LINE` and `by thread ...`.
_UNINIT_RE = re.compile(
    r"""^Uninitialized\s+(?P<space>__\w+__)\s+memory\s+read\s+of\s+size\s+(?P<size>\d+)\s+bytes?\s*$""",
    re.VERBOSE)
_NOT_PRINTED_RE = re.compile(
    r"""ERROR\ SUMMARY:\s+(?P<count>\d+)\ errors?\ (?:was|were)\ not\ printed\.(?:\ Use\ --print-limit\ option\ to\ adjust\ the\ number\ of\ printed\ errors)?""",
    re.VERBOSE)
_ERROR_SUMMARY_RE = re.compile(r"""ERROR\ SUMMARY:\s+(?P<count>\d+)\ errors?\b(?!\ (?:was|were))""", re.VERBOSE)
# (regex, ((value name, regex group), ...)): the "not printed" form is tried before the plain one.
_SUMMARY_FORMS = (
    (_RACECHECK_SUMMARY_RE, (("displayed", "displayed"), ("errors", "errors"), ("warnings", "warnings"),
                             ("infos", "infos"))),
    (_NOT_PRINTED_RE, (("not_printed", "count"),)),
    (_ERROR_SUMMARY_RE, (("errors", "count"),)),
)
_ANY_SUMMARY_RE = re.compile(r"""(?P<tool>RACECHECK|ERROR)\ SUMMARY:""", re.VERBOSE)

@dataclass(frozen=True)
class Access:
    """One side of a reported race: a read or write at a kernel offset and source line."""

    kind: str
    signature: str
    offset: str
    file: str | None
    line: int | None

    @property
    def kernel(self) -> str:
        """The kernel's name without its argument list."""
        return self.signature.split("(", 1)[0].strip()

    @property
    def location(self) -> str | None:
        """`file:line`, or None when the binary had no line information."""
        return None if self.file is None else f"{self.file}:{self.line}"


@dataclass(frozen=True)
class RaceReport:
    """An analysis-mode report: one access raced against one or more others."""

    at: int
    severity: str
    first: Access
    others: tuple[tuple[Access, int], ...]

    def fields(self) -> dict[str, Any]:
        """The values a page may quote, by name."""
        kinds = [self.first.kind] + [a.kind for a, _ in self.others]
        return {
            "severity": self.severity,
            "kernel": self.first.kernel,
            "file": self.first.file,
            "line": self.first.line,
            "location": self.first.location,
            "access": self.first.kind,
            "accesses": "/".join(kinds),
            "pairs": len(self.others),
            "hazards": sum(n for _, n in self.others),
            "_line": self.at,
        }


@dataclass(frozen=True)
class HazardRecord:
    """A hazard-mode record: one byte of shared memory touched by two threads unordered."""

    at: int
    severity: str
    warp_level: bool
    type: str
    address: str
    block: str
    accesses: tuple[tuple[Access, str], ...] = ()

    def fields(self) -> dict[str, Any]:
        """The values a page may quote, by name."""
        first = self.accesses[0][0] if self.accesses else None
        return {
            "severity": self.severity,
            "warp_level": self.warp_level,
            "type": self.type,
            "address": "0x" + self.address,
            "block": f"({self.block})",
            "kernel": first.kernel if first else None,
            "file": first.file if first else None,
            "line": first.line if first else None,
            "location": first.location if first else None,
            "_line": self.at,
        }


def _where(access: Access | None, thread: str | None, block: str | None, at: int) -> dict[str, Any]:
    """The fields a located finding shares (synccheck's barrier errors, initcheck's reads): where, by whom."""
    return {
        "kernel": access.kernel if access else None,
        "file": access.file if access else None,
        "line": access.line if access else None,
        "location": access.location if access else None,
        "thread": f"({thread})" if thread else None,
        "block": f"({block})" if block else None,
        "_line": at,
    }


@dataclass(frozen=True)
class BarrierError:
    """A synccheck finding: a barrier reached by a divergent set of threads, or misused."""

    at: int
    what: str
    access: Access | None = None
    thread: str | None = None
    block: str | None = None

    def fields(self) -> dict[str, Any]:
        """The values a page may quote, by name."""
        return {
            "what": self.what,
            **_where(self.access, self.thread, self.block, self.at),
        }


@dataclass(frozen=True)
class UninitializedRead:
    """An initcheck finding: a read of memory that nothing wrote, with where and by whom."""

    at: int
    space: str
    size: int
    access: Access | None = None
    thread: str | None = None
    block: str | None = None

    def fields(self) -> dict[str, Any]:
        """The values a page may quote, by name."""
        return {
            "space": self.space,
            "size": self.size,
            **_where(self.access, self.thread, self.block, self.at),
        }


@dataclass(frozen=True)
class Summary:
    """A summary line the tool printed, with its 1-based line in the transcript."""

    at: int
    text: str
    values: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Transcript:
    """A transcript as data. `lines` keeps the text so quotes can be found and shown."""

    source: str
    lines: tuple[str, ...]
    reports: tuple[RaceReport, ...] = ()
    hazards: tuple[HazardRecord, ...] = ()
    barriers: tuple[BarrierError, ...] = ()
    uninitialized: tuple[UninitializedRead, ...] = ()
    summaries: tuple[Summary, ...] = ()
    scalars: dict[str, Any] = field(default_factory=dict)
    records: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)

    def collections(self) -> dict[str, tuple[dict[str, Any], ...]]:
        """Every list of records a query can select from, by name (built once per transcript)."""
        return self._collections

    def read_from(self, source: str) -> Transcript:
        """This parse as the recording at `source` gives it: a file with the same bytes, read in
        the same format, parses the same. The twin shares this one's records and derived views
        (none of them names the file); only `source` differs."""
        if source == self.source:
            return self
        twin = replace(self, source=source)
        twin.__dict__["derived"] = self.derived
        twin.__dict__["_collections"] = self._collections
        return twin

    @cached_property
    def derived(self) -> dict[Any, Any]:
        """Views a reader works out from this transcript (lessonkit.pages.query's indexes), kept
        with it so that they live exactly as long as it does."""
        return {}

    @cached_property
    def _collections(self) -> dict[str, tuple[dict[str, Any], ...]]:
        out = {
            "reports": tuple(r.fields() for r in self.reports),
            "hazards": tuple(h.fields() for h in self.hazards),
            "barriers": tuple(b.fields() for b in self.barriers),
            "uninitialized": tuple(u.fields() for u in self.uninitialized),
        }
        out.update(self.records)
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready view of everything parsed (for the `transcript` command)."""
        data: dict[str, Any] = {"source": self.source}
        data.update(self.scalars)
        data["summaries"] = [{"line": s.at, "text": s.text, **dict(s.values)} for s in self.summaries]
        for name, items in self.collections().items():
            data[name] = [{k: v for k, v in it.items() if not k.startswith("_")} | {"line_in_transcript": it.get("_line")}
                          if "_line" in it else dict(it) for it in items]
        return data


def _split_tool_line(raw: str) -> tuple[bool, str] | None:
    """(is_continuation, body) for a compute-sanitizer line, or None for program output: a tool
    line starts with the prefix, and a continuation has five more blanks after it (string tests,
    not a regex: a long report has tens of thousands of such lines)."""
    if not raw.startswith(PREFIX):
        return None
    rest = raw[len(PREFIX):]
    return len(rest) >= 5 and rest[:5].isspace(), rest.strip()


def _parse_access(kind: str, rest: str, source: str, number: int) -> Access:
    m = _ACCESS_RE.fullmatch(rest.strip()) or _DEBUG_ACCESS_RE.fullmatch(rest.strip())
    if not m:
        raise LessonError(source, number, f"cannot read the access location in {rest!r}; "
                          "expected 'KERNEL(ARGS)+0xOFFSET[ in FILE:LINE]' or, from a -G build, "
                          "'0xOFFSET in FILE:LINE:KERNEL(ARGS)'")
    line = int(m.group("line")) if m.group("line") else None
    return Access(kind, m.group("kernel"), m.group("offset"), m.group("file"), line)


def parse_summary(text: str) -> tuple[str, tuple[tuple[str, int], ...]] | None:
    """The canonical summary text and its numbers, for a string holding a summary, else None."""
    for regex, names in _SUMMARY_FORMS:
        m = regex.search(text)
        if m:
            return m.group(0), tuple((name, int(m.group(group))) for name, group in names
                                     if m.group(group) is not None)
    return None


def common_indent(lines: tuple[str, ...]) -> int:
    """How many leading blanks every non-blank line shares (a CI log indents a whole step's output)."""
    indent: str | None = None
    for line in lines:
        if not line.strip():
            continue
        lead = line[:len(line) - len(line.lstrip())]
        if not lead:
            return 0  # the usual case, found at once: the first line is `========= COMPUTE-SANITIZER`
        indent = lead if indent is None else indent[:next(
            (i for i, (a, b) in enumerate(zip(indent, lead)) if a != b), min(len(indent), len(lead)))]
        if not indent:
            return 0
    return len(indent or "")


def parse_transcript(text: str, source: str, harness: HarnessFormat | None = None,
                     require_output: bool = False, require_tool: bool = False) -> Transcript:
    """Parse a transcript (tool lines and program output mixed) into a Transcript; the program's
    lines are read by `harness` (the lesson's declared format), or not at all without one. Lines
    indented alike (a CI log) are read without that indentation; `lines` keeps them as written.
    With `require_output`, a text in which nothing is read (no tool line, no program line the
    harness reads) is a LessonError, not an empty transcript; with `require_tool` (a recording of
    a run that invokes compute-sanitizer), so is a text without the tool's own output: a line
    with its prefix, or the usage it prints when it refuses its command line."""
    lines = tuple(text.splitlines())
    indent = common_indent(lines)
    tool_lines = 0
    reports: list[RaceReport] = []
    hazards: list[HazardRecord] = []
    barriers: list[BarrierError] = []
    uninitialized: list[UninitializedRead] = []
    summaries: list[Summary] = []
    scalars: dict[str, Any] = {"tool": None}
    program = HarnessReader(harness, source, scalars) if harness is not None else None
    # The record being continued by indented tool lines, if any.
    current: Any = None

    for number, raw in enumerate(lines, start=1):
        split = _split_tool_line(raw[indent:] if indent else raw)
        if split is None:
            if current is not None:  # most lines continue no record: no call for them
                current = _finish(current, reports, hazards, barriers, uninitialized)
            if raw.startswith(_USAGE, indent):
                tool_lines += 1  # the tool refused its command line: its output, not the program's
            if program is not None:
                program.read(raw.strip(), number)
            continue
        cont, body = split
        tool_lines += 1
        if body.startswith("COMPUTE-SANITIZER"):
            continue
        if not cont:
            if current is not None:
                current = _finish(current, reports, hazards, barriers, uninitialized)
            if not body:
                continue
            if _ANY_SUMMARY_RE.match(body):
                parsed = parse_summary(body)
                if parsed is None or not body.startswith(parsed[0]):
                    raise LessonError(source, number, f"unreadable summary line {body!r}")
                summaries.append(Summary(number, parsed[0], parsed[1]))
                if body.startswith("RACECHECK"):
                    scalars["tool"] = "racecheck"
                continue
            current = _start_record(body, number, source)
            continue
        # A continuation line belongs to the record opened above it. A backtrace line (most of a
        # long report) matches no continuation any record reads: skip it without trying each.
        if not body.startswith(_BACKTRACE):
            current = _continue_record(current, body, number, source)

    _finish(current, reports, hazards, barriers, uninitialized)
    _summary_scalars(summaries, scalars)
    if require_tool and not tool_lines:
        raise LessonError(source, None, NO_TOOL_OUTPUT)
    if require_output and not tool_lines and not (program is not None and program.read_any()):
        raise LessonError(source, None, _NOTHING_READ if harness is None else _NOTHING_READ_BY_HARNESS)
    return Transcript(source, lines, reports=tuple(reports), hazards=tuple(hazards),
                      barriers=tuple(barriers), uninitialized=tuple(uninitialized),
                      summaries=tuple(summaries), scalars=scalars,
                      records=program.collections() if program is not None else {})


_USAGE = "Usage: compute-sanitizer "  # what it prints, unprefixed, after refusing its command line
NO_TOOL_OUTPUT = (f"holds no compute-sanitizer output (no line starts {PREFIX}, and no usage it prints "
                   "when it refuses its command line), yet its run invokes compute-sanitizer, which always "
                   "prints one or the other; expected the transcript of that run")
_NOTHING_READ = (f"holds no compute-sanitizer output (no line starts {PREFIX}) and no harness format "
                 "was given to read the program's lines; expected a transcript of a compute-sanitizer run, "
                 "or --lesson LESSON to read the program's lines by code/LESSON/runs.toml's [harness]")
_NOTHING_READ_BY_HARNESS = (f"holds no compute-sanitizer output (no line starts {PREFIX}) and no line the "
                            "lesson's [harness] reads; expected a transcript of one of its runs")


def _start_record(body: str, number: int, source: str) -> Any:
    if m := _RACE_RE.match(body):
        first = _parse_access(m.group("kind"), m.group("rest"), source, number)
        return RaceReport(number, m.group("severity"), first, ())
    if m := _HAZARD_RE.match(body):
        return HazardRecord(number, m.group("severity"), bool(m.group("warp")), m.group("type"),
                            m.group("address"), re.sub(r"\s", "", m.group("block")))
    if m := _BARRIER_RE.match(body):
        return BarrierError(number, m.group("what"))
    if m := _UNINIT_RE.match(body):
        return UninitializedRead(number, m.group("space"), int(m.group("size")))
    return None  # a line of a shape not read here (another tool's, a new one): harmless


def _continue_record(current: Any, body: str, number: int, source: str) -> Any:
    if isinstance(current, RaceReport):
        m = _RACE_AND_RE.match(body)
        if m:
            other = _parse_access(m.group("kind"), m.group("rest"), source, number)
            return RaceReport(current.at, current.severity, current.first,
                              current.others + ((other, int(m.group("hazards"))),))
        if body.startswith("and "):
            raise LessonError(source, number, f"unreadable race continuation {body!r}; expected "
                              "'and Read|Write access at KERNEL+0xOFF in FILE:LINE [N hazards]'")
        return current
    if isinstance(current, HazardRecord):
        m = _HAZARD_ACCESS_RE.match(body)
        if m:
            access = _parse_access(m.group("kind"), m.group("rest"), source, number)
            thread = re.sub(r"\s", "", m.group("thread"))
            return HazardRecord(current.at, current.severity, current.warp_level, current.type,
                                current.address, current.block,
                                current.accesses + ((access, thread),))
        return current
    if isinstance(current, BarrierError):
        if (m := _BARRIER_AT_RE.match(body)) and current.access is None:
            access = _parse_access("Barrier", m.group("rest"), source, number)
            return BarrierError(current.at, current.what, access, current.thread, current.block)
        if m := _BARRIER_BY_RE.match(body):
            return BarrierError(current.at, current.what, current.access,
                                re.sub(r"\s", "", m.group("thread")),
                                re.sub(r"\s", "", m.group("block")))
        return current
    if isinstance(current, UninitializedRead):
        if (m := _BARRIER_AT_RE.match(body)) and current.access is None:
            access = _parse_access("Read", m.group("rest"), source, number)
            return UninitializedRead(current.at, current.space, current.size, access, current.thread, current.block)
        if m := _BARRIER_BY_RE.match(body):
            return UninitializedRead(current.at, current.space, current.size, current.access,
                                     re.sub(r"\s", "", m.group("thread")), re.sub(r"\s", "", m.group("block")))
        return current
    if body.startswith("and ") and "access at" in body:
        raise LessonError(source, number, f"race continuation {body!r} follows no race report")
    return current


def _finish(current: Any, reports: list[RaceReport], hazards: list[HazardRecord],
            barriers: list[BarrierError], uninitialized: list[UninitializedRead]) -> None:
    if isinstance(current, RaceReport):
        reports.append(current)
    elif isinstance(current, HazardRecord):
        hazards.append(current)
    elif isinstance(current, BarrierError):
        barriers.append(current)
    elif isinstance(current, UninitializedRead):
        uninitialized.append(current)


def _summary_scalars(summaries: list[Summary], scalars: dict[str, Any]) -> None:
    """Expose the summaries' numbers as scalars; racecheck's line is `summary` when present."""
    for s in summaries:
        values = dict(s.values)
        if "displayed" in values:
            scalars.update(hazards_displayed=values["displayed"], race_errors=values["errors"],
                           race_warnings=values["warnings"])
            if "infos" in values:
                scalars["race_infos"] = values["infos"]
            scalars["summary"] = s.text  # racecheck's summary is the run's headline
        elif "not_printed" in values:
            scalars["not_printed"] = values["not_printed"]
        else:
            scalars["error_count"] = values["errors"]
            scalars.setdefault("summary", s.text)
