"""MkDocs hooks: glue between MkDocs and the lessonkit core. No checking logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

# The core sits beside mkdocs.yml; make it importable without installing the project.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lessonkit.errors import LessonError, LessonErrors  # noqa: E402
from lessonkit.site import Site  # noqa: E402

_state: dict = {}


def on_config(config, **kwargs):
    """Load and check the evidence once per build."""
    repo = Path(config.config_file_path).resolve().parent
    _state["site"] = Site.load(repo)
    _state["errors"] = list(_state["site"].site_errors())
    _state["results"] = {}
    return config


def on_page_markdown(markdown, *, page, config, files):
    """Expand the page's regions and transcripts, check its claims, keep the errors for on_env."""
    site: Site = _state["site"]
    raw = page.file.content_string
    offset = raw.count("\n") - markdown.count("\n")
    result = site.page(markdown, f"{Path(config.docs_dir).name}/{page.file.src_uri}", max(offset, 0))
    _state["errors"].extend(result.errors)
    _state.setdefault("results", {})[page.file.src_uri] = result
    return result.markdown


def on_page_content(html, *, page, config, files):
    """Put the finished transcript blocks into the slots the page left for them."""
    result = _state.get("results", {}).pop(page.file.src_uri, None)
    return result.fill(html) if result is not None else html


def on_env(env, *, config, files):
    """After every page was read: fail the build, strict or not, listing every error."""
    errors: list[LessonError] = _state.get("errors", [])
    if errors:
        raise PluginError("lessonkit found problems:\n" + LessonErrors(errors).report())
    return env
