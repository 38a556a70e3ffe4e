"""Source regions: `// snippet: NAME` ... `// end snippet` in files under code/."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.textio import read_text


def _marker_error(path: str, line: int | None, message: str) -> LessonError:
    """Region problems are causes: they are reported before what follows from them."""
    return LessonError(path, line, message, rank=0)

# A marker is a whole comment line; `//` (CUDA, C++) and `#` (Python, shell) both work.
_OPEN_RE = re.compile(
    r"""^\s*(?://|\#)\s*snippet:\s*(?P<name>\S*)\s*(?P<extra>.*?)\s*$""", re.VERBOSE
)
_END_RE = re.compile(r"""^\s*(?://|\#)\s*end\s+snippet\s*$""", re.VERBOSE)
_NAME_RE = re.compile(r"""^[A-Za-z0-9][A-Za-z0-9_.-]*$""")


@dataclass(frozen=True)
class Region:
    """A named span of a source file; `first`/`last` are the 1-based lines of its body."""

    source: str
    name: str
    first: int
    last: int
    text: str

    def contains(self, line: int) -> bool:
        """Whether file line `line` lies inside the region's body."""
        return self.first <= line <= self.last


def parse_regions(text: str, source: str) -> dict[str, Region]:
    """All regions of `text`, by name; raises LessonErrors listing every marker problem."""
    errors: list[LessonError] = []
    regions: dict[str, Region] = {}
    open_name: str | None = None
    open_line = 0
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if _END_RE.match(line):
            if open_name is None:
                errors.append(_marker_error(source, number, "'// end snippet' with no open region"))
                continue
            body = lines[open_line:number - 1]
            region = Region(source, open_name, open_line + 1, number - 1, "\n".join(body))
            if open_name in regions:
                first = regions[open_name].first - 1
                errors.append(_marker_error(
                    source, open_line,
                    f"duplicate region {open_name!r}; it is already defined at line {first}"))
            else:
                regions[open_name] = region
            open_name = None
            continue
        m = _OPEN_RE.match(line)
        if not m:
            continue
        name = m.group("name")
        if not _NAME_RE.match(name) or m.group("extra"):
            errors.append(_marker_error(
                source, number,
                f"bad region marker {line.strip()!r}; expected '// snippet: NAME' "
                "with NAME of letters, digits, '-', '_' or '.'"))
            continue
        if open_name is not None:
            errors.append(_marker_error(
                source, number,
                f"region {name!r} opens inside region {open_name!r} (opened at line "
                f"{open_line}); regions cannot nest: close it with '// end snippet' first"))
            continue
        open_name, open_line = name, number
    if open_name is not None:
        errors.append(_marker_error(
            source, open_line, f"region {open_name!r} is never closed; expected '// end snippet'"))
    if errors:
        raise LessonErrors(errors)
    return regions


def resolve_code_path(code_root: Path, relpath: str, where: LessonError) -> Path:
    """The file `relpath` under `code_root`, refusing paths that leave it (`..`, absolute, symlinks).

    `where` carries the location (page and line) used in any error raised.
    """
    def fail(why: str) -> LessonError:
        return _marker_error(where.path, where.line, f"{why}; {where.message}")

    if not relpath or relpath.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", relpath):
        raise fail(f"source path {relpath!r} is absolute; expected a path relative to code/")
    if ".." in Path(relpath).parts:
        raise fail(f"source path {relpath!r} leaves code/ through '..'")
    root = code_root.resolve()
    candidate = code_root / relpath
    if not candidate.exists():
        raise fail(f"source file {('code/' + relpath)!r} does not exist")
    real = candidate.resolve()
    if root not in real.parents:
        raise fail(f"source path {relpath!r} leaves code/ through a symlink (it points to {str(real)!r})")
    if not real.is_file():
        raise fail(f"source path {relpath!r} is not a file")
    return real


@lru_cache(maxsize=256)
def _parsed_regions(text: str, shown: str) -> dict[str, Region]:
    """parse_regions, once per distinct text (a page takes several regions from one file).
    Callers only read the dict."""
    return parse_regions(text, shown)


def load_region(code_root: Path, relpath: str, name: str, where: LessonError) -> Region:
    """Region `name` of code/`relpath`; errors are placed at `where` (the page that asks)."""
    path = resolve_code_path(code_root, relpath, where)
    shown = f"code/{relpath}"
    try:
        text = read_text(path, shown)
    except OSError as exc:
        raise _marker_error(where.path, where.line, f"cannot read {shown!r}: {exc}") from exc
    try:
        regions = _parsed_regions(text, shown)
    except LessonErrors as exc:
        # Name both places: the page that asked and the source line that is wrong.
        raise LessonErrors(
            _marker_error(where.path, where.line, f"in region {name!r}: {e}") for e in exc.errors
        ) from exc
    if name not in regions:
        known = ", ".join(sorted(regions)) or "none"
        close = difflib.get_close_matches(name, regions, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise _marker_error(
            where.path, where.line,
            f"no region {name!r} in {shown!r}; {hint}the regions there are: {known}")
    return regions[name]
