"""One page checked as a reader gets it, in process and without a site build: its Markdown expanded
and checked (lessonkit.pages.page), rendered by Python-Markdown with the extensions the site's
mkdocs.yml lists, and the HTML audited (lessonkit.pages.audit). The hooks and lessonkit.site.mdext
do the same inside a build; the tests and the mutation test call this for speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import markdown
import yaml

from lessonkit.errors import LessonError
from lessonkit.pages.audit import audit_page
from lessonkit.pages.narrative import load_course
from lessonkit.pages.state import PageResult
from lessonkit.site.check import Site, strip_front_matter
from lessonkit.textio import read_text

_OURS = ("lessonkit.site.mdext", "lessonkit.mdext")  # done here directly


class _Tolerant(yaml.SafeLoader):
    """mkdocs.yml as data: a tag (`!ENV`, `!!python/name:`) reads as its plain value, never runs."""


_Tolerant.add_multi_constructor("", lambda loader, suffix, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None))


def site_extensions(repo: Path) -> tuple[list[str], dict[str, Any]]:
    """The Markdown extensions mkdocs.yml lists (without lessonkit's own) and their options."""
    config = yaml.load(read_text(repo / "mkdocs.yml", "mkdocs.yml"), Loader=_Tolerant) or {}
    names: list[str] = []
    options: dict[str, Any] = {}
    for item in config.get("markdown_extensions") or []:
        name, opts = (next(iter(item.items())) if isinstance(item, dict) else (item, None))
        if name in _OURS:
            continue
        names.append(name)
        if isinstance(opts, dict):
            options[name] = opts
    return names, options


class RenderedCheck:
    """Check pages of one repository as rendered: `check(source, path)` for each."""

    def __init__(self, repo: Path, site: Site | None = None) -> None:
        self.site = site or Site.load(repo)
        names, options = site_extensions(repo)
        self.md = markdown.Markdown(extensions=names, extension_configs=options)

    def render(self, result: PageResult) -> str:
        """The page's HTML as an engine renders the expanded Markdown (transcript slots left empty)."""
        self.md.reset()
        return self.md.convert(result.markdown)

    def check(self, source: str, path: str) -> tuple[PageResult, list[LessonError]]:
        """The page's result and every error of it: its Markdown's, then the audit's of its HTML."""
        body, offset = strip_front_matter(source)
        result = self.site.page(body, path, offset)
        return result, result.errors + audit_page(self.render(result), source, path, result,
                                                  self.site.evidence.sets, load_course(self.site.repo))
