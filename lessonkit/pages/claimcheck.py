"""The check of a page's claims, and the state it runs in: `PageState`, one page's sets, citations,
errors and result (lessonkit.pages.result) while lessonkit.pages.page processes it. A claim is looked
up (its set, its session), its query resolved, and its value judged against every recording
(lessonkit.pages.claims), a program's constant or a published work's figure.

The page rules (lessonkit.pages.directives, lessonkit.pages.tables) read and write a `PageState`;
lessonkit.pages.page builds it. Both import it from here, so neither imports the other.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence.display import TIME_UNITS, Display
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.evidence.spec import load_spec
from lessonkit.evidence.unrecorded import Unrecorded
from lessonkit.pages.claims import (
    ClaimValue,
    ClaimValueError,
    Found,
    Sample,
    judge,
    parse_claim_value,
    recorded_spread,
)
from lessonkit.pages.constants import (
    CORE_PREFIX,
    CORE_ROOT,
    constant_value,
    core_source,
    is_source_ref,
    parse_constants,
    shown_value,
)
from lessonkit.pages.query import Query, QueryError, parse_query, resolve
from lessonkit.pages.result import ClaimOutcome, PageResult
from lessonkit.pages.sources import PREFIX as SOURCES_PREFIX
from lessonkit.pages.sources import SOURCES_FILE, Sources, quoted
from lessonkit.pages.units import shown_unit, split_transform

PAGE_RANK = 2  # what a page claims comes after the evidence and sources it depends on

SESSION_REF_RE = re.compile(r"""^(?P<ref>[^\[\]]+?)\s*\[\s*session\s*=\s*(?P<session>latest|s[0-9]+)\s*\]$""")
_GROUPED_RE = re.compile(r"""[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?""")  # '2,888' as a work writes it


@dataclass
class PageState:
    """What a page's checks share while it is processed: its sets, citations, errors and result."""

    path: str
    offset: int
    repo: Path
    sets: dict[str, EvidenceSet]
    broken_sets: set[str]
    unrecorded: Mapping[str, Unrecorded] = field(default_factory=dict)  # lessons with no set yet
    default_set: str | None = None
    result: PageResult = field(default_factory=lambda: PageResult(""))
    citations: list[tuple[int, str, str]] = field(default_factory=list)  # (source line, set, run)
    unknowable: list[int] = field(default_factory=list)  # source lines citing an unreadable set
    transcripts: bool = True  # render transcript blocks (not needed for the errors alone)
    displays: dict[str, Display] = field(default_factory=dict)  # each lesson's, read once a page
    sources: Sources = field(default_factory=Sources)  # the works it may quote (lessonkit.pages.sources)

    def error(self, index: int, message: str) -> LessonError:
        """Record an error at 0-based source line `index`."""
        err = LessonError(self.path, index + 1 + self.offset, message, rank=PAGE_RANK)
        self.result.errors.append(err)
        return err

    def warn(self, index: int, message: str) -> LessonError:
        """Record a warning at 0-based source line `index`: shown, and failing only a strict build."""
        err = LessonError(self.path, index + 1 + self.offset, message, rank=PAGE_RANK, warning=True)
        self.result.errors.append(err)
        return err

    def lookup(self, index: int, ref: str, claim: str | None = None) -> tuple[EvidenceSet, str | None] | None:
        """Resolve REF to (set, run or None); records an error (or a skip) and returns None if it names nothing.

        REF may end in `[session=latest]` or `[session=sN]`: then the set is seen through that one
        session's recordings (a page describing one session). `claim`: the text of the claim that
        names REF, so that its error names it among others on its line.
        """
        m = SESSION_REF_RE.match(ref)
        if m is None:
            return self._lookup(index, ref, claim)
        found = self._lookup(index, m.group("ref"), claim)
        if found is None:
            return None
        ev, group = found
        wanted = m.group("session")
        if wanted == "latest":
            wanted = ev.latest_session().id
        if wanted not in ev.sessions:
            self.error(index, f"{ref!r} names session {m.group('session')!r}, which evidence set {ev.name!r} does not "
                       f"keep; its sessions: {', '.join(ev.sessions)} (or latest)")
            return None
        view = ev.view(frozenset({wanted}))
        if group is not None and group not in view.groups:
            self.error(index, f"{ref!r}: {ev.sessions[wanted].label()} of {ev.name!r} holds no recording of {group!r}")
            return None
        return view, group

    def _lookup(self, index: int, ref: str, claim: str | None = None) -> tuple[EvidenceSet, str | None] | None:
        set_name, sep, group = ref.partition("/")
        if not sep:
            default = self.sets.get(self.default_set or "")
            if default is not None and (ref in default.groups or ref in default.entries):
                set_name, group = default.name, ref
            elif ref in self.sets:
                return self.sets[ref], None
            else:
                self._unknown_name(index, ref, claim, default)
                return None
        ev = self.sets.get(set_name)
        if ev is None:
            self._no_set(index, ref, set_name, claim)
            return None
        if not group:
            return ev, None
        if group not in ev.groups:
            self._no_run(index, ev, group)
            return None
        self.cite(index, ev.name, group)
        return ev, group

    def _unknown_name(self, index: int, ref: str, claim: str | None, default: EvidenceSet | None) -> None:
        """`ref`, a name without a '/', is neither a run of the page's set (`default`) nor a set."""
        if ref in self.broken_sets or (default is None and self.default_set in self.broken_sets):
            self.unknowable.append(index)
        elif default is None and self.default_set in self.unrecorded and ref not in self.unrecorded:
            self.not_recorded(index, ref, self.unrecorded[self.default_set], claim)
        elif default is not None:
            self.error(index, f"no transcript {ref!r} in the page's set {default.name!r} and no set "
                       f"of that name; transcripts: {', '.join(sorted(default.groups))}")
        else:
            self._no_set(index, ref, ref, claim)

    def _no_set(self, index: int, ref: str, set_name: str, claim: str | None) -> None:
        if set_name in self.broken_sets:
            self.unknowable.append(index)  # the unreadable manifest is the one error to report
        elif set_name in self.unrecorded:
            self.not_recorded(index, ref, self.unrecorded[set_name], claim)
        else:
            self.error(index, f"no evidence set {set_name!r}; the sets are: {', '.join(sorted(self.sets)) or 'none'}")

    def _no_run(self, index: int, ev: EvidenceSet, group: str) -> None:
        entry = ev.entries.get(group) or next(
            (e for e in ev.entries.values() if e.recording == group or e.name.endswith("/" + group)), None)
        if entry is not None:
            self.error(index, f"{group!r} is recording {entry.repeat} of {entry.repeats} of {entry.group!r}; "
                       f"cite the run {entry.group!r}: a claim holds for every recording")
        else:
            self.error(index, f"evidence set {ev.name!r} has no transcript {group!r}; it has: "
                       f"{', '.join(sorted(ev.groups))}")

    def display(self, ev: EvidenceSet) -> Display:
        """How the set's lesson names its evidence (code/<lesson>/runs.toml; empty if unreadable,
        which the site's own check reports)."""
        known = self.displays.get(ev.lesson)
        if known is None:
            try:
                known = load_spec(self.repo / "code", ev.lesson).display
            except LessonError:
                known = Display()
            self.displays[ev.lesson] = known
        return known

    def not_recorded(self, index: int, ref: str, lesson: Unrecorded, claim: str | None = None) -> None:
        """Record that `ref` names evidence of a lesson that has none yet (in `claim`, when a claim does)."""
        what = f"claim {shorten(claim)!r}" if claim else repr(ref)
        self.error(index, f"{what} cannot be checked: lesson {lesson.lesson!r} is not recorded yet; "
                   f"record it on a GPU machine: {lesson.refresh}")

    def cite(self, index: int, set_name: str, group: str) -> None:
        """Note that source line `index` cites run `group` of `set_name`."""
        self.result.cited.add((set_name, group))
        self.citations.append((index, set_name, group))

    def check_claim(self, index: int, value: str, ref_query: str, start: int, end: int,
                    whole_number: bool = False, file: str | None = None) -> str | None:
        """Check `value` against every value REF:QUERY names; records the outcome and any error.

        `whole_number`: only a plain integer can replace the value (a highlighted line). Returns the unit
        of what it shows, for the record of its produced text (lessonkit.pages.units): "" for none (a
        count), None when not known.
        """
        written = value
        ref_query, value, transform = split_transform(ref_query, value)
        ref, sep, query = (p.strip() for p in ref_query.partition(":"))
        shown = f"{ref}:{query}" if sep else ref_query
        line = index + 1 + self.offset
        set_name: list[str] = []

        backing: list[str] = []

        spread: list[str] = []

        def outcome(error: LessonError | None = None, fix: str | None = None, skipped: bool = False) -> None:
            if fix is not None and whole_number and not fix.isdigit():
                fix = None
            if fix is not None and written != value:
                fix += written[len(value):]  # the '%' the author typed in the value
            self.result.claims.append(ClaimOutcome(line, start, end, written, shown, error, fix, skipped,
                                                   set_name[0] if set_name else None, file=file,
                                                   backing=backing[0] if backing else None,
                                                   derived=transform.words(), recorded=spread[0] if spread else ""))

        parsed_query = _try_query(query) if sep else None
        if not sep:
            outcome(self.error(index, f"claim {value!r} names {ref_query!r}; expected REF:QUERY, "
                               "e.g. day62-racecheck/bare-all:rows[threads=32,kernel=scanTileRacy].mismatches"))
            return None
        try:
            claim = parse_claim_value(value)
        except ClaimValueError as exc:
            outcome(self.error(index, f"claim {value!r} ({shown}): {exc}"))
            return None
        if is_source_ref(ref):
            return self._check_constant(index, claim, written, ref, query, transform, outcome, backing)
        if ref.startswith(SOURCES_PREFIX):
            return self._check_quoted(index, claim, written, ref, query, outcome, backing)
        errors_before = len(self.result.errors)
        found = self.lookup(index, ref, f"{value} @ {ref_query.strip()}")
        if found is None:
            new = self.result.errors[errors_before:]
            outcome(new[0] if new else None, skipped=not new)
            return None
        ev, group = found
        set_name.append(ev.name)
        try:
            sample = resolve(ev, group, query)
        except QueryError as exc:
            outcome(self.error(index, f"claim {written!r} ({shown}): {exc}"))
            return None
        except LessonError as exc:  # a recording is missing or malformed
            outcome(self.error(index, f"claim {written!r} ({shown}) cannot be checked: {exc}"))
            return None
        return self._check_recorded(index, claim, written, shown, ev, sample, parsed_query, transform, outcome, spread)

    def _check_recorded(self, index: int, claim: ClaimValue, written: str, shown: str, ev: EvidenceSet,
                        sample: Sample, parsed_query, transform, outcome, spread: list[str]) -> str | None:
        """A claim on what the recordings of a run hold (`sample`, the query's values in each), in the
        unit its field is declared in, with its arithmetic (`transform`) applied; the unit it shows."""
        field_name = (parsed_query.field or parsed_query.name) if parsed_query is not None else ""
        declared = self.display(ev).unit(field_name) if parsed_query is not None and not parsed_query.count else None
        unit = shown_unit(declared, transform)
        if transform.scale is not None and declared != "fraction":
            outcome(self.error(index, f"claim {written!r} ({shown}) asks for {transform.scale}, but {field_name!r} is "
                               f"not declared a fraction; declare it once, [units] {field_name} = \"fraction\" in the "
                               "lesson's runs.toml"))
            return None
        scaled = transform.apply(sample)
        if isinstance(scaled, str):
            outcome(self.error(index, f"claim {written!r} ({shown}): {scaled}"))
            return None
        if declared in TIME_UNITS and not scaled.timing:  # a time its name does not say: declared
            scaled = replace(scaled, timing=True)
        spread.append(recorded_spread(scaled))
        verdict = judge(claim, scaled)
        if verdict.holds:
            outcome()
        else:
            outcome(self.error(index, f"claim {written!r} ({shown}) {verdict.problem}"), verdict.fix)
        # Its unit is known when one is declared or named, and known to be none for a count; a
        # field that names none may be in any unit.
        known = not transform.ops and (unit is not None or (parsed_query is not None and parsed_query.count))
        return (unit or "") if known else None

    def source_lesson(self, index: int, ref: str) -> tuple[str, str] | None:
        """(lesson, path under code/) of a claim's source file: `LESSON/FILE`, or `FILE` of the lesson
        whose evidence the page cites by default; records an error and returns None if it names none."""
        first, slash, _ = ref.partition("/")
        if slash and (self.repo / "code" / first).is_dir():
            return first, ref
        default = self.sets.get(self.default_set or "")
        lesson = default.lesson if default is not None else (
            self.unrecorded[self.default_set].lesson if self.default_set in self.unrecorded else None)
        if lesson is None and self.default_set in self.broken_sets:
            return None  # its set or runs.toml cannot be read: that error is the one to report
        if lesson is None:
            self.error(index, f"{ref!r} names no lesson, and the page names no evidence set its lesson could be "
                       f"taken from; write LESSON/{ref}, e.g. day62-racecheck/racecheck.cu")
            return None
        return lesson, f"{lesson}/{ref}"

    def check_input(self, index: int, relpath: str) -> bool:
        """Whether code/`relpath` is an input of a recording in its lesson's evidence (or, for a lesson not
        recorded yet, of its runs.toml): what a page shows of a program is what ran. Records the error if not."""
        if relpath.split("/", 1)[0] in self.broken_sets:
            return False  # the set's own error comes first
        problem = input_problem(relpath, self.sets, self.unrecorded)
        if problem is not None:
            self.error(index, problem)
        return problem is None

    def _check_quoted(self, index: int, claim: ClaimValue, written: str, ref: str, query: str, outcome,
                      backing: list[str]) -> str | None:
        """A claim on a figure a published work gives: `{{ 2,888 @ sources/alglave2015:t6-titan-mp-bank }}`."""
        found = quoted(self.sources, ref, query)
        if isinstance(found, str):
            outcome(self.error(index, f"claim {written!r} ({ref}:{query}): {found}"))
            return None
        figure, work = found
        backing.append(f"quoted from {work.describe()}: {figure.where}; no recording of this course holds it")
        value = figure.value.replace(",", "") if _GROUPED_RE.fullmatch(figure.value) else figure.value
        verdict = judge(claim, Sample((Found(value, SOURCES_FILE, figure.line),), SOURCES_FILE, 1))
        if verdict.holds:
            outcome()
        else:
            outcome(self.error(index, f"claim {written!r} ({ref}:{query}) {verdict.problem}"), verdict.fix)
        return None

    def _check_constant(self, index: int, claim: ClaimValue, written: str, ref: str, query: str, transform,
                        outcome, backing: list[str]) -> str | None:
        """A claim on a constant of a lesson's program: `{{ 4 @ racecheck.cu:kTilesPerBlock }}`."""
        errors_before = len(self.result.errors)
        core = core_source(ref)
        if core is not None:  # the core's own constant, for a reference page: no lesson, no recording
            shown_path, path = ref, core
        else:
            if ref.startswith(CORE_PREFIX):
                outcome(self.error(index, f"claim {written!r} ({ref}:{query}): {ref} is no file of lessonkit's "
                                   f"source ({CORE_ROOT / 'lessonkit'})"))
                return None
            found = self.source_lesson(index, ref)
            if found is None:
                new = self.result.errors[errors_before:]
                outcome(new[0] if new else None, skipped=not new)
                return None
            _, relpath = found
            self.result.sources.add(relpath)
            shown_path, path = f"code/{relpath}", self.repo / "code" / relpath
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            outcome(self.error(index, f"claim {written!r} ({ref}:{query}) reads {shown_path}, which cannot be "
                               f"read: {getattr(exc, 'strerror', None) or exc}"))
            return None
        if core is None and not self.check_input(index, relpath):
            outcome(self.result.errors[-1] if self.result.errors else None)
            return None
        try:
            value, constant = constant_value(parse_constants(text, shown_path), query, shown_path)
        except ValueError as exc:
            outcome(self.error(index, f"claim {written!r} ({ref}:{query}): {exc}"))
            return None
        backing.append(f"the constant {query.strip()} of {shown_path}, line {constant.line}: {constant.text}")
        sample = Sample((Found(shown_value(value), shown_path, constant.line),), shown_path, 1)
        if transform.ops or transform.scale:
            scaled = transform.apply(sample)
            if isinstance(scaled, str):
                outcome(self.error(index, f"claim {written!r} ({ref}:{query}): {scaled}"))
                return None
            sample = scaled
        verdict = judge(claim, sample)
        if verdict.holds:
            outcome()
        else:
            outcome(self.error(index, f"claim {written!r} ({ref}:{query}) {verdict.problem}"), verdict.fix)
        return None if transform.ops or transform.scale else ""  # a constant is a plain number


def input_problem(relpath: str, sets: Mapping[str, EvidenceSet], unrecorded: Mapping[str, Unrecorded]) -> str | None:
    """Why code/`relpath` may not back what a page shows (it is no input of a recording in its lesson's
    evidence, nor of a lesson not recorded yet), or None: what a page shows of a program is what ran."""
    lesson = relpath.split("/", 1)[0]
    key = f"code/{relpath}"
    found = [ev for ev in sets.values() if ev.lesson == lesson]
    if any(key in entry.inputs for ev in found for entry in ev.entries.values()):
        return None
    if lesson in unrecorded and key in unrecorded[lesson].inputs:
        return None  # it will run: the lesson's note says it has not yet
    where = f"any recording in evidence/{lesson}" if found else f"a recording: evidence/{lesson} does not exist"
    return (f"{key} is not an input of {where}; a page shows only code that ran, so that what it shows is what "
            f"the transcripts come from: list the file under inputs in code/{lesson}/runs.toml and refresh the "
            "evidence")


def program_constant(repo: Path, ref_query: str, sets: Mapping[str, EvidenceSet],
                     unrecorded: Mapping[str, Unrecorded]) -> tuple[object, str] | str | None:
    """(the value, 'code/FILE:LINE: definition') of `LESSON/FILE:NAME`, a constant of a lesson's program
    that ran; or why it names none; None when it cannot be known (the lesson's runs.toml cannot be read,
    which is the error to report)."""
    ref, sep, query = (p.strip() for p in ref_query.partition(":"))
    core = core_source(ref)
    if core is not None and sep:  # lessonkit's own constant, on a reference page
        try:
            value, constant = constant_value(parse_constants(core.read_text(encoding="utf-8"), ref), query, ref,
                                             whole=True)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            return str(exc)
        return value, f"{ref}:{constant.line}: {constant.text}"
    lesson, slash, _ = ref.partition("/")
    if (slash and lesson not in unrecorded and not any(ev.lesson == lesson for ev in sets.values())
            and (repo / "code" / lesson / "runs.toml").is_file()):
        return None
    if not sep or not slash or not is_source_ref(ref):
        return f"{ref_query!r} names no constant; write LESSON/FILE:NAME, e.g. day62-racecheck/racecheck.cu:kTilesPerBlock"
    path = repo / "code" / ref
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"code/{ref} cannot be read: {getattr(exc, 'strerror', None) or exc}"
    problem = input_problem(ref, sets, unrecorded)
    if problem is not None:
        return problem
    try:
        value, constant = constant_value(parse_constants(text, ref), query, f"code/{ref}", whole=True)
    except ValueError as exc:
        return str(exc)
    return value, f"code/{ref}:{constant.line}: {constant.text}"


def shorten(text: str, limit: int = 60) -> str:
    """`text` on one line, cut to `limit` characters with '…' where it was cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def _try_query(text: str) -> Query | None:
    try:
        return parse_query(text)
    except QueryError:
        return None
