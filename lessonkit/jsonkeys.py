"""JSON objects whose keys are unique: a duplicated key is an error at its line, never "the last one wins".

Python's json module keeps the last of two equal keys in an object without a word, so a hand-made
manifest.json or artifact could carry two values for one field and show only one of them to a
check. `loads` reads JSON as json.loads does (its keyword arguments too) and refuses an object
with a key it already has. The fast path finds the duplicate through `object_pairs_hook`; only
then is the text scanned once more, by `duplicate_key_line`, to name the line of the second key.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A JSON text's tokens for the line search: strings (skipped whole, so braces inside them do not
# count), the structural characters, and colons, which tell a key from a value.
_TOKEN_RE = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<open>[{\[])
  | (?P<close>[}\]])
  | (?P<colon>:)""", re.VERBOSE | re.DOTALL)


class DuplicateKey(ValueError):
    """A JSON object names the same key twice; `key` is the key, `line` (1-based) where it appears again."""

    def __init__(self, key: str, line: int | None) -> None:
        super().__init__(f"the key {key!r} appears twice in one object")
        self.key, self.line = key, line


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKey(key, None)
        seen[key] = value
    return seen


def loads(text: str, **kwargs: Any) -> Any:
    """json.loads, refusing an object with a duplicated key (DuplicateKey, with the line of the second one)."""
    try:
        return json.loads(text, object_pairs_hook=_unique, **kwargs)
    except DuplicateKey as exc:
        raise DuplicateKey(exc.key, duplicate_key_line(text)) from None


def duplicate_key_line(text: str) -> int | None:
    """The 1-based line of the first key that repeats a key of its own object, or None."""
    stack: list[set[str] | None] = []  # one entry per open object (its keys) or array (None)
    pending: tuple[str, int] | None = None  # the last string read, and where, until a colon makes it a key
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind == "string":
            pending = (m.group(), m.start())
        elif kind == "colon" and pending is not None and stack and stack[-1] is not None:
            key = json.loads(pending[0])
            if key in stack[-1]:
                return text.count("\n", 0, pending[1]) + 1
            stack[-1].add(key)
            pending = None
        elif kind == "open":
            stack.append(set() if m.group() == "{" else None)
            pending = None
        elif kind == "close":
            if stack:
                stack.pop()
            pending = None
    return None
