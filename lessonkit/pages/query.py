"""Queries that name values in the evidence: `hazards_displayed`, `rows[threads=32,kernel=K].mismatches`,
`#reports[severity=Error]`, `cells[threads=*].wall_s`.

A query on a run resolves over every recording of it. Filters are validated against an
index built once per parsed transcript: an unknown key, or a value that no record of the
evidence set has under that key, is an error with a suggestion, so a misspelt filter can
never count zero quietly. Nor can a kernel the run never launched: a count filtered on
`kernel=K` that is zero in a recording that names K nowhere (`launched`) is refused
(`NotLaunched`), as a tool that never saw the kernel found nothing in it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.evidence.display import TIME_UNITS, unit_by_name
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.evidence.transcript import Transcript
from lessonkit.pages.claims import Found, Sample
from lessonkit.pages.verdicts import run_verdict, verdict_records

WILDCARD = "*"
VERDICTS = "verdicts"  # what a run said about each kernel (lessonkit.pages.verdicts)
KERNEL = "kernel"  # the key whose values name the kernels a run launched

_QUERY_RE = re.compile(
    r"""^(?P<count>\#)?(?P<name>[A-Za-z_][\w]*)
        (?:\[(?P<filters>[^\]]*)\])?
        (?:\.(?P<field>[A-Za-z_]\w*))?$""",
    re.VERBOSE)


class QueryError(Exception):
    """A query that does not name what it should; the message says why."""


class NotLaunched(QueryError):
    """A count of a kernel's records in a recording of a run that never launched the kernel."""


@dataclass(frozen=True)
class Query:
    """A parsed query: `#name[filters]`, `name[filters].field` or a plain value name."""

    text: str
    count: bool
    name: str
    filters: tuple[tuple[str, str], ...] | None
    field: str | None

    @property
    def is_value(self) -> bool:
        """A plain value name, no collection."""
        return not self.count and self.filters is None and self.field is None

    @property
    def timing(self) -> bool:
        """Whether its name says a time or a rate per second (`wall_s`, `launch_us`, `instances_per_s`:
        lessonkit.evidence.display.unit_by_name)."""
        return not self.count and unit_by_name(self.field or self.name) in TIME_UNITS

    @cached_property
    def wildcard(self) -> bool:
        """Whether a `KEY=*` filter lets it select several records."""
        return any(v == WILDCARD for _, v in self.filters or ())

    def selection(self) -> str:
        """`name[k=v,...]` as messages show it."""
        return f"{self.name}[{','.join(f'{k}={v}' for k, v in self.filters or ())}]"


def show(value: Any) -> str:
    """How a value is written on a page: '-' for none, yes/no for booleans."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _known(names: Any) -> str:
    return ", ".join(sorted(names)) or "none"


_ABSENT = object()


def _scalar(value: Any) -> bool:
    """Whether a provenance value is one a page can quote (not a list or an object)."""
    return value is None or isinstance(value, (str, int, float, bool))


@lru_cache(maxsize=4096)
def parse_query(text: str) -> Query:
    """Read a query (parsed once per distinct text); QueryError when it cannot be read."""
    m = _QUERY_RE.match(text.strip())
    if not m:
        raise QueryError(f"cannot read query {text!r}; expected NAME, COLLECTION[KEY=VALUE,...].FIELD "
                         "or #COLLECTION[KEY=VALUE,...]")
    name, raw, fld = m.group("name"), m.group("filters"), m.group("field")
    filters = None if raw is None else _parse_filters(raw)
    if name == "verdict" and filters is not None and fld is None and not m.group("count"):
        name, fld = VERDICTS, "verdict"  # verdict[kernel=K] is short for verdicts[kernel=K].verdict
    if m.group("count") and fld:
        raise QueryError(f"a count (#{name}) takes no field; drop '.{fld}'")
    if not m.group("count") and filters is not None and fld is None:
        raise QueryError(f"name the field to quote: {name}[...].FIELD")
    return Query(text.strip(), bool(m.group("count")), name, filters, fld)


def _parse_filters(filters: str) -> tuple[tuple[str, str], ...]:
    """'k=v, k2=v2' as ((k, v), (k2, v2))."""
    pairs: list[tuple[str, str]] = []
    for part in filter(None, (p.strip() for p in filters.split(","))):
        key, sep, want = (s.strip() for s in part.partition("="))
        if not sep or not key or not want:
            raise QueryError(f"filter {part!r} is not KEY=VALUE (KEY=* selects every record with KEY)")
        if any(k == key for k, _ in pairs):
            raise QueryError(f"filter key {key!r} appears twice")
        pairs.append((key, want))
    return tuple(pairs)


# -- the index of a collection ---------------------------------------------------------------

@dataclass(frozen=True)
class _Index:
    """A collection's records, its keys and, per key, the records holding each shown value."""

    records: tuple[dict[str, Any], ...]
    keys: frozenset[str]
    by_value: dict[str, dict[str, frozenset[int]]]
    chosen: dict[tuple[tuple[str, str], ...], tuple[int, ...]] = field(  # select's answers
        default_factory=dict, compare=False)

    def select(self, filters: tuple[tuple[str, str], ...]) -> tuple[int, ...]:
        """Positions of the records every filter admits (KEY=* admits records that have KEY)."""
        known = self.chosen.get(filters)
        if known is None:
            known = self.chosen[filters] = tuple(self._select(filters))
        return known

    def _select(self, filters: tuple[tuple[str, str], ...]) -> list[int]:
        chosen: set[int] | None = None
        for key, want in filters:
            values = self.by_value.get(key, {})
            hits = set().union(*values.values()) if want == WILDCARD else set(values.get(want, ()))
            chosen = hits if chosen is None else chosen & hits
        return sorted(range(len(self.records)) if chosen is None else chosen)



def _how(ev: EvidenceSet, name: str) -> tuple[bool, bool, int | None]:
    """(stopped by its timeout, run under compute-sanitizer, exit code) of recording `name`: what its
    verdicts read besides its transcript."""
    entry = ev.entries[name]
    return entry.timed_out, "compute-sanitizer" in entry.command, entry.exit_code


def _index(parsed: Transcript, name: str, how: tuple[bool, bool, int | None] = (False, False, 0)) -> _Index:
    """The index of collection `name` of `parsed`, built once and kept with the transcript (a
    course's check reads tens of thousands: none is built twice)."""
    key = ("index", name, how if name == VERDICTS else (False, False, 0))
    hit = parsed.derived.get(key)
    if hit is not None:
        return hit
    records = verdict_records(parsed, *how) if name == VERDICTS else parsed.collections()[name]
    by_value: dict[str, dict[str, set[int]]] = {}
    for i, record in enumerate(records):
        for k, v in record.items():
            if not k.startswith("_"):
                by_value.setdefault(k, {}).setdefault(show(v), set()).add(i)
    index = _Index(tuple(records), frozenset(by_value),
                   {k: {v: frozenset(s) for v, s in vs.items()} for k, vs in by_value.items()})
    parsed.derived[key] = index
    return index


# -- resolving -------------------------------------------------------------------------------

def backing(ev: EvidenceSet, group: str | None, timing: bool) -> EvidenceSet:
    """The recordings a claim on `group` rests on: every recording of every kept session, less those
    of a session recorded with the GPU shared where the figure is a timing (then none of that session)
    or comes from an exclusive run (whose GPU was meant to be its own). QueryError when none is left."""
    view = ev.view(None, "nothing" if timing else "shared runs")
    if group is not None and group in ev.groups and group not in view.groups:
        raise QueryError(ev.left_out(group, view))
    return view


def resolve(ev: EvidenceSet, group: str | None, query: str) -> Sample:
    """Every value `query` names in every recording of every session of `group` (the set's provenance
    when None), less what a shared session may not back (`backing`).

    QueryError when the query names nothing; LessonError when a recording cannot be read.
    The answer is worked out once per run and query of a loaded set (a page often quotes the
    same value twice), as is a QueryError; a LessonError is not kept.
    """
    try:
        ev = backing(ev, group, parse_query(query).timing)
    except QueryError as exc:
        raise type(exc)(str(exc)) from None
    key = ("resolve", group, query)
    known = ev.memo.get(key)
    if known is None:
        try:
            known = ev.memo[key] = _resolve(ev, group, query)
        except QueryError as exc:
            known = ev.memo[key] = exc
    if isinstance(known, QueryError):
        raise type(known)(str(known))
    return known


def keyed(ev: EvidenceSet, group: str, query: str) -> list[tuple[tuple[tuple[tuple[str, str], ...], str], ...]]:
    """Per recording of `group`, the values `query` names, each with its record's values of the
    query's `KEY=*` keys, sorted: two sets give the same table when these are equal, whatever
    order the records were printed in. Raises what `resolve` raises."""
    sample = resolve(ev, group, query)
    q = parse_query(query)
    if not q.wildcard:  # one value per recording
        return [(((), f.text),) for f in sample.values]
    wild = [k for k, v in q.filters or () if v == WILDCARD]
    tables = []
    ev = backing(ev, group, q.timing)
    for name in ev.recordings(group):
        index = _index(ev.transcript(name), q.name)
        rows = [(tuple((k, show(index.records[i].get(k))) for k in wild), show(index.records[i][q.field]))
                for i in index.select(q.filters or ())]
        tables.append(tuple(sorted(rows)))
    return tables


def _resolve(ev: EvidenceSet, group: str | None, query: str) -> Sample:
    q = parse_query(query)
    if group is None:
        return _set_value(ev, q)
    names = ev.recordings(group)
    sessions = len({ev.entries[n].session for n in names})
    if q.is_value:
        parsed = [ev.transcript(n) for n in names]  # every recording read before any value is judged
        found = tuple(_value(ev, n, p, q.name) for n, p in zip(names, parsed))
        return Sample(found, group, len(names), q.timing, sessions=sessions)
    paths, indexes = _group_indexes(ev, group, q.name)
    _checked_filters(ev, group, q, indexes)
    found_list = _records_found(ev, names, paths, indexes, q)
    if not found_list:
        where = ev.transcript_path(names[0]) if len(names) == 1 else f"{len(names)} recordings of {group}"
        raise QueryError(f"{q.selection()} selects no record in {where}")
    return Sample(tuple(found_list), group, len(names), q.timing, sessions=sessions)


def _set_value(ev: EvidenceSet, q: Query) -> Sample:
    """A value of the set itself: its build, what every session shares, how many sessions it keeps, or a
    provenance value that each session records (one value a session)."""
    manifest = f"{ev.shown}/manifest.json"
    if not q.is_value:
        raise QueryError(f"set {ev.name!r} has no collections; name a run as {ev.name}/NAME")
    values = {"arch": ev.arch, "build": ev.build, "sessions": len(ev.sessions), **ev.provenance}
    if q.name in values:
        return Sample((Found(show(values[q.name]), manifest),), ev.name, 1, q.timing)
    per_session = _per_session(ev, q, values)
    found = tuple(Found(show(v), f"{manifest} ({s.label()})", session_id=s.id) for s, v in per_session)
    return Sample(found, ev.name, len(found), q.timing, sessions=len(found), per_session=True)


def _per_session(ev: EvidenceSet, q: Query, values: dict[str, Any]) -> list[tuple[Any, Any]]:
    """(session, value) of a provenance value every session records, one value each; QueryError otherwise."""
    per_session = [(s, s.provenance.get(q.name, _ABSENT)) for s in ev.sessions.values()]
    if all(v is _ABSENT for _, v in per_session):
        known = set(values) | {k for s in ev.sessions.values() for k in s.provenance if _scalar(s.provenance[k])}
        raise QueryError(f"set {ev.name!r} records no {q.name!r}; it records: {_known(known)}")
    missing = [s.id for s, v in per_session if v is _ABSENT]
    if missing:
        raise QueryError(f"{q.name!r} is recorded in some sessions of set {ev.name!r} and not in "
                         f"{', '.join(missing)}; a claim on it holds for every session")
    if not all(_scalar(v) for _, v in per_session):
        raise QueryError(f"{q.name!r} of set {ev.name!r} is not one value a session; a page quotes its "
                         "values, not a structure")
    return per_session


def _launched_or_refused(ev: EvidenceSet, name: str, path: str, q: Query) -> None:
    """NotLaunched when a count of no records names a kernel the recording never names."""
    kernel = next((v for k, v in q.filters or () if k == KERNEL and v != WILDCARD), None)
    if kernel is not None and kernel not in (named := launched(ev.transcript(name))):
        raise NotLaunched(f"{q.selection()} counts the records of kernel {kernel!r}, which {path} never "
                          f"names: the run did not launch it there (it names {_known(named)}), so a "
                          f"count of 0 says nothing about {kernel}; cite a run that launched it")


def _records_found(ev: EvidenceSet, names: list[str], paths: list[str], indexes: list[Any], q: Query) -> list[Found]:
    """What query `q` finds in each recording's records (one loop, not a call a recording: a cold check of
    a large course resolves hundreds of thousands): their count, or the field of each record it selects."""
    found: list[Found] = []
    filters = q.filters or ()
    for name, path, index in zip(names, paths, indexes):
        note, sid = session_note(ev, name), ev.session_of(name).id
        chosen = index.select(filters)
        if q.count:
            if not chosen:
                _launched_or_refused(ev, name, path, q)
            found.append(Found(str(len(chosen)), path, session=note, session_id=sid))
            continue
        if not q.wildcard and len(chosen) != 1:
            raise QueryError(f"{q.selection()} selects {len(chosen)} records in {path}, not exactly one; "
                             "add filters that single one out, or write KEY=* to claim every record it selects")
        for i in chosen:
            record = index.records[i]
            if q.field not in record:
                raise QueryError(f"records of {q.name!r} in {path} have no field {q.field!r}; they have: "
                                 f"{_known(k for k in record if not k.startswith('_'))}")
            found.append(Found(show(record[q.field]), path, record.get("_line"), note, sid))
    return found


def launched(parsed: Transcript) -> frozenset[str]:
    """The kernels a recording names in any of its records (its table, a tool's findings, a JSON
    list): those its run launched, as far as the recording shows. Worked out once per transcript."""
    known = parsed.derived.get("launched")
    if known is None:
        names = {v for collection in parsed.collections()
                 for v in _index(parsed, collection).by_value.get(KERNEL, ())} - {show(None)}
        known = parsed.derived["launched"] = frozenset(names)
    return known


def select_records(ev: EvidenceSet, group: str, collection: str,
                   filters: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """The records the filters select in the first recording of `group` (filters checked as a claim's)."""
    selection = ",".join(f"{k}={v}" for k, v in filters)
    resolve(ev, group, f"#{collection}[{selection}]")
    name = ev.recordings(group)[0]
    index = _index(ev.transcript(name), collection, _how(ev, name))
    return [index.records[i] for i in index.select(filters)]


def session_note(ev: EvidenceSet, name: str) -> str:
    """'session s2, 2026-12-03T21:04:11Z': the session of recording `name`, as messages name it."""
    session = ev.session_of(name)
    return f"session {session.id}" + (f", {session.started}" if session.started else "")


def _value(ev: EvidenceSet, name: str, parsed: Transcript, wanted: str) -> Found:
    """A plain value of one recording: a transcript scalar, a manifest field, or provenance."""
    found = _value_of(ev, name, parsed, wanted)
    return Found(found.text, found.path, found.line, session_note(ev, name), ev.session_of(name).id)


def _value_of(ev: EvidenceSet, name: str, parsed: Transcript, wanted: str) -> Found:
    path = ev.transcript_path(name)
    entry = ev.entries[name].fields()
    if wanted == "verdict" and wanted not in parsed.scalars:
        return Found(run_verdict(_index(parsed, VERDICTS, _how(ev, name)).records), path)
    if wanted in parsed.scalars:
        line = next((s.at for s in parsed.summaries if wanted == "summary" and s.text == parsed.scalars[wanted]), None)
        return Found(show(parsed.scalars[wanted]), path, line)
    manifest = f"{ev.shown}/manifest.json"
    if wanted in entry:
        return Found(show(entry[wanted]), manifest)
    if wanted in ev.provenance:
        return Found(show(ev.provenance[wanted]), manifest)
    session = ev.session_of(name)
    if wanted in session.provenance and _scalar(session.provenance[wanted]):
        return Found(show(session.provenance[wanted]), f"{manifest} ({session.label()})")
    known = set(parsed.scalars) | set(entry) | set(ev.provenance) | {f"#{c}" for c in parsed.collections()}
    known |= {k for k, v in session.provenance.items() if _scalar(v)}
    near = difflib.get_close_matches(wanted, sorted(known), n=1)
    if near:
        raise QueryError(f"{path} has no value {wanted!r}; did you mean {near[0]!r}?")
    raise QueryError(f"{path} has no value {wanted!r}; it has: {_known(known)}")


def _group_indexes(ev: EvidenceSet, group: str, collection: str) -> tuple[list[str], list[_Index]]:
    """Each recording of `group`: its path as messages name it, and its index of `collection`;
    worked out once per run and collection of a loaded set. QueryError when a recording has
    no such collection; LessonError (not kept) when one cannot be read."""
    key = ("group", group, collection)
    known = ev.memo.get(key)
    if known is None:
        names = ev.recordings(group)
        parsed = [ev.transcript(n) for n in names]
        for n, p in zip(names, parsed):
            if collection not in p.collections() and collection != VERDICTS:
                raise QueryError(f"{ev.transcript_path(n)} has no collection {collection!r}; "
                                 f"it has: {_known(p.collections())}")
        known = ev.memo[key] = ([ev.transcript_path(n) for n in names],
                                [_index(p, collection, _how(ev, n)) for n, p in zip(names, parsed)])
    return known


def _checked_filters(ev: EvidenceSet, group: str, q: Query, indexes: list[_Index]) -> None:
    """_check_filters, once per run, collection and filters of a loaded set (claims that differ
    only in their field share the verdict; the set's recordings do not change under it)."""
    key = ("filters", group, q.name, q.filters)
    if key in ev.memo:
        if ev.memo[key] is not None:
            raise QueryError(ev.memo[key])
        return
    try:
        _check_filters(ev, group, q, indexes)
    except QueryError as exc:
        ev.memo[key] = str(exc)
        raise
    ev.memo[key] = None


def _check_filters(ev: EvidenceSet, group: str, q: Query, indexes: list[_Index]) -> None:
    """Every key is a field of the collection; every value is one some record of the set has."""
    names = ev.recordings(group)
    where = ev.transcript_path(names[0]) if len(names) == 1 else f"the {len(names)} recordings of {group}"
    keys = frozenset().union(*(ix.keys for ix in indexes))
    for key, want in q.filters or ():
        if want != WILDCARD and any(want in ix.by_value.get(key, ()) for ix in indexes):
            continue  # a value some record of the run has under `key` (so `key` is a field)
        if key not in keys and not any(ix.records for ix in indexes):
            keys = _keys_in_set(ev, q.name)  # empty here: the fields its records have in other runs
            if not keys:
                raise QueryError(f"{q.name} has no records in {where} nor in any run of the set, so filter "
                                 f"key {key!r} cannot be checked; claim the count without filters: #{q.name}")
        if key not in keys:
            near = difflib.get_close_matches(key, sorted(keys), n=1)
            hint = f"did you mean {near[0]!r}? " if near else ""
            raise QueryError(f"filter key {key!r} is not a field of {q.name} in {where}; {hint}"
                             f"its fields: {_known(keys)}")
        if want != WILDCARD:
            _check_value(ev, q, key, want, indexes, where)


def _check_value(ev: EvidenceSet, q: Query, key: str, want: str, indexes: list[_Index], where: str) -> None:
    """A filter's value is one a record of the run has under `key`, or one the set knows elsewhere
    (another run, another collection: a count of 0 is honest); else a QueryError with the nearest."""
    here = set().union(*(ix.by_value.get(key, {}) for ix in indexes))
    if want in here or _in_set(ev, key, want):
        return
    elsewhere = _values_in_set(ev, key)
    near = difflib.get_close_matches(want, sorted(here | elsewhere), n=3, cutoff=0.6)
    if near:
        hint = "did you mean " + " or ".join(repr(n) for n in near) + "?"
    else:
        hint = "its values there: " + ", ".join(repr(v) for v in sorted(here)[:8]) + (", …" if len(here) > 8 else "")
    raise QueryError(f"filter {key}={want!r} matches no record of {q.name} in {where}, nor any "
                     f"record of the set with a {key!r}; {hint}")


def _set_indexes(ev: EvidenceSet) -> Iterator[tuple[str, _Index]]:
    """(collection name, index) for every collection of every readable recording of the set,
    recording by recording (a caller that finds what it looks for early reads no further)."""
    for name in ev.entries:
        try:
            parsed = ev.transcript(name)
        except LessonError:
            continue  # reported by the integrity check and where it is cited
        for collection in parsed.collections():
            yield collection, _index(parsed, collection)
        yield VERDICTS, _index(parsed, VERDICTS, _how(ev, name))


def _in_set(ev: EvidenceSet, key: str, want: str) -> bool:
    """Whether some record of any collection of any recording of the set shows `want` under
    `key` (the recordings are read only as far as the first that does; an answer is kept)."""
    memo = ("in set", key, want)
    known = ev.memo.get(memo)
    if known is None:
        known = ev.memo[memo] = any(want in ix.by_value.get(key, ()) for _, ix in _set_indexes(ev))
    return known


def _set_fields(ev: EvidenceSet) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Over every collection of every recording of the set: per key, every shown value under it;
    per collection, the fields its records have. Worked out in one pass, once per loaded set."""
    known = ev.memo.get("fields")
    if known is None:
        values: dict[str, set[str]] = {}
        keys: dict[str, set[str]] = {}
        for collection, ix in _set_indexes(ev):
            keys.setdefault(collection, set()).update(ix.keys)
            for key, shown in ix.by_value.items():
                values.setdefault(key, set()).update(shown)
        known = ev.memo["fields"] = ({k: frozenset(v) for k, v in values.items()},
                                     {k: frozenset(v) for k, v in keys.items()})
    return known


def _values_in_set(ev: EvidenceSet, key: str) -> frozenset[str]:
    """Every shown value under `key` in any collection of any recording of the set."""
    return _set_fields(ev)[0].get(key, frozenset())


def _keys_in_set(ev: EvidenceSet, collection: str) -> frozenset[str]:
    """The fields that records of `collection` have in any recording of the set."""
    return _set_fields(ev)[1].get(collection, frozenset())
