"""Figures generated from the evidence: `{{ value QUERY [within LOW–HIGH] [sig=N] }}`.

QUERY is what a claim names after its `@`: `RUN:QUERY`, `SET/RUN:QUERY`, or a ratio
`RUN:QUERY / RUN:QUERY` (paired by repeat, lessonkit.pages.crossclaims.ratio). The page shows
the figure a table cell would (lessonkit.pages.tables.figure): the value every recording gives,
else the range `lessonkit accept` would write; with `sig=N`, a fraction every recording rounds
alike to N significant digits is shown as ~V. Nothing is typed, so nothing breaks when a
refresh moves the figure and accept has nothing to rewrite; the figure is marked as produced.

`within LOW–HIGH` is what the words around the figure lean on ("thousands of launches": within
1000–20000; "times fewer": within 1–1000000): it is not shown, and every recording's value must
lie in it, or the page fails naming the session, the recording and the value. Its width is the
words' and not the recordings', so the looseness rule for a typed range does not apply to it.
"""

from __future__ import annotations

import html
import re

from lessonkit.errors import LessonError
from lessonkit.pages.claimcheck import PageState
from lessonkit.pages.claims import Sample
from lessonkit.pages.crossclaims import compound, ratio
from lessonkit.pages.query import QueryError, parse_query, resolve
from lessonkit.pages.tables import Refused, figure, grouped, sig_digits
from lessonkit.pages.units import DIED, Transform, generated

WORD = "value"


def is_value(body: str) -> bool:
    """Whether a `{{ … }}` body is a generated figure (`value …`, no claim's ` @ `)."""
    words = body.split(None, 1)
    return bool(words) and words[0] == WORD and not re.search(r"\s@\s", body)


def render_value(page: PageState, index: int, body: str) -> tuple[str, str | None] | None:
    """(the figure, its unit for the record of its produced text: "" for none, None when not known), or
    None with the error recorded."""
    text = " ".join(body.split(None, 1)[1].split()) if len(body.split()) > 1 else ""
    try:
        return _render(page, index, text)
    except Refused as exc:
        page.error(index, f"value {text!r}: {exc}")
        return None
    except _Recorded:
        return None


class _Recorded(Exception):
    """page.lookup already recorded the error (or a skip for an unreadable set)."""


def _render(page: PageState, index: int, text: str) -> tuple[str, str | None]:
    asked = generated(text)
    sig = sig_digits(asked.sig)
    text, derive, within = asked.query, asked.derive, asked.within
    if not text:
        raise Refused("name what to show: {{ value RUN:QUERY [sig=N] }} or {{ value RUN:QUERY / RUN:QUERY }}")
    form = compound(text)
    if form is not None and form.sets is not None:
        raise Refused("a comparison of sets states a difference or a sameness; claim it with VALUE @ …, "
                      "or show each set's figure with its own value")
    operands = form.operands if form is not None else (text,)
    resolved = [_operand(page, index, o, text) for o in operands]
    unit, known = None, True  # a ratio's unit: none
    try:
        if len(resolved) == 1:
            ev, group, query = resolved[0]
            sample: Sample = resolve(ev, group, query)
            q = parse_query(query)
            unit = None if q.count else page.display(ev).unit(q.field or q.name)
            known = unit is not None or q.count  # a count's: none; a field that names none: any
        else:
            (ev, g1, q1), (ev2, g2, q2) = resolved
            if ev is not ev2:
                raise Refused(f"a ratio divides two runs of one set (recorded together), not {ev.name!r} by {ev2.name!r}")
            sample = ratio(ev, g1, q1, g2, q2)
    except QueryError as exc:
        raise Refused(str(exc)) from None
    except LessonError as exc:
        raise Refused(f"cannot be read: {exc}") from None
    if derive.ops:
        applied = derive.apply(sample)
        if isinstance(applied, str):
            raise Refused(applied)
        sample = applied
    if within is not None:
        _bound(sample, within)
    shown = html.escape(grouped(figure(sample, "the figure", sig)), quote=False)  # a transcript's text is data
    return shown, (unit or "") if known else None


def _bound(sample: Sample, within: Transform) -> None:
    """Refused, naming the first value outside it (its session and recording), unless every value
    of `sample` lies in the range the words around the figure lean on."""
    low, high = within.within
    judged = within.apply(sample)
    if isinstance(judged, str):
        raise Refused(judged)
    outside = [(f, j) for f, j in zip(sample.values, judged.values) if j.text == DIED]
    if outside:
        found = outside[0][0]
        at = sample.at(found)
        raise Refused(f"the words around it lean on every value lying from {low} to {high}; "
                      f"{sample.where()} give {len(outside)} outside it, first {found.text}"
                      f"{f' ({at})' if at else ''}")


def _operand(page: PageState, index: int, text: str, whole: str):
    ref, sep, query = (p.strip() for p in text.partition(":"))
    if not sep or not ref or not query:
        raise Refused(f"{text!r} is not RUN:QUERY")
    found = page.lookup(index, ref, f"value {whole}")
    if found is None:
        raise _Recorded
    ev, group = found
    if group is None:
        raise Refused(f"{ref!r} names a set; name one of its runs")
    return ev, group, query
