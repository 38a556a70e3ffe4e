"""The directives a page's line may hold on its own: region, transcript, evidence, provenance,
commands, table and diagram (see lessonkit.pages.page for the syntax), each expanded to the
Markdown or HTML it stands for, with an error on the page where it cannot be.

Escaped directives. `\\{{` writes literal braces, so `\\{{ region ... }}` at the start of a line
shows the directive's text instead of expanding it; only a page about the directives themselves
(under docs/reference/) means that, so on any other page it is a warning: an author who copied
a directive from the Markdown source of "Writing a lesson" would otherwise publish it unchecked.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from functools import lru_cache
from pathlib import PurePosixPath

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence.sets import EvidenceSet
from lessonkit.evidence.unrecorded import Unrecorded
from lessonkit.pages.claimcheck import PageState
from lessonkit.pages.claims import NUMBER_WORDS
from lessonkit.pages.diagrams import render_diagram
from lessonkit.pages.linerefs import highlighted
from lessonkit.pages.published import recordings_of
from lessonkit.pages.regions import load_region
from lessonkit.pages.render import (
    render_commands,
    render_provenance,
    render_region,
    render_transcript,
)
from lessonkit.pages.scan import DIRECTIVES, Lines, Token
from lessonkit.pages.tables import render_table

# A directive escaped at the start of a line: it shows as text (as the expanded line shows it, unescaped).
ESCAPED_DIRECTIVE_RE = re.compile(
    r"""^[ \t]*\\\{\{[ \t]*(?P<word>""" + "|".join(DIRECTIVES) + r""")\b""")
_SHOWN_DIRECTIVE_RE = re.compile(
    r"""^[ \t]*\{\{[ \t]*(?:""" + "|".join(DIRECTIVES) + r""")\b""", re.MULTILINE)
REFERENCE_FOLDER = "reference"  # docs/reference/: pages that show directives as text on purpose
# "RACECHECK SUMMARY" or "ERROR SUMMARY", as a page may space it: a mention of a sanitizer's summary.
SUMMARY_MENTION_RE = re.compile(
    r"""\b(?P<tool>racecheck|error)(?:[\s_-]|&nbsp;|&\#0*160;|&\#x0*a0;)*summary\b""", re.IGNORECASE | re.VERBOSE)


_WORD_RE = re.compile(r"""[^ \t\r\n]+""")


def _words(text: str) -> list[str]:
    """shlex.split(text), without its cost when nothing is quoted or escaped (then the words are
    the runs of characters other than shlex's whitespace)."""
    if "'" in text or '"' in text or "\\" in text:
        return shlex.split(text)
    return _WORD_RE.findall(text)


def expand_directive(page: PageState, token: Token, word: str, text: str) -> str:
    """What a directive standing alone on its line(s) expands to (an error on the page when it cannot):
    its words read, then its entry of REGISTRY run."""
    try:
        parts = _words(token.body.split(None, 1)[1] if len(token.body.split()) > 1 else "")
    except ValueError as exc:
        page.error(token.line, f"cannot read the {word} directive: {exc}")
        return ""
    return REGISTRY[word](page, token, parts, text)


def _evidence(page: PageState, token: Token, parts: list[str], text: str) -> str:
    lesson = page.unrecorded.get(parts[0]) if parts else None
    if lesson is None:
        return ""
    page.result.unrecorded = lesson.lesson  # the engine keeps the page out of search and the sitemap
    return _not_recorded_notice(lesson)


def _named(page: PageState, index: int, word: str, parts: list[str], run: bool) -> tuple[EvidenceSet, str | None] | None:
    """The set (and run, with `run`) a set directive names first, looked up (and so recorded); None
    with an error when it names none, or a run where a set is wanted and the other way round."""
    if not parts:
        page.error(index, f"the {word} directive needs an evidence name")
        return None
    found = page.lookup(index, parts[0])
    if found is None:
        return None
    ev, group = found
    if run and group is None:
        page.error(index, f"'{word} {parts[0]}' names a set; name one of its transcripts: "
                   f"{', '.join(sorted(ev.groups))}")
        return None
    if not run and group is not None:
        page.error(index, f"'{word}' takes a set name, not the transcript {parts[0]!r}")
        return None
    return ev, group


def _transcript_directive(page: PageState, token: Token, parts: list[str], text: str) -> str:
    found = _named(page, token.line, "transcript", parts, run=True)
    if found is None:
        return ""
    ev, group = found
    return _transcript(page, token.line, ev, group, parts[1:])  # type: ignore[arg-type]


def _provenance(page: PageState, token: Token, parts: list[str], text: str) -> str:
    found = _named(page, token.line, "provenance", parts, run=False)
    if found is None:
        return ""
    ev = found[0]
    return render_provenance(ev, page.result.marker, lambda block: page.result.slot(
        block, f"the provenance of set {ev.name}, as its manifest records it", "provenance"))


def _commands(page: PageState, token: Token, parts: list[str], text: str) -> str:
    found = _named(page, token.line, "commands", parts, run=False)
    if found is None:
        return ""
    ev, index = found[0], token.line
    names = parts[1:] or sorted(ev.groups)
    unknown = [n for n in names if n not in ev.groups]
    if unknown:
        page.error(index, f"commands: set {ev.name!r} has no transcript {unknown[0]!r}; it has: "
                   f"{', '.join(sorted(ev.groups))}")
        return ""
    for name in names:
        page.cite(index, ev.name, name)
    return render_commands(ev, [ev.recordings(n)[0] for n in names], page.result.marker)



# Each directive a page may write on a line of its own (lessonkit.pages.scan.DIRECTIVES): a reader of its
# words that looks up what it shows through the page (PageState.lookup, .cite, result.sources: so the
# page's result records what it read, as it reads it) and returns the Markdown or HTML it stands for.
REGISTRY: dict[str, Callable[[PageState, Token, list[str], str], str]] = {
    "region": lambda page, token, parts, text: _region(page, token, parts, text),
    "transcript": _transcript_directive,
    "evidence": _evidence,
    "provenance": _provenance,
    "commands": _commands,
    "table": lambda page, token, parts, text: render_table(page, token.line, parts),
    "diagram": lambda page, token, parts, text: render_diagram(page, token.line, parts),
}

def _transcript(page: PageState, index: int, ev: EvidenceSet, group: str, options: list[str]) -> str:
    opened, title = False, None
    for option in options:
        key, sep, value = option.partition("=")
        if option == "open":
            opened = True
        elif key == "title" and sep and value.strip():
            title = value.strip()
        else:
            page.error(index, f"unknown transcript option {option!r}; expected open or title=\"…\"")
            return ""
    names = ev.recordings(group)
    if title is not None and names:
        _check_title(page, index, ev, ev.entries[names[0]].command, title)
    try:  # each file is read (and its reading checked) once; only the first one's text is shown
        sizes = [ev.transcript_size(n) for n in names]
        first = ev.transcript_text(names[0]) if page.transcripts else ""
    except LessonError as exc:
        page.error(index, f"cannot embed: {exc}")
        return ""
    page.result.published.extend(recordings_of(ev, group))
    why = f"the recordings of run {group} of set {ev.name}"
    if not page.transcripts:  # the same marks as a built page's, so that a copied slot is refused alike
        return page.result.slot("", why, "transcript")
    figures = []
    for name in names:
        try:
            figures.append(dict(ev.transcript(name).scalars))
        except LessonError:
            figures.append({})  # reported by the claims on it and by the integrity check
    return page.result.slot(render_transcript(ev, group, first, sizes, title=title, opened=opened, figures=figures),
                            why, "transcript")


_TITLE_WORD_RE = re.compile(r"""[a-z0-9]+""")


@lru_cache(maxsize=4096)
def _command_words(command: str) -> frozenset[str]:
    """A command's words as a title would name them: './racecheck' -> racecheck, 'sweep.py' -> sweep."""
    words = set()
    for token in command.lower().split():
        token = token.lstrip("-").removeprefix("./")
        words.add(token.rsplit(".", 1)[0] if "." in token[1:] else token)
    return frozenset(words)


_COUNT_RUN_RE = re.compile(r"""\b(?:(?:{w})[\s-]+)*(?:{w})\b""".format(w="|".join(NUMBER_WORDS)))


def _count_value(words: list[str]) -> int:
    """The number a run of count words says: 'hundred thousand' is 100000, 'twenty five' 25."""
    total = 0
    for word in words:
        n = NUMBER_WORDS[word]
        total = total * n if n >= 100 and total else total + n
    return total


def _check_title(page: PageState, index: int, ev: EvidenceSet, command: str, title: str) -> None:
    """A transcript's title may not say what the run did not do: no summary quote (it would go
    unchecked), no number its command lacks, and no word that tells the set's runs apart (a tool,
    a mode, an argument) unless this run's command has it."""
    if SUMMARY_MENTION_RE.search(title):
        page.error(index, f"transcript title {title!r} quotes a summary, which a title cannot check; "
                   "quote it in the text, next to the transcript")
        return
    own = _command_words(command)
    commands = [_command_words(e.command) for e in ev.entries.values()]
    telling = frozenset().union(*commands) - frozenset.intersection(*commands)
    for words in _COUNT_RUN_RE.findall(title.lower()):  # a count in words is a figure too
        value = _count_value(words.split())
        if value >= 2 and str(value) not in own:
            page.error(index, f"transcript title {title!r} says {words!r} ({value}), but the run it shows is "
                       f"{command!r}; title it by what this run did")
            return
    for word in dict.fromkeys(_TITLE_WORD_RE.findall(title.lower())):
        if word not in own and (word.isdigit() or word in telling):
            page.error(index, f"transcript title {title!r} says {word!r}, but the run it shows is "
                       f"{command!r}; title it by what this run did")
            return


def _not_recorded_notice(lesson: Unrecorded) -> str:
    """What `{{ evidence LESSON }}` shows while the lesson has no evidence: a notice, not provenance."""
    return (f'!!! warning "Not yet recorded"\n\n'
            f"    This lesson's programs have not been run on a GPU for this page yet, so it shows no tool\n"
            f"    output and no measured figure. They are recorded on a GPU machine with\n"
            f"    `{lesson.refresh}`.\n")


def _region(page: PageState, token: Token, parts: list[str], text: str) -> str:
    index = token.line
    if len(parts) < 2:
        page.error(index, "the region directive needs a path under code/ and a region name: "
                   "{{ region LESSON/FILE NAME [highlight=LINE@REF:QUERY|@MARKER+N,...] }}")
        return ""
    relpath, name, options = parts[0], parts[1], parts[2:]
    page.result.sources.add(relpath)
    where = LessonError(page.path, index + 1 + page.offset, f"asked for by region {name!r}")
    try:
        region = load_region(page.repo / "code", relpath, name, where)
    except LessonError as exc:
        page.result.errors.append(exc)
        return ""
    except LessonErrors as exc:
        page.result.errors.extend(exc.errors)
        return ""
    page.check_input(index, relpath)
    highlight: list[int] = []
    source = text[token.start:token.end]
    for option in options:
        key, _, value = option.partition("=")
        if key != "highlight" or not value:
            page.error(index, f"unknown region option {option!r}; expected highlight=LINE@REF:QUERY or "
                       "highlight=@MARKER+N,...")
            continue
        for item in value.split(","):
            line = highlighted(page, token, relpath, region, item, source)
            if line is not None:
                highlight.append(line)
    return render_region(region, highlight, page.result.marker)


def is_reference_page(path: str) -> bool:
    """Whether page `path` (as messages name it, e.g. docs/reference/checking.md) is a reference page."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    return REFERENCE_FOLDER in parts[:-1]


def check_escaped_directives(page: PageState, out: Lines, in_fence: list[bool], markdown: str) -> None:
    """A warning for each directive escaped at the start of a line outside code blocks, except on a
    reference page (which shows directives as text on purpose). The expanded line shows the directive
    unescaped; its source line (`markdown`'s) has the backslash."""
    if is_reference_page(page.path):
        return
    source: list[str] | None = None
    for i in out.find(_SHOWN_DIRECTIVE_RE):
        if in_fence[i]:
            continue
        source = markdown.split("\n") if source is None else source
        index = out.srcs[i]
        text = source[index]
        found = ESCAPED_DIRECTIVE_RE.match(text)
        if found:
            shown = text.strip()
            shown = shown if len(shown) <= 60 else shown[:59] + "…"
            page.warn(index, f"'{shown}' is escaped and shows as text; remove the backslash to expand it "
                      f"(\\{{{{ writes literal braces: the {found.group('word')} directive is not run)")
