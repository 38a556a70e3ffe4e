"""How a lesson names its evidence on a page, declared once in code/<lesson>/runs.toml.

    [names]                      # a key or field -> its name in a header
    kernel = "kernel"
    mismatches = "elements wrong"
    [labels.kernel]              # a value -> its label: "racy scan" means kernel=scanTileRacy everywhere
    scanTileRacy = "racy scan"
    [labels.run]                 # `run` is the run a record comes from
    bare-all = "output check"
    [formats]                    # a label for every value of a key that has none: "32 threads"
    threads = "{} threads"
    [units]                      # a field's unit, where its name does not say it
    rate = "fraction"

A label stands for exactly one value of its key, so two values may not share one.

A field's unit is its [units] declaration, else what its name's suffix says (`unit_by_name`:
`wall_s` seconds, `launch_us` microseconds, `weak_per_100k` per 100,000, `o00_fraction` a fraction,
`instances_per_s` a rate per second); a declaration may not contradict the name. A unit word in
a [names] header (`typed_units`) must be the field's unit: "ms a launch" over `launch_us` is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lessonkit.errors import LessonError
from lessonkit.evidence.tomlpos import key_line

UNITS = ("fraction", "percent", "per 100000", "s", "ms", "\u00b5s", "per s")
# What a field's name says its unit is, by its suffix (the first that fits).
_SUFFIX_UNITS = (("_per_s", "per s"), ("_per_100k", "per 100000"), ("_fraction", "fraction"),
                 ("_ms", "ms"), ("_us", "\u00b5s"), ("_s", "s"))
# Seconds and rates per second change from run to run of unchanged code: a claim on one is a range or ~V.
TIME_UNITS = frozenset({"s", "ms", "\u00b5s", "per s"})


_DESCRIBED = {"fraction": "a fraction", "percent": "a percentage", "per 100000": "a rate per 100,000",
              "s": "seconds", "ms": "milliseconds", "\u00b5s": "microseconds", "per s": "a rate per second"}


def describe(unit: str) -> str:
    """A unit as a message says what a figure in it shows: 'microseconds', 'a rate per 100,000'."""
    return _DESCRIBED.get(unit, unit)


def unit_by_name(name: str) -> str | None:
    """The unit a field's name says by its suffix, or None."""
    for suffix, unit in _SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    return None


# A unit a reader reads in text: each alternative's canonical unit is worked out by `_canonical`.
_NUMBER_WORDS = {"hundred": 100, "thousand": 1000, "ten thousand": 10**4, "hundred thousand": 10**5,
                 "million": 10**6, "billion": 10**9}
UNIT_WORD = (r"""(?P<unit>%|\u2030|percent\b|per\s+cent\b|per\s+(?:\d[\d,]*|ten\s+thousand|hundred\s+thousand|"""
             r"""hundred|thousand|million|billion)\b|per\s+(?:second|sec|s)\b|/s\b|"""
             r"""milliseconds?\b|msecs?\b|ms\b|microseconds?\b|usecs?\b|[\u00b5\u03bc]s\b|us\b|"""
             r"""nanoseconds?\b|nsecs?\b|ns\b|seconds?\b|secs?\b|s\b)""")
_UNIT_WORD_RE = re.compile(UNIT_WORD, re.IGNORECASE)


def typed_unit(word: str) -> str:
    """The canonical unit of a unit word a reader reads (as `UNIT_WORD` matches it): 'ms' for
    'milliseconds', 'per 1000000' for 'per million', 'percent' for '%' and 'per 100'."""
    text = " ".join(word.lower().split())
    if text in ("%", "percent", "per cent"):
        return "percent"
    if text == "\u2030":
        return "per 1000"
    if text in ("per second", "per sec", "per s", "/s"):
        return "per s"
    if text.startswith("per "):
        amount = text[4:]
        n = _NUMBER_WORDS.get(amount) or int(amount.replace(",", ""))
        return "percent" if n == 100 else f"per {n}"
    for unit, words in (("ms", ("ms", "msec", "msecs", "millisecond", "milliseconds")),
                        ("\u00b5s", ("\u00b5s", "\u03bcs", "us", "usec", "usecs", "microsecond", "microseconds")),
                        ("ns", ("ns", "nsec", "nsecs", "nanosecond", "nanoseconds"))):
        if text in words:
            return unit
    return "s"


def typed_units(text: str) -> list[tuple[str, str]]:
    """Every unit word of a header, as (the word, its canonical unit); a unit right after a figure
    belongs to that figure ("97.5% upper bound"), not to the column."""
    found = []
    for m in _UNIT_WORD_RE.finditer(text):
        before = text[:m.start()].rstrip()
        if before[-1:].isdigit() or (m.start() and text[m.start() - 1].isalnum()):
            continue
        found.append((m.group("unit"), typed_unit(m.group("unit"))))
    return found


@dataclass(frozen=True)
class Display:
    """A lesson's names, labels, formats and units (empty when it declares none)."""

    names: dict[str, str] = field(default_factory=dict)
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)

    def name(self, key: str) -> str:
        """A key's or field's header: its declared name, or the key itself."""
        return self.names.get(key, key)

    def label(self, key: str, value: str) -> str:
        """A value's label: declared, formatted, or the value as the page writes it."""
        declared = self.labels.get(key, {}).get(value)
        if declared is not None:
            return declared
        fmt = self.formats.get(key)
        return fmt.replace("{}", value) if fmt else value

    def unit(self, key: str) -> str | None:
        """A field's unit: declared, else what its name says (`unit_by_name`), else None."""
        return self.units.get(key) or unit_by_name(key)


_NUMBER_RE = re.compile(r"""\d+(?:[.,]\d+)*""")
_PART_RE = re.compile(r"""[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+""")  # scanTileRacy -> scan, Tile, Racy


def _parts(text: str) -> set[str]:
    """The words of a name or a command, lower case: camelCase, snake_case, kebab-case and paths split."""
    return {p.lower() for p in _PART_RE.findall(text)}


def _foreign_word(key: str, value: str, label: str, own: str, everyone: dict[str, str]) -> str | None:
    """A word of `label` that names another value of `key` (or, for a run, another run's command) and
    not this one's: a label swapped with another's, or naming the wrong kernel, tool or mode."""
    mine = _parts(own)
    for word in sorted(_parts(label) - mine):
        others = [v for v, text in everyone.items() if v != value and word in _parts(text)]
        if others:
            return f"{word!r} names {others[0]!r}" + (f" ({everyone[others[0]]!r})" if key == "run" else "")
    return None


def parse_display(data: dict, source: str, commands: dict[str, str] | None = None, text: str = "") -> Display:
    """The display tables of a parsed runs.toml; LessonError for a malformed one.

    A label may not type a figure of its own: a number in a value's label is in the value
    (`4194304 = "2^22 elements"` is refused; write a format, `n = "{} elements"`), and a number
    in a run's label is in the run's command (`commands`: run name -> command)."""
    def strings(table: object, where: str) -> dict[str, str]:
        if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
            raise LessonError(source, None, f"[{where}]: expected a table of strings")
        return {str(k): v for k, v in table.items()}

    names = strings(data.get("names", {}), "names")
    raw_labels = data.get("labels", {})
    if not isinstance(raw_labels, dict):
        raise LessonError(source, None, "[labels]: expected tables [labels.KEY] of value = \"label\"")
    labels = {}
    for key, table in raw_labels.items():
        values = strings(table, f"labels.{key}")
        seen: dict[str, str] = {}
        for value, label in values.items():
            _check_label(key, value, label, values, commands, source)
            if label in seen:
                raise LessonError(source, None, f"[labels.{key}]: {seen[label]!r} and {value!r} are both "
                                  f"labelled {label!r}; a label must stand for one value")
            seen[label] = value
        labels[key] = values
    formats = strings(data.get("formats", {}), "formats")
    for key, fmt in formats.items():
        if fmt.count("{}") != 1:
            raise LessonError(source, None, f"[formats]: {key} = {fmt!r} must hold '{{}}' once, where the value goes")
    units = strings(data.get("units", {}), "units")
    for key, unit in units.items():
        _check_unit(key, unit, source, text)
    display = Display(names, labels, formats, units)
    for key, header in names.items():
        _check_header(display, key, header, source, text)
    return display


def _check_label(key: str, value: str, label: str, values: dict[str, str], commands: dict[str, str] | None,
                 source: str) -> None:
    """A label of [labels.KEY] (`values`: the table it is in) types no figure and names nothing else
    than what it labels (for `run`, the run's command: `commands`)."""
    source_text = (commands or {}).get(value, "") if key == "run" else value
    if key == "run" and commands is not None and value not in commands:
        raise LessonError(source, None, f"[labels.run]: {value!r} is not a run of this lesson")
    typed = [n for n in _NUMBER_RE.findall(label) if n not in _NUMBER_RE.findall(source_text)]
    if typed:
        whose = "the run's command" if key == "run" else f"the value {value!r}"
        raise LessonError(source, None, f"[labels.{key}]: {value} = {label!r} types the figure {typed[0]!r}, "
                          f"which is not in {whose}; a label's figures come from what it labels")
    everyone = (commands or {}) if key == "run" else {v: v for v in values}
    foreign = _foreign_word(key, value, label, source_text, everyone)
    if foreign is not None:
        whose = "its command" if key == "run" else "its value"
        raise LessonError(source, None, f"[labels.{key}]: {value} = {label!r}: {foreign}, not {value!r}; "
                          f"a label's words name what it labels: write them from {whose}")


def _check_unit(key: str, unit: str, source: str, text: str) -> None:
    """A declared unit is a unit, and the one the field's name says, if it says one."""
    if unit not in UNITS:
        raise LessonError(source, key_line(text, "units", None, key) if text else None,
                          f"[units]: {key} = {unit!r} is not a unit; use one of: {', '.join(UNITS)}")
    if unit_by_name(key) not in (None, unit):
        raise LessonError(source, key_line(text, "units", None, key) if text else None,
                          f"[units]: {key} = {unit!r}, but its name says {unit_by_name(key)!r}; a field's "
                          "unit is what its name says: remove the declaration, or rename the field")


def _check_header(display: Display, key: str, header: str, source: str, text: str) -> None:
    """A column header of [names] names no other unit than its field's."""
    unit = display.unit(key)
    for word, typed in typed_units(header):
        if typed != unit:
            whose = f"{key!r} shows {describe(unit)}" if unit else f"{key!r} has no unit (a count or a name)"
            raise LessonError(source, key_line(text, "names", None, key) if text else None,
                              f"[names]: {key} = {header!r} names the unit {word!r}, but {whose}; "
                              "a header's unit is its field's")
