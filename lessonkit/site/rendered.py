"""A page rendered as the site renders it, in process and without a site build: the expanded Markdown
(lessonkit.pages.page) converted by Python-Markdown with the extensions the site's mkdocs.yml lists.

`lessonkit check` renders each page it must check with this and audits the HTML
(lessonkit.pages.audit) as the hooks and lessonkit.site.mdext audit the HTML of a build, so
check finds what a build finds. What the rendering depends on besides the page (`Rendering`:
mkdocs.yml and the installed Markdown packages) is keyed without importing them by
lessonkit.site.verdict.rendering_key.
"""

from __future__ import annotations

from typing import Any

import yaml

from lessonkit.pages.result import PageResult
from lessonkit.site.verdict import Rendering

_OURS = ("lessonkit.site.mdext", "lessonkit.mdext")  # done by lessonkit directly, never by the renderer
# What a site needs (lessonkit.site.config.REQUIRED_EXTENSIONS) when no mkdocs.yml can be read.
_ALWAYS = ("toc", "tables", "fenced_code")  # mkdocs.config.config_options.MarkdownExtensions builtins
_FALLBACK = ["pymdownx.superfences", "pymdownx.highlight"]


class _Tolerant(yaml.SafeLoader):
    """mkdocs.yml as data: a tag (`!ENV`, `!!python/name:`) reads as its plain value, never runs."""


_Tolerant.add_multi_constructor("", lambda loader, suffix, node: (
    loader.construct_scalar(node) if isinstance(node, yaml.ScalarNode) else None))


def site_extensions(config_bytes: bytes) -> tuple[list[str], dict[str, Any]]:
    """The Markdown extensions mkdocs.yml (its bytes) lists, without lessonkit's own, and their
    options; the extensions every site needs when it cannot be read (`check` reports why)."""
    try:
        config = yaml.load(config_bytes.decode("utf-8"), Loader=_Tolerant) if config_bytes else None
    except (UnicodeDecodeError, yaml.YAMLError, RecursionError):  # lessonkit.site.config says why
        config = None
    if config is None:
        return list(_FALLBACK), {}
    names: list[str] = []
    options: dict[str, Any] = {}
    items = config.get("markdown_extensions") if isinstance(config, dict) else None
    for item in items if isinstance(items, list) else []:
        name, opts = (next(iter(item.items())) if isinstance(item, dict) and item else (item, None))
        if not isinstance(name, str) or name in _OURS:
            continue
        names.append(name)
        if isinstance(opts, dict):
            options[name] = opts
    # MkDocs (and ProperDocs, Zensical) load these whatever mkdocs.yml lists, before its own.
    short = {n.removeprefix("markdown.extensions.") for n in names}
    return [n for n in _ALWAYS if n not in short] + names, options


class Renderer:
    """Python-Markdown with the site's extensions, reused from page to page."""

    def __init__(self, rendering: Rendering) -> None:
        """Python-Markdown for `rendering` (`rendering_key`)."""
        import markdown  # imported here: a check that renders nothing (a warm one) does not pay for it

        names, options = site_extensions(rendering.config)
        self.md = markdown.Markdown(extensions=names, extension_configs=options)

    def render(self, result: PageResult) -> str:
        """The page's HTML as an engine renders the expanded Markdown (transcript slots left empty)."""
        self.md.reset()
        return self.md.convert(result.markdown)
