"""Tables drawn from the evidence: `{{ table SOURCE... rows=KEY [cols=KEY] cell=FIELD ... }}`.

A SOURCE is `RUN:COLLECTION` or `RUN:COLLECTION[KEY=VALUE,...]` (RUN as in a claim); several
sources put their runs side by side, and the key `run` names the run a record comes from. The key
`session` names the kept GPU session a recording comes from: a row (or column) of each session,
labelled with its id and start time, whose cells are over that session's recordings alone, so a
page shows how much the sessions differ without naming one (a refresh retires the oldest).
Rows are the values of `rows=KEY`, columns the values of `cols=KEY` (or, without `cols`, one
column for each `cell=`), each in order of first appearance, or as listed: `rows=kernel:A|B`.
A cell is a FIELD of the one record its row and column select (every record, with a `KEY=*`
filter), over every recording of the run: one value when all agree, otherwise the smallest and
the largest the recordings hold, as a range (regenerated with them: never widened), a timing
that never varied the rounded value `lessonkit accept` would write (whole numbers of five digits and more with thousands
separators, rounded ones of seven and more as 3e10), or, for a text that differs, each text
with how many recordings say it; texts that differ between the records of one recording are an
error naming the cell. `cell="{wrong_launches} / {launches}"` composes fields; a part in brackets
is left out when a field in it is none: `"{mismatches}[, from {first_bad}]"`. With `sig=N`, a
value that is not whole and the same in every recording is shown rounded, `~0.00018`. A cell whose
run never launched the kernel it selects (lessonkit.pages.query.launched) shows "not run"; any
other cell that selects nothing shows `empty="…"` (default "–"), which says what happened and
never states a count ("none", "0", "zero") or "not run". Headers and labels come from the lesson's
display declarations (lessonkit.evidence.display); every figure is marked as produced.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, replace
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError
from lessonkit.evidence.display import Display
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.pages.claims import ClaimValue, Sample, accepted_value, number
from lessonkit.pages.marks import strip
from lessonkit.pages.meaning import describe_table, for_reader
from lessonkit.pages.query import (
    KERNEL,
    NotLaunched,
    QueryError,
    launched,
    parse_query,
    resolve,
    select_records,
    show,
)
from lessonkit.pages.render import produced, value_span
from lessonkit.pages.units import unit_problem

if TYPE_CHECKING:
    from lessonkit.pages.claimcheck import PageState

RUN = "run"
SESSION = "session"  # the kept session a recording comes from: a row or a column of each
NOT_RUN = "not run"  # a cell whose run never launched the kernel it selects
# What an `empty=` text may not say: a count (a figure, a number word, "none"), or "not run",
# which the table writes itself where it is true.
_EMPTY_COUNT_RE = re.compile(r"""\d|\b(?:none|zero|nil|nothing|no|one|two|three|four|five|six|seven|eight|"""
                             r"""nine|ten|dozen|hundred|thousand|million)\b""", re.IGNORECASE)
_EMPTY_NOT_RUN_RE = re.compile(r"""\bnot\s+(?:run|launched)\b|\bnever\s+(?:ran|run|launched)\b""", re.IGNORECASE)
_FIELD_RE = re.compile(r"""\{(?P<field>[A-Za-z_]\w*)\}""")
_OPTIONAL_RE = re.compile(r"""\[(?P<part>[^\[\]]*)\]""")
# A range's end written with more significant digits than this plus two (a float's repr) is rounded
# outwards to this many when no sig=N says how many.
DEFAULT_SIG = 4
# A rounded figure of seven digits or more ("~30000000000") reads better as 3e10.
_ROUND_BIG_RE = re.compile(r"""(?<![\d.])(?P<lead>[1-9]\d{0,2})(?P<zeros>0{6,})(?![\d.])""")
# A whole number of five digits or more, written with thousands separators: 108,192.
_GROUPED_RE = re.compile(r"""(?<![\w.,:\-+])\d{5,}(?![\w.,])""")


def grouped(text: str) -> str:
    """`text` with every whole number of five or more digits written with thousands separators."""
    return _GROUPED_RE.sub(lambda m: f"{int(m.group()):,}", text)


_SOURCE_RE = re.compile(r"""^(?P<ref>[^:\s]+):(?P<collection>[A-Za-z_]\w*)(?:\[(?P<filters>[^\]]*)\])?$""")


@dataclass(frozen=True)
class _Source:
    ev: EvidenceSet
    run: str
    collection: str
    filters: tuple[tuple[str, str], ...]


class Refused(Exception):
    """A table that cannot be drawn; the message says why (the page records it once)."""


class _Unknowable(Refused):
    """A table whose source's set cannot be read: that set's error is the one reported."""


def render_table(page: PageState, index: int, parts: list[str]) -> str:
    """The Markdown table the directive asks for, or "" with an error recorded (none when a set it
    draws from cannot be read)."""
    try:
        return _table(page, index, parts)
    except _Unknowable:
        return ""
    except Refused as exc:
        page.error(index, f"table: {exc}")
        return ""


def _table(page: PageState, index: int, parts: list[str]) -> str:
    options, cells, sources = _parts(page, index, parts)
    draw = _Drawing(page, sources, options)
    for cell in cells:
        _check_template(cell, draw.display)
    row_key, row_values = _axis(options["rows"], sources)
    col_key, col_values = _axis(options["cols"], sources) if "cols" in options else (None, [])
    head = [html.escape(draw.display.name(row_key), quote=False)]
    if col_key is None:
        head += [html.escape(draw.display.name(_field(c)), quote=False) for c in cells]
        columns = [(None, c) for c in cells]
    else:
        head += [draw.label(col_key, v, "a column") for v in col_values]
        columns = [(v, cells[0]) for v in col_values]
    body = [[draw.label(row_key, rv, "a row")] + [draw.cell(row_key, rv, col_key, cv, cell) for cv, cell in columns]
            for rv in row_values]
    numeric = [all(r[k + 1] == draw.empty or _numeric(r[k + 1]) for r in body) for k in range(len(columns))]
    lines = ["| " + " | ".join(_escape(h) for h in head) + " |",
             "| --- | " + " | ".join("---:" if n else "---" for n in numeric) + " |"]
    lines += ["| " + " | ".join(_escape(c) for c in row) + " |" for row in body]
    return "\n".join(lines)


class _Drawing:
    """One table being drawn: its sources, their display declarations, `empty=` and `sig=`."""

    def __init__(self, page: PageState, sources: list[_Source], options: dict[str, str]) -> None:
        self.page, self.sources = page, sources
        self.display = page.display(sources[0].ev)
        self.empty = _empty(options.get("empty", "\u2013"))
        self.sig = sig_digits(options.get("sig"))
        self.runs = list(dict.fromkeys(source.run for source in sources))
        self.runs_named = ", ".join("run " + s.run for s in sources)

    def label(self, key: str, value: str, what: str) -> str:
        """A row's or column's label, produced from the evidence."""
        return _shown(self.page, self.sources, _label(self.display, self.sources, key, value),
                      f"generated from every recording: a value of the key {key} in {self.runs_named}, "
                      f"{what} of the table")

    def cell(self, row_key: str, rv: str, col_key: str | None, cv: str | None, template: str) -> str:
        """The cell of row `rv` and column `cv` (None: a column of its own template)."""
        where = f"({_label(self.display, self.sources, row_key, rv)}" + \
            ("" if cv is None else f", {_label(self.display, self.sources, col_key, cv)}") + ")"
        chosen = {row_key: rv} | ({} if cv is None else {col_key: cv})
        pieces = _cell(self.page, self.sources, chosen, template, where, self.sig)
        if pieces is None:
            return self.empty
        session = chosen.get(SESSION)  # a session's row or column: its recordings alone back the cell
        backing = self.sources[0].ev if session is None else self.sources[0].ev.view(frozenset({session}))
        why = for_reader(describe_table(backing, self.runs, _field(template)), self.page.sets, self.page.default_set) + \
            ("" if session is None else f", session {session} only") + f"; the cell {where}"
        return _shown_cell(self.page, self.sources, pieces, why)


def _parts(page: PageState, index: int, parts: list[str]) -> tuple[dict[str, str], list[str], list[_Source]]:
    """A table directive's options, its `cell=` templates and its sources; Refused unless it names at
    least one source, the rows' key and a cell, and at most one cell with `cols=`."""
    options: dict[str, str] = {}
    cells: list[str] = []
    sources: list[_Source] = []
    for part in parts:
        key, sep, value = part.partition("=")
        if sep and key in ("rows", "cols", "empty", "sig"):
            options[key] = value
        elif sep and key == "cell":
            cells.append(value)
        elif sep and "[" not in key:
            raise Refused(f"unknown option {part!r}; expected rows=KEY, cols=KEY, cell=FIELD, empty=TEXT, sig=N")
        else:
            sources.append(_source(page, index, part))
    if not sources:
        raise Refused("name at least one source, RUN:COLLECTION[KEY=VALUE,...]")
    if "rows" not in options or not cells:
        raise Refused("say which key makes the rows (rows=KEY) and what a cell shows (cell=FIELD)")
    if "cols" in options and len(cells) > 1:
        raise Refused("with cols=KEY a table shows one cell=; without cols, one column per cell=")
    return options, cells, sources


def _empty(empty: str) -> str:
    """An `empty=` text; Refused when it states a count or says "not run"."""
    if m := _EMPTY_COUNT_RE.search(empty):
        raise Refused(f"empty={empty!r} states a count ({m.group()!r}) in a cell that selects no record: no record "
                      "is not a count of zero; say what happened, or keep the default empty=\u2013")
    if m := _EMPTY_NOT_RUN_RE.search(empty):
        raise Refused(f"empty={empty!r} says {m.group()!r}: the table writes {NOT_RUN!r} itself in a cell whose run "
                      "never launched its kernel; empty= is for the cells of a kernel the run launched")
    return empty


def _field(cell: str) -> str:
    """The field a `cell=` shows: its first `{FIELD}`, or the whole of a plain FIELD."""
    return _FIELD_RE.search(cell).group("field") if "{" in cell else cell


def sig_digits(written: str | None) -> int | None:
    """The significant digits a `sig=N` asks for (None without one); Refused unless 1 to 6."""
    if written is None:
        return None
    if not (written.isdigit() and 1 <= int(written) <= 6):
        raise Refused(f"sig={written!r}: give the significant digits a fraction is shown with, 1 to 6")
    return int(written)


def _shown(page: PageState, sources: list[_Source], text: str, why: str | None = None) -> str:
    """Text drawn from the evidence (the runs of `sources`) as a table shows it: escaped, marked as
    produced, with what backs it."""
    return produced(page.result.marker, html.escape(text, quote=False), why, "cell", _runs(sources))


def _runs(sources: list[_Source]) -> tuple[tuple[str, str], ...]:
    """(set, run) of each source, once, in order: what a cell is drawn from."""
    return tuple(dict.fromkeys((s.ev.name, s.run) for s in sources))


def _shown_cell(page: PageState, sources: list[_Source], pieces: list[tuple[str, bool]], why: str) -> str:
    """A cell as a table shows it: the evidence's values marked as produced, the template's own words
    not (the audit reads them as the page's), all of it in the one span that says what backs the cell."""
    if len(pieces) == 1 and pieces[0][1]:
        return _shown(page, sources, pieces[0][0], why)
    marks = page.result.marker
    inner = "".join(marks.wrap(html.escape(text, quote=False), why, "cell", _runs(sources)) if value
                    else html.escape(text, quote=False) for text, value in pieces)
    return marks.wrap(value_span(why), why, "cell") + inner + "</span>"


def _source(page: PageState, index: int, text: str) -> _Source:
    m = _SOURCE_RE.match(text)
    if not m:
        raise Refused(f"cannot read source {text!r}; expected RUN:COLLECTION or RUN:COLLECTION[KEY=VALUE,...]")
    errors_before = len(page.result.errors)
    found = page.lookup(index, m.group("ref"))
    if found is None:
        if len(page.result.errors) == errors_before:  # lookup noted a set that cannot be read
            raise _Unknowable
        raise Refused(f"source {text!r} names no run")
    ev, run = found
    if run is None:
        raise Refused(f"source {text!r} names a set; name one of its runs")
    try:
        filters = parse_query(f"#{m.group('collection')}[{m.group('filters') or ''}]").filters or ()
    except QueryError as exc:
        raise Refused(f"source {text!r}: {exc}") from None
    return _Source(ev, run, m.group("collection"), filters)


def _check_template(cell: str, display: Display) -> None:
    if "{" not in cell:
        if not re.fullmatch(r"[A-Za-z_]\w*", cell):
            raise Refused(f"cell={cell!r} is neither a field nor a template such as \"{{a}} / {{b}}\"")
        return
    typed = _FIELD_RE.sub("", cell)
    if any(c.isdigit() for c in typed):
        raise Refused(f"cell template {cell!r} types a figure; every figure in a cell comes from a field")
    for m in _FIELD_RE.finditer(cell):  # a unit typed after a field must be the field's
        problem = unit_problem(display.unit(m.group("field")), cell[m.end():].replace("[", "").replace("]", ""))
        if problem:
            raise Refused(f"cell template {cell!r}, after {{{m.group('field')}}}: {problem}")


def _axis(option: str, sources: list[_Source]) -> tuple[str, list[str]]:
    """(key, its values): as listed after ':' (separated by '|'), else in order of appearance."""
    key, sep, listed = option.partition(":")
    found = _axis_values(key, sources)
    if not sep:
        return key, found
    values = [v.strip() for v in listed.split("|") if v.strip()]
    if not values:
        raise Refused(f"{option!r} lists no values")
    unknown = [v for v in values if v not in found and v not in _set_values(key, sources)]
    if unknown:  # a label is the evidence's value: a listed one no record has would be the page's words
        raise Refused(f"{option!r} lists {unknown[0]!r}, which no record of the sources' sets has as its {key}; "
                      f"the sources have: {', '.join(found)}")
    return key, values


def _set_values(key: str, sources: list[_Source]) -> set[str]:
    """Every value of `key` in the records of any run of the sources' sets (a kernel another run
    launched, which a source's run did not: its cells say `not run`)."""
    values: set[str] = set()
    for s in sources:
        for run in s.ev.groups:
            try:
                records = select_records(s.ev, run, s.collection, ())
            except (QueryError, LessonError):
                continue
            values.update(show(r[key]) for r in records if key in r)
    return values


def _axis_values(key: str, sources: list[_Source]) -> list[str]:
    """Every value of `key` the sources' records have, in order of appearance."""
    if key == RUN:
        return list(dict.fromkeys(s.run for s in sources))
    if key == SESSION:
        if len({s.ev.name for s in sources}) > 1:
            raise Refused("rows or columns of sessions draw from one set: the sessions of two sets are "
                          "separate recordings, whatever their ids")
        return list(sources[0].ev.sessions)
    values: dict[str, None] = {}
    for s in sources:
        for record in _records(s):
            if key in record:
                values.setdefault(show(record[key]), None)
    if not values:
        raise Refused(f"no record of the sources has a field {key!r}")
    return list(values)


def _label(display: Display, sources: list[_Source], key: str, value: str) -> str:
    """A row's or column's label: a session's id and start time ('s3, 2026-12-07 06:30 UTC'), else
    the display's label."""
    if key != SESSION:
        return display.label(key, value)
    started = sources[0].ev.sessions[value].started or ""
    when = f"{started[:10]} {started[11:16]} UTC" if len(started) >= 16 else started
    return f"{value}, {when}" if when else value


def _records(source: _Source) -> list[dict]:
    """The records of a source's first recording (for the order of rows and columns)."""
    try:
        return select_records(source.ev, source.run, source.collection, source.filters)
    except (QueryError, LessonError) as exc:
        raise Refused(str(exc)) from None


def _cell(page: PageState, sources: list[_Source], chosen: dict[str, str], cell: str, where: str,
          sig: int | None = None) -> list[tuple[str, bool]] | None:
    """The cell's text as pieces, each with whether the evidence gave it (a field's value) or the
    template's words did; NOT_RUN when no source has a record for it and a run never launched the
    kernel it selects; None when no source has a record for it otherwise."""
    not_run = False
    for source in sources:
        if chosen.get(RUN, source.run) != source.run:
            continue
        if SESSION in chosen:  # that session's recordings alone
            source = replace(source, ev=source.ev.view(frozenset({chosen[SESSION]})))
        filters = dict(source.filters) | {k: v for k, v in chosen.items() if k not in (RUN, SESSION)}
        selection = ",".join(f"{k}={v}" for k, v in filters.items())
        try:
            counts = _sample(source, f"#{source.collection}[{selection}]", where)
        except NotLaunched:
            _never_launched(source, filters[KERNEL], where)
            not_run = True
            continue
        if counts is None:
            continue
        numbers = {int(f.text) for f in counts.values}
        if numbers == {0}:
            continue
        if 0 in numbers:
            raise Refused(f"cell {where} selects records in some recordings of {source.run} and none in "
                           "others; its rows and columns must select the same records in every recording")
        return _pieces(source, selection, cell, where, sig)
    return [(NOT_RUN, True)] if not_run else None


def _never_launched(source: _Source, kernel: str, where: str) -> None:
    """Refused unless no recording of the source's run launched `kernel` (a cell of a kernel some
    recordings ran and others did not)."""
    if any(kernel in launched(source.ev.transcript(n)) for n in source.ev.recordings(source.run)):
        raise Refused(f"cell {where}: some recordings of {source.run} launched {kernel} and others did "
                      "not; its rows and columns must select the same records in every recording") from None


def _pieces(source: _Source, selection: str, cell: str, where: str, sig: int | None) -> list[tuple[str, bool]]:
    """The cell (a field, or a template of fields) filled from the records `selection` picks, as pieces
    (text, whether the evidence gave it), numbers grouped."""
    fields = [cell] if "{" not in cell else [m.group("field") for m in _FIELD_RE.finditer(cell)]
    values = {f: _value(source, f"{source.collection}[{selection}].{f}", where, sig) for f in fields}
    pieces = [(values[cell], True)] if "{" not in cell else _fill(cell, values)
    return [(grouped(text) if value else text, value) for text, value in pieces]


def _fill(template: str, values: dict[str, str]) -> list[tuple[str, bool]]:
    """The template with its fields' values, as pieces (text, whether a value); a bracketed part whose
    field is none is left out."""
    def part(m: re.Match[str]) -> str:
        none = any(values[f.group("field")] == "-" for f in _FIELD_RE.finditer(m.group("part")))
        return "" if none else m.group("part")
    template = _OPTIONAL_RE.sub(part, template)
    pieces, pos = [], 0
    for m in _FIELD_RE.finditer(template):
        pieces += [(template[pos:m.start()], False)] if m.start() > pos else []
        pieces.append((values[m.group("field")], True))
        pos = m.end()
    return pieces + ([(template[pos:], False)] if pos < len(template) else [])


def _sample(source: _Source, query: str, where: str) -> Sample | None:
    try:
        return resolve(source.ev, source.run, query)
    except NotLaunched:
        raise
    except QueryError as exc:
        if "matches no record" in str(exc):
            return None  # a row or column value another source has
        raise Refused(f"cell {where}: {exc}") from None
    except LessonError as exc:
        raise Refused(f"cell {where} cannot be read: {exc}") from None


def _value(source: _Source, query: str, where: str, sig: int | None = None) -> str:
    """One value for every recording: the value they share (a fraction rounded to `sig` significant
    digits, written ~V), else the range accept would write."""
    sample = _sample(source, query, where)
    if sample is None:  # pragma: no cover - the count selected records
        return "-"
    return figure(sample, f"cell {where}", sig)


def figure(sample: Sample, where: str, sig: int | None = None) -> str:
    """The one text that states every value of `sample` (as a table cell shows it, before grouping);
    Refused, naming `where`, when no one value holds for all."""
    distinct = list(dict.fromkeys(f.text for f in sample.values))
    if sig is not None:
        rounded = {_rounded(f.text, sig) for f in sample.values}
        if len(rounded) == 1 and None not in rounded:
            return rounded.pop()
    if len(distinct) == 1 and not (sample.timing and number(distinct[0]) is not None):
        return distinct[0]
    numbers = [number(t) for t in distinct]
    if len(distinct) > 1 and None not in numbers:  # the recordings' own extremes: regenerated with them
        return _range(distinct, numbers, sig)
    fix = accepted_value(ClaimValue(distinct[0], "exact"), sample)
    if fix is None and len(sample.values) == sample.recordings:  # one text a recording: say how many say each
        counts = {t: sum(f.text == t for f in sample.values) for t in distinct}
        return "; ".join(f"{t} ({n} of {sample.recordings} recordings)"
                         for t, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    if fix is None:
        shown = ", ".join(repr(t) for t in distinct[:4])
        raise Refused(f"{where} varies across {sample.where()}: {shown}; no one value holds for all")
    return _ROUND_BIG_RE.sub(_short, fix)



def _range(distinct: list[str], numbers: list, sig: int | None) -> str:
    """The range from the smallest to the largest of the recordings' numbers (`distinct`, as written),
    rounded outwards so that it still holds every value: to `sig` significant digits, and an end no one
    could read (a float's every digit) to DEFAULT_SIG without it."""
    low, high = distinct[numbers.index(min(numbers))], distinct[numbers.index(max(numbers))]
    places = sig if sig is not None else DEFAULT_SIG if _unreadable(low) or _unreadable(high) else None
    if places is not None:
        low, high = _outward(min(numbers), places, ROUND_FLOOR), _outward(max(numbers), places, ROUND_CEILING)
    return _ROUND_BIG_RE.sub(_short, f"{low}\u2013{high}")


def _rounded(text: str, sig: int) -> str | None:
    """A number that is not whole, as a rounded claim with `sig` significant digits ('~0.00018'),
    its last digit kept ('~1.0000' for 0.99996); None for a whole number or a text."""
    value = number(text)
    if value is None or value == value.to_integral_value():
        return None
    place = Decimal(1).scaleb(value.adjusted() - sig + 1)
    return "~" + format(value.quantize(place, rounding=ROUND_HALF_UP), "f")


def _unreadable(text: str) -> bool:
    """Whether a recorded fraction is written with more significant digits than DEFAULT_SIG + 2."""
    return "." in text and len(text.replace("-", "").replace(".", "").lstrip("0")) > DEFAULT_SIG + 2


def _outward(value: Decimal, sig: int, rounding: str) -> str:
    """`value` rounded to `sig` significant digits in the direction `rounding` (a range's low end
    down, its high end up): 4607.8 at two, down, is '4600'; 0.002992 at two, up, '0.0030'."""
    if value == 0:
        return "0"
    place = Decimal(1).scaleb(value.adjusted() - sig + 1)
    return format(value.quantize(place, rounding=rounding), "f")


def _short(m: re.Match[str]) -> str:
    """'30000000000' as '3e10', '2500000' as '2.5e6'."""
    lead = m.group("lead").rstrip("0")
    exponent = len(m.group("lead")) + len(m.group("zeros")) - 1
    return f"{lead[0]}{'.' + lead[1:] if lead[1:] else ''}e{exponent}"


def _numeric(text: str) -> bool:
    inner = strip(re.sub(r"<[^>]*>", "", text))
    return bool(re.fullmatch(r"[~\d.,e+\-\u2013 /]+", inner)) and any(c.isdigit() for c in inner)


def _escape(text: str) -> str:
    return text.replace("|", "\\|")
