"""Claims across runs and sets: a ratio of two runs recorded together, and a comparison of two sets.

After the `@`, a claim may name:

- a ratio, `RUN:QUERY / RUN:QUERY` (a space on each side of the slash): the values of two runs
  of one set, paired by repeat number (recording rK of one with rK of the other; a run recorded
  once is paired with every recording of the other). Each pair must come from the same refresh.
  The claim holds for every pair's ratio; a ratio of timings is a timing (a range or ~V).
- a comparison, `RUN:QUERY in SET_A = SET_B` or `RUN:QUERY in SET_A vs SET_B` (the query may be
  a ratio too). With `=` the value is `same`, or one exact value, and every recording of both
  sets gives the same values (record for record: a `KEY=*` query pairs records by their KEY
  values); it fails when any differs. With `vs` the value is `VALUE_A vs VALUE_B`, each side a
  claim value checked against its own set, and the sides must not meet: no value of one set is
  a value of the other (numbers: their spans do not overlap), and the two stated values do not
  overlap either. It fails when the difference disappears. A `vs` claim may instead state only the
  direction, a word the reader sees: `fewer`, `less`, `lower`, `smaller`, `shorter` (every value of
  the first set below every value of the second) or `more`, `greater`, `higher`, `larger`, `longer`
  (above).

The page shows the author's text (`same`, `96 vs 128`). What accept may write is in `fix`:
each side's new value where the claim's form still holds, else nothing and a message saying
what the author must change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from lessonkit.errors import LessonError
from lessonkit.pages.claimcheck import PageState
from lessonkit.pages.claims import (
    ClaimValue,
    ClaimValueError,
    Found,
    Sample,
    accepted_value,
    judge,
    number,
    parse_claim_value,
    recorded_spread,
)
from lessonkit.pages.query import QueryError, backing, keyed, resolve
from lessonkit.pages.result import ClaimOutcome

if TYPE_CHECKING:
    from lessonkit.evidence.manifest import TranscriptEntry
    from lessonkit.evidence.sets import EvidenceSet

SAME = "same"
_SET = r"[a-z0-9][a-z0-9.-]*"
_COMPARE_RE = re.compile(rf"""^(?P<body>.+?)\s+in\s+(?P<a>{_SET})(?:\s*(?P<eq>=)\s*|\s+(?P<vs>vs)\s+)(?P<b>{_SET})$""",
                         re.DOTALL)
_RATIO_RE = re.compile(r"""\s/\s""")
_VS_RE = re.compile(r"""\s+vs\s+""")


@dataclass(frozen=True)
class Form:
    """A claim's reference read as a ratio and/or a comparison."""

    operands: tuple[str, ...]            # one REF:QUERY, or two for a ratio
    sets: tuple[str, str] | None = None  # the compared sets
    op: str = ""                         # "=" or "vs" for a comparison

    def shown(self) -> str:
        """The reference as messages show it."""
        body = " / ".join(self.operands)
        return f"{body} in {self.sets[0]} {self.op} {self.sets[1]}" if self.sets else body


def compound(ref_query: str) -> Form | None:
    """The ratio or comparison `ref_query` writes, or None for a plain REF:QUERY."""
    body, sets, op = ref_query, None, ""
    m = _COMPARE_RE.match(ref_query)
    if m:
        body, sets, op = m.group("body").strip(), (m.group("a"), m.group("b")), "=" if m.group("eq") else "vs"
    parts = _RATIO_RE.split(body)
    if len(parts) == 2 and all(":" in p for p in parts):
        return Form(tuple(p.strip() for p in parts), sets, op)
    return Form((body,), sets, op) if sets else None


class _Refused(Exception):
    """The claim cannot be checked; the error is recorded already."""


def check_compound(page: PageState, index: int, value: str, form: Form, start: int, end: int) -> None:
    """Check a ratio or comparison claim; records its outcome (and error) on the page like any claim."""
    line = index + 1 + page.offset
    shown = form.shown()
    used: list[str] = []

    spread: list[str] = []

    def outcome(error: LessonError | None = None, fix: str | None = None, skipped: bool = False) -> None:
        page.result.claims.append(ClaimOutcome(line, start, end, value, shown, error, fix, skipped,
                                               used[0] if used else None, tuple(used),
                                               recorded=spread[0] if spread else ""))

    def fail(message: str, fix: str | None = None) -> None:
        outcome(page.error(index, f"claim {value!r} ({shown}) {message}"), fix)

    try:
        values = _values(value, form)
    except ClaimValueError as exc:
        outcome(page.error(index, f"claim {value!r} ({shown}): {exc}"))
        return
    errors_before = len(page.result.errors)
    try:
        if form.sets is None:
            sample, _ = _sample(page, index, None, form, used, f"{value} @ {shown}")
            spread.append(recorded_spread(sample))
            verdict = judge(values[0], sample)
            if verdict.holds:
                outcome()
            else:
                fail(verdict.problem, verdict.fix)
            return
        a, table_a = _sample(page, index, form.sets[0], form, used, f"{value} @ {shown}")
        b, table_b = _sample(page, index, form.sets[1], form, used, f"{value} @ {shown}")
        spread_a, spread_b = (recorded_spread(a), recorded_spread(b)) if form.op == "vs" else ("", "")
        if spread_a or spread_b:  # a difference or a direction: each side, session by session
            spread.append(" | ".join(f"{name}: {s or (side.values[0].text if side.values else '')}"
                                     for name, s, side in ((form.sets[0], spread_a, a), (form.sets[1], spread_b, b))))
    except _Refused:
        new = page.result.errors[errors_before:]
        outcome(new[0] if new else None, skipped=not new)
        # No error of its own: a set it names cannot be read, and what it cites is not known.
        return
    except (QueryError, LessonError) as exc:
        fail(f"cannot be checked: {exc}" if isinstance(exc, LessonError) else str(exc))
        return
    if form.op == "=":
        problem, fix = _check_same(values[0], form, a, b, table_a, table_b)
    elif len(values) == 1:
        problem, fix = _check_direction(values[0].text, form, a, b)
    else:
        problem, fix = _check_differs(value, values, form, a, b)
    if problem is None:
        outcome()
    else:
        fail(problem, fix)
    return


# A direction word states which side of a `vs` comparison is the larger: `{{ fewer @ … in A vs B }}` holds
# when every value of A is below every value of B. The reader sees the word; the check holds it to the data.
BELOW = frozenset({"fewer", "less", "lower", "smaller", "shorter"})
ABOVE = frozenset({"more", "greater", "higher", "larger", "longer"})


def _values(value: str, form: Form) -> list[ClaimValue]:
    """The claim's value(s): one, or one per side for `vs`; ClaimValueError when the form does not fit."""
    if form.op == "vs" and value.strip().lower() in BELOW | ABOVE:
        return [ClaimValue(value.strip(), "exact")]
    if form.op == "vs":
        sides = _VS_RE.split(value.strip())
        if len(sides) != 2:
            raise ClaimValueError(f"a comparison 'in {form.sets[0]} vs {form.sets[1]}' states each side's value: "
                                  f"VALUE_A vs VALUE_B, e.g. 96 vs 128 or 193000\u2013198000 vs 213000\u2013217000")
        return [parse_claim_value(s) for s in sides]
    if _VS_RE.search(value.strip()):
        raise ClaimValueError("'VALUE_A vs VALUE_B' states a difference: name the sets with "
                              f"'in SET_A vs SET_B'{' (not =)' if form.op == '=' else ''}")
    if form.op == "=" and value.strip() == SAME:
        return [ClaimValue(SAME, "exact")]
    parsed = parse_claim_value(value)
    if form.op == "=" and parsed.kind != "exact":
        raise ClaimValueError("a sameness claim states one exact value for both sets, or 'same'; a range or a "
                              "rounded value could hold for different values in each: to state each side, write "
                              f"VALUE_A vs VALUE_B @ … in {form.sets[0]} vs {form.sets[1]}")
    return [parsed]


def _operand(page: PageState, index: int, set_name: str | None, text: str, compared: bool,
             claim: str) -> tuple[EvidenceSet, str, str]:
    """(set, run, query) of one REF:QUERY operand of `claim`, in `set_name` when the claim compares sets."""
    ref, sep, query = (p.strip() for p in text.partition(":"))
    if not sep or not ref:
        page.error(index, f"{text!r} is not RUN:QUERY")
        raise _Refused
    if compared and "/" in ref:
        page.error(index, f"{text!r} names a set; a comparison names the run alone, and the sets after 'in'")
        raise _Refused
    found = page.lookup(index, f"{set_name}/{ref}" if set_name else ref, claim)
    if found is None:
        raise _Refused
    ev, group = found
    if group is None:
        page.error(index, f"{ref!r} names a set, not a run; a ratio or a comparison names runs")
        raise _Refused
    return ev, group, query


Table = list[tuple[tuple[tuple[tuple[str, str], ...], str], ...]]


def _sample(page: PageState, index: int, set_name: str | None, form: Form, used: list[str],
            claim: str) -> tuple[Sample, Table]:
    """The values the claim's query (or ratio) names in one set, and for a sameness claim, per recording
    (or pair) its values keyed by the wildcard keys of their records ([] for any other claim)."""
    compared = form.sets is not None
    if len(form.operands) == 1:
        ev, group, query = _operand(page, index, set_name, form.operands[0], compared, claim)
        used.append(ev.name)
        sample = resolve(ev, group, query)
        return sample, (keyed(ev, group, query) if form.op == "=" else [])  # only sameness reads the table
    (ev, g1, q1), (ev2, g2, q2) = (_operand(page, index, set_name, o, compared, claim) for o in form.operands)
    if ev is not ev2:
        page.error(index, f"a ratio divides two runs of one set (recorded together), not {ev.name!r} by {ev2.name!r}")
        raise _Refused
    used.append(ev.name)
    sample = ratio(ev, g1, q1, g2, q2)
    return sample, [(((), f.text),) for f in sample.values]


def ratio(ev: EvidenceSet, num: str, num_query: str, den: str, den_query: str) -> Sample:
    """Each pair's ratio: recording rK of `num` over rK of `den` (a run recorded once pairs with every
    recording of the other), each pair from one session and the same refresh, session by session;
    a session that holds one of the runs holds the other. QueryError when they cannot be paired."""
    top, bottom = resolve(ev, num, num_query), resolve(ev, den, den_query)
    for sample, group, query in ((top, num, num_query), (bottom, den, den_query)):
        if len(sample.values) != sample.recordings:
            raise QueryError(f"{group}:{query} selects {len(sample.values)} values in {sample.recordings} "
                             "recordings; a ratio needs one value per recording")
    view = backing(ev, num, top.timing or bottom.timing)
    view = backing(view, den, top.timing or bottom.timing)
    tops, bottoms = _by_session(view, num, top), _by_session(view, den, bottom)
    _same_sessions(ev, view, num, den, tops, bottoms)
    found = []
    for sid, pairs_top in tops.items():
        pairs_bottom = bottoms[sid]
        n, m = len(pairs_top), len(pairs_bottom)
        if n != m and 1 not in (n, m):
            raise QueryError(f"{num} has {n} recordings and {den} {m} in {view.sessions[sid].label()}; a ratio "
                             "pairs them by repeat number, so they need as many recordings each (or one of them one)")
        for i in range(max(n, m)):
            top_pair, bottom_pair = pairs_top[i if n > 1 else 0], pairs_bottom[i if m > 1 else 0]
            value = _pair_ratio(ev, num, den, den_query, top_pair, bottom_pair)
            found.append(Found(value, f"{ev.shown}/manifest.json ({view.sessions[sid].label()})", session_id=sid))
    group = f"{num} / {den} (paired by repeat)"
    return Sample(tuple(found), group, len(found), top.timing or bottom.timing, sessions=len(tops))


def _same_sessions(ev: EvidenceSet, view: EvidenceSet, num: str, den: str, tops: dict[str, Any],
                   bottoms: dict[str, Any]) -> None:
    """QueryError when a session holds one of a ratio's runs and not the other."""
    for sid in [*tops, *(b for b in bottoms if b not in tops)]:
        if sid not in tops or sid not in bottoms:
            has, lacks = (num, den) if sid in tops else (den, num)
            raise QueryError(f"{view.sessions[sid].label()} holds {has} and not {lacks}; a ratio compares runs "
                             f"recorded together: re-record both: {ev.refresh_command([num, den])}")


def _pair_ratio(ev: EvidenceSet, num: str, den: str, den_query: str, top: tuple[TranscriptEntry, Found],
                bottom: tuple[TranscriptEntry, Found]) -> str:
    """One pair's ratio, as text; QueryError when the two were not recorded together, a value is not a
    number, or the bottom one is 0."""
    (first, a_found), (second, b_found) = top, bottom
    if first.refresh_id is None or first.refresh_id != second.refresh_id:
        if first.refresh_id is None or second.refresh_id is None:
            old = first if first.refresh_id is None else second
            why = f"{old.name} was recorded before the refresh noted which recordings it made together"
        else:
            why = f"{first.name} and {second.name} come from different refreshes"
        raise QueryError(f"{why}; a ratio compares runs recorded together: "
                         f"re-record both: {ev.refresh_command([num, den])}")
    a, b = number(a_found.text), number(b_found.text)
    if a is None or b is None:
        bad = a_found if a is None else b_found
        raise QueryError(f"a ratio needs numbers; {bad.path} gives {bad.text!r}")
    if b == 0:
        raise QueryError(f"{second.name} gives 0 for {den_query}; a ratio cannot divide by it")
    return _ratio_text(a / b)


def _by_session(view: EvidenceSet, group: str, sample: Sample) -> dict[str, list[tuple[TranscriptEntry, Found]]]:
    """The recordings of `group` with their values (one each, in the order `resolve` gave), by session."""
    out: dict[str, list[tuple[TranscriptEntry, Found]]] = {}
    for name, value in zip(view.recordings(group), sample.values):
        entry = view.entries[name]
        out.setdefault(entry.session, []).append((entry, value))
    return out


def _ratio_text(value: Decimal) -> str:
    """A ratio at four significant digits, as plain digits."""
    try:
        quantum = Decimal(1).scaleb(value.adjusted() - 3)
        text = format(value.quantize(quantum).normalize(), "f")
    except InvalidOperation:  # pragma: no cover - a ratio of two finite numbers quantizes
        text = str(value)
    return text


# -- sameness and difference ----------------------------------------------------------------------

def _describe(values: list[str]) -> str:
    distinct = sorted(set(values), key=lambda t: (number(t) is None, number(t) or 0, t))
    if len(distinct) == 1:
        return repr(distinct[0])
    if all(number(t) is not None for t in distinct):
        return f"{distinct[0]} to {distinct[-1]}"
    return ", ".join(repr(t) for t in distinct[:4]) + (", …" if len(distinct) > 4 else "")


def _check_same(claim: ClaimValue, form: Form, a: Sample, b: Sample, table_a: Table,
                table_b: Table) -> tuple[str | None, str | None]:
    """(problem, fix) of `VALUE @ … in A = B`: the same values, record for record, in every recording of both."""
    set_a, set_b = form.sets
    tables = {set_a: table_a, set_b: table_b}
    by_key = _by_record(tables)
    for (key, _) in sorted(by_key, key=lambda k: (_natural(k[0]), k[1])):
        sides = by_key[(key, _)]
        everyone = [t for texts in sides.values() for t in texts]
        complete = all(len(sides.get(n, [])) == len(tables[n]) for n in tables)
        if len(set(everyone)) > 1 or not complete:
            where = ", ".join(f"{k}={v}" for k, v in key)
            said = "; ".join(f"evidence/{n} gives {_describe(sides[n])}" if n in sides else f"evidence/{n} has no such record"
                             for n in tables)
            counts = " and ".join(f"{len(tables[n])}" for n in tables)
            return (f"is not the same in both{f' at {where}' if where else ''}: {said} ({counts} recordings); "
                    f"the page says they are the same: if they now differ, write each side and the prose around it: "
                    f"{_sides_suggestion([sides.get(n, []) for n in tables])} @ {_pinned(form, key)} "
                    f"in {set_a} vs {set_b}"), None
    if claim.text == SAME:
        return None, None
    union = Sample(a.values + b.values, f"{a.group} in {set_a} and {set_b}", a.recordings + b.recordings, a.timing)
    verdict = judge(claim, union)
    return (None, None) if verdict.holds else (verdict.problem, verdict.fix)


def _by_record(tables: dict[str, Table]) -> dict[tuple, dict[str, list[str]]]:
    """Each record (its key, and which of the records with that key it is in its recording) with the texts
    each set's recordings give for it."""
    by_key: dict[tuple, dict[str, list[str]]] = {}
    for name, per_recording in tables.items():
        for rows in per_recording:
            counted: dict[tuple, int] = {}
            for key, text in rows:
                counted[key] = counted.get(key, 0) + 1
                by_key.setdefault((key, counted[key]), {}).setdefault(name, []).append(text)
    return by_key


def _natural(key: tuple[tuple[str, str], ...]) -> tuple:
    """A record key in reading order: numbers by value (32 before 256), then text."""
    return tuple((number(v) is None, number(v) or 0, k, v) for k, v in key)


def _pinned(form: Form, key: tuple[tuple[str, str], ...]) -> str:
    """The claim's RUN:QUERY with its `KEY=*` filters set to one record's `key` values."""
    text = " / ".join(form.operands)
    for k, v in key:
        text = re.sub(rf"(?<=[\[,]){re.escape(k)}=\*(?=[,\]])", f"{k}={v}", text)
    return text


def _sides_suggestion(sides: list[list[str]]) -> str:
    """'VA vs VB' that would hold for each side's values, where accept can say; VALUE where it cannot."""
    said = []
    for texts in sides:
        sample = Sample(tuple(Found(t) for t in texts), "", max(len(texts), 1))
        said.append((accepted_value(ClaimValue("", "exact"), sample) if texts else None) or "VALUE")
    return " vs ".join(said)


def _bounds(claim: ClaimValue) -> tuple[Decimal, Decimal] | None:
    if claim.kind in ("range", "rounded"):
        return claim.low, claim.high
    n = number(claim.text)
    return (n, n) if n is not None else None


def _overlap(one: ClaimValue, two: ClaimValue) -> bool:
    """Whether two stated values could both hold for one value."""
    b1, b2 = _bounds(one), _bounds(two)
    if b1 is None or b2 is None:
        return one.text.replace(",", "") == two.text.replace(",", "")
    return not (b1[1] < b2[0] or b2[1] < b1[0]) if one.kind != "rounded" and two.kind != "rounded" else \
        not (b1[1] <= b2[0] or b2[1] <= b1[0])


def _check_direction(word: str, form: Form, a: Sample, b: Sample) -> tuple[str | None, str | None]:
    """(problem, fix) of `WORD @ … in A vs B`: every value of A lies below (fewer, lower, …) or above
    (more, higher, …) every value of B; the fix is the word that holds now, if one does."""
    set_a, set_b = form.sets
    texts_a, texts_b = [f.text for f in a.values], [f.text for f in b.values]
    side = _side(texts_a, texts_b)
    if side is None:
        return f"{word!r} compares numbers, and the values are not all numbers", None
    below, above = side
    if (word.lower() in BELOW and below) or (word.lower() in ABOVE and above):
        return None, None
    now = ("below" if below else "above" if above else None)
    said = (f"evidence/{set_a} gives {_describe(texts_a)} and evidence/{set_b} gives {_describe(texts_b)}")
    if now is None:
        return (f"says {word!r}, but the two sets' values overlap ({said}): neither side is "
                f"{'below' if word.lower() in BELOW else 'above'} the other in every recording; rewrite the "
                "sentence"), None
    return (f"says {word!r}, but {set_a}'s values lie {now} {set_b}'s in every recording ({said}): the "
            "comparison runs the other way; rewrite the sentence around it"), None


def _side(texts_a: list[str], texts_b: list[str]) -> tuple[bool, bool] | None:
    """(every value of A below every value of B, every one above), or None when they are not all numbers."""
    nums_a, nums_b = [number(t) for t in texts_a], [number(t) for t in texts_b]
    if not nums_a or not nums_b or None in nums_a + nums_b:
        return None
    return max(nums_a) < min(nums_b), min(nums_a) > max(nums_b)


def _check_differs(value: str, values: list[ClaimValue], form: Form, a: Sample,
                   b: Sample) -> tuple[str | None, str | None]:
    """(problem, fix) of `VA vs VB @ … in A vs B`: each side holds in its set, and the sides do not meet."""
    set_a, set_b = form.sets
    va, vb = values
    if _overlap(va, vb):
        return (f"states two values that overlap ({va.text} and {vb.text}), so it states no difference; "
                "write values that do not meet, or state sameness with 'in A = B'"), None
    texts_a, texts_b = [f.text for f in a.values], [f.text for f in b.values]
    if _meet(texts_a, texts_b):
        shared = set(texts_a) | set(texts_b)
        if len(shared) == 1:
            hint = (f"they are the same now: say so in the prose and write the claim as "
                    f"{shared.pop()} @ {' / '.join(form.operands)} in {set_a} = {set_b}")
        else:
            hint = ("the two sets' values overlap: the page can no longer say they differ; rewrite the prose, and "
                    "quote each set with a claim of its own")
        return (f"states a difference that is gone: evidence/{set_a} gives {_describe(texts_a)} and "
                f"evidence/{set_b} gives {_describe(texts_b)}, which meet; {hint}"), None
    verdicts = [judge(va, a), judge(vb, b)]
    if all(v.holds for v in verdicts):
        return None, None
    problems = [f"{side} ({name}) {v.problem}" for side, name, v in
                (("its first side", set_a, verdicts[0]), ("its second side", set_b, verdicts[1])) if not v.holds]
    new = [v.fix if not v.holds else old.text for v, old in zip(verdicts, values)]
    fix = _sides_fix(new)
    problem = "; ".join(problems)
    if fix is None and None not in new:
        problem += f"; the values that would hold ({new[0]}, {new[1]}) overlap: narrow them by hand"
    return problem, fix


def _meet(texts_a: list[str], texts_b: list[str]) -> bool:
    """Whether two sets' values meet: numbers whose spans overlap (neither side wholly below the other),
    or any text the two share."""
    side = _side(texts_a, texts_b)
    return not any(side) if side is not None else bool(set(texts_a) & set(texts_b))


def _sides_fix(new: list[str | None]) -> str | None:
    """`A vs B` from the values that would hold on each side, when both are known and do not overlap."""
    if None in new:
        return None
    try:
        fixed = [parse_claim_value(t) for t in new]  # type: ignore[arg-type]
    except ClaimValueError:
        return None
    return f"{new[0]} vs {new[1]}" if not _overlap(*fixed) else None
