"""Where a key of a TOML file is written: tomllib gives values without lines, messages need them.

A light scan, not a second parser: it knows table headers (`[a.b]`, `[[a.b]]`), `key =` lines and
multi-line strings (whose lines are never headers or keys). It is asked only about files tomllib
has already read, so it need not judge what is valid.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
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
    for number, header, line in _headers_and_keys(text):
        if header is not None:
            if inside:
                return found
            if header == table:
                seen += 1
                if index is None or seen == index:
                    inside, found = True, Position(number)
                    if key is None:
                        return found
            continue
        if inside and (k := _KEY_RE.match(line)) and k.group("key").strip("\"'") == key:
            return Position(number, line[k.end():].strip() in _DELIMS)
    return found if inside else None


@functools.lru_cache(maxsize=16)
def _headers_and_keys(text: str) -> tuple[tuple[int, str | None, str], ...]:
    """(line, header name or None, line text) for each line outside a multi-line string; scanned
    once per text (a runs.toml's every key is located when it is read)."""
    out: list[tuple[int, str | None, str]] = []
    delim: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if delim is not None:
            if line.count(delim) % 2 == 1:
                delim = None
            continue
        m = _HEADER_RE.match(line)
        out.append((number, _name(m.group("name")) if m else None, line))
        if m:
            continue  # a header opens no string
        for d in _DELIMS:
            if line.count(d) % 2 == 1:
                delim = d
                break
    return tuple(out)


def key_line(text: str, table: str, index: int | None, key: str) -> int | None:
    """The line where `key` of table `table` ("" for the top level; `index`: the n-th of an array of
    tables) is written: as `key =` in the table or in an inline table it holds (the first such
    line after its header), or as a header `[table.key...]`; else the table's own line; None when
    neither is found. For messages about a key tomllib read but the schema does not know."""
    lines = _headers_and_keys(text)
    written = re.compile(r"""(?:^|[{,\s])["']?""" + re.escape(key) + r"""["']?\s*=""")
    start: int | None = 1 if table == "" else None
    if table and (pos := locate(text, table, index)) is not None:
        start = pos.line
    elif table and "." not in table:  # an array written inline: `run = [{...}, ...]`
        start = key_line(text, "", None, table)
    if start is not None:
        for number, header, line in lines:
            if number < start or (number == start and header is not None and table):
                continue  # before the table, or its own header
            if header is not None:
                break
            if written.search(line.split("#", 1)[0]):
                return number
    full = f"{table}.{key}" if table else key
    for number, header, _ in lines:
        if header is not None and (header == full or header.startswith(full + ".")):
            return number
    return start if table else None


def unknown_key(key: str, known: Iterable[str]) -> str:
    """What a message says of a key that is not one of `known`: the closest known key, else all of them."""
    near = difflib.get_close_matches(key, sorted(known), n=1)
    if near:
        return f"unknown key {key!r}; did you mean {near[0]!r}?"
    return f"unknown key {key!r}; expected one of {', '.join(sorted(known))}"
