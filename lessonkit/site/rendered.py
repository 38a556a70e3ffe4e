"""A page rendered as the site renders it, in process and without a site build: the expanded Markdown
(lessonkit.pages.page) converted by Python-Markdown with the extensions the site's mkdocs.yml lists.

`lessonkit check` renders each page it must check with this and audits the HTML
(lessonkit.pages.audit) as the hooks and lessonkit.site.mdext audit the HTML of a build, so
check finds what a build finds. `rendering_key` identifies what the rendering depends on besides
the page (mkdocs.yml and the installed Markdown packages) without importing them, for the cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from lessonkit.pages.narrative import COURSE_FILE
from lessonkit.pages.result import PageResult
from lessonkit.pages.sources import SOURCES_FILE

_OURS = ("lessonkit.site.mdext", "lessonkit.mdext")  # done by lessonkit directly, never by the renderer
# What a site needs (lessonkit.site.config.REQUIRED_EXTENSIONS) when no mkdocs.yml can be read.
_ALWAYS = ("toc", "tables", "fenced_code")  # mkdocs.config.config_options.MarkdownExtensions builtins
_FALLBACK = ["pymdownx.superfences", "pymdownx.highlight"]
# The packages whose code renders a page: a new install of one is a new rendering.
_PACKAGES = ("markdown", "pymdownx", "pygments")


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


class Rendering(NamedTuple):
    """What a page's rendering depends on besides the page: mkdocs.yml's bytes (b"" when there is
    none), and `key`, a sha256 over them and each installed rendering package (its file and stat:
    a reinstall is a new key)."""

    config: bytes
    key: str


def rendering_key(repo: Path) -> Rendering:
    """The site's `Rendering` now, without importing the rendering packages; `Renderer` renders by
    exactly these bytes of mkdocs.yml. The key covers narrative.yml and sources.yml too: a page's audit and claims read them."""
    try:
        config = (repo / "mkdocs.yml").read_bytes()
    except OSError:
        config = b""
    h = hashlib.sha256(config)
    try:  # the course's narrative phrases: the audit of every page reads them
        h.update(b"\0narrative\0" + (repo / COURSE_FILE).read_bytes())
    except OSError:
        h.update(b"\0narrative\0")
    try:  # the course's list of sources: a page's claims on a work read it
        h.update(b"\0sources\0" + (repo / SOURCES_FILE).read_bytes())
    except OSError:
        h.update(b"\0sources\0")
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None and spec.origin else ""
        try:
            st = os.stat(origin)
            h.update(f"\0{name}\0{origin}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"\0{name}\0{origin}".encode())
    return Rendering(config, h.hexdigest())


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
