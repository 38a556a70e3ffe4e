"""Back from the rendered page to its Markdown: the line of the page's file a piece of text comes from."""

from __future__ import annotations

import re

from lessonkit.pages.figures import FIGURE_RE
from lessonkit.pages.fold import shown, skeleton
from lessonkit.pages.markdowntext import visible_text
from lessonkit.pages.scan import FENCE_RE, tokens

_LANGUAGE_RE = re.compile(r"""\s*\{?\s*\.?(?P<lang>[\w+-]*)""")  # the language a fence's info names first


class SourceFinder:
    """The line of the page's Markdown a piece of rendered text comes from (1-based, in the file)."""

    def __init__(self, source: str, skip: int) -> None:
        self.lines = source.split("\n")
        self.skip = skip
        self._plain: dict[int, str] = {}
        self._figures: dict[str, list[tuple[int, int, int]]] | None = None

    def _outside_claims(self, k: int) -> str:
        text = self._plain.get(k)
        if text is None:
            raw = self.lines[k]
            for t in tokens(raw):
                raw = raw[:t.start] + " " * (t.end - t.start) + raw[t.end:]
            text = self._plain[k] = shown(visible_text(raw))
        return text

    def figure(self, figure: str, context: str, start: int, end: int) -> int | None:
        """The line holding `figure` (outside claims) whose text around it best matches the reader's."""
        if self._figures is None:
            self._figures = {}
            for k in range(self.skip, len(self.lines)):
                if any(c.isdigit() for c in self.lines[k]):
                    for m in FIGURE_RE.finditer(self._outside_claims(k)):
                        self._figures.setdefault(m.group(), []).append((k, m.start(), m.end()))
        best: tuple[int, int] | None = None
        for k, a, b in self._figures.get(figure, ()):
            text = self._plain[k]
            score = _common_suffix(text[:a], context[:start]) + _common_prefix(text[b:], context[end:])
            if best is None or score > best[0]:
                best = (score, k)
        return best[1] + 1 if best else None

    def words(self, token: str, context: str, start: int, end: int) -> int | None:
        """The line holding the literal `token` (outside claims) whose text around it best matches the reader's."""
        best: tuple[int, int] | None = None
        for k in range(self.skip, len(self.lines)):
            text = self._outside_claims(k)
            at = text.find(token)
            while at != -1:
                plain = self._plain[k]
                score = _common_suffix(plain[:at], context[:start]) + _common_prefix(plain[at + len(token):], context[end:])
                if best is None or score > best[0]:
                    best = (score, k)
                at = text.find(token, at + 1)
        return best[1] + 1 if best else None

    def phrase(self, folded: str, original: str) -> int | None:
        """The first line whose folded text holds `folded` (outside claims), else one holding `original`."""
        for k in range(self.skip, len(self.lines)):
            if folded in skeleton(self._outside_claims(k)):
                return k + 1
        for k in range(self.skip, len(self.lines)):
            if original and original in self.lines[k]:
                return k + 1
        return None

    def fences(self) -> list[tuple[int, str]]:
        """(0-based line, language) of every fence the page's Markdown opens."""
        found, fence = [], ""
        for k in range(self.skip, len(self.lines)):
            m = FENCE_RE.match(self.lines[k])
            if fence:
                if m and m.group("fence")[0] == fence[0] and len(m.group("fence")) >= len(fence) \
                        and not m.group("info").strip():
                    fence = ""
                continue
            if m:
                fence = m.group("fence")
                found.append((k, _LANGUAGE_RE.match(m.group("info")).group("lang") or ""))
        return found

    def code(self, first_line: str, language: str) -> int | None:
        """The line of the fence that opens the code block whose first line of code is `first_line` (the
        block's one place, as the fences' own rule names it), else of a fence opening in `language`."""
        wanted = first_line.strip()
        for k in range(self.skip, len(self.lines)):
            if wanted and wanted in self.lines[k]:
                opens = k > self.skip and _FENCE_OPEN_RE.match(self.lines[k - 1])  # the fence just above it
                return (k - 1 if opens else k) + 1
        for k in range(self.skip, len(self.lines)):
            if re.match(rf"""^\s*(?:`{{3,}}|~{{3,}})\s*\{{?\s*\.?{re.escape(language)}\b""", self.lines[k]):
                return k + 1
        return None


_FENCE_OPEN_RE = re.compile(r"""^\s*(?:`{3,}|~{3,})""")


def _common_suffix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n
