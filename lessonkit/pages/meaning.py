"""What backs a figure a page shows, in plain words: the run, the filter, the set and its toolkit,
the field and its unit, how many recordings, and whether it is one value, a range or a comparison.

`describe(claim, sets)` says it for one claim of a page (lessonkit.pages.claimcheck.ClaimOutcome);
`lessonkit explain PAGE` prints it for every claim of a page, sentence by sentence, so a reviewer
can read each figure's meaning against its data; the rendered page carries the same words on
each produced figure, for a reader to open.
"""

from __future__ import annotations

from collections.abc import Mapping

from lessonkit.evidence.display import describe as describe_unit
from lessonkit.evidence.display import unit_by_name
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.pages.claimcheck import SESSION_REF_RE
from lessonkit.pages.claims import ClaimValueError, parse_claim_value
from lessonkit.pages.crossclaims import compound
from lessonkit.pages.query import Query, QueryError, parse_query
from lessonkit.pages.result import ClaimOutcome
from lessonkit.pages.units import generated


def unit_of(field: str) -> str | None:
    """The unit a field's name says, in words (`wall_s`: seconds; lessonkit.evidence.display)."""
    unit = unit_by_name(field)
    return describe_unit(unit) if unit else None


def _toolkit(ev: EvidenceSet) -> str:
    p = ev.provenance
    parts = [f"nvcc {p['nvcc']}"] if p.get("nvcc") else []
    if p.get("compute_sanitizer"):
        parts.append(f"compute-sanitizer {p['compute_sanitizer']}")
    return ", ".join(parts) or "no toolkit recorded"


def for_reader(why: str | None, sets: Mapping[str, EvidenceSet], default: str | None) -> str | None:
    """`why` as a figure's tooltip gives it: without the toolkit of the page's own set, which the page
    names above its figures (explain keeps it); every other set's toolkit stays. Day 62's tooltips were
    a tenth of its HTML in that one repeated parenthesis."""
    ev = sets.get(default or "")
    return why.replace(f" ({_toolkit(ev)})", "") if why and ev is not None else why


def _operand(text: str, default: str | None, sets: Mapping[str, EvidenceSet]) -> tuple[str, str]:
    """(what it reads, on which recordings) for one REF:QUERY, in words."""
    ref, _, query = text.partition(":")
    set_name, slash, run = ref.strip().partition("/")
    if not slash:
        set_name, run = default or "", ref.strip()
        if run in sets:  # the set itself: its provenance
            set_name, run = run, ""
    ev = sets.get(set_name)
    if ev is not None and not run:
        return _provenance_operand(ev, query.strip())
    try:
        q = parse_query(query.strip())
    except QueryError:
        return f"{query.strip()} (unreadable)", f"run {run}"
    what = _query_words(q)
    if ev is None:
        return what, f"run {run} of set {set_name or '?'}"
    session = SESSION_REF_RE.match(run)
    if session is not None:  # RUN[session=sN]: that one session's recordings
        run, wanted = session.group("ref"), session.group("session")
        wanted = ev.latest_session().id if wanted == "latest" and ev.sessions else wanted
        view = ev.view(frozenset({wanted})) if wanted in ev.sessions else ev
        where = f"run {run} of set {ev.name} ({_toolkit(ev)}), session {wanted} only: {recorded(view, run)}"
        return what, where
    where = f"run {run} of set {ev.name} ({_toolkit(ev)}), {recorded(ev, run)}"
    return what, where


def _provenance_operand(ev: EvidenceSet, field: str) -> tuple[str, str]:
    """`_operand` of a set's own field: how many sessions it keeps, or a field of its provenance."""
    if field == "sessions":
        n = len(ev.sessions)
        return ("how many GPU sessions the set keeps",
                f"set {ev.name} ({_toolkit(ev)}), {n} session{'s' if n != 1 else ''} ({', '.join(ev.sessions)})")
    if field in ev.provenance or field in ("arch", "build"):
        return (f"the provenance field {field} (the machine and tools the set was recorded with)",
                f"set {ev.name} ({_toolkit(ev)})")
    n = len(ev.sessions)
    return (f"the provenance field {field} of each session (the GPU and its state, as each session recorded it)",
            f"set {ev.name} ({_toolkit(ev)}), {n} session{'s' if n != 1 else ''} ({', '.join(ev.sessions)})")


def _query_words(q: Query) -> str:
    """What a query reads, in words: a count of records, or a field (with its unit), and its filters."""
    if q.count:
        what = f"the number of {q.name} records"
    else:
        field = q.field or q.name
        unit = unit_of(field)
        what = f"the field {field}" + (f" of the {q.name} records" if q.field else "") + (f", in {unit}" if unit else "")
    if q.filters:
        what += " where " + " and ".join(f"{k} is {'any' if v == '*' else v}" for k, v in q.filters)
    return what



def recorded(ev: EvidenceSet, run: str) -> str:
    """'15 recordings in 3 sessions': what backs a figure of `run`. The sessions are named only where
    the run was not recorded in every session the set (or the page's view of it) keeps: '5
    recordings in 1 session (s3)'. Named on every figure, they were a fortieth of a lesson page."""
    names = ev.recordings(run) if run in ev.groups else []
    sessions = list(dict.fromkeys(ev.entries[n].session for n in names))
    text = f"{len(names)} recording{'s' if len(names) != 1 else ''}" + _in_sessions(ev, sessions)
    shared = [sid for sid in sessions if ev.sessions[sid].shared]
    if shared:
        text += f", {', '.join(shared)} with the GPU shared (backing no timing and no exclusive run's figure)"
    return text


def _in_sessions(ev: EvidenceSet, sessions: list[str]) -> str:
    """' in 3 sessions', or ' in 1 session (s3)' where they are not all the sessions `ev` keeps."""
    if not sessions:
        return ""
    named = f" ({', '.join(sessions)})" if len(sessions) < len(ev.sessions) else ""
    return f" in {len(sessions)} session{'s' if len(sessions) != 1 else ''}{named}"


def _form(value: str) -> str:
    """What kind of statement the value makes."""
    try:
        parsed = parse_claim_value(value)
    except ClaimValueError:
        return "a value"
    if parsed.kind == "range":
        return "a range every recording falls in"
    if parsed.kind == "rounded":
        return f"a rounded value every recording rounds to ({parsed.meaning()})"
    return "one value every recording gives"


def describe(claim: ClaimOutcome, sets: Mapping[str, EvidenceSet], default: str | None = None) -> str:
    """One claim's backing in plain words."""
    then = f", {claim.derived}" if claim.derived else ""
    if claim.backing is not None:
        kind = ("a published figure" if claim.backing.startswith("quoted from")
                else "one value, lessonkit's own" if " of lessonkit/" in claim.backing
                else "one value, the program's own")
        return f"{claim.value}: {kind}; {claim.backing}{then}"
    default = default or claim.set_name
    form = compound(claim.ref_query)
    if form is None:
        what, where = _operand(claim.ref_query, default, sets)
        kind = "as the set records it" if what.startswith("the provenance field") else _form(claim.value)
        return f"{claim.value}: {kind}; {what}{then}; {where}"
    parts = [_operand(o, default if form.sets is None else form.sets[0], sets) for o in form.operands]
    what = parts[0][0] if len(parts) == 1 else f"{parts[0][0]} divided by {parts[1][0]}, recording by recording"
    if form.sets is None:  # every run it divides, named: a ratio over the wrong run must read wrong
        runs = list(dict.fromkeys(where for _, where in parts))
        return f"{claim.value}: a ratio; {what}; " + (runs[0] if len(runs) == 1 else
                                                        f"numerator: {runs[0]}; denominator: {runs[1]}")
    a, b = form.sets
    if form.op == "=":
        return f"{claim.value}: the same in set {a} ({_toolkit(sets[a]) if a in sets else '?'}) and set {b} " \
               f"({_toolkit(sets[b]) if b in sets else '?'}); {what}"
    left, _, right = claim.value.partition(" vs ")
    return (f"{claim.value}: a difference; {left.strip()} in set {a} ({_toolkit(sets[a]) if a in sets else '?'}), "
            f"{right.strip()} in set {b} ({_toolkit(sets[b]) if b in sets else '?'}); {what}")


def describe_generated(query: str, default: str | None, sets: Mapping[str, EvidenceSet]) -> str:
    """A `{{ value QUERY [within LOW–HIGH] [sig=N] }}` figure's backing in plain words, with the
    bound the words around it lean on."""
    asked = generated(query)
    query = asked.query
    bound = "" if asked.within is None else \
        "; the words around it lean on every value lying from {} to {}".format(*asked.within.within)
    if asked.derive.ops:
        bound = f", {asked.derive.words()}{bound}"
    form = compound(query)
    if form is None:
        what, where = _operand(query, default, sets)
        return f"generated from every recording: {what}; {where}{bound}"
    parts = [_operand(o, default, sets) for o in form.operands]
    if len(parts) != 2:
        return f"generated from every recording: {parts[0][0]}; {parts[0][1]}{bound}"
    runs = list(dict.fromkeys(where for _, where in parts))  # every run it divides, named, as a claim's are
    return (f"generated from every pair of recordings: {parts[0][0]} divided by {parts[1][0]}; "
            + (runs[0] if len(runs) == 1 else f"numerator: {runs[0]}; denominator: {runs[1]}") + bound)


def describe_table(ev: EvidenceSet, runs: list[str], field: str) -> str:
    """A generated table cell's backing in plain words."""
    unit = unit_of(field)
    counts = [len(ev.recordings(r)) for r in runs if r in ev.groups]
    many = f"{max(counts)} recording{'s' if max(counts) != 1 else ''} a run" if counts else "its recordings"
    sessions = list(dict.fromkeys(ev.entries[n].session for r in runs for n in ev.recordings(r)))
    many += _in_sessions(ev, sessions)
    return (f"generated from every recording: the field {field}" + (f", in {unit}" if unit else "")
            + f"; run{'s' if len(runs) > 1 else ''} {', '.join(runs)} of set {ev.name} ({_toolkit(ev)}), {many}")
