"""Reading text files strictly as UTF-8, so the command line and the build refuse the same files.

The refresh writes every transcript as UTF-8 (it decodes tool output with replacement
characters), so a file with invalid bytes was not written by it. Such a file is an error
naming the line and column of the first bad byte, never text silently repaired.
"""

from __future__ import annotations

import re
from pathlib import Path

from lessonkit.errors import LessonError

# A page's YAML front matter, as MkDocs reads it: `---` lines around it at the top of the file,
# after a byte-order mark if the file starts with one (MkDocs and Zensical drop it).
FRONT_MATTER_RE = re.compile(r"""\A\ufeff?---[ \t]*\n(?P<yaml>.*?\n)?(?:---|\.\.\.)[ \t]*\n""", re.DOTALL)


# What a message about bad bytes says is expected: of a file an author writes, and of evidence.
SAVE_AS_UTF8 = "save the file as UTF-8"
WRITTEN_BY_REFRESH = "expected UTF-8 text (the refresh writes only UTF-8, so it did not write this file)"


def read_text(path: Path, shown: str, expected: str = SAVE_AS_UTF8) -> str:
    """The file's text, newlines as Path.read_text gives them; OSError as raised, LessonError if not UTF-8."""
    return decode_utf8(path.read_bytes(), shown, expected)


def decode_utf8(data: bytes, shown: str, expected: str = SAVE_AS_UTF8) -> str:
    """Bytes as text, strictly UTF-8, with `\\r\\n` and `\\r` read as `\\n` (as Path.read_text does)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, exc.start, shown, expected) from None
    return _universal_newlines(text)


def _universal_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _not_utf8(data: bytes, start: int, shown: str, expected: str) -> LessonError:
    """The error for the first invalid byte at `start`: `shown:LINE:COLUMN`, 1-based, the column in characters."""
    # Everything before the first invalid byte decodes; lines are counted as the parsers count them.
    before = _universal_newlines(data[:start].decode("utf-8")) + "\x00"
    lines = before.splitlines()
    return LessonError(shown, len(lines), f"not valid UTF-8 (byte 0x{data[start]:02x}); {expected}",
                       rank=0, column=len(lines[-1]))


def compose_yaml(text: str, shown: str, unplaced: int | None = None):
    """The YAML node tree of `text` (None for an empty document); LessonError at the line of `shown` where
    it cannot be read (`unplaced` when the parser names no line). Composed, not loaded, so each entry keeps
    its line for the errors that name it."""
    import yaml  # here: only the files that need it pay for the import

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise LessonError(shown, mark.line + 1 if mark else unplaced, f"cannot read: {exc}", rank=0) from None
