"""A page's YAML front matter, read in one place for every rule that needs it.

MkDocs reads a key such as `32:` as the number 32 and accepts it; Zensical refuses the whole
page ("metadata mapping keys must be strings"), and YAML turns `0.50:` into 0.5 and `yes:` into
True, so the key no longer says what the author wrote. Every key must be text: a key YAML
reads as anything else is an error naming its line, with the quoted key to write instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import yaml

from lessonkit.errors import LessonError
from lessonkit.textio import FRONT_MATTER_RE

_YAML = "tag:yaml.org,2002:"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML has it: the same reading, faster
# What YAML makes of a plain key that is not text, as a message names it.
_KINDS = {"int": "a number", "float": "a number", "bool": "a truth value", "null": "null",
          "timestamp": "a date"}


@dataclass(frozen=True)
class FrontMatter:
    """The front matter of a page: its settings, the lines it takes and what is wrong with it."""

    meta: Mapping[str, Any] = field(default_factory=dict)  # empty: none, unreadable, or not a mapping
    lines: int = 0  # lines above the page's Markdown, the `---` lines included
    errors: tuple[LessonError, ...] = ()


@lru_cache(maxsize=64)
def read_front_matter(source: str, path: str) -> FrontMatter:
    """The front matter of the page file's text `source` (`path`: as messages name the page); read
    once per text (a check reads it for the page and again for its audit). Its `meta` is shared:
    read it, never change it."""
    m = FRONT_MATTER_RE.match(source)
    if not m:
        return FrontMatter()
    lines = m.group().count("\n")
    text = m.group("yaml") or ""
    try:
        root = yaml.compose(text, Loader=_LOADER)
        meta = yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        return FrontMatter({}, lines, (LessonError(path, 1, f"cannot read the front matter: {exc}", rank=0),))
    if meta is not None and not isinstance(meta, dict):
        # MkDocs drops front matter that is not a mapping and shows it as the page's text: one error, its cause.
        kind = {list: "a list", str: "a line of text"}.get(type(meta), f"a {type(meta).__name__}")
        return FrontMatter({}, lines, (LessonError(path, 2, f"the front matter is {kind}, not a mapping of keys to "
                                                   "values; MkDocs would drop it and show it as the page's text; "
                                                   "write each setting as 'key: value' (narrative: then its "
                                                   "phrases, indented, as 'phrase: why')", rank=0),))
    return FrontMatter(meta if isinstance(meta, dict) else {}, lines, tuple(_key_errors(root, path)))


def _key_errors(root: yaml.Node | None, path: str) -> list[LessonError]:
    """An error for every key, at any depth, that YAML reads as something other than text."""
    errors = []
    pending = [root] if root is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.SequenceNode):
            pending.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.tag != _YAML + "str":
                    errors.append(_key_error(key, path))
                pending.append(value)
    return sorted(errors, key=lambda e: e.line or 0)


def _key_error(key: yaml.Node, path: str) -> LessonError:
    line = key.start_mark.line + 2  # the YAML starts on the line after the opening `---`
    if isinstance(key, yaml.ScalarNode):
        kind = _KINDS.get(key.tag.removeprefix(_YAML), f"tag {key.tag!r}")
        quoted = '"' + key.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return LessonError(path, line, f"front-matter key {key.value!r} is read by YAML as {kind}, not "
                           "as text (Zensical refuses the page: 'metadata mapping keys must be strings'); "
                           f"quote it: {quoted}: ...", rank=0)
    return LessonError(path, line, "a front-matter key is a list or mapping, not text (Zensical refuses "
                       "the page: 'metadata mapping keys must be strings'); write the key as quoted text",
                       rank=0)
