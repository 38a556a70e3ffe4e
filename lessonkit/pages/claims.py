"""Claim values: what a page writes before the `@` of a claim, and whether every recording agrees.

Three forms, each a statement about every value the query finds (every recording of the
run, and every record a `KEY=*` filter selects):
- exact `V`: every value is V, textually ("193,700" may stand for 193700);
- range `LOW–HIGH` (an en dash, U+2013): every value is a number from LOW to HIGH, and the
  range is not loose (see `allowed_width`);
- rounded `~V`: every value rounds to V at V's last significant digit, and what that admits is
  no looser than a range may be (`~10,000` admits [5,000, 15,000): too loose unless the values
  spread that far; two significant digits always say enough).
A timing (a value named `wall_s` or `…_s`, seconds or a rate per second) changes between runs
of unchanged code, so it takes a range or a rounded value, never an exact one.
The page shows the author's text; `accepted_value` is the value `lessonkit accept` writes.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal, InvalidOperation
from functools import lru_cache

EN_DASH = "\u2013"

_NUMBER_RE = re.compile(
    r"""^(?P<sign>[+-])?
        (?P<int>\d{1,3}(?:,\d{3})+|\d+)
        (?P<frac>\.\d+)?
        (?P<exp>[eE][+-]?\d+)?$""",
    re.VERBOSE | re.ASCII)  # ASCII digits only: "৪0" looks like 80 to a reader and is 40 to Python
_SEPARATED_RE = re.compile(r"""^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$""", re.VERBOSE | re.ASCII)
# A range typed with a hyphen, an em dash, a figure dash or a minus sign instead of an en dash.
_WRONG_DASH_RE = re.compile(
    r"""^(?P<low>[+-]?[\d.,]+(?:[eE][+-]?\d+)?)\s*[-\u2012\u2014\u2212]\s*(?P<high>[+-]?[\d.,]+(?:[eE][+-]?\d+)?)$""",
    re.VERBOSE | re.ASCII)


# Count words a claim may state (`{{ two @ race:#reports }}`), each for the count it says; the
# rendered-page audit holds a count word before a counted noun to a claim (lessonkit.pages.audit).
_UNITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
          "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty")
_TENS = ("thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
NUMBER_WORDS = {w: n for n, w in enumerate(_UNITS)}
NUMBER_WORDS.update({w: 10 * n for n, w in enumerate(_TENS, 3)})
NUMBER_WORDS.update(dozen=12, hundred=100, thousand=1000, million=10**6)


def _wanted(claim_text: str, separated: bool) -> str:
    """The text every value must be for an exact claim: a count word stands for its number."""
    if claim_text.lower() in NUMBER_WORDS:
        return str(NUMBER_WORDS[claim_text.lower()])
    return claim_text.replace(",", "") if separated else claim_text


class ClaimValueError(ValueError):
    """A claim value that cannot be read; the message says what was expected."""


@lru_cache(maxsize=65536)
def number(text: str) -> Decimal | None:
    """The number a page or a transcript writes (`193,700`, `0.0579`, `9.37e+10`), or None
    (read once per distinct text: a Decimal is immutable)."""
    m = _NUMBER_RE.match(text.strip())
    if not m:
        return None
    try:
        return Decimal(text.strip().replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the regex admits only valid numbers
        return None


def show_number(value: Decimal) -> str:
    """A Decimal as plain digits, without an exponent or trailing zeros after the point."""
    if value == 0:
        return "0"
    text = format(value.normalize(), "f")
    return text


@dataclass(frozen=True)
class ClaimValue:
    """A parsed claim value: `kind` is exact, range or rounded; `low`/`high` bound range and rounded."""

    text: str
    kind: str
    low: Decimal | None = None
    high: Decimal | None = None
    unit: Decimal | None = None  # rounded: the place of the last significant digit

    @property
    def separated(self) -> bool:
        """Whether the author wrote thousands separators (accept keeps them)."""
        if "," not in self.text:
            return False  # a separator is a comma
        parts = self.text.lstrip("~").split(EN_DASH)
        return any(_SEPARATED_RE.match(p.strip()) for p in parts)

    def meaning(self) -> str:
        """What a rounded claim admits, as a half-open interval."""
        return f"[{show_number(self.low)}, {show_number(self.high)})"


def parse_claim_value(text: str) -> ClaimValue:
    """Read a claim value; ClaimValueError when a range or rounded value has no numbers."""
    text = text.strip()
    if not text:
        raise ClaimValueError("the value is empty; write the value you expect before the '@'")
    foreign = next((c for c in text if c.isdigit() and not c.isascii()), None)
    if foreign is not None:
        raise ClaimValueError(f"{foreign!r} ({unicodedata.name(foreign, 'a digit')}) looks like a digit but is "
                              "not 0-9; write the value with ASCII digits")
    if text.startswith("~"):
        body = text[1:].strip()
        value = number(body)
        if value is None:
            raise ClaimValueError(f"cannot read {body!r} as a number; a rounded claim is ~V, e.g. ~30 or ~0.06")
        unit = _unit(body)
        return ClaimValue(text, "rounded", value - unit / 2, value + unit / 2, unit)
    if EN_DASH in text:
        low_text, _, high_text = (p.strip() for p in text.partition(EN_DASH))
        low, high = number(low_text), number(high_text)
        if low is not None or high is not None:  # one number makes it a range
            for part, value in ((low_text, low), (high_text, high)):
                if value is None:
                    raise ClaimValueError(f"cannot read {part!r} as a number; a range is LOW{EN_DASH}HIGH "
                                          f"with numbers, e.g. 193700{EN_DASH}197060")
            if low > high:
                raise ClaimValueError(f"the range's low end {low_text} is above its high end {high_text}; "
                                      f"write LOW{EN_DASH}HIGH")
            if low == high:
                raise ClaimValueError(f"a range needs two different ends; write {low_text}")
            return ClaimValue(text, "range", low, high)
    return ClaimValue(text, "exact")


def _unit(text: str) -> Decimal:
    """The place of the last significant digit: ~30 -> 10, ~0.06 -> 0.01, ~1.8e9 -> 1e8, ~0 -> 1."""
    plain = text.replace(",", "").lstrip("+-")
    if "." not in plain and "e" not in plain.lower():
        digits = plain.rstrip("0")
        return Decimal(1) if not digits else Decimal(10) ** (len(plain) - len(digits))
    return Decimal(1).scaleb(Decimal(plain).as_tuple().exponent)


# The looseness rule's factor: a range may be this many times the observed spread wide (or half its
# larger end). The reference page quotes it as a claim on this line.
LOOSENESS_FACTOR = 4
# accept widens the values it saw by the larger of their spread and this share of their magnitude.
ACCEPT_MARGIN = 0.05


def allowed_width(claim: ClaimValue, values: list[Decimal]) -> tuple[Decimal, Decimal]:
    """(the widest a range, or what a rounded claim admits, may be; the observed spread):
    max(LOOSENESS_FACTOR × spread, half its larger end's magnitude)."""
    spread = max(values) - min(values) if values else Decimal(0)
    half_end = max(abs(claim.low), abs(claim.high)) / 2
    return max(LOOSENESS_FACTOR * spread, half_end), spread


@dataclass(frozen=True)
class Found:
    """One value a query found: its text as a page writes it, its file and line."""

    text: str
    path: str = ""
    line: int | None = None
    session: str = ""  # the GPU session of the recording it is from ('session s2, 2026-12-03T21:04:11Z')
    session_id: str = ""  # that session's id ('s2'), or the session a ratio's pair or a provenance value is of


@dataclass(frozen=True)
class Sample:
    """Every value one claim's query found, and where: `group` with `recordings` recordings."""

    values: tuple[Found, ...]
    group: str
    recordings: int
    timing: bool = False  # seconds or a rate per second: it changes from run to run
    sessions: int = 1  # the GPU sessions the recordings come from
    per_session: bool = False  # a session's own provenance: one value a session, not a recording

    def where(self) -> str:
        """'evidence/x/run.txt', '5 recordings of run', '15 recordings of run in 3 sessions', 'the 4
        records it selects in …', 'the 3 sessions of set'."""
        if self.per_session:
            place = self.values[0].path if self.recordings == 1 else f"the {self.recordings} sessions of {self.group}"
        elif self.recordings == 1:
            place = self.values[0].path
        else:
            place = f"{self.recordings} recordings of {self.group}"
            if self.sessions > 1:
                place += f" in {self.sessions} sessions"
        if len(self.values) == self.recordings:
            return place
        return f"the {len(self.values)} records it selects in {place}"

    def at(self, found: Found) -> str:
        """Where one value is: 'line 7' for a lone recording, else 'evidence/x/run.r2.txt, line 7', and
        with several sessions 'evidence/x/s2/run.r2.txt (session s2 (DATE)), line 7'."""
        line = f"line {found.line}" if found.line else ""
        if self.recordings == 1 and len(self.values) == 1:
            return line
        path = found.path + (f" ({found.session})" if self.sessions > 1 and found.session else "")
        return ", ".join(p for p in (path, line) if p)


@dataclass(frozen=True)
class Verdict:
    """Whether a claim holds; if not, what is wrong (after "claim 'V' (REF:QUERY) ") and a value that would hold."""

    holds: bool
    problem: str = ""
    fix: str | None = None


def recorded_spread(sample: Sample, digits: int = 4) -> str:
    """The numbers a sample found, session by session, smallest to largest: 's1 20000; s2 18080–18239;
    s3 12953–13102' (to `digits` significant digits), so an author sees how far the sessions differ
    beside how far one session's recordings do; '' when the values are not numbers or are all one."""
    by_session: dict[str, list[Decimal]] = {}
    for found in sample.values:
        value = number(found.text)
        if value is None:
            return ""
        by_session.setdefault(found.session_id, []).append(value)

    def shown(value: Decimal) -> str:
        return show_number(value) if value == value.to_integral_value() else f"{float(value):.{digits}g}"

    if len({v for values in by_session.values() for v in values}) < 2:
        return ""
    parts = []
    for session, values in by_session.items():
        low, high = min(values), max(values)
        span = shown(low) if low == high else f"{shown(low)}\u2013{shown(high)}"
        parts.append(f"{session} {span}".strip())
    return "; ".join(parts)


def judge(claim: ClaimValue, sample: Sample) -> Verdict:
    """Check a claim against every value found; the verdict says what is wrong and what would hold."""
    problem = _problem(claim, sample)
    if problem is None:
        return Verdict(True)
    fix = accepted_value(claim, sample)
    return Verdict(False, problem, fix)


def _span(sample: Sample) -> tuple[str, str, list[Decimal]] | None:
    """(smallest text, largest text, numbers) when every value is a number, else None."""
    numbers = [number(f.text) for f in sample.values]
    if any(n is None for n in numbers):
        return None
    lo = min(range(len(numbers)), key=lambda i: numbers[i])
    hi = max(range(len(numbers)), key=lambda i: numbers[i])
    return sample.values[lo].text, sample.values[hi].text, numbers  # type: ignore[return-value]


def _problem(claim: ClaimValue, sample: Sample) -> str | None:
    if _holds_at_a_glance(claim, sample):  # the common case, with nothing worked out for a message
        return None
    said = _Said(sample)
    if claim.kind == "exact":
        return _exact_problem(claim, sample, said)
    if said.span is None:
        bad = next(f for f in sample.values if number(f.text) is None)
        at = sample.at(bad)
        kind = "a range" if claim.kind == "range" else "a rounded figure"
        return f"is {kind}, but {said.where} gives {bad.text!r}{f' ({at})' if at else ''}, which is not a number"
    if claim.kind == "rounded":
        return _rounded_problem(claim, said)
    return _range_problem(claim, sample, said)


def _holds_at_a_glance(claim: ClaimValue, sample: Sample) -> bool:
    """Whether every value agrees with an exact claim (not a timing) or lies in a rounded one that is not
    too loose."""
    if claim.kind == "exact" and not sample.timing:
        wanted = _wanted(claim.text, claim.separated)
        return all(f.text == wanted for f in sample.values)
    if claim.kind == "rounded":
        numbers = [number(f.text) for f in sample.values]
        return all(n is not None and claim.low <= n < claim.high for n in numbers) \
            and claim.unit <= allowed_width(claim, numbers)[0]  # type: ignore[arg-type]
    return False


class _Said:
    """What a run's recordings say, for a message: where they are, their span and distinct texts, and
    `gives`, the words that say it."""

    def __init__(self, sample: Sample) -> None:
        values = sample.values
        self.where = sample.where()
        self.span = _span(sample)
        self.distinct = list(dict.fromkeys(f.text for f in values))
        if len(values) == 1:
            self.gives = f"{self.where} says {values[0].text!r}"
        elif len(self.distinct) == 1:
            self.gives = f"{self.where} all say {values[0].text!r}"
        else:
            self.gives = f"{self.where} give {self.span[0]} to {self.span[1]}" if self.span else ""


def _exact_problem(claim: ClaimValue, sample: Sample, said: _Said) -> str | None:
    values, where, span = sample.values, said.where, said.span
    wanted = _wanted(claim.text, claim.separated)
    if sample.timing and span is not None:
        return (f"is a timing, which changes from run to run even when nothing else does; quote it "
                f"rounded (~V) or as a range (LOW{EN_DASH}HIGH): {said.gives}")
    if all(f.text == wanted for f in values):
        return None
    hint = _dash_hint(claim.text)
    if len(said.distinct) == 1:
        first = values[0]
        at = sample.at(first)
        if len(values) == 1:
            return f"disagrees with {where}; it says {first.text!r}{f' ({at})' if at else ''}{hint}"
        return f"disagrees with {where}; each says {first.text!r} ({at}){hint}"
    if span is not None:
        odd = next((f for f in values if f.text != wanted), values[0])
        named = f" ({sample.at(odd)} says {odd.text!r})" if sample.sessions > 1 else ""
        return f"varies across {where}: {span[0]} to {span[1]}{named}; quote a range{hint}"
    shown = ", ".join(repr(t) for t in said.distinct[:4]) + (", …" if len(said.distinct) > 4 else "")
    return f"varies across {where}: {shown}; no one value holds for all of them"


def _rounded_problem(claim: ClaimValue, said: _Said) -> str | None:
    numbers = said.span[2]  # type: ignore[index]
    if not all(claim.low <= n < claim.high for n in numbers):
        return f"does not hold: {said.gives}; {claim.text} means {claim.meaning()}"
    widest, spread = allowed_width(claim, numbers)
    if claim.unit > widest:
        return (f"is too loose: {claim.text} admits {claim.meaning()}, {show_number(claim.unit)} wide, and a "
                f"rounded figure may admit at most {show_number(widest)} here, as a range may "
                f"({_width_rule(claim, spread)}); write it with two significant digits, or as a range; {said.gives}")
    return None


def _range_problem(claim: ClaimValue, sample: Sample, said: _Said) -> str | None:
    values, numbers = sample.values, said.span[2]  # type: ignore[index]
    outside = [f for f, n in zip(values, numbers) if not claim.low <= n <= claim.high]
    if outside:
        if len(values) == 1:
            at = sample.at(values[0])
            return f"does not hold: {said.gives}{f' ({at})' if at else ''}"
        return f"does not hold: {said.gives}; {outside[0].text} ({sample.at(outside[0])}) is outside it"
    widest, spread = allowed_width(claim, numbers)
    width = claim.high - claim.low
    if width > widest:
        return (f"is too loose: it is {show_number(width)} wide, and a range may be at most "
                f"{show_number(widest)} wide here ({_width_rule(claim, spread)}); {said.gives}")
    return None


def _width_rule(claim: ClaimValue, spread: float) -> str:
    """Where the widest a range may be comes from, each figure named by what it is."""
    return (f"the larger of {show_number(LOOSENESS_FACTOR * spread)}, {_UNITS[LOOSENESS_FACTOR]} times the observed spread of {show_number(spread)}, "
            f"and {show_number(max(abs(claim.low), abs(claim.high)) / 2)}, half its larger end")


def _dash_hint(text: str) -> str:
    m = _WRONG_DASH_RE.match(text)
    if not m or number(m.group("low")) is None or number(m.group("high")) is None:
        return ""
    return f"; a range is written with an en dash (U+2013): {m.group('low')}{EN_DASH}{m.group('high')}"


def accepted_value(claim: ClaimValue, sample: Sample) -> str | None:
    """The value accept writes: exact when all agree, else a rounded or a range that holds; None if none can."""
    distinct = list(dict.fromkeys(f.text for f in sample.values))
    span = _span(sample)
    candidates: list[str] = []
    if claim.kind == "rounded" and span is not None:
        rounded = {_to_unit(n, claim.unit, ROUND_HALF_UP) for n in span[2]}
        if len(rounded) == 1:
            candidates.append("~" + _written(rounded.pop(), claim))
    if sample.timing and claim.kind == "exact" and span is not None:
        unit = Decimal(1).scaleb(max(abs(n) for n in span[2]).adjusted())
        rounded = {_to_unit(n, unit, ROUND_HALF_UP) for n in span[2]}
        if len(rounded) == 1:
            candidates.append("~" + show_number(rounded.pop()))
    if len(distinct) == 1 and claim.kind != "rounded":
        candidates.append(_written(number(distinct[0]), claim) if claim.separated and span else distinct[0])
    if span is not None and len(distinct) > 1:
        candidates.append(_covering_range(span, sample, claim))
    return next((text for text in candidates if _holds(text, sample)), None)


def _holds(text: str, sample: Sample) -> bool:
    """Whether `text`, written as a claim's value, is well formed and holds for every value in `sample`."""
    try:
        candidate = parse_claim_value(text)
    except ClaimValueError:
        return False
    return _problem(candidate, sample) is None


def _to_unit(value: Decimal, unit: Decimal, rounding: str) -> Decimal:
    """`value` rounded to a multiple of `unit` (ROUND_FLOOR, ROUND_CEILING, ...)."""
    return (value / unit).to_integral_value(rounding=rounding) * unit


def _covering_range(span: tuple[str, str, list[Decimal]], sample: Sample, claim: ClaimValue) -> str:
    """LOW–HIGH around every value with room for the next recording, at two significant digits.

    The values seen are widened by the larger of their spread and 5% of their magnitude on each
    side (never below zero for values that are all positive). A stale range keeps as much of
    itself as the looseness rule allows: it held for the recordings before these, so it is the
    only record of how far the figure moves between refreshes, which one refresh's repeats do
    not show. First choice, for positive values: a range at most half its upper end wide, which
    the looseness rule allows whatever the next recording's spread (a range that leaned on
    4 x this spread was "too loose" on the H200 the next time, when the spread was smaller).
    Failing that, the widened values (with the old ends, then without), and last the values
    rounded outwards to the spread's leading digit.
    """
    _, _, numbers = span
    low, high = min(numbers), max(numbers)
    spread = high - low
    margin = max(spread, max(abs(low), abs(high)) * Decimal(str(ACCEPT_MARGIN)))
    widened = (low - margin, high + margin)
    union = (min(widened[0], claim.low), max(widened[1], claim.high)) if claim.kind == "range" else widened
    if low > 0 and 2 * low >= high:
        if claim.kind == "range":   # keep the old range's side first, the upper end before the lower
            hi = min(union[1], 2 * low)
            lo = max(union[0], hi / 2)
        else:                       # no history: equal room on both sides, as ratios
            lo = min(low, max(widened[0], (low * high / 2).sqrt()))
            hi = min(widened[1], 2 * lo)
        text = _rounded_range(lo, hi, low, high, claim, sample, robust=True)
        if text:
            return text
    for wide_low, wide_high in dict.fromkeys([union, widened]):
        if low >= 0 and wide_low < 0:
            wide_low = Decimal(0)
        text = _rounded_range(wide_low, wide_high, low, high, claim, sample, robust=False)
        if text:
            return text
    unit = Decimal(1).scaleb(spread.adjusted())
    low, high = _to_unit(low, unit, ROUND_FLOOR), _to_unit(high, unit, ROUND_CEILING)
    return f"{_written(low, claim)}{EN_DASH}{_written(high, claim)}"


def _rounded_range(lo: Decimal, hi: Decimal, low: Decimal, high: Decimal, claim: ClaimValue, sample: Sample,
                   robust: bool) -> str | None:
    """`lo`–`hi` rounded to two (else three) significant digits so that it holds every value; None if it cannot.

    Outward rounding is tried first. `robust`: the range must also be at most half its upper
    end wide, so that the looseness rule allows it whatever the spread.
    """
    top = max(abs(lo), abs(hi))
    if top == 0:
        return None
    for digits in (2, 3):
        unit = Decimal(1).scaleb(top.adjusted() - digits + 1)
        ends = [(_to_unit(lo, unit, r_lo), _to_unit(hi, unit, r_hi))
                for r_lo in (ROUND_FLOOR, ROUND_CEILING) for r_hi in (ROUND_CEILING, ROUND_FLOOR)]
        for a, b in ends:
            if not (a <= low and b >= high and a < b) or (robust and b - a > abs(b) / 2):
                continue
            text = f"{_written(a, claim)}{EN_DASH}{_written(b, claim)}"
            if _holds(text, sample):
                return text
    return None


def _written(value: Decimal, claim: ClaimValue) -> str:
    """A number as accept writes it: with thousands separators when the author used them."""
    text = show_number(value)
    if claim.separated and "." not in text:
        return f"{int(value):,}"
    if abs(value) >= 10**6 and not claim.separated:  # 3.2e9 reads better than ten digits
        mantissa = show_number(value.scaleb(-value.adjusted()))
        return f"{mantissa}e{value.adjusted()}"
    return text
