"""Queries that name one value in the evidence: `hazards_displayed`, `rows[threads=32,kernel=K].mismatches`, `#reports[severity=Error]`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lessonkit.evidence import EvidenceSet

_QUERY_RE = re.compile(
    r"""^(?P<count>\#)?(?P<name>[A-Za-z_][\w]*)
        (?:\[(?P<filters>[^\]]*)\])?
        (?:\.(?P<field>[A-Za-z_]\w*))?$""",
    re.VERBOSE)


class QueryError(Exception):
    """A query that does not name exactly one value; the message says why."""


@dataclass(frozen=True)
class Resolved:
    """A value found in the evidence, shown as a page would write it, and where it came from."""

    text: str
    path: str
    line: int | None


def show(value: Any) -> str:
    """How a value is written on a page: '-' for none, yes/no for booleans."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _known(names: Any) -> str:
    return ", ".join(sorted(names)) or "none"


def resolve(ev: EvidenceSet, transcript: str | None, query: str) -> Resolved:
    """The value `query` names in transcript `transcript` of `ev` (or in the set itself when None)."""
    m = _QUERY_RE.match(query.strip())
    if not m:
        raise QueryError(f"cannot read query {query!r}; expected NAME, COLLECTION[KEY=VALUE,...].FIELD "
                         "or #COLLECTION[KEY=VALUE,...]")
    name, filters, fld = m.group("name"), m.group("filters"), m.group("field")
    manifest = f"{ev.shown}/manifest.json"
    if transcript is None:
        if m.group("count") or filters is not None or fld:
            raise QueryError(f"set {ev.name!r} has no collections; name a transcript as {ev.name}/NAME")
        values = {"arch": ev.arch, "build": ev.build, **ev.provenance}
        if name not in values:
            raise QueryError(f"set {ev.name!r} records no {name!r}; it records: {_known(values)}")
        return Resolved(show(values[name]), manifest, None)

    parsed = ev.transcript(transcript)
    path = ev.transcript_path(transcript)
    if filters is None and not m.group("count") and fld is None:
        entry = ev.entries[transcript].fields()
        if name in parsed.scalars:
            line = next((s.at for s in parsed.summaries if name == "summary" and s.text == parsed.scalars[name]), None)
            return Resolved(show(parsed.scalars[name]), path, line)
        if name in entry:
            return Resolved(show(entry[name]), manifest, None)
        if name in ev.provenance:
            return Resolved(show(ev.provenance[name]), manifest, None)
        known = set(parsed.scalars) | set(entry) | set(ev.provenance) | {f"#{c}" for c in parsed.collections()}
        raise QueryError(f"{path} has no value {name!r}; it has: {_known(known)}")

    collections = parsed.collections()
    if name not in collections:
        raise QueryError(f"{path} has no collection {name!r}; it has: {_known(collections)}")
    wanted = _parse_filters(filters or "")
    items = [it for it in collections[name] if all(show(it.get(k)) == v for k, v in wanted)]
    for key, _ in wanted:
        if collections[name] and key not in collections[name][0]:
            raise QueryError(f"filter key {key!r} is not a field; fields: "
                             f"{_known(k for k in collections[name][0] if not k.startswith('_'))}")
    if m.group("count"):
        if fld:
            raise QueryError(f"a count (#{name}) takes no field; drop '.{fld}'")
        return Resolved(str(len(items)), path, None)
    if fld is None:
        raise QueryError(f"name the field to quote: {name}[...].FIELD")
    if len(items) != 1:
        raise QueryError(f"{name}[{filters or ''}] selects {len(items)} records in {path}, not exactly one; "
                         "add filters that single one out")
    item = items[0]
    if fld not in item:
        raise QueryError(f"records of {name!r} in {path} have no field {fld!r}; they have: "
                         f"{_known(k for k in item if not k.startswith('_'))}")
    return Resolved(show(item[fld]), path, item.get("_line"))


def _parse_filters(filters: str) -> list[tuple[str, str]]:
    """'k=v, k2=v2' as [(k, v), (k2, v2)]."""
    pairs = []
    for part in filter(None, (p.strip() for p in filters.split(","))):
        key, sep, want = part.partition("=")
        if not sep:
            raise QueryError(f"filter {part!r} is not KEY=VALUE")
        pairs.append((key.strip(), want.strip()))
    return pairs
