"""Figures as the rendered-page audit reads them: in a reader's text and in the evidence.

`FIGURE_RE` finds a figure as a reader reads one; `canonical` is how two are compared;
`evidence_figures` lists every figure an evidence set holds, with where it is first found.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from lessonkit.errors import LessonError

if TYPE_CHECKING:
    from lessonkit.evidence.sets import EvidenceSet

# A figure as a reader reads it: digits not glued to a letter, digit or underscore before them
# (H200, sm_90 and fp32 are names), thousands grouped by commas, and a fraction; two points or
# more make a version (12.4.131), compared as written.
FIGURE_RE = re.compile(r"""(?<![^\W\d_])(?<![\d_])(?<![0-9][.,])
                            (?![0-9]*[xX][0-9a-fA-F])  # a hexadecimal constant (0xff) is a name of bits
                            (?P<whole>[0-9]{1,3}(?:,[0-9]{3})+(?![0-9])|[0-9]+)(?P<tail>(?:\.[0-9]+)*)
                            (?P<exp>[eE][+-]?[0-9]+(?![\w.]))?""", re.VERBOSE)

def canonical(figure: str) -> str:
    """A figure as compared: commas of thousands dropped, trailing zeros of a fraction dropped
    ('1,024' and '1024.0' are '1024'); a version (two points or more) as written."""
    text = figure.replace(",", "")
    if text.count(".") > 1:
        return text
    if "e" in text.lower():
        try:
            return format(Decimal(text).normalize(), "f")
        except InvalidOperation:
            return text
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    return format(value.normalize(), "f") if value == value.to_integral_value() or "." in text else text


def evidence_figures(ev: EvidenceSet) -> dict[str, str]:
    """Every figure in every recording of `ev` (canonical) -> where it is first found (RUN: FIELD)."""
    return {figure: places[0] for figure, places in evidence_places(ev).items()}


def evidence_places(ev: EvidenceSet) -> dict[str, list[str]]:
    """Every figure in every recording of `ev` (canonical) -> every field that holds it (RUN: FIELD),
    in the order first found."""
    known = ev.memo.get("audit-places")
    if known is not None:
        return known
    found: dict[str, list[str]] = {}
    read: set[tuple[str, str]] = set()  # (text, where) already read: recordings repeat most values

    def put(figure: str, where: str) -> None:
        places = found.setdefault(figure, [])
        if where not in places:
            places.append(where)

    def add(value: Any, where: str) -> None:
        if isinstance(value, bool) or value is None:
            return
        if isinstance(value, int):  # canonical already: its digits, without a sign
            put(str(abs(value)), where)
            return
        if isinstance(value, float):
            value = repr(value)
        if isinstance(value, str) and (value, where) not in read:
            read.add((value, where))
            for m in FIGURE_RE.finditer(value):
                put(canonical(m.group()), where)

    for group, names in sorted(ev.groups.items()):  # what the runs printed first: the likelier source
        run = f"{ev.name}/{group}"
        for name in names:
            try:
                parsed = ev.transcript(name)
            except LessonError:
                continue  # reported by the integrity check and the claims on it
            for key, value in parsed.scalars.items():
                add(value, f"{run}: {key}")
            for collection, records in parsed.collections().items():
                for record in records:
                    for key, value in record.items():
                        if not key.startswith("_"):
                            add(value, f"{run}: {collection}.{key}")
    for group, names in sorted(ev.groups.items()):
        for name in names:
            fields = ev.entries[name].fields()
            for key in ("command", "exit_code", "wall_s", "repeats"):
                add(fields[key], f"{ev.name}/{group}: {key}")
    for key, value in ev.provenance.items():
        add(value, f"{ev.name}: {key}")
    ev.memo["audit-places"] = found
    return found
