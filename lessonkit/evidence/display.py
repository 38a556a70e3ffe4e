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
    [units]                      # a field's unit: fraction, percent, per 100000, s
    o00_fraction = "fraction"

A label stands for exactly one value of its key, so two values may not share one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lessonkit.errors import LessonError

UNITS = ("fraction", "percent", "per 100000", "s")


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

    def labels_of(self, key: str, value: str) -> set[str]:
        """Every text that binds to KEY=VALUE: the value itself and its label."""
        return {value, self.label(key, value)}

    def names_of(self, key: str) -> set[str]:
        """Every text that names a key in a header: the key and its declared name."""
        return {key, self.name(key)}

    def unit(self, key: str) -> str | None:
        """A field's declared unit, or None."""
        return self.units.get(key)


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


def parse_display(data: dict, source: str, commands: dict[str, str] | None = None) -> Display:
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
        if unit not in UNITS:
            raise LessonError(source, None, f"[units]: {key} = {unit!r} is not a unit; use one of: {', '.join(UNITS)}")
    return Display(names, labels, formats, units)
