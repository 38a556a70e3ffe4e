"""A lesson's harness format: how the program's own lines are read, declared in its runs.toml.

The core reads compute-sanitizer's lines itself; everything else a program prints is read by the
`[harness]` table of the lesson's runs.toml: lines that set scalars or add records, and tables
(a header, rows, a blank line to end them), each a verbose regular expression whose named groups
are the values. `parse_harness` checks a declaration; `HarnessReader` applies one to a transcript.
No lesson's format lives here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from lessonkit.errors import LessonError
from lessonkit.evidence.tomlpos import locate, unknown_key


def _yes_no(text: str) -> bool:
    if text not in ("yes", "no"):
        raise ValueError(text)
    return text == "yes"


# A group's type: how its text becomes a value, and how a message names the type.
TYPES: dict[str, tuple[Callable[[str], Any], str]] = {
    "str": (str, "text"),
    "int": (int, "an integer"),
    "float": (float, "a number"),
    "yes-no": (_yes_no, "'yes' or 'no'"),
}
DEFAULT_COLLECTION = "rows"
_NAME_RE = re.compile(r"""\A[A-Za-z_][A-Za-z0-9_]*\Z""")

# Each kind of declaration: its keys and their types; _VALUED: the patterns whose groups are values.
_LINE_KEYS = {"name": str, "pattern": str, "starts": str, "form": str, "collection": str, "many": bool}
_TABLE_KEYS = {"name": str, "collection": str, "header": str, "row": str, "starts": str,
               "row_starts": str, "skip": str, "header_form": str, "row_form": str}
_TOP_KEYS = {"types": dict, "line": list, "table": list}
_VALUED = {"pattern", "row"}  # patterns whose named groups are the values read


@dataclass(frozen=True)
class LineForm:
    """A kind of line the program prints: its groups become scalars, or one record of a collection."""

    name: str
    pattern: re.Pattern[str]
    starts: re.Pattern[str] | None
    form: str
    collection: str | None
    many: bool


@dataclass(frozen=True)
class TableForm:
    """A table: a header line opens it, rows follow (one record each), a blank line ends it."""

    name: str
    collection: str
    header: re.Pattern[str]
    row: re.Pattern[str]
    starts: re.Pattern[str] | None
    row_starts: re.Pattern[str] | None
    skip: re.Pattern[str] | None
    header_form: str
    row_form: str


@dataclass(frozen=True)
class HarnessFormat:
    """A lesson's `[harness]` declaration, checked. Equal declarations compare equal wherever they
    were written: `source` (the runs.toml, for messages) is not part of what reads a transcript."""

    source: str = field(compare=False)
    types: tuple[tuple[str, str], ...]
    lines: tuple[LineForm, ...] = ()
    tables: tuple[TableForm, ...] = ()
    collections: tuple[str, ...] = ()  # in the order declared: the order a transcript lists them

    @cached_property
    def _type_of(self) -> dict[str, str]:
        return dict(self.types)

    def convert(self, group: str, text: str) -> Any:
        """The value of `group` read as `text` (ValueError if it is not of its declared type)."""
        return TYPES[self._type_of.get(group, "str")][0](text)

    def type_name(self, group: str) -> str:
        """How a message names the type of `group`."""
        return TYPES[self._type_of.get(group, "str")][1]


def parse_harness(data: object, text: str, source: str) -> HarnessFormat | None:
    """The `[harness]` table of a runs.toml (`data`, as tomllib read it from `text`), checked;
    None when there is none. LessonError naming `source` and the line of the faulty key."""
    if data is None:
        return None
    return _Declaration(text, source).parse(data)


def _shown(pattern: str) -> str:
    """A pattern as a message shows it when no form is declared: on one line."""
    return repr(" ".join(pattern.split()))


@dataclass
class _Declaration:
    text: str
    source: str
    groups: set[str] = field(default_factory=set)

    def error(self, table: str, index: int | None, key: str | None, what: str) -> LessonError:
        where = locate(self.text, table, index, key)
        if where is None and key is not None:  # a key written as a table of its own: its header
            where = locate(self.text, f"{table}.{key}")
        if where is None and "." in table:  # an inline table: the line of the key that holds it
            parent, _, last = table.rpartition(".")
            where = locate(self.text, parent, None, last)
        label = f"[[{table}]] number {index}" if index is not None else f"[{table}]"
        return LessonError(self.source, where.line if where else None, f"{label}: {what}", rank=0)

    def parse(self, data: object) -> HarnessFormat:
        if not isinstance(data, dict):
            raise LessonError(self.source, None, "'harness' must be a table: [harness.types], "
                              "[[harness.line]], [[harness.table]]", rank=0)
        top = self.keys(data, _TOP_KEYS, "harness", None)
        lines = tuple(self.line(raw, i) for i, raw in enumerate(self.array(top, "line"), start=1))
        tables = tuple(self.table(raw, i) for i, raw in enumerate(self.array(top, "table"), start=1))
        types = self.types(top.get("types", {}))
        if not lines and not tables:
            raise self.error("harness", None, None, "declares no [[harness.line]] and no [[harness.table]]; "
                             "declare how the program's lines are read, or remove [harness]")
        order: list[str] = []
        for kind in top:  # tomllib keeps the order the file first names each key in
            for form in {"line": lines, "table": tables}.get(kind, ()):
                if form.collection is not None and form.collection not in order:
                    order.append(form.collection)
        return HarnessFormat(self.source, types, lines, tables, tuple(order))

    def array(self, top: dict[str, Any], kind: str) -> list[dict[str, Any]]:
        raw = top.get(kind, [])
        if not isinstance(raw, list) or not all(isinstance(r, dict) for r in raw):
            raise self.error("harness", None, kind, f"'{kind}' must be an array of tables "
                             f"([[harness.{kind}]])")
        return raw

    def keys(self, raw: object, allowed: dict[str, type], table: str, index: int | None) -> dict[str, Any]:
        assert isinstance(raw, dict)
        for key, value in raw.items():
            if key not in allowed:
                raise self.error(table, index, key, unknown_key(key, allowed))
            if not isinstance(value, allowed[key]):
                kind = {str: "a string", bool: "true or false", dict: "a table", list: "an array"}
                raise self.error(table, index, key, f"{key!r} must be {kind[allowed[key]]}")
        return raw

    def pattern(self, raw: dict[str, Any], key: str, table: str, index: int, required: bool
                ) -> re.Pattern[str] | None:
        if key not in raw:
            if required:
                raise self.error(table, index, None, f"{key!r} is missing; expected a regular expression")
            return None
        try:
            compiled = re.compile(raw[key], re.VERBOSE)
        except re.error as exc:
            where = locate(self.text, table, index, key)
            line = None
            if where is not None:  # the pattern's own line, when its text starts on the next one
                line = where.line + (exc.lineno or 1) - (0 if where.value_on_next_line else 1)
            raise LessonError(self.source, line, f"[[{table}]] number {index}: {key!r} is not a valid "
                              f"regular expression: {exc.msg} at position {exc.pos} of the pattern",
                              rank=0) from None
        if key in _VALUED:
            if not compiled.groupindex:
                raise self.error(table, index, key, f"{key!r} names no group; write each value as "
                                 "(?P<name>...), the name being how pages query it")
            for group in compiled.groupindex:
                if group.startswith("_"):
                    raise self.error(table, index, key, f"group {group!r} starts with '_', which is kept "
                                     "for the record's own fields; rename it")
            self.groups.update(compiled.groupindex)
        return compiled

    def collection(self, raw: dict[str, Any], table: str, index: int, default: str | None) -> str | None:
        name = raw.get("collection", default)
        if name is not None and not _NAME_RE.match(name):
            raise self.error(table, index, "collection", f"collection {name!r} must be a name of letters, "
                             "digits and '_' (a query writes it as NAME[...])")
        return name

    def line(self, raw: object, index: int) -> LineForm:
        table = "harness.line"
        raw = self.keys(raw, _LINE_KEYS, table, index)
        pattern = self.pattern(raw, "pattern", table, index, required=True)
        collection = self.collection(raw, table, index, None)
        if collection is not None and raw.get("many"):
            raise self.error(table, index, "many", "'many' is for scalars; a collection already "
                             "holds one record per line")
        assert pattern is not None
        return LineForm(raw.get("name", collection or "harness"), pattern,
                        self.pattern(raw, "starts", table, index, required=False),
                        raw.get("form", _shown(raw["pattern"])), collection, bool(raw.get("many")))

    def table(self, raw: object, index: int) -> TableForm:
        table = "harness.table"
        raw = self.keys(raw, _TABLE_KEYS, table, index)
        header = self.pattern(raw, "header", table, index, required=True)
        row = self.pattern(raw, "row", table, index, required=True)
        collection = self.collection(raw, table, index, DEFAULT_COLLECTION)
        assert header is not None and row is not None and collection is not None
        return TableForm(
            raw.get("name", "harness"), collection, header, row,
            self.pattern(raw, "starts", table, index, required=False),
            self.pattern(raw, "row_starts", table, index, required=False),
            self.pattern(raw, "skip", table, index, required=False),
            raw.get("header_form", _shown(raw["header"])), raw.get("row_form", _shown(raw["row"])))

    def types(self, raw: object) -> tuple[tuple[str, str], ...]:
        if not isinstance(raw, dict):
            raise self.error("harness", None, "types", "'types' must be a table: GROUP = TYPE")
        for group, kind in raw.items():
            if kind not in TYPES:
                raise self.error("harness.types", None, group, f"group {group!r} has unknown type {kind!r}; "
                                 f"expected one of {', '.join(TYPES)}")
            if group not in self.groups:
                raise self.error("harness.types", None, group, f"group {group!r} is in no pattern; the "
                                 f"patterns name {', '.join(sorted(self.groups))}")
        return tuple(raw.items())


@dataclass
class HarnessReader:
    """Reads a transcript's program lines by a HarnessFormat: scalars into `scalars`, records into
    `records` (every declared collection, empty until a line adds to it)."""

    harness: HarnessFormat
    source: str
    scalars: dict[str, Any]
    records: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    open: TableForm | None = None  # the table whose rows are being read

    def __post_init__(self) -> None:
        self.records = {name: [] for name in self.harness.collections}
        # Whether a blank line only ends a table (no form reads or refuses it): then it is taken
        # at once, so a transcript of a million blank lines reads in a fraction of a second.
        self._blank_ends_a_table = not any(
            p is not None and p.search("")
            for p in [*(x for f in self.harness.lines for x in (f.pattern, f.starts)),
                      *(x for t in self.harness.tables for x in (t.header, t.starts, t.row))])

    def read_any(self) -> bool:
        """Whether any line was read: a scalar set, or a record added."""
        return any(key != "tool" for key in self.scalars) or any(self.records.values())

    def read(self, line: str, number: int) -> None:
        """Take one stripped line of program output; LessonError for a line meant but unreadable."""
        if not line and self._blank_ends_a_table:
            self.open = None
            return
        for form in self.harness.lines:
            if m := form.pattern.search(line):
                self._take(form, m, number)
                return
            if form.starts is not None and form.starts.search(line):
                raise LessonError(self.source, number, f"unreadable {form.name} line {line!r}; "
                                  f"expected {form.form}")
        for table in self.harness.tables:
            if table.header.search(line):
                self.open = table
                return
        for table in self.harness.tables:
            if table.starts is not None and table.starts.search(line):
                raise LessonError(self.source, number, f"unreadable {table.name} table header {line!r}; "
                                  f"expected {table.header_form}")
        if self.open is None:
            for table in self.harness.tables:
                if table.row.search(line):
                    raise LessonError(self.source, number, f"{table.name} row {line!r} has no table header "
                                      f"above it; expected the header {table.header_form} first (a blank "
                                      "line ends a table)")
        elif not line:
            self.open = None
        elif ((self.open.row_starts is None or self.open.row_starts.search(line))
              and not (self.open.skip is not None and self.open.skip.search(line))):
            m = self.open.row.search(line)
            if m is None:
                raise LessonError(self.source, number, f"malformed {self.open.name} row {line!r}; "
                                  f"expected {self.open.row_form}")
            self.records[self.open.collection].append(self._values(m, number, line, keep_null=True))

    def _take(self, form: LineForm, m: re.Match[str], number: int) -> None:
        if form.collection is not None:
            self.records[form.collection].append(self._values(m, number, m.string, keep_null=True))
            return
        values = self._values(m, number, m.string, keep_null=False)
        values.pop("_line")
        for name, value in values.items():
            if form.many:
                self.scalars.setdefault(name, []).append(value)
            else:
                self.scalars[name] = value

    def _values(self, m: re.Match[str], number: int, line: str, keep_null: bool) -> dict[str, Any]:
        """The match's groups as typed values, then `_line`. A group that took no part is null in a
        record and sets no scalar."""
        out: dict[str, Any] = {}
        for name, _ in sorted(m.re.groupindex.items(), key=lambda item: item[1]):
            text = m.group(name)
            if text is None:
                if keep_null:
                    out[name] = None
                continue
            try:
                out[name] = self.harness.convert(name, text)
            except ValueError:
                raise LessonError(self.source, number, f"{name} {text!r} in {line!r} is not "
                                  f"{self.harness.type_name(name)}, as {self.harness.source} declares "
                                  "it; narrow the pattern or change the type") from None
        out["_line"] = number
        return out

    def collections(self) -> dict[str, tuple[dict[str, Any], ...]]:
        """Every declared collection's records, in the order declared."""
        return {name: tuple(items) for name, items in self.records.items()}
