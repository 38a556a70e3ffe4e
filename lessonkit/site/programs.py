"""The lessons' programs as the built site publishes them, and which lessons' programs a page shows.

A lesson's program is what a reader needs to build and run it: the files its runs.toml names
as inputs (hashed into every recording, so the evidence is of exactly these bytes) and runs.toml
itself (the build lines and commands). Nothing else of code/LESSON/ is published: a binary the
reader's own build left there, a diagram's source with its claims unexpanded, and the folder's
README, whose prose states figures no check binds (it is the repository's note for authors).
How to build and run the program is generated instead, from runs.toml: the page lists the
build lines and commands the evidence was recorded with, so it cannot say anything else.

The hooks publish these files byte for byte at code/LESSON/ under the site root, with a
generated page there listing them and the commands (`program_page`), and give each page a
"Source" link to the programs it shows (`page_programs`). The project has no public
repository, so this is the reader's way to the code the evidence was recorded from.
"""

from __future__ import annotations

import html
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.evidence.spec import LessonSpec, load_spec
from lessonkit.pages.result import PageResult

CODE = "code"
SPEC = "runs.toml"


@dataclass(frozen=True)
class ProgramFile:
    """One published file of a lesson's program: its name in the folder, where it is, what it is."""

    name: str   # relative to code/LESSON/, with '/' between folders
    path: Path
    role: str   # what it is to the reader, in a few words


def lesson_folders(repo: Path) -> list[str]:
    """The lessons under code/: each folder that holds a runs.toml, by name."""
    code = repo / CODE
    return sorted(p.parent.name for p in code.glob(f"*/{SPEC}")) if code.is_dir() else []


def _inside(folder: Path, rel: str) -> Path | None:
    """`folder/rel` when it is a regular file that lies inside `folder` (links resolved), else None."""
    path = folder / rel
    try:
        real, root = path.resolve(strict=True), folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    return path if real.is_relative_to(root) and real.is_file() else None


def lesson_spec(repo: Path, lesson: str) -> LessonSpec | None:
    """code/LESSON/runs.toml read (load_spec parses it once while its stat stays the same), or None
    when it cannot be (the check reports why)."""
    try:
        return load_spec(repo / CODE, lesson)
    except LessonError:
        return None


def program_files(repo: Path, lesson: str) -> list[ProgramFile]:
    """The files of code/LESSON/ the site publishes: runs.toml, then each input it names, in its
    order. A file that is missing, or that lies outside the folder, is left out (the check reports
    a missing input as stale evidence); so are the inputs when runs.toml cannot be read (the check
    reports that too)."""
    folder = repo / CODE / lesson
    wanted = [(SPEC, "the build lines and the commands the evidence was recorded with")]
    spec = lesson_spec(repo, lesson)
    if spec is not None:
        wanted += [(rel, "an input of every recording") for rel in spec.inputs]
        wanted += [(rel, f"an input of the run {run.name!r}") for run in spec.runs for rel in run.inputs]
    found: dict[str, ProgramFile] = {}
    for rel, role in wanted:
        name = Path(os.path.normpath(rel)).as_posix()
        path = _inside(folder, name)
        if path is not None and name not in found:
            found[name] = ProgramFile(name, path, role)
    return list(found.values())


def page_programs(result: PageResult, set_lessons: Mapping[str, str]) -> list[str]:
    """The lessons whose programs a page shows: those its code regions and diagrams come from; on a
    page that shows none, the lessons of the evidence sets it cites (`set_lessons`: set -> lesson)."""
    shown = sorted({source.split("/", 1)[0] for source in result.sources})
    if shown:
        return shown
    return sorted({set_lessons[name] for name, _ in result.cited if name in set_lessons})


def program_folder(lesson: str) -> str:
    """Where a lesson's program is published, relative to the site root (ending in '/')."""
    return f"{CODE}/{lesson}/"


def _commands(spec: LessonSpec | None) -> str:
    """The build lines and the commands of runs.toml as the page shows them: each in a code block,
    under its architecture or its run's name; nothing when runs.toml cannot be read."""
    if spec is None:
        return ""
    def block(label: str, name: str, line: str) -> str:
        return f"<p>{label} <code>{html.escape(name)}</code>:</p>\n<pre><code>{html.escape(line)}</code></pre>"
    builds = "\n".join(block("For", arch, line) for arch, line in spec.build.items())
    runs = "\n".join(block("The run", run.name, run.command) for run in spec.runs)
    return f"""
<h2 id="build">Build</h2>

<p>From this folder, the line for your GPU's architecture (the evidence was built with the line
for its GPU's):</p>

{builds}

<h2 id="run">Run</h2>

<p>From this folder, after the build, the commands the evidence was recorded with:</p>

{runs}
"""


def program_page(lesson: str, files: list[ProgramFile], spec: LessonSpec | None = None) -> str:
    """The Markdown of the page at code/LESSON/ that lists the published files, each linked to its
    bytes, then how to build and run the program: runs.toml's build lines and commands (`spec`).

    Raw HTML, so that it needs no Markdown extension and the engine does not look for the files
    among the pages; the front matter keeps the page out of the search index (it has no text of
    its own to find, and verify-site takes a site's pages from that index when it has no repository).
    """
    rows = "\n".join(
        f'<tr><td><a href="{html.escape(urllib.parse.quote(f.name), quote=True)}"><code>'
        f"{html.escape(f.name)}</code></a></td><td>{html.escape(f.role)}</td></tr>" for f in files)
    folder = html.escape(program_folder(lesson))
    return f"""---
search:
  exclude: true
---

# <code>{folder}</code>

<p>The program of the lesson, as this site was built from it: the files its recorded commands
read, and those commands. Each link opens the file itself, byte for byte.</p>

<table>
<thead><tr><th>File</th><th>What it is</th></tr></thead>
<tbody>
{rows}
</tbody>
</table>
{_commands(spec)}"""
