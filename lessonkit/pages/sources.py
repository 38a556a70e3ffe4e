"""Figures a page quotes from a published work (a paper, a manual), bound to where the work gives them.

A figure no recording of the course holds, and that the page takes from a paper ("0 weak outcomes in
100,000 runs, the paper's Table 6"), is a claim on the course's list of sources, `sources.yml` at the
repository's root: `{{ 2,888 @ sources/alglave2015:t6-titan-mp-bank }}`. The list gives each work
once (its citation, address and, for a paper, its year) and each figure the course quotes from it, with the place in
the work that gives it:

    alglave2015:
      cite: Alglave et al., GPU concurrency: weak behaviours and programming assumptions, ASPLOS
      year: 2015
      url: https://doi.org/10.1145/2694344.2694391
      figures:
        t6-titan-mp-bank: {value: "2,888", where: "Table 6: MP across CTAs, GTX Titan, general bank conflicts"}

The claim holds when its value is the figure the list gives (thousands separators aside); the
page's reader sees what backs it (the work, the place, the address) as for any claim. A work's
`year` is a figure too (`ASPLOS {{ 2015 @ sources/alglave2015:year }}`). The list is the one place a
quoted figure is typed, so a page cannot quote a work's figure the list does not give, and two pages
cannot quote one figure two ways.

Pure: `parse_sources(text)` reads the file's text; `load_sources(repo)` reads the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from lessonkit.errors import LessonError
from lessonkit.repo import SOURCES_FILE
from lessonkit.textio import compose_yaml, read_text

PREFIX = "sources/"
_FIELDS = ("cite", "year", "url", "figures")


@dataclass(frozen=True)
class Quoted:
    """One figure a work gives: its value as the work writes it, the place that gives it, its line in the list."""

    value: str
    where: str
    line: int


@dataclass(frozen=True)
class Work:
    """A published work the course quotes: its citation, year, address and the figures quoted from it."""

    key: str
    cite: str
    year: str
    url: str
    line: int
    figures: dict[str, Quoted] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.cite}" + (f" ({self.year})" if self.year else "") + f", {self.url}"


@dataclass(frozen=True)
class Sources:
    works: dict[str, Work] = field(default_factory=dict)
    errors: tuple[LessonError, ...] = ()
    text: str = ""


def load_sources(repo: Path) -> Sources:
    """The course's list of sources; none when the file is absent."""
    path = repo / SOURCES_FILE
    if not path.is_file():
        return Sources()
    try:
        return parse_sources(read_text(path, SOURCES_FILE))
    except LessonError as exc:
        return Sources(errors=(exc,))


def _error(line: int, message: str) -> LessonError:
    return LessonError(SOURCES_FILE, line, message, rank=0)


@lru_cache(maxsize=8)
def parse_sources(text: str) -> Sources:
    """The works `text` lists, and one error for each entry it cannot read (naming its line)."""
    try:
        root = compose_yaml(text, SOURCES_FILE, unplaced=1)
    except LessonError as exc:
        return Sources(errors=(exc,), text=text)
    if root is None:
        return Sources(text=text)
    if not isinstance(root, yaml.MappingNode):
        return Sources(errors=(_error(1, "must map each work's key to its cite, year, url and figures"),), text=text)
    works, errors = {}, []
    for key_node, value in root.value:
        try:
            work = _work(key_node, value, errors)
        except LessonError as exc:
            errors.append(exc)
            continue
        works[work.key] = work
    return Sources(works, tuple(errors), text)


def _work(key_node: yaml.Node, value: yaml.Node, errors: list[LessonError]) -> Work:
    """One entry of the list: a work's cite, year, url and figures (a figure it cannot read is an error
    in `errors`, the work kept); LessonError naming its line when the work itself cannot be read."""
    line = key_node.start_mark.line + 1
    key = key_node.value if isinstance(key_node, yaml.ScalarNode) else ""
    if not key or not isinstance(value, yaml.MappingNode):
        raise _error(line, f"work {key!r} must map cite, year, url and figures")
    parts = {k.value: v for k, v in value.value if isinstance(k, yaml.ScalarNode)}
    unknown = sorted(set(parts) - set(_FIELDS))
    missing = [f for f in ("cite", "url") if not (isinstance(parts.get(f), yaml.ScalarNode) and parts[f].value.strip())]
    if unknown or missing:
        said = (f"has no {', '.join(missing)}" if missing else "") + (
            ("; " if missing else "") + f"has unknown field {', '.join(unknown)} (it may have {', '.join(_FIELDS)})"
            if unknown else "")
        raise _error(line, f"work {key!r} {said}")
    year = parts["year"].value if isinstance(parts.get("year"), yaml.ScalarNode) else ""
    return Work(key, parts["cite"].value, year, parts["url"].value, line, _figures(key, parts.get("figures"), errors))


def _figures(key: str, node: yaml.Node | None, errors: list[LessonError]) -> dict[str, Quoted]:
    """A work's figures, each with its value and where the work gives it; one that lacks either is an
    error in `errors`; LessonError when they are not a mapping."""
    if node is None:
        return {}
    if not isinstance(node, yaml.MappingNode):
        raise _error(node.start_mark.line + 1, f"work {key!r}: figures must map each figure's name to "
                     "{value: ..., where: ...}")
    figures: dict[str, Quoted] = {}
    for name_node, figure in node.value:
        at = name_node.start_mark.line + 1
        entry = {k.value: v.value for k, v in figure.value
                 if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)} if isinstance(
            figure, yaml.MappingNode) else {}
        if not str(entry.get("value", "")).strip() or not str(entry.get("where", "")).strip():
            errors.append(_error(at, f"figure {name_node.value!r} of {key!r} needs a value and where the work "
                                 "gives it: {value: \"2,888\", where: \"Table 6: ...\"}"))
            continue
        figures[name_node.value] = Quoted(str(entry["value"]), str(entry["where"]), at)
    return figures


def quoted(sources: Sources, ref: str, query: str) -> tuple[Quoted, Work] | str:
    """The figure `sources/KEY:NAME` names (NAME `year` is the work's year), or why it names none."""
    import difflib

    key = ref.removeprefix(PREFIX)
    work = sources.works.get(key)
    if work is None:
        near = difflib.get_close_matches(key, list(sources.works), n=1)
        hint = f"did you mean {near[0]!r}?" if near else f"it lists: {', '.join(sorted(sources.works)) or 'none'}"
        return f"{SOURCES_FILE} lists no work {key!r}; {hint}"
    if query == "year":
        if not work.year:
            return f"{SOURCES_FILE} gives no year of {key!r}; add year: to its entry (line {work.line})"
        return Quoted(work.year, "its year", work.line), work
    figure = work.figures.get(query)
    if figure is None:
        near = difflib.get_close_matches(query, list(work.figures), n=1)
        hint = f"did you mean {near[0]!r}?" if near else f"it gives: year, {', '.join(sorted(work.figures))}"
        return (f"{SOURCES_FILE} gives no figure {query!r} of {key!r}; {hint} (a figure the page quotes from a work "
                "is listed there once, with where the work gives it)")
    return figure, work
