"""MkDocs hooks (MkDocs 1.6 and ProperDocs): glue between the engine and the lessonkit core.

No checking logic lives here. The hooks check the setup, keep one `CheckedSite` across the
rebuilds of `mkdocs serve` (so a rebuild re-checks only the pages whose inputs changed, and a
`--dirtyreload` rebuild re-reads them too), load the core again when a file of it changed,
and turn the core's errors into a build failure, strict or not. Under `serve` a build with
errors, or a setup it refuses, does not fail: every page of the served site becomes a page
listing them (lessonkit.site.errorpage), so the browser reloads to it instead of waiting, and
reloads to the site once the errors are fixed.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

import jinja2
import jinja2.bccache
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

# The core sits beside mkdocs.yml; make it importable without installing the project.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lessonkit

# The core's modules the hooks use, imported here and again, the same list, when the core changed.
_CORE_MODULES = ("lessonkit.pages.marks", "lessonkit.pages.published", "lessonkit.site.changes",
                 "lessonkit.site.check", "lessonkit.site.chrome", "lessonkit.site.config",
                 "lessonkit.site.errorpage", "lessonkit.site.programs", "lessonkit.site.sitemap",
                 "lessonkit.site.verify")
for _name in _CORE_MODULES:
    importlib.import_module(_name)

log = logging.getLogger("mkdocs.plugins.lessonkit")

_DIRTY_WARNING = "A 'dirty' build is being performed"

# "audits": each page's audit errors, kept across rebuilds: a dirty rebuild renders only some pages.
_state: dict = {"session": None, "spent": 0.0, "dirty": False, "serving": False, "builds": 0, "audits": {},
                "changes": None, "scans": 0}


def _core_folder() -> Path:
    return Path(lessonkit.__file__).resolve().parent


def _core_digest() -> str:
    """sha256 over the core's source files: any edit to lessonkit/ changes it."""
    h = hashlib.sha256()
    core = _core_folder()
    for path in sorted(core.rglob("*.py")):  # the base modules and every subpackage's
        h.update(path.relative_to(core).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


_state["core"] = _core_digest()  # the core as imported above


def reload_core_if_changed() -> bool:
    """Import the core afresh when its files changed since it was imported; True if it did."""
    global lessonkit
    digest = _core_digest()
    if _state["core"] == digest:
        return False
    for name in [n for n in sys.modules if n == "lessonkit" or n.startswith("lessonkit.")]:
        module = sys.modules.pop(name)
        source = getattr(module, "__file__", None)
        if source:
            # An edit of the same size within a second leaves a .pyc that still looks current.
            Path(importlib.util.cache_from_source(source)).unlink(missing_ok=True)
    importlib.invalidate_caches()
    lessonkit = importlib.import_module("lessonkit")
    for name in _CORE_MODULES:
        importlib.import_module(name)
    _state["core"] = digest
    _state["session"] = None  # results of the old core are not evidence of the new one
    log.info("lessonkit: the core changed; loaded it again and re-checking every page")
    return True


def setup_problems(config) -> list:
    """What in the site's configuration would let a page be published unchecked or shown wrongly:
    the rules of lessonkit.site.config (those `lessonkit check` applies), on the file the engine read."""
    path = Path(config.config_file_path or "mkdocs.yml").resolve()
    return lessonkit.site.config.load_site_config_errors(path.parent, path)


def setup_errors(config) -> list[str]:
    """setup_problems as messages."""
    return [str(e) for e in setup_problems(config)]


def _timed(hook):
    """Count the time spent in a hook, so the benchmark can tell lessonkit's share of a build."""
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return hook(*args, **kwargs)
        finally:
            _state["spent"] += time.perf_counter() - start
    wrapper.__name__, wrapper.__doc__ = hook.__name__, hook.__doc__
    return wrapper


class _DirtyBuildNote(logging.Filter):
    """Under `serve --dirtyreload` every page whose inputs changed is re-checked: say so as info,
    instead of the engine's warning that makes every dirty build abort in strict mode."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _state["dirty"] and record.levelno == logging.WARNING and str(record.msg).startswith(_DIRTY_WARNING):
            log.info("lessonkit: dirty rebuild; pages whose inputs changed are read and checked "
                     "again, the other pages' results are reused")
            return False
        return True


_DIRTY_FILTER = _DirtyBuildNote()


@_timed
def on_startup(*, command: str, dirty: bool) -> None:
    """Note a dirty `serve`, so its rebuilds stay strict."""
    _state["serving"] = command == "serve"
    _state["dirty"] = command == "serve" and dirty
    if _state["serving"]:
        _share_compiled_templates()
        _watch_with_inotify()
    for name in ("mkdocs.commands.build", "properdocs.commands.build"):
        logging.getLogger(name).addFilter(_DIRTY_FILTER)


@_timed
def on_config(config, **kwargs):
    """Refuse a setup that cannot show checked pages (under `serve`, list it on the error page that
    replaces every page); refresh the evidence (only what changed)."""
    reload_core_if_changed()
    problems = setup_problems(config)
    if problems and not _state["serving"]:
        raise PluginError("lessonkit cannot check this site:\n" + "\n".join(map(str, problems)))
    _state["setup"] = problems
    if "lessonkit.site.mdext" in config.markdown_extensions:  # the hooks do its work, once
        config.mdx_configs.setdefault("lessonkit.site.mdext", {})["passive"] = True
    _state["builds"] += 1
    repo = Path(config.config_file_path).resolve().parent
    session = _state["session"]
    if session is None or session.repo != repo:
        session = _state["session"] = lessonkit.site.check.CheckedSite(repo)
        _state["audits"] = {}
    # Under `serve` with inotify, _state["changes"] is what it reported since the last build: when
    # only pages changed, the last scan of evidence/ and code/ stands.
    scanned, fresh = lessonkit.site.changes.rebuild_scan(_state["changes"], repo, config.docs_dir, session.last_scan)
    session.refresh(scanned)
    _state["scans"] += fresh
    _state["results"] = {}
    _state.pop("settings_shown", None)  # read again for this build's configuration
    return config


def _shown(page_file, config) -> str:
    return f"{Path(config.docs_dir).name}/{page_file.src_uri}"


@_timed
def on_files(files, *, config):
    """Note each page's file before the engine reads it; in a dirty rebuild, have the engine read
    again every page whose inputs changed, not only the pages edited."""
    session = _state["session"]
    pages = [(f, _shown(f, config), Path(f.abs_src_path)) for f in files.documentation_pages()]
    _state["pages"] = [(shown, path) for _, shown, path in pages]
    _state["sources"] = {}
    # After a build that served the error page everywhere, every page must be written again.
    rewrite_all = _state.pop("error_page_served", False) and _state["dirty"]
    for f, shown, path in pages:
        if rewrite_all or (_state["dirty"] and session.needs_check(shown, path)):
            f.is_modified = lambda: True
        _state["sources"][shown] = session.digests.digest(path)
    _add_program_pages(files, config, session.repo, rewrite_all)
    return files


def _add_program_pages(files, config, repo: Path, rewrite_all: bool = False) -> None:
    """A page at code/LESSON/ for each lesson, listing its program's files (published by
    on_post_build); they are lessonkit's own output, not pages of docs/ to check."""
    programs = _state["programs"] = {}
    built = _state.setdefault("program_pages", {})  # src_uri -> the page as the last build wrote it
    for lesson in lessonkit.site.programs.lesson_folders(repo):
        programs[lesson] = lessonkit.site.programs.program_files(repo, lesson)
        page = lessonkit.site.programs.program_page(
            lesson, programs[lesson], lessonkit.site.programs.lesson_spec(repo, lesson))
        src_uri = lessonkit.site.programs.program_folder(lesson) + "index.md"
        if files.get_file_from_path(src_uri) is None:
            generated = File.generated(config, src_uri, content=page)
            if _state["dirty"] and not rewrite_all and built.get(src_uri) == page:
                # A generated file counts as modified in every build; under --dirtyreload that
                # rebuilt every lesson's program page on every reload (a second at 100 lessons).
                generated.is_modified = lambda: False
            built[src_uri] = page
            files.append(generated)


@_timed
def on_page_markdown(markdown, *, page, config, files):
    """Expand the page's regions and transcripts, check its claims (again only if an input changed),
    and mark it checked for verify-site; note the lessons whose programs it shows, for its Source link."""
    if page.file.generated_by is not None:
        return markdown  # a program's page (on_files): lessonkit's own, not a page of docs/
    raw = page.file.content_string
    offset = max(raw.count("\n") - markdown.count("\n"), 0)
    shown = _shown(page.file, config)
    result = _state["session"].page(markdown, shown, offset, Path(page.file.abs_src_path),
                                    _state.get("sources", {}).get(shown))
    _state["results"][page.file.src_uri] = result
    _note_programs(page, result)
    if result.unrecorded:  # not recorded yet: out of the search index, the sitemap and search engines
        page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
        page.meta["lessonkit_noindex"] = True
        _state.setdefault("unrecorded_pages", set()).update(
            {page.file.url, lessonkit.site.programs.program_folder(result.unrecorded)})  # and its program's page
    # Every recording the page shows or links becomes a file of the site, evidence/SET/FILE, which
    # the engine copies with the static files (and finds when it checks the page's own links).
    for published in result.published:
        if files.get_file_from_path(published.path) is None:
            files.append(File.generated(config, published.path, abs_src_path=str(published.source)))
    # The marks go in as raw HTML here: appended to the finished page they would copy the page.
    return (lessonkit.site.verify.START_MARK.strip() + "\n\n" + result.markdown + "\n\n"
            + lessonkit.site.verify.CHECKED_MARK.strip() + "\n")


def _note_programs(page, result) -> None:
    """Put in the page's meta the programs it shows, for the theme's Source link (overrides/main.html).
    The home page quotes lessons to introduce them; it has no program of its own."""
    lessons = [] if page.is_homepage else [
        name for name in lessonkit.site.programs.page_programs(result, _state["session"].set_lessons)
        if name in _state.get("programs", {})]
    page.meta["lessonkit_programs"] = [
        {"url": lessonkit.site.programs.program_folder(name),
         "label": "Source" if len(lessons) == 1 else f"Source: {name}",
         "title": f"The lesson's program: {lessonkit.site.programs.program_folder(name)}"}
        for name in lessons]


@_timed
def on_page_content(html, *, page, config, files):
    """Audit what a reader will see of the page (lessonkit.pages.audit: the page whole, its slots filled,
    a diagram's text named at its SVG's lines), then put the finished blocks (transcripts, provenance
    tables, diagrams) into the slots the page left for them, without the audit's marks of where a
    diagram's text is written."""
    result = _state["results"].pop(page.file.src_uri, None)
    if result is None:
        return html
    shown = _shown(page.file, config)
    _state["audits"][shown] = _state["session"].audit(shown, html, page.file.content_string)
    _strip_toc(page.toc)  # a heading's marks, as the table of contents and the title show it
    if getattr(page, "_title_from_render", None):
        page._title_from_render = lessonkit.pages.marks.strip(page._title_from_render)
    _state.setdefault("titles", set()).add(page.title or "")  # what the theme may show of the page elsewhere
    return result.fill(html, lessonkit.pages.published.site_root(page.file.dest_uri))


@_timed
def on_nav(nav, *, config, files):
    """Note every title of the navigation: the theme shows them around every page's content."""
    pending, titles = list(nav.items), set()
    while pending:
        item = pending.pop()
        titles.add(item.title or "")
        pending += list(getattr(item, "children", None) or [])
    _state["nav_titles"] = titles
    return nav


def _settings_shown(config) -> list[str]:
    """The texts of mkdocs.yml the theme shows, as lessonkit.site.config reads them (and checks their
    figures): the site's name, description, copyright, repository name, navigation titles, the
    colour-scheme toggle's names, extra's texts."""
    path = Path(config.config_file_path)
    site = lessonkit.site.config.read_site_config(path.read_text(encoding="utf-8"), path.name, str(path.parent))
    return [text for _, _, text in site.shown]


def _toc_titles(items) -> list[str]:
    return [t for item in items for t in [item.title, *_toc_titles(item.children)]]


def _strip_toc(items) -> None:
    for item in items:
        item.title = lessonkit.pages.marks.strip(item.title)
        _strip_toc(item.children)


class _Templates(jinja2.BytecodeCache):
    """The theme's compiled templates, kept across the rebuilds of `serve` (each rebuild makes new
    Jinja environments and would compile Material's templates again: a fifth of a reload)."""

    def __init__(self) -> None:
        self.compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if bucket.key in self.compiled:
            bucket.bytecode_from_string(self.compiled[bucket.key])

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.compiled[bucket.key] = bucket.bytecode_to_string()


_TEMPLATES = _Templates()


def _watch_with_inotify() -> None:
    """`serve` polls every watched file twice a second (thousands of files at a hundred lessons,
    and a quarter second's wait on average before a save is seen); on Linux, have it use inotify,
    which reports a save at once. Only changes count: inotify also reports files being opened and
    read, and every rebuild reads watched files. Its server makes its observer after on_startup;
    LESSONKIT_POLL=1 keeps the polling."""
    import inspect

    import watchdog.observers
    import watchdog.observers.polling
    from watchdog import events

    inotify = watchdog.observers.Observer
    if (not sys.platform.startswith("linux") or os.environ.get("LESSONKIT_POLL") == "1"
            or "event_filter" not in inspect.signature(inotify.schedule).parameters):
        return
    changes = [events.FileCreatedEvent, events.FileModifiedEvent, events.FileDeletedEvent,
               events.FileMovedEvent, events.DirCreatedEvent, events.DirDeletedEvent,
               events.DirMovedEvent, events.FileAttribEvent, events.EventsLostEvent]

    noted = _state["changes"] = lessonkit.site.changes.Changes()

    class Noting(events.FileSystemEventHandler):
        """Tells `noted` each change before the server's handler sees it."""

        def __init__(self, handler) -> None:
            self.handler = handler

        def dispatch(self, event) -> None:
            self.handler.dispatch(_noted(noted, event))

    class ChangesObserver(inotify):
        def __init__(self, timeout: float = 1.0) -> None:
            super().__init__(timeout=timeout)

        def schedule(self, handler, path, *, recursive=False, event_filter=None, **kwargs):
            watch = super().schedule(Noting(handler), path, recursive=recursive,
                                     event_filter=event_filter or changes, **kwargs)
            noted.watching(os.fspath(path), recursive)  # once it watches: what came before is unknown
            return watch

        def unschedule(self, watch) -> None:
            noted.unwatched(watch.path, watch.is_recursive)
            super().unschedule(watch)

    watchdog.observers.polling.PollingObserver = ChangesObserver


def _noted(changes, event):
    """Tell `changes` (lessonkit.site.changes.Changes) what the watcher's `event` reports; the
    event for the server. A lost report (the kernel's queue overflowed) reaches the server as a
    change, so that it rebuilds: it ignores a folder's lost report."""
    from watchdog import events

    if isinstance(event, events.EventsLostEvent):
        changes.lost()
        return events.FileModifiedEvent(event.src_path)
    changes.reported([os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", ""))])
    return event


def _share_compiled_templates() -> None:
    """Give every Jinja environment the theme makes during `serve` the shared template cache
    (plugins make their own before any hook sees them: Material's search compiles one per build)."""
    from mkdocs.theme import Theme  # under ProperDocs, its own Theme (mkdocs.* is an alias there)

    make_env = Theme.get_env
    if getattr(make_env, "lessonkit_shared", False):
        return

    def get_env(self):
        env = make_env(self)
        if env.bytecode_cache is None:
            env.bytecode_cache = _TEMPLATES  # a bucket is used only while its source is unchanged
        return env

    get_env.lessonkit_shared = True
    Theme.get_env = get_env


@_timed
def on_env(env, *, config, files):
    """After every page was read: fail the build, strict or not, listing every error of the site.
    Under `serve`, list them in the terminal and let the build finish: on_post_build puts the
    error page in place of every page."""
    pages = _state.get("pages", [])
    found, notes = lessonkit.split_notes(_state.pop("setup", []) + _state["session"].errors(pages))
    errors, warnings = lessonkit.split_warnings(found)
    for note in notes:  # a lesson not recorded yet: its page shows a notice; fails no build
        log.info(f"lessonkit: {note}")
    if config.get("strict"):  # refused here too: `-q` hides warnings from MkDocs' own strict count
        errors += warnings    # (and, logged, they would abort a strict `serve` after its error page)
    else:
        for warning in warnings:  # a lesson folder the site does not use
            log.warning(str(warning))
    listed = {shown for shown, _ in pages}
    for shown in [s for s in _state["audits"] if s not in listed]:
        del _state["audits"][shown]  # a page no longer built
    errors += [e for shown in sorted(_state["audits"]) for e in _state["audits"][shown]]
    _state["errors"] = errors
    if not errors:
        return env
    report = lessonkit.LessonErrors(errors).report()
    if not _state["serving"]:
        raise PluginError("lessonkit found problems:\n" + report)
    # Written, not logged: under `strict`, a logged error would abort the build after the pages
    # were written, and the server would keep the browser waiting. The rebuild's number tells
    # a report from the one before it.
    print(f"ERROR   -  lessonkit found problems (rebuild {_state['builds']}):\n{report}\n"
          "The served site shows them in place of every page until they are fixed.",
          file=sys.stderr, flush=True)
    return env


def _serve_error_page(site_dir: Path, errors: list) -> None:
    """Write the page listing `errors` over every HTML file of the served site (404.html too)."""
    repo = _state["session"].repo
    text = lessonkit.site.errorpage.error_page(errors, repo, note=f"Build {_state['builds']} of this server.")
    for page in site_dir.rglob("*.html"):
        page.write_text(text, encoding="utf-8")
    _state["error_page_served"] = True


def _write_timings(ok: bool) -> None:
    target = os.environ.get("LESSONKIT_TIMINGS")
    session = _state["session"]
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(json.dumps({"lessonkit_s": round(_state["spent"], 6), "ok": ok,
                                "page_checks": session.checks if session else 0,
                                "evidence_loads": session.reloads if session else 0,
                                "tree_scans": _state["scans"]}) + "\n")
    _state["spent"] = 0.0
    _state["scans"] = 0


@_timed
def on_post_page(output, *, page, config):
    """Read what the theme shows around the page's content (lessonkit.site.chrome); a lesson not recorded
    yet asks search engines not to index its page (lessonkit.evidence.unrecorded)."""
    if page.file.generated_by is None:
        if "settings_shown" not in _state:  # once a build
            _state["settings_shown"] = _settings_shown(config)
        allowed = [*_state["settings_shown"], *_state.get("nav_titles", ()), *_state.get("titles", ()),
                   *_toc_titles(page.toc)]
        _state.setdefault("chrome", []).extend(_state["session"].chrome(
            _shown(page.file, config), output, page.content or "", allowed))
    if page.meta.get("lessonkit_noindex"):
        return lessonkit.site.sitemap.noindex(output)
    return output


def on_post_build(*, config):
    """Publish the lessons' programs; under `serve`, put the error page in place of every page;
    record lessonkit's time for the benchmark."""
    errors = _finish_build(config)
    if errors and not _state["serving"]:  # what the theme showed around a page: read only as pages were written
        raise PluginError("lessonkit found problems:\n" + lessonkit.LessonErrors(errors).report())
    _write_timings(not errors)


@_timed
def _finish_build(config) -> list:
    """Publish the lessons' programs, keep the lessons not recorded yet out of the sitemap and the
    search, and under `serve` put the error page in place of every page; the build's errors."""
    site_dir = Path(config.site_dir)
    publish = {}
    for lesson, program in _state.pop("programs", {}).items():  # each lesson's program, byte for byte
        folder = lessonkit.site.programs.program_folder(lesson)
        publish.update({folder + f.name: f.path for f in program})
    for dest, source in sorted(publish.items()):
        target = site_dir / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    unrecorded = _state.pop("unrecorded_pages", set())  # lessons not recorded yet: out of the sitemap and search
    lessonkit.site.sitemap.drop_from_sitemap(site_dir, config.site_url or "", unrecorded)
    lessonkit.site.sitemap.drop_from_search(site_dir, unrecorded)
    errors = _state.pop("errors", []) + _state.pop("chrome", [])
    if errors and _state["serving"]:  # under serve, where on_env let a build with errors finish
        _serve_error_page(site_dir, errors)
    return errors


def on_build_error(*, error):
    """Record lessonkit's time for a build that failed, as for one that passed."""
    _write_timings(False)
