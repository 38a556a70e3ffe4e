"""Units of a field (declared once under `[units]` in runs.toml, or said by its name's suffix:
lessonkit.evidence.display), and what a claim may do with them.

- A claim may ask for a scaled value instead of the author doing the arithmetic:
  `{{ 4.1 @ RUN:rows[…].rate as percent }}` or `{{ 4.1 % @ RUN:rows[…].rate }}` on a fraction,
  `as per 100000` on a fraction; and operations with whole numbers (`+ K`, `- K`, `* K`, `/ K`, in turn)
  for a figure derived from a recorded one: `{{ 32 @ RUN:tiling[…].full_tiles - 2 }}` (the tile
  before last), `{{ 32 @ RUN:line_bytes / 4 }}` (words a line).
- A prediction's verdict: `{{ held @ RUN:QUERY within LOW–HIGH }}` shows `held` where every
  recording's value lies in the range the prediction stated (its ends included), and
  `{{ died @ … within LOW–HIGH }}` where none does; a recording on each side fails both, naming them.
  The range is the prediction in figures, and `explain` shows it beside the word.
- A unit typed right after a claim must be the unit of what the claim shows: `%` after a
  fraction would show a rate a hundred times too small, "ms" after microseconds a time a
  thousand times too long, "per million" after a rate per 100,000 one ten times too small; and a
  figure with no unit (a count) takes none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal

from lessonkit.evidence.display import UNIT_WORD, describe, typed_unit
from lessonkit.pages.claims import Sample, number, show_number

_SCALES = {"percent": (Decimal(100), "percent"), "per 100000": (Decimal(100000), "per 100000")}
_SUFFIX_RE = re.compile(r"""^(?P<query>.*?)(?:\s+as\s+(?P<scale>percent|per\s+100,?000)"""
                        r"""|(?P<ops>(?:\s+[-+*/]\s*\d+)+)"""
                        r"""|\s+within\s+(?P<low>-?[\d,.]+)\s*\u2013\s*(?P<high>-?[\d,.]+))\s*$""")
HELD, DIED = "held", "died"  # a prediction's verdicts: every recording inside its range, or none
_OPS_RE = re.compile(r"""(?:\s+[-+*/]\s*\d+)+\s*$""")
_OP_RE = re.compile(r"""(?P<op>[-+*/])\s*(?P<k>\d+)""")
# What a reader takes for a unit right after a figure.
_UNIT_AFTER_RE = re.compile(r"""^\s?""" + UNIT_WORD, re.IGNORECASE)


@dataclass(frozen=True)
class Transform:
    """What a claim does to the values its query finds: scale them, or add an offset."""

    scale: str | None = None  # "percent" or "per 100000"
    ops: tuple[tuple[str, int], ...] = ()  # ("+"|"-"|"*"|"/", K) in turn: a figure derived from a recorded one
    within: tuple[str, str] | None = None  # a prediction's range: each value becomes 'held' or 'died'

    def words(self) -> str:
        """What it does, in words ('' when nothing): 'as a percentage', 'plus 1', 'minus 75180'."""
        if self.within is not None:
            return f"'held' where it lies from {self.within[0]} to {self.within[1]}, 'died' where it does not"
        if self.scale is not None:
            return "as a percentage" if self.scale == "percent" else "as a rate per 100,000"
        names = {"+": "plus", "-": "minus", "*": "times", "/": "divided by"}
        return ", then ".join(f"{names[op]} {k}" for op, k in self.ops)

    def apply(self, sample: Sample) -> Sample | str:
        """The sample transformed, or a message saying why it cannot be."""
        if self.within is not None:
            low, high = (number(v) for v in self.within)
            if low is None or high is None or low > high:
                return f"'within {self.within[0]}\u2013{self.within[1]}' is no range of figures, low end first"
            judged = []
            for found in sample.values:
                n = number(found.text)
                if n is None:
                    return f"{found.text!r} is not a number, so no range holds it"
                judged.append(replace(found, text=HELD if low <= n <= high else DIED))
            return replace(sample, values=tuple(judged), timing=False)
        if self.scale is None and not self.ops:
            return sample
        values = []
        for found in sample.values:
            n = number(found.text)
            if n is None:
                return f"{found.text!r} is not a number, so it cannot be {'scaled' if self.scale else 'derived'}"
            if self.scale:
                n = n * _SCALES[self.scale][0]
            for op, k in self.ops:
                if op == "/" and k == 0:
                    return "a figure cannot be divided by 0"
                n = {"+": n + k, "-": n - k, "*": n * k, "/": n / k if k else n}[op]
            values.append(replace(found, text=show_number(n)))  # its file, line and session kept
        return replace(sample, values=tuple(values))


def split_transform(ref_query: str, value: str) -> tuple[str, str, Transform]:
    """(ref_query, value, transform): `… as percent`, `… - 2` and a value `4.1 %` read off."""
    transform = Transform()
    m = _SUFFIX_RE.match(ref_query)
    if m:
        ref_query = m.group("query").strip()
        if m.group("scale"):
            transform = Transform(scale="percent" if m.group("scale") == "percent" else "per 100000")
        elif m.group("low") is not None:
            transform = Transform(within=(m.group("low"), m.group("high")))
        else:
            transform = Transform(ops=tuple((o.group("op"), int(o.group("k"))) for o in _OP_RE.finditer(m.group("ops"))))
    if value.endswith("%") and transform.scale is None and _figure(value[:-1].rstrip()):
        value = value[:-1].rstrip()
        transform = replace(transform, scale="percent")
    return ref_query, value, transform


_GENERATED_SIG_RE = re.compile(r"""\s+sig=(?P<sig>\S*)\s*$""")
_GENERATED_WITHIN_RE = re.compile(r"""\s+within\s+(?P<low>\S+?)\s*\u2013\s*(?P<high>\S+)\s*$""")


@dataclass(frozen=True)
class Generated:
    """What a `{{ value QUERY [ARITHMETIC] [within LOW–HIGH] [sig=N] }}` asks for, read once for the
    figure (lessonkit.pages.values) and for the words that say what backs it (lessonkit.pages.meaning)."""

    query: str
    derive: Transform  # the arithmetic after the query
    within: Transform | None  # the bound the words around the figure lean on
    sig: str | None  # as written: lessonkit.pages.tables.sig_digits reads it


def generated(text: str) -> Generated:
    """`text` (after the word `value`) read into its query and options."""
    sig = within = None
    m = _GENERATED_SIG_RE.search(text)
    if m:
        sig, text = m.group("sig"), text[:m.start()]
    m = _GENERATED_WITHIN_RE.search(text)
    if m:
        within = Transform(within=(m.group("low").replace(",", ""), m.group("high").replace(",", "")))
        text = text[:m.start()]
    query, derive = derived(text)
    return Generated(query, derive, within, sig)


def derived(text: str) -> tuple[str, Transform]:
    """(the query, the arithmetic after it) of a generated figure's `RUN:QUERY * 100 / 20000`: a
    figure derived from a recorded one, as a claim's is."""
    if _OPS_RE.search(text) is None:
        return text, Transform()
    query, _, transform = split_transform(text, "")
    return query, transform


def _figure(text: str) -> bool:
    """Whether a claim value is a figure (exact, ~rounded or LOW–HIGH), not a text that ends in '%'."""
    parts = text.lstrip("~").split("\u2013")
    return len(parts) <= 2 and all(number(p.strip()) is not None for p in parts)


def shown_unit(declared: str | None, transform: Transform) -> str | None:
    """The unit of what a claim shows: the field's declared unit, scaled as the claim asks."""
    if transform.within is not None:
        return None  # a verdict, 'held' or 'died'
    if transform.scale is not None:
        return transform.scale
    return declared


def unit_problem(unit: str | None, after: str) -> str | None:
    """What is wrong with the unit typed right after a figure that shows `unit` (None: a figure
    with no unit, a count), or None."""
    m = _UNIT_AFTER_RE.match(after)
    if not m:
        return None
    word = " ".join(m.group("unit").split())
    if typed_unit(word) == unit:
        return None
    if unit == "fraction":
        return (f"the figure shows a fraction, and {word!r} after it would make a reader read it as one; ask for "
                "the scaled value instead: {{ V @ RUN:QUERY as percent }} (or as per 100000)")
    if unit is None:
        return (f"the figure has no unit (a count, or a ratio of two values in one unit), and {word!r} after "
                "it gives it one; remove the unit, or claim a field in that unit")
    return f"the figure shows {describe(unit)}, and {word!r} after it is another unit"
