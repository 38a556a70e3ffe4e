"""lessonkit as a Python-Markdown extension, for site engines that load Markdown extensions but
not MkDocs hooks (Zensical), and for plain `markdown.markdown(...)`.

    markdown_extensions:
      - lessonkit.site.mdext:
          repo: .            # the repository root (default: the working directory)

A preprocessor expands the page's regions and transcripts and checks its claims (the same
`Site.page` the MkDocs hooks call); any error stops the conversion with `LessonErrors`, which
fails the build. It also writes each recording the page shows or links into the site the engine
builds (mkdocs.yml's `site_dir`, as MkDocs' hooks have MkDocs copy them: evidence/SET/FILE under
the site's root; lessonkit.pages.published), and a postprocessor fills the transcript slots once
Markdown has run, linking those files relative to the page's Markdown file. The page's
path, for messages, is found by matching the text given to Markdown against the pages under
docs/ (Python-Markdown is not told which file it converts). Under the MkDocs hooks the
extension is passive: the hooks do its work once per page and report every error of the site.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from markdown import Markdown
from markdown.extensions import Extension
from markdown.postprocessors import Postprocessor
from markdown.preprocessors import Preprocessor

from lessonkit.errors import LessonError, LessonErrors, split_notes, split_warnings
from lessonkit.pages.marks import strip
from lessonkit.pages.published import Published, site_root
from lessonkit.pages.result import PageResult
from lessonkit.site.check import CheckedSite
from lessonkit.site.config import site_output
from lessonkit.site.verdict import docs_pages
from lessonkit.site.verify import CHECKED_MARK, START_MARK
from lessonkit.textio import read_text

# Before every core and pymdownx preprocessor (normalize_whitespace is 30, snippets 32).
_PRIORITY = 40
_log = logging.getLogger("lessonkit")
_warned: set[str] = set()
_sessions: dict[Path, CheckedSite] = {}


def session_for(repo: Path) -> CheckedSite:
    """The one CheckedSite of `repo` in this process, refreshed (reloaded only if files changed)."""
    repo = repo.resolve()
    session = _sessions.get(repo)
    if session is None:
        session = _sessions[repo] = CheckedSite(repo)
    session.refresh()
    return session


def locate_page(session: CheckedSite, docs: str, text: str) -> tuple[str, int]:
    """Which page under docs/ `text` is (as messages name it), and the lines above it in that file.

    Engines strip front matter and may trim blank lines: the page is the file that contains
    `text` without its surrounding blank lines, else the file sharing most of its lines.
    """
    body = text.strip("\n")
    lead = text.count("\n", 0, len(text) - len(text.lstrip("\n")))
    exact: list[tuple[str, int]] = []
    best: tuple[float, str] = (0.0, "")
    lines = set(body.split("\n"))
    for shown, path in docs_pages(session.repo, session.repo / docs):
        whole = _read(session, path)
        at = whole.rfind(body) if body else -1
        if at >= 0:
            exact.append((shown, max(whole.count("\n", 0, at) - lead, 0)))
        elif not exact and lines:
            best = max(best, (len(lines & set(whole.split("\n"))) / len(lines), shown))
    if len(exact) == 1:
        return exact[0]
    if exact:
        return f"{exact[0][0]} (or one of {len(exact)} identical pages)", exact[0][1]
    if best[0] >= 0.5:
        return f"{best[1]} (as the engine gave it)", 0
    return f"{docs}/(an unknown page starting {body[:40]!r})", 0


_texts: dict[str, tuple[str, str]] = {}


def _read(session: CheckedSite, path: Path) -> str:
    """A page's text, read again only when its digest changed."""
    digest = session.digests.digest(path)
    known = _texts.get(str(path))
    if known is None or known[0] != digest:
        try:
            known = (digest, read_text(path, str(path)))
        except (OSError, LessonError):  # the page's check reports it
            known = (digest, "")
        _texts[str(path)] = known
    return known[1]


class _ExpandAndCheck(Preprocessor):
    """Expand the page and check it; raise LessonErrors when anything disagrees."""

    def __init__(self, md: Markdown, ext: LessonkitExtension) -> None:
        super().__init__(md)
        self.ext = ext

    def run(self, lines: list[str]) -> list[str]:
        self.ext.result = None
        self.ext.page = None
        self.ext.site_root = ""
        if self.ext.getConfig("passive"):
            return lines
        repo = Path(self.ext.getConfig("repo") or os.getcwd())
        session = session_for(repo)
        # Line ends as lessonkit reads the page's file (and as Python-Markdown reads it next): an
        # engine may pass "\r\n" or "\r" as written, and then neither lines nor the file would match.
        text = "\n".join(lines).replace("\r\n", "\n").replace("\r", "\n")
        path = self.ext.getConfig("page")
        offset = int(self.ext.getConfig("offset") or 0)
        if not path:
            path, offset = locate_page(session, self.ext.getConfig("docs_dir"), text)
        result = session.page(text, path, offset)
        # The site's own errors (evidence integrity, freshness) fail every page: an engine may
        # stop at the first page that fails, and must not publish any page over bad evidence.
        found, notes = split_notes(session.site_errors() + result.errors)
        errors, warnings = split_warnings(found)
        if errors:
            raise LessonErrors(errors)
        for warning in warnings + notes:  # a lesson folder unused, a lesson not recorded yet: said once
            if str(warning) not in _warned:
                _warned.add(str(warning))
                (_log.info if warning.note else _log.warning)("lessonkit: %s", warning)
        self.ext.result = result
        self.ext.page = (session, path, _source(session, path, text))
        publish(result.published, session.repo / (self.ext.getConfig("site_dir") or site_output(session.repo)))
        # Links relative to the page's Markdown file, as an engine reads the links of a page's HTML
        # (Zensical turns them into links from where it builds the page, as MkDocs does with Markdown links).
        docs = self.ext.getConfig("docs_dir").rstrip("/") + "/"
        self.ext.site_root = site_root(path.removeprefix(docs)) if path.startswith(docs) else ""
        # The marks go in as raw HTML here, not in the postprocessor: Python-Markdown also runs
        # postprocessors on fragments (the toc extension renders each heading with them).
        return (START_MARK.strip() + "\n\n" + result.markdown + "\n\n" + CHECKED_MARK.strip()
                + "\n").split("\n")


def publish(published: Iterable[Published], site_dir: Path) -> None:
    """Copy each recording, byte for byte, to its place under `site_dir` (evidence/SET/FILE); each
    copy is written whole, then renamed, so a page rendered meanwhile never finds half a file."""
    for item in sorted(set(published)):
        target = site_dir / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, scratch = tempfile.mkstemp(prefix=".lessonkit-", dir=target.parent)
        os.close(fd)
        try:
            shutil.copyfile(item.source, scratch)
            os.replace(scratch, target)
        except BaseException:
            Path(scratch).unlink(missing_ok=True)
            raise


def _source(session: CheckedSite, path: str, text: str) -> str:
    """The page's file (its front matter declares narrative figures), or the text given when the
    page was not found as one file."""
    file = session.repo / path
    return _read(session, file) if path.endswith(".md") and file.is_file() else text


class _Audit(Postprocessor):
    """Audit the finished page as a reader will see it (lessonkit.pages.audit), its slots filled for the
    audit alone (CheckedSite.audit); _FillSlots fills them in the page itself."""

    def __init__(self, md: Markdown, ext: LessonkitExtension) -> None:
        super().__init__(md)
        self.ext = ext

    def run(self, text: str) -> str:
        if self.ext.result is None or self.ext.page is None or CHECKED_MARK.strip() not in text:
            return text  # passive, or a fragment (a heading the toc extension renders)
        session, path, source = self.ext.page
        errors = session.audit(path, text, source)
        if errors:
            raise LessonErrors(errors)
        return text


class _FillSlots(Postprocessor):
    """Put each finished transcript block into its slot."""

    def __init__(self, md: Markdown, ext: LessonkitExtension) -> None:
        super().__init__(md)
        self.ext = ext

    def run(self, text: str) -> str:
        result: PageResult | None = self.ext.result
        if result is None:
            return text
        _strip_tokens(getattr(self.md, "toc_tokens", []))  # a heading's marks, as the table of contents shows it
        if isinstance(getattr(self.md, "toc", None), str):
            self.md.toc = strip(self.md.toc)  # type: ignore[attr-defined]
        return result.fill(text, self.ext.site_root)


def _strip_tokens(tokens: list[dict[str, Any]]) -> None:
    for token in tokens:
        for key in ("name", "html"):
            if isinstance(token.get(key), str):
                token[key] = strip(token[key])
        _strip_tokens(token.get("children", []))


class LessonkitExtension(Extension):
    """Expansion and checking of lessonkit pages inside Python-Markdown."""

    def __init__(self, **kwargs: Any) -> None:
        self.config = {
            "repo": ["", "repository root holding docs/, code/ and evidence/ (default: working dir)"],
            "docs_dir": ["docs", "the pages' folder, relative to repo"],
            "page": ["", "the page's path as messages name it (default: found under docs_dir)"],
            "offset": [0, "lines above the Markdown in the page's file (front matter)"],
            "passive": [False, "do nothing (set by the MkDocs hooks, which do the same work)"],
            "site_dir": ["", "where the engine writes the site, relative to repo (default: mkdocs.yml's site_dir, "
                         + "else site): the recordings the page shows are written there"],
        }
        self.result: PageResult | None = None
        self.site_root = ""  # the way up from the page as built to the site's root: "../" for x/index.html
        self.page: tuple[CheckedSite, str, str] | None = None  # the session, the page's path and file text
        super().__init__(**kwargs)

    def extendMarkdown(self, md: Markdown) -> None:
        """Register the preprocessor and the postprocessor."""
        md.registerExtension(self)
        md.preprocessors.register(_ExpandAndCheck(md, self), "lessonkit", _PRIORITY)
        # Last of all postprocessors: the slots must survive raw-HTML restoring untouched; the
        # audit reads the page just before (the transcripts are the runs' own output).
        md.postprocessors.register(_Audit(md, self), "lessonkit_audit", 1)
        md.postprocessors.register(_FillSlots(md, self), "lessonkit_fill", 0)

    def reset(self) -> None:
        """Forget the last page's result (Markdown instances are reused between pages)."""
        self.result = None
        self.page = None
        self.site_root = ""


def makeExtension(**kwargs: Any) -> LessonkitExtension:
    """The entry point Python-Markdown calls for `lessonkit.site.mdext`."""
    return LessonkitExtension(**kwargs)
