"""Narrative phrases: figures a reader sees that name or number something rather than measure it.

Every figure a reader sees is produced from the evidence (a claim, a directive, a generated
table) or stands inside a phrase declared narrative, with the reason no recording holds it.
Two places declare phrases:

- the course, once for every page: `narrative.yml` at the repository root maps each phrase to
  its reason; in a phrase, a word `N` stands for one figure ("day N", "step N"), and a phrase
  without N is fixed text ("100 Days of GPU");
- a page, for itself: its front matter's `narrative:` maps each phrase to its reason. A page's
  phrase is fixed text: a figure with at least one word around it ("32 threads a block").
  A figure alone is refused as a key: it would cover that figure wherever it stands.

A phrase covers the figures inside the words it names, wherever the page shows those words,
and nothing else: the same figure in another sentence is not covered.

Phrases match on the reader's text folded by lessonkit.pages.fold (NFKC, lower case,
look-alikes), with any run of white space for a space; a phrase's first and last letters or
digits may not be glued to a letter or digit of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from lessonkit.errors import LessonError
from lessonkit.pages.claims import NUMBER_WORDS
from lessonkit.pages.fold import shown, skeleton
from lessonkit.repo import COURSE_FILE
from lessonkit.textio import compose_yaml, read_text

PLACEHOLDER = "N"
# One figure, as lessonkit.pages.figures.FIGURE_RE reads one (digits, thousands, a fraction, a version),
# on a skeleton, where the digits 0, 1 and 5 read as the letters o, l and s (lessonkit.pages.fold).
_DIGIT = "[0-9ols]"
_FIGURE = rf"""(?:{_DIGIT}{{1,3}}(?:,{_DIGIT}{{3}})+(?:\.{_DIGIT}+)*|{_DIGIT}+(?:\.{_DIGIT}+)*)"""
_LETTER_RE = re.compile(r"""[^\W\d_]""")
_DIGIT_RE = re.compile(r"""[0-9]""")
_WORD_RE = re.compile(r"""[^\W\d_]+""")


@dataclass(frozen=True)
class Phrase:
    """One declared phrase: as written, why it is no measurement, where it is declared."""

    key: str
    reason: str
    path: str
    line: int
    pattern: PhrasePattern = field(compare=False, repr=False)
    course: bool = False

    def spans(self, skel: str) -> list[tuple[int, int]]:
        """Where the phrase stands in `skel` (a line's skeleton)."""
        return [m.span() for m in self.pattern.finditer(skel)]


class PhrasePattern:
    """A phrase's pattern on a skeleton, with the longest of its literal words: a line that does
    not hold that word cannot hold the phrase, and is passed over without running the pattern
    (a page's lines are read against every phrase of the course)."""

    __slots__ = ("needle", "regex")

    def __init__(self, regex: re.Pattern[str], needle: str) -> None:
        self.regex, self.needle = regex, needle

    def finditer(self, skel: str) -> Iterator[re.Match[str]]:
        return self.regex.finditer(skel) if self.needle in skel else iter(())


def compile_phrase(key: str, placeholder: bool) -> PhrasePattern:
    """The pattern of a phrase on a skeleton: its words folded, white space flexible, and with
    `placeholder` each word N one figure."""
    words = shown(key).split()
    parts = [_FIGURE if placeholder and w == PLACEHOLDER else re.escape(skeleton(w)) for w in words]
    body = r"\s+".join(parts)
    first, last = skeleton(words[0])[0], skeleton(words[-1])[-1]
    lead = r"(?<![^\W_])" if (first.isalnum() or (placeholder and words[0] == PLACEHOLDER)) else ""
    tail = r"(?![^\W_])" if (last.isalnum() or (placeholder and words[-1] == PLACEHOLDER)) else ""
    if placeholder and words[-1] == PLACEHOLDER:
        tail += rf"(?![.,]{_DIGIT})"
    literal = [skeleton(w) for w in words if not (placeholder and w == PLACEHOLDER)]
    return PhrasePattern(re.compile(lead + body + tail), max(literal, key=len, default=""))


def phrase_problem(key: str, placeholder: bool) -> str | None:
    """Why `key` cannot be a narrative phrase, or None."""
    words = shown(key).split()
    if not words:
        return "is empty"
    figures = ([w for w in words if placeholder and w == PLACEHOLDER] or _DIGIT_RE.findall(key)
               or [w for w in _WORD_RE.findall(key.lower()) if w in NUMBER_WORDS])
    if placeholder and PLACEHOLDER in words:
        rest = [w for w in words if w != PLACEHOLDER]
        if not any(_LETTER_RE.search(w) for w in rest):
            return f"is {PLACEHOLDER} without a word: it would cover every figure; write the words around it"
        return None
    if not figures:
        return "holds no figure (digits or a count word); list a phrase around a figure the page shows"
    if not _LETTER_RE.search(key) or (len(_WORD_RE.findall(key)) == 1 and not _DIGIT_RE.search(key)):
        return ("is a figure without a word: it would cover that figure wherever it stands; write the "
                "words around it, as the reader reads them ('32 threads a block', 'day 27')")
    return None


@dataclass(frozen=True)
class Course:
    """The course's phrases and what is wrong with its file."""

    phrases: tuple[Phrase, ...] = ()
    errors: tuple[LessonError, ...] = ()
    text: str = ""  # the file as read ("" when there is none): part of every audit's cache key


def load_course(repo: Path) -> Course:
    """The course's phrases (`narrative.yml` at the root of `repo`); none when the file is absent."""
    path = repo / COURSE_FILE
    if not path.is_file():
        return Course()
    try:
        text = read_text(path, COURSE_FILE)
    except LessonError as exc:
        return Course(errors=(exc,))
    return _course(text)


@lru_cache(maxsize=8)
def _course(text: str) -> Course:
    try:
        root = compose_yaml(text, COURSE_FILE)
    except LessonError as exc:
        return Course(errors=(exc,), text=text)
    if root is None:
        return Course(text=text)
    if not isinstance(root, yaml.MappingNode):
        return Course(errors=(LessonError(COURSE_FILE, 1, "must map each phrase to the reason its figure is "
                                          "no measurement, as in: day N: a day of the course", rank=0),),
                      text=text)
    phrases, errors = [], []
    for key, value in root.value:
        try:
            phrases.append(_course_phrase(key, value))
        except LessonError as exc:
            errors.append(exc)
    return Course(tuple(phrases), tuple(errors), text)


def _course_phrase(key: yaml.Node, value: yaml.Node) -> Phrase:
    """One phrase of the course's list and its reason; LessonError naming its line when either is unreadable."""
    line = key.start_mark.line + 1
    if not isinstance(key, yaml.ScalarNode) or key.tag != "tag:yaml.org,2002:str":
        raise LessonError(COURSE_FILE, line, "a phrase must be text; quote it", rank=0)
    problem = phrase_problem(key.value, placeholder=True)
    if problem is None and not (isinstance(value, yaml.ScalarNode) and value.value.strip()):
        problem = "needs a reason: what the figure names, and why no recording holds it"
    if problem:
        raise LessonError(COURSE_FILE, line, f"narrative phrase {key.value!r} {problem}", rank=0)
    return Phrase(key.value, value.value, COURSE_FILE, line, compile_phrase(key.value, placeholder=True), course=True)
