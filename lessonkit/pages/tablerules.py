"""A hand-written table that holds claims: every row label and column header is bound.

A label or header is bound when each of its comma-separated parts is what the claims under it
select: a filter value or its declared label (lessonkit.evidence.display) shared by every claim of the
row (or column) that filters on that key, the run they all cite (`run`) or its label, or the
field they all quote or its declared name. A label column's header names the key its labels
bind to. Anything else ("Error (256 threads)", `2^10`, `1K`, `1024.`, swapped columns, a row
whose claims filter on another row's kernel) is an error naming the cell. Rows without claims
(a paper's figures, a legend) bind nothing, nor does the header of a column of comparisons
between sets (it names the sets). A table drawn from the evidence
(`{{ table … }}`, lessonkit.pages.tables) has labels that cannot disagree.

A table written in HTML outside code is refused: no rule binds its labels.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from lessonkit.evidence.display import Display
from lessonkit.pages.markdowntext import visible_text
from lessonkit.pages.result import ShownClaim
from lessonkit.pages.scan import Cell, Lines, OutLine, Span, code_spans, split_cells, tables
from lessonkit.pages.tables import RUN

if TYPE_CHECKING:
    from lessonkit.pages.claimcheck import PageState

FIELD = "field"


def check_table_labels(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """Every label and header of a table with claims is bound to the claims it stands for."""
    for rows in tables(out, in_fence):
        if not rows or not any(out.spans(r) for r in rows):
            continue
        header = out[rows[0] - 2]
        claims_by_col: dict[int, list[ShownClaim]] = {}
        label_keys: dict[int, list[set[str]]] = {}
        bound: list[tuple[OutLine, Span] | None] = []
        for r in rows:
            row_claims = [s.claim for s in out[r].spans]
            if not row_claims:
                continue
            row_pairs = _shared([_pairs(c) for c in row_claims])
            display = _display(page, row_claims)
            for col, cell in enumerate(split_cells(out[r])):
                inside = [s for s in out[r].spans if cell.start <= s.start < cell.end]
                claims_by_col.setdefault(col, []).extend(s.claim for s in inside)
                text = cell.text if not inside else out[r].text[cell.start:inside[0].start]
                label = visible_text(text).strip()
                if not label:
                    continue
                keys = _binding(label, row_pairs, display)
                if keys is None:
                    page.error(out[r].src, _unbound("row label", label, row_pairs, display))
                else:
                    label_keys.setdefault(col, []).append(keys)
                    bound.append(_mark(out[r], cell.start, text))
        table_display = _display(page, [s.claim for r in rows for s in out[r].spans])
        for col, cell in enumerate(split_cells(header)):
            if _check_header(page, header, cell, claims_by_col.get(col, []), label_keys.get(col, []), table_display):
                bound.append(_mark(header, cell.start, cell.text))
        for line, span in filter(None, bound):
            line.spans.append(span)


# A label or header bound to the claims under it is checked: the page marks it as produced.
BOUND_LABEL = ShownClaim(None, None)


def _mark(line: OutLine, start: int, text: str) -> tuple[OutLine, Span] | None:
    """A span over a bound label's text, when it holds a figure (what the rendered-page audit reads)."""
    if not any(c.isdigit() for c in text):
        return None
    at = start + len(text) - len(text.lstrip())
    return line, Span(at, at + len(text.strip()), BOUND_LABEL)


def _check_header(page: PageState, header: OutLine, cell: Cell, claims: list[ShownClaim],
                  keys: list[set[str]], display: Display) -> bool:
    """Whether a header is bound (an error when it should be and is not)."""
    text = visible_text(cell.text).strip()
    if not text:
        return False
    if claims and all(c.across is not None for c in claims):
        return False  # comparisons between sets (lessonkit.pages.crossclaims): the header names the sets
    if claims:
        pairs = _shared([_pairs(c) for c in claims])
        display = _display(page, claims)
        if _binding(text, pairs, display) is None:
            page.error(header.src, _unbound("column header", text, pairs, display) +
                       " (the claims in its column)")
            return False
        return True
    if not keys:
        return False  # a column of prose beside the figures
    common = set.intersection(*keys)
    parts = [p.strip() for p in text.split(",")]
    if not all(any(p in display.names_of(k) for k in common) for p in parts):
        names = sorted({n for k in common for n in display.names_of(k)})
        page.error(header.src, f"column header {text!r} does not name the key its row labels stand for; "
                   f"write {' or '.join(repr(n) for n in names) or 'a key the labels share'}, or draw the table "
                   "from the evidence: {{ table … }}")
        return False
    return True


def _pairs(claim: ShownClaim) -> dict[str, str]:
    """What one claim selects: its filters (not `*`), its run, its field."""
    pairs: dict[str, str] = {}
    query = claim.query
    if query is not None:
        pairs.update((k, v) for k, v in query.filters or () if v != "*")
        pairs[FIELD] = ("#" if query.count else "") + (query.field or query.name)
    if claim.run is not None:
        pairs[RUN] = claim.run[1]
    return pairs


def _shared(all_pairs: list[dict[str, str]]) -> dict[str, str]:
    """The (key, value) that every claim using the key agrees on."""
    values: dict[str, set[str]] = {}
    for pairs in all_pairs:
        for k, v in pairs.items():
            values.setdefault(k, set()).add(v)
    return {k: next(iter(vs)) for k, vs in values.items() if len(vs) == 1}


def _display(page: PageState, claims: list[ShownClaim]) -> Display:
    name = next((c.run[0] for c in claims if c.run is not None), None)
    ev = page.sets.get(name) if name else None
    return page.display(ev) if ev is not None else Display()


def _texts(key: str, value: str, display: Display) -> set[str]:
    if key == FIELD:
        return display.names_of(value.lstrip("#")) | {value}
    return display.labels_of(key, value)


def _binding(text: str, pairs: dict[str, str], display: Display) -> set[str] | None:
    """The keys a label binds to (every comma-separated part bound), or None."""
    whole = {k for k, v in pairs.items() if text in _texts(k, v, display)}
    if whole:
        return whole  # a declared label may hold a comma: "GPU, writer only"
    keys: set[str] = set()
    for part in (p.strip() for p in text.split(",")):
        found = {k for k, v in pairs.items() if part in _texts(k, v, display)}
        if not found:
            return None
        keys |= found
    return keys


def _unbound(what: str, text: str, pairs: dict[str, str], display: Display) -> str:
    shown = ", ".join(f"{k}={v}" for k, v in sorted(pairs.items())) or "nothing they all share"
    written = sorted({t for k, v in pairs.items() for t in _texts(k, v, display)})
    return (f"{what} {text!r} is not bound to the claims it stands for ({shown}); write "
            f"{' or '.join(repr(w) for w in written[:6]) or 'a value they share'} (labels are declared in "
            "the lesson's runs.toml), or draw the table from the evidence: {{ table … }}")


# A table written in HTML: its labels are read by no rule (check_table_labels reads a Markdown
# table's). What hides, styles or scripts text, and comments, are read on the rendered page
# (lessonkit.pages.readertext), where they do what they do.
_HTML_TABLE_RE = re.compile(r"""<\s*(?:table|tr|td|th)\b""", re.IGNORECASE)


def check_html_tables(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """No table written in HTML outside code: its labels would be bound to no claim."""
    for i in out.find(_HTML_TABLE_RE):
        line = out[i]
        if in_fence[i] or line.generated:
            continue
        spans = code_spans(line.text)
        m = next((m for m in _HTML_TABLE_RE.finditer(line.text)
                  if not any(a < m.start() < b for a, b in spans)), None)
        if m is not None:
            page.error(line.src, f"{m.group().strip()!r}: an HTML table's labels are not bound to its claims; "
                       "write the table in Markdown")
