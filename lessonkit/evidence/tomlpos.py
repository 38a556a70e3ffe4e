"""Where a key of a TOML file is written: tomllib gives values without lines, messages need them.

A light scan, not a second parser: it knows table headers (`[a.b]`, `[[a.b]]`), `key =` lines and
multi-line strings (whose lines are never headers or keys). It is asked only about files tomllib
has already read, so it need not judge what is valid.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEADER_RE = re.compile(r"""^\s*(?P<open>\[\[?)\s*(?P<name>[^\[\]]+?)\s*\]\]?\s*(?:\#.*)?$""")
_KEY_RE = re.compile(r"""^\s*(?P<key>[A-Za-z0-9_-]+|"[^"]*"|'[^']*')\s*=""")
_DELIMS = ("'''", '"""')


@dataclass(frozen=True)
class Position:
    """The line of a key (or table header) in a TOML text, and where its value's text begins."""

    line: int
    value_on_next_line: bool = False  # a multi-line string that opens at the end of the key's line


def _name(header: str) -> str:
    return ".".join(part.strip().strip("\"'") for part in header.split("."))


def locate(text: str, table: str, index: int | None = None, key: str | None = None) -> Position | None:
    """The line of `key` in table `table` (dotted, e.g. "harness.types"), or of the table's header
    when `key` is None or not written as `key =` there (an inline table). `index` picks the n-th
    (1-based) header of an array of tables. None when the table is not found."""
    seen = 0
    inside = False
    found: Position | None = None
    delim: str | None = None  # the delimiter of the multi-line string being read, if any
    for number, line in enumerate(text.splitlines(), start=1):
        if delim is not None:
            if line.count(delim) % 2 == 1:
                delim = None
            continue
        if m := _HEADER_RE.match(line):
            if inside:
                return found
            if _name(m.group("name")) == table:
                seen += 1
                if index is None or seen == index:
                    inside, found = True, Position(number)
                    if key is None:
                        return found
            continue
        if inside and (k := _KEY_RE.match(line)) and k.group("key").strip("\"'") == key:
            rest = line[k.end():].strip()
            return Position(number, rest in _DELIMS)
        for d in _DELIMS:
            if line.count(d) % 2 == 1:
                delim = d
                break
    return found if inside else None
