"""`python -m lessonkit new LESSON`: a new lesson that builds, waiting for its first recording.

It writes code/LESSON/ (runs.toml with one run and the harness format of the program's output, a
program stub with a snippet region, a README with the build line and the command, a .gitignore
for the program the build writes), the page
docs/LESSON.md, and the page's entry in mkdocs.yml's nav (a line inserted into the file, so its
comments stay; where the nav cannot be edited so, it prints the line to add). Until the refresh
records the lesson, its page shows a "Not yet recorded" notice, stays out of search and the
sitemap, and `check` says so in a note that fails nothing (lessonkit.evidence.unrecorded).
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path

from lessonkit.errors import LessonError
from lessonkit.pages.fold import shown, skeleton
from lessonkit.pages.narrative import COURSE_FILE, load_course
from lessonkit.repo import find_repo
from lessonkit.textio import read_text

HELP = "make a new lesson: code/LESSON/ (program stub, runs.toml, README, .gitignore), docs/LESSON.md, its nav entry"
DESCRIPTION = (
    "Start a lesson that builds while it waits for its first recording: code/LESSON/ (a program "
    "stub with a region, runs.toml with its build line and one run, a README with the commands), "
    "the page docs/LESSON.md, and its entry in mkdocs.yml's nav (inserted as a line, so the file's "
    "comments stay; where it cannot be, the line to add is printed). Until a refresh on a GPU "
    "machine records it, its page shows a 'Not yet recorded' notice, stays out of the search and the sitemap, "
    "and check passes with a note.")
EXIT_DONE = 0

_LESSON_RE = re.compile(r"""\A[a-z0-9][a-z0-9-]*\Z""")
_DAY_RE = re.compile(r"""\Aday(?P<n>\d+)-(?P<rest>.+)\Z""")
_NAV_RE = re.compile(r"""^nav:\s*(?:\#.*)?$""")
_TOP_RE = re.compile(r"""^[^\s#]""")
_ITEM_RE = re.compile(r"""^(?P<indent>\s*)-\s""")
ARCH = "sm_90"  # the course's GPU, an H100; README says how to build for another


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare new's arguments on `parser`."""
    parser.add_argument("lesson", help="the lesson's folder name, e.g. day27-global-reduction")
    parser.add_argument("--title", help="the page's title (default: from the name, e.g. 'Day 27: global reduction')")
    parser.add_argument("--section", default="New lessons",
                        help="the nav section to list the page under (made if missing; default: %(default)s)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="repository root (default: the nearest folder up from here with mkdocs.yml)")


def run(args: argparse.Namespace) -> int:
    """Make the lesson; LessonError (nothing written) for a name that is taken or not a folder name."""
    repo = args.repo.resolve() if args.repo is not None else find_repo(Path.cwd())
    lesson = args.lesson
    check_name(repo, lesson)
    title = args.title or default_title(lesson)
    program = program_name(lesson)
    files = {
        f"code/{lesson}/{program}.cu": program_stub(lesson, title, program),
        f"code/{lesson}/runs.toml": runs_toml(lesson, program),
        f"code/{lesson}/README.md": readme(lesson, title, program),
        f"code/{lesson}/.gitignore": gitignore(build_line(program)),
        f"docs/{lesson}.md": page_stub(lesson, title, program),
    }
    for rel, text in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {rel}")
    entry = nav_entry(title, lesson)
    try:
        added = add_to_nav(repo / "mkdocs.yml", args.section, entry)
    except LessonError as exc:  # mkdocs.yml is not UTF-8: say where, and what to add once it is
        print(exc, file=sys.stderr)
        added = False
    if added:
        print(f"added {lesson}.md to mkdocs.yml's nav under {args.section!r}")
    else:
        print(f"mkdocs.yml's nav could not be edited line by line; add this entry to it yourself:\n  {entry}")
    declared = declare_title_phrase(repo, title)
    if declared:
        print(f"added {declared!r} to {COURSE_FILE}: the figure in the title names a day, not a measurement")
    print(f"next: write the program and the page (it builds, and shows 'Not yet recorded', until the refresh records "
          f"the lesson on a GPU machine: .venv/bin/python scripts/refresh.py {lesson}); check it with "
          ".venv/bin/python -m lessonkit check")
    return EXIT_DONE


_DAY_PHRASE = "day N"


def declare_title_phrase(repo: Path, title: str) -> str | None:
    """Make the course declare the phrase that covers a 'Day 27: ...' title (narrative.yml, created if
    missing), so the page title and the navigation pass the audit; the phrase added, or None."""
    if not re.match(r"(?i)day\s+\d", title):
        return None
    course = load_course(repo)
    skel = skeleton(shown(title))
    if any(p.spans(skel) for p in course.phrases):
        return None
    path = repo / COURSE_FILE
    text = path.read_text(encoding="utf-8") if path.is_file() else (
        "# Phrases every page of the course may use (docs/reference/checking.md): N stands for one figure.\n")
    if text and not text.endswith("\n"):
        text += "\n"
    path.write_text(text + f"{_DAY_PHRASE}: a day of the course\n", encoding="utf-8")
    return _DAY_PHRASE


def check_name(repo: Path, lesson: str) -> None:
    """LessonError unless `lesson` is a folder name no lesson, page or evidence set uses yet."""
    if not _LESSON_RE.match(lesson):
        raise LessonError(lesson, None, "is not a lesson name: use lowercase letters, digits and '-', "
                          "starting with a letter or digit (it names a folder and a page's address), "
                          "e.g. day27-global-reduction", rank=0)
    for taken in (f"code/{lesson}", f"docs/{lesson}.md", f"evidence/{lesson}"):
        if (repo / taken).exists():
            raise LessonError(taken, None, f"exists: lesson {lesson!r} is taken; choose another name "
                              "(nothing was written)", rank=0)


def default_title(lesson: str) -> str:
    """'Day 27: global reduction' for day27-global-reduction; 'Weak memory' for weak-memory."""
    m = _DAY_RE.match(lesson)
    if m:
        return f"Day {int(m.group('n'))}: {m.group('rest').replace('-', ' ')}"
    words = lesson.replace("-", " ")
    return words[:1].upper() + words[1:]


def program_name(lesson: str) -> str:
    """The program's file name without .cu: the lesson's name without its 'dayNN-'."""
    m = _DAY_RE.match(lesson)
    return m.group("rest") if m else lesson


def nav_entry(title: str, lesson: str) -> str:
    """The nav line for the page (the title quoted, as YAML reads it)."""
    quoted = title.replace("\\", "\\\\").replace('"', '\\"')
    return f'- "{quoted}": {lesson}.md'


def add_to_nav(config: Path, section: str, entry: str) -> bool:
    """Insert `entry` under `section` of the block-style nav of `config` (the section is appended
    when missing), keeping every other line as it is; False (nothing written) when the nav is not
    a block list this can edit, or the edited file would not list the page."""
    try:
        text = read_text(config, config.name)
    except OSError:
        return False
    lines = text.splitlines(keepends=True)
    nav = _nav_items(lines)
    if nav is None:
        return False
    end, items = nav
    top = min(len(indent) for _, indent in items)
    name = re.compile(rf"""^\s*-\s+["']?{re.escape(section)}["']?:\s*(?:\#.*)?$""")
    heads = [i for i, indent in items if len(indent) == top and name.match(lines[i])]
    if heads:
        at, new = _under_section(lines, items, end, top, heads[0], entry)
    else:
        at = max(i for i, _ in items) + 1
        while at < end and lines[at].strip() and not _ITEM_RE.match(lines[at]):
            at += 1  # the last item's own continuation lines
        new = [f'{" " * top}- "{section}":\n', f"{' ' * (top + 4)}{entry}\n"]
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    edited = "".join(lines[:at] + new + lines[at:])
    if not _lists(edited, entry.rsplit(": ", 1)[1]):
        return False
    config.write_text(edited, encoding="utf-8")
    return True


def _nav_items(lines: list[str]) -> tuple[int, list[tuple[int, str]]] | None:
    """Where the block-style nav ends (the index of the next top-level key, or the end), and its
    items (index, indent); None when there is no nav or it lists nothing."""
    start = next((i for i, line in enumerate(lines) if _NAV_RE.match(line)), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and not _TOP_RE.match(lines[end]):
        end += 1
    items = [(i, m.group("indent")) for i in range(start + 1, end) if (m := _ITEM_RE.match(lines[i]))]
    return (end, items) if items else None


def _under_section(lines: list[str], items: list[tuple[int, str]], end: int, top: int, head: int,
                   entry: str) -> tuple[int, list[str]]:
    """Where `entry` goes under the section whose item is at `head` (after its last child, or before
    the first child of a later day, in course order), and the line to insert there."""
    following = [i for i, indent in items if i > head and len(indent) == top]
    stop = following[0] if following else end
    children = [(i, indent) for i, indent in items if head < i < stop and len(indent) > top]
    indent = children[0][1] if children else " " * (top + 4)
    at = (children[-1][0] + 1) if children else head + 1
    later = [i for i, _ in children if _later_day(lines[i], entry)]
    return (later[0] if later else at), [f"{indent}{entry}\n"]


_ENTRY_DAY_RE = re.compile(r""":\s*["']?day(?P<n>\d+)-[^\s"']*\.md["']?\s*(?:\#.*)?$""")


def _later_day(line: str, entry: str) -> bool:
    """Whether nav `line` lists a day's page that comes after the day of `entry` (a 'TITLE: dayNN-....md' item)."""
    mine, theirs = _ENTRY_DAY_RE.search(entry), _ENTRY_DAY_RE.search(line.rstrip("\n"))
    return bool(mine and theirs and int(theirs.group("n")) > int(mine.group("n")))


def _lists(text: str, page: str) -> bool:
    """Whether YAML `text` has `page` somewhere in its nav (read without running any tag)."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return False
    if not isinstance(root, yaml.MappingNode):
        return False
    nav = next((v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "nav"), None)
    pending = [nav] if nav is not None else []
    while pending:
        node = pending.pop()
        if isinstance(node, yaml.ScalarNode) and node.value == page:
            return True
        if isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            pending.extend(v for _, v in node.value)
    return False


# -- what it writes ----------------------------------------------------------------------------

def build_line(program: str) -> str:
    """The build line of the stub for the course's GPU."""
    return f"nvcc -std=c++17 -O2 -lineinfo -arch={ARCH} -o {program} {program}.cu"


def built(line: str) -> str:
    """The file a build line writes: the word after its `-o`."""
    words = shlex.split(line)
    return words[words.index("-o") + 1]


def gitignore(line: str) -> str:
    """The lesson folder's .gitignore: the program the build line writes stays out of git."""
    return (f"# What the build line of runs.toml writes: built from the source, never committed.\n"
            f"/{built(line)}\n")


def program_stub(lesson: str, title: str, program: str) -> str:
    """A small CUDA program that builds and checks its own answer; the lesson's starting point."""
    return f"""\
// {title} ({lesson}): the lesson's program. A stub made by `python -m lessonkit new`: replace the
// kernel and the check with the lesson's own, and keep the output lines that runs.toml's [harness]
// reads (or change both together).
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

#define CHECK(call)                                                                   \\
    do {{                                                                              \\
        cudaError_t err_ = (call);                                                    \\
        if (err_ != cudaSuccess) {{                                                    \\
            std::fprintf(stderr, "%s:%d: %s\\n", __FILE__, __LINE__,                   \\
                         cudaGetErrorString(err_));                                   \\
            std::exit(EXIT_FAILURE);                                                  \\
        }}                                                                             \\
    }} while (0)

// What the program fixes, at the top level, where the lesson's page can claim it by name:
// the input size and the block size.
constexpr int kElements = 1000;
constexpr int kThreads = 256;

// snippet: kernel
__global__ void addOne(const int* in, int* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{
        out[i] = in[i] + 1;
    }}
}}
// end snippet

int main() {{
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s | compute capability %d.%d\\n", prop.name, prop.major, prop.minor);

    const int n = kElements;
    std::vector<int> in(n), out(n, 0);
    for (int i = 0; i < n; ++i) {{
        in[i] = i;
    }}
    int* dIn = nullptr;
    int* dOut = nullptr;
    CHECK(cudaMalloc(&dIn, n * sizeof(int)));
    CHECK(cudaMalloc(&dOut, n * sizeof(int)));
    CHECK(cudaMemcpy(dIn, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    const int threads = kThreads;
    addOne<<<(n + threads - 1) / threads, threads>>>(dIn, dOut, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), dOut, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaFree(dIn));
    CHECK(cudaFree(dOut));

    int wrong = 0;
    for (int i = 0; i < n; ++i) {{
        wrong += out[i] != in[i] + 1;
    }}
    std::printf("result: %d of %d elements wrong\\n", wrong, n);
    return wrong == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}}
"""


def runs_toml(lesson: str, program: str) -> str:
    """The lesson's runs.toml: one gated run, and the harness format of the stub's output."""
    return f"""\
# The one source of this lesson's commands. scripts/refresh.py builds the program with the build
# line for the GPU's architecture and records every run; the lesson's README and page show them;
# the site build checks that all of these agree. docs/reference/writing-a-lesson.md explains each key.

lesson = "{lesson}"
inputs = ["{program}.cu"]        # hashed into every transcript: an edit makes them stale

[build]
{ARCH} = "{build_line(program)}"

[[run]]
name = "bare"
command = "./{program}"
gate = true                      # a failing run (the check's exit status) records nothing
timeout = 60
# repeat = 5                     # a run whose figures vary: record it N times, claims hold for all
# exclusive = true               # a run that times itself: the GPU to itself
# artifacts = [{{ name = "bare-results", file = "results.json", format = "json" }}]

# How the program's own lines are read: each pattern is a Python verbose regex searched in the
# stripped line; its named groups are the values a page quotes (bare:wrong, bare:gpu).
[harness.types]
wrong = "int"
elements = "int"

[[harness.line]]                 # device: NVIDIA H100 80GB HBM3 | compute capability 9.0
name = "device"
starts = '^device:'
pattern = '^device:\\s+(?P<gpu>.+?) \\s+\\|\\s+ compute\\ capability\\s+(?P<compute_capability>\\d+\\.\\d+)$'
form = "'device: NAME | compute capability X.Y'"

[[harness.line]]                 # result: 0 of 1000 elements wrong
name = "result"
starts = '^result:'
pattern = '^result:\\s+(?P<wrong>\\d+)\\ of\\ (?P<elements>\\d+)\\ elements\\ wrong$'
form = "'result: N of M elements wrong'"
"""


def readme(lesson: str, title: str, program: str) -> str:
    """The lesson folder's README: the build line and the command, verbatim from runs.toml."""
    return f"""\
# {title}

The program of the lesson `docs/{lesson}.md`.

Build it (`-arch={ARCH}` is for an H100 or H200; use your GPU's compute capability) and run it:

```console
{build_line(program)}
./{program}
```

It prints the GPU, then how many elements of its result were wrong, and exits with a failure
status if any was.
"""


def page_stub(lesson: str, title: str, program: str) -> str:
    """The page: a title, the evidence directive (a notice until recorded), the program's region."""
    return f"""\
# {title}

{{{{ evidence {lesson} }}}}

<!-- What the learner can do after this lesson, in a sentence or two. -->

## Predict

<!-- What should the learner expect before running the program? Ask for a written prediction. -->

## The program

{{{{ region {lesson}/{program}.cu kernel }}}}

## What it prints

<!-- After the first refresh: show the run with a transcript directive, and quote each figure
as a claim on it (the run is "bare"; its values are named in code/{lesson}/runs.toml's [harness]). -->
"""
