"""What processing a page yields (`PageResult`: the expanded Markdown, its errors, citations, claims and
the records of its produced text), and a page's claims as they were judged (`ClaimOutcome`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lessonkit.errors import LessonError
from lessonkit.pages.marks import Mark, Marks, strip
from lessonkit.pages.published import Published, with_site_root

_SLOT_RE = re.compile(r"""<div\ data-lk-slot="(?P<n>\d+)"></div>""", re.VERBOSE)
_AT_RE = re.compile(r' data-lk-at="[^"]*"')  # where a diagram's text is written (lessonkit.pages.diagrams)


@dataclass(frozen=True)
class ClaimOutcome:
    """One claim of a page: where its value is written, and whether it holds.

    `start`/`end` are offsets of the value in the processed Markdown. `error` is None when
    the claim holds; `fix` is a value that would hold, or None when the reference or query
    is broken (or no single value can hold); `skipped` marks a claim on an unreadable set.
    """

    line: int
    start: int
    end: int
    value: str
    ref_query: str
    error: LessonError | None = None
    fix: str | None = None
    skipped: bool = False
    set_name: str | None = None
    sets: tuple[str, ...] = ()  # every set a ratio or comparison reads (set_name is the first)
    file: str | None = None  # where the value is written when not in the page (a diagram, under code/)
    backing: str | None = None  # what backs it, in words, when no evidence set does (a program's constant)
    derived: str = ""  # what the claim does to the values found, in words ('plus 1'; lessonkit.pages.units)
    recorded: str = ""  # the values found, session by session ('s1 20000; s2 18080–18239'): recorded_spread


@dataclass
class PageResult:
    """The expanded Markdown, its errors, the runs it cites, HTML for its slots, its claims, what it links and reads."""

    markdown: str
    errors: list[LessonError] = field(default_factory=list)
    cited: set[tuple[str, str]] = field(default_factory=set)
    blocks: list[str] = field(default_factory=list)
    claims: list[ClaimOutcome] = field(default_factory=list)
    published: list[Published] = field(default_factory=list)  # the recordings it shows or links
    sources: set[str] = field(default_factory=set)  # paths under code/ its region directives read
    looked_up: set[str] = field(default_factory=set)  # names it looked up among the evidence sets
    unrecorded: str | None = None  # the lesson, not recorded yet, whose notice the page shows
    default_set: str | None = None  # the set its `{{ evidence SET }}` names: the page's own lesson's
    marks: list[Mark] = field(default_factory=list)  # what backs each produced stretch (lessonkit.pages.marks)

    @property
    def marker(self) -> Marks:
        """The page's records, to mark produced text with."""
        return Marks(self.marks)

    def slot(self, html: str, why: str | None = None, kind: str | None = None) -> str:
        """A placeholder for finished HTML, filled in by `fill` once Markdown has run; with `kind`, the
        block is produced text (a transcript, the provenance tables), marked so."""
        self.blocks.append(self.marker.wrap(html, why, kind) if kind else html)
        return f'\n<div data-lk-slot="{len(self.blocks) - 1}"></div>\n'

    def fill(self, html: str, site_root: str = "", origins: bool = False) -> str:
        """The page's HTML with every slot replaced by its block, its links to published recordings
        made relative to a page `site_root` below the site's root ("../" for day62/index.html). With
        `origins`, the audit's reading: the produced text keeps its marks (lessonkit.pages.marks) and a
        diagram's text the attributes naming the SVG line it is written on (`data-lk-at`); the published
        page has neither."""
        def block(m: re.Match[str]) -> str:
            if int(m.group("n")) >= len(self.blocks):
                return m.group()  # not a slot of the core's: the audit refuses its attribute
            text = with_site_root(self.blocks[int(m.group("n"))], site_root)
            return text if origins else _AT_RE.sub("", text)
        filled = _SLOT_RE.sub(block, html)
        return filled if origins else strip(filled)
