"""The site's configuration (mkdocs.yml) against the rules that keep every published page checked.

`lessonkit check` reads the pages under docs/; MkDocs and ProperDocs build what the site's
configuration says. A setting that moves the pages, drops lessonkit's hooks or extension, or
adds code that runs after the check (another hook, a plugin, a Markdown extension, a YAML tag
that imports Python) would publish pages lessonkit never checked, or change them after it did.
`site_config_errors` refuses such a configuration; `check` and the hooks' `on_config` both call
it, so the rules live here alone.

The file is read with PyYAML's composer, the parser MkDocs itself uses, and nothing is
constructed: every tag is kept (none is run, an unknown one is no error) and every setting
keeps its line.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import yaml

from lessonkit.errors import LessonError
from lessonkit.repo import OTHER_CONFIGS
from lessonkit.textio import read_text

CONFIG = "mkdocs.yml"
DOCS_DIR = "docs"
HOOKS_FILE = "hooks/lessonkit_hooks.py"
# The hooks that ship beside this package: a site elsewhere (a test's) may name them by path.
SHIPPED_HOOKS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", HOOKS_FILE))

# Extensions the pages' expansions need, and why (named in the refusal).
REQUIRED_EXTENSIONS = {
    "pymdownx.superfences": "code regions and transcripts are fenced blocks (plain Markdown and "
                            "fenced_code show them as raw fences)",
    "pymdownx.highlight": "regions are numbered with their file's own lines and highlighted by it",
    "lessonkit.site.mdext": "checks run through it in engines that ignore hooks (Zensical)",
}
# Markdown extensions whose code may run on the pages: each renders what the page says, reads
# no other file and puts no other text in its place. Any other extension (a module of the
# repository, say) runs after the check and could change a checked figure.
ALLOWED_EXTENSIONS = frozenset({
    "lessonkit.site.mdext",
    "abbr", "admonition", "attr_list", "codehilite", "def_list", "fenced_code", "footnotes",
    "md_in_html", "sane_lists", "tables", "toc",
    "pymdownx.arithmatex", "pymdownx.betterem", "pymdownx.caret", "pymdownx.details",
    "pymdownx.emoji", "pymdownx.highlight", "pymdownx.inlinehilite", "pymdownx.keys",
    "pymdownx.magiclink", "pymdownx.mark", "pymdownx.saneheaders", "pymdownx.superfences",
    "pymdownx.tabbed", "pymdownx.tasklist", "pymdownx.tilde",
})
# Extensions that pull text in from other files, after lessonkit has checked the page.
INCLUDING_EXTENSIONS = frozenset({"pymdownx.snippets", "markdown_include.include", "mdx_include"})
# Plugins that may run: the search index is built from finished pages and changes none.
ALLOWED_PLUGINS = frozenset({"search", "material/search"})
# Plugins that expand {{ ... }} themselves, before lessonkit could check a claim.
JINJA_PLUGINS = ("macros", "markdownextradata")
# `!!python/name:M.F` imports M while the file is read, and an extension later calls F on the
# pages: only these modules' functions. `!!python/object/apply:F` calls F: only these.
PYTHON_NAME_MODULES = ("markdown.extensions.toc", "material.extensions.emoji", "pymdownx.arithmatex",
                       "pymdownx.emoji", "pymdownx.slugs", "pymdownx.superfences")
PYTHON_APPLY = ("pymdownx.slugs.slugify",)
# Python tags that build a plain value and run nothing.
_PLAIN_PYTHON = frozenset(f"python/{t}" for t in ("none", "bool", "str", "unicode", "bytes", "int",
                                                   "long", "float", "complex", "list", "tuple", "dict"))
_YAML = "tag:yaml.org,2002:"
_STANDARD = frozenset(_YAML + t for t in ("str", "int", "float", "bool", "null", "timestamp", "seq", "map"))
_FIX_HOOKS = f"hooks must be exactly [{HOOKS_FILE}]"


@dataclass(frozen=True)
class Entry:
    """A name listed under hooks, markdown_extensions or plugins: its options and its line."""

    name: str
    line: int
    options: Mapping[str, str] = field(default_factory=dict)  # option -> its text ("" if not a scalar)


@dataclass(frozen=True)
class SiteConfig:
    """What the rules read of a site configuration, each setting with its line (None: absent)."""

    path: str     # as messages name it
    folder: str   # the folder MkDocs resolves docs_dir and hooks against
    lines: Mapping[str, int]
    # None: absent (no line in `lines`) or unreadable (a problem says why).
    docs_dir: str | None = None
    hooks: tuple[Entry, ...] | None = None
    extensions: tuple[Entry, ...] | None = None
    plugins: tuple[Entry, ...] | None = None
    inherit: str | None = None
    problems: tuple[LessonError, ...] = ()  # found while reading: YAML, tags, keys
    readable: bool = True  # False: not YAML or not a mapping, so no setting could be read
    shown: tuple[tuple[str, int, str], ...] = ()  # (what, line, text) a reader sees: site name, nav titles
    writers: tuple[tuple[str, int, str], ...] = ()  # (setting, line, value): stylesheets, scripts, templates


class _Reader:
    """Reads one composed YAML tree, collecting every problem instead of stopping at the first."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.problems: list[LessonError] = []

    def error(self, node: yaml.Node | None, message: str) -> None:
        line = node.start_mark.line + 1 if node is not None else None
        self.problems.append(LessonError(self.shown, line, message, rank=0))

    def mapping(self, node: yaml.Node, what: str) -> dict[str, tuple[yaml.Node, yaml.Node]]:
        """A mapping's entries by key; a merge key, a tagged or repeated key is a problem."""
        found: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in node.value:
            if key.tag == _YAML + "merge":
                self.error(key, f"merge key '<<' in {what} brings in settings lessonkit does not "
                           "read here; write them out")
            elif not isinstance(key, yaml.ScalarNode) or key.tag not in _STANDARD:
                self.error(key, f"a key of {what} is not plain text (tag {_short(key.tag)!r}); "
                           "write the key out")
            elif key.value in found:
                first = found[key.value][0].start_mark.line + 1
                self.error(key, f"{key.value} is given again (first at line {first}); MkDocs keeps "
                           "the last one: keep one")
            else:
                found[key.value] = (key, value)
        return found

    def plain(self, node: yaml.Node, what: str) -> bool:
        """Whether `node` is written out (no tag such as !ENV makes its value elsewhere)."""
        if node.tag in _STANDARD:
            return True
        self.error(node, f"{what} is given through tag {_short(node.tag)!r}, so its value is made "
                   "while the engine reads the file; write it out plainly")
        return False

    def text(self, node: yaml.Node, what: str) -> str | None:
        """A plain text value, or None (and a problem)."""
        if not self.plain(node, what):
            return None
        if isinstance(node, yaml.ScalarNode) and node.tag == _YAML + "str":
            return node.value
        self.error(node, f"{what} is not text; write it as a name")
        return None

    def entries(self, node: yaml.Node, what: str) -> tuple[Entry, ...] | None:
        """The names of a list (or mapping) of `NAME` or `NAME: {options}`; None if unreadable."""
        if not self.plain(node, what):
            return None
        if node.tag == _YAML + "null":
            return ()
        if isinstance(node, yaml.MappingNode):
            pairs = list(self.mapping(node, what).values())
        elif isinstance(node, yaml.SequenceNode):
            pairs = []
            for item in node.value:
                if isinstance(item, yaml.ScalarNode):
                    pairs.append((item, None))
                elif isinstance(item, yaml.MappingNode) and len(item.value) == 1:
                    if self.plain(item, what):
                        pairs.extend(self.mapping(item, what).values())
                else:
                    self.error(item, f"an entry of {what} is neither NAME nor NAME: {{options}}; "
                               "write one of those")
        else:
            self.error(node, f"{what} is not a list; write one entry a line, '- NAME'")
            return None
        found = []
        for key, value in pairs:
            name = self.text(key, f"an entry of {what}")
            if name is not None:
                found.append(Entry(name, key.start_mark.line + 1, self.options(value)))
        return tuple(found)

    def options(self, node: yaml.Node | None) -> dict[str, str]:
        if not isinstance(node, yaml.MappingNode):
            return {}
        return {k.value: (v.value if isinstance(v, yaml.ScalarNode) else "")
                for k, v in node.value if isinstance(k, yaml.ScalarNode)}

    def python_tags(self, root: yaml.Node) -> None:
        """Every tag that would import or run Python while the engine reads the file."""
        seen: set[int] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.tag.startswith(_YAML + "python/"):
                self._python_tag(node)
            if isinstance(node, yaml.SequenceNode):
                stack.extend(node.value)
            elif isinstance(node, yaml.MappingNode):
                stack.extend(n for pair in node.value for n in pair)

    def _python_tag(self, node: yaml.Node) -> None:
        kind, _, target = node.tag.removeprefix(_YAML).partition(":")
        short = _short(node.tag)
        if kind in _PLAIN_PYTHON:
            return
        if kind in ("python/name", "python/module"):
            module = target if kind == "python/module" else target.rpartition(".")[0]
            if module not in PYTHON_NAME_MODULES:
                self.error(node, f"tag {short!r} imports {module!r} while the engine reads this file, and "
                           "its code could change pages after lessonkit checked them; name a function "
                           f"of {', '.join(PYTHON_NAME_MODULES)}")
        elif not (kind == "python/object/apply" and target in PYTHON_APPLY):
            self.error(node, f"tag {short!r} runs Python code while the engine reads this file, before "
                       f"lessonkit checks anything; remove it (of such tags only "
                       f"'!!python/object/apply:{PYTHON_APPLY[0]}' is allowed)")


def _short(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML) if tag.startswith(_YAML) else tag


# A site configuration is a few kilobytes; PyYAML reads some 400 KB a second, so a longer text is
# refused before it is read (a check must not stall on a megabyte of YAML).
MAX_CONFIG_CHARS = 100_000


class _Unreadable(yaml.YAMLError):
    """A configuration refused before or while it is read: too long, or nested too deeply."""


@functools.lru_cache(maxsize=8)
def _compose(text: str) -> yaml.Node | None:
    """The YAML tree of a configuration's text, composed once per text (a check reads mkdocs.yml
    twice: its settings, and whether it is strict). The tree is only read, never changed."""
    if len(text) > MAX_CONFIG_CHARS:
        raise _Unreadable(f"it is {len(text)} characters long, more than the {MAX_CONFIG_CHARS} a site "
                          "configuration may be; shorten it")
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:  # PyYAML composes one level of nesting per call
        raise _Unreadable("it is nested too deeply to read as YAML; fix it (MkDocs cannot read it "
                          "either)") from None


def read_site_config(text: str, shown: str, folder: str) -> SiteConfig:
    """The settings the rules read from a configuration's text (`folder`: where it lies)."""
    reader = _Reader(shown)
    try:
        root = _compose(text)
    except _Unreadable as exc:
        return SiteConfig(shown, folder, {}, problems=(LessonError(shown, None, str(exc), rank=0),),
                          readable=False)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        return SiteConfig(shown, folder, {}, problems=(LessonError(
            shown, mark.line + 1 if mark else None,
            f"cannot be read as YAML: {problem}; fix it (MkDocs cannot read it either)", rank=0),),
            readable=False)
    if root is None:
        return SiteConfig(shown, folder, {})
    reader.python_tags(root)
    if not isinstance(root, yaml.MappingNode):
        reader.error(root, "is not a mapping of settings; write 'NAME: VALUE' lines")
        return SiteConfig(shown, folder, {}, problems=tuple(reader.problems), readable=False)
    top = reader.mapping(root, "the configuration")
    lines = {name: key.start_mark.line + 1 for name, (key, _) in top.items()}
    value = {name: node for name, (_, node) in top.items()}
    setting = {"docs_dir": reader.text, "hooks": reader.entries, "markdown_extensions": reader.entries,
               "plugins": reader.entries, "INHERIT": reader.text}
    read = {name: setting[name](node, name) for name, node in value.items() if name in setting}
    return SiteConfig(shown, folder, lines, docs_dir=read.get("docs_dir"), hooks=read.get("hooks"),
                      extensions=read.get("markdown_extensions"), plugins=read.get("plugins"),
                      inherit=read.get("INHERIT"), problems=tuple(reader.problems),
                      shown=tuple(_shown_texts(value)), writers=tuple(_writers(value)))


# The settings the theme shows on every page: the name (header and title), the description (the home
# page's metadata), the footer's copyright line and the repository's name beside its link.
SHOWN_SETTINGS = ("site_name", "site_description", "copyright", "repo_name")


def _scalars(node: yaml.Node, path: str) -> list[tuple[str, int, str]]:
    """(where, line, text) of every scalar below `node`, `path` naming it (theme.palette.toggle.name)."""
    if isinstance(node, yaml.ScalarNode):  # text (a number or a tag's argument is not a setting the theme writes)
        return [(path, node.start_mark.line + 1, str(node.value))] if node.tag.endswith(":str") else []
    if isinstance(node, yaml.SequenceNode):
        return [found for item in node.value for found in _scalars(item, path)]
    if isinstance(node, yaml.MappingNode):
        return [found for key, item in node.value if isinstance(key, yaml.ScalarNode)
                for found in _scalars(item, f"{path}.{key.value}")]
    return []


def _shown_texts(value: Mapping[str, yaml.Node]) -> list[tuple[str, int, str]]:
    """The configuration's text a reader sees: SHOWN_SETTINGS, every title of the navigation, the names
    the theme gives its controls (the colour scheme toggle's `name`, its tooltip and label on every page)
    and every text under `extra` (Material shows its social links' names, its consent text, ...)."""
    found = [(name, node.start_mark.line + 1, node.value) for name, node in value.items()
             if name in SHOWN_SETTINGS and isinstance(node, yaml.ScalarNode)]
    if "theme" in value:
        found += [f for f in _scalars(value["theme"], "theme") if f[0].endswith(".name") and f[0] != "theme.name"]
    if "extra" in value:
        found += _scalars(value["extra"], "extra")
    pending = [value["nav"]] if "nav" in value else []
    while pending:
        node = pending.pop(0)
        if isinstance(node, yaml.SequenceNode):
            pending[:0] = node.value
        elif isinstance(node, yaml.MappingNode):
            for key, item in node.value:
                if isinstance(key, yaml.ScalarNode):
                    found.append(("nav title", key.start_mark.line + 1, key.value))
                pending.append(item)
    return sorted(found, key=lambda f: f[1])


def _shown_text_errors(config: SiteConfig) -> list[LessonError]:
    """A figure in the site's name, description, copyright line, repository name or a navigation title
    stands inside a phrase of the course (narrative.yml): no claim can produce it there
    (lessonkit.pages.narrative)."""
    from lessonkit.pages.figures import FIGURE_RE
    from lessonkit.pages.fold import shown, skeleton
    from lessonkit.pages.narrative import COURSE_FILE, load_course

    phrases = load_course(Path(config.folder)).phrases
    errors = []
    for what, line, text in config.shown:
        folded = shown(text)
        skel = skeleton(folded)
        spans = [span for p in phrases for span in p.spans(skel)]
        for m in FIGURE_RE.finditer(folded):
            if not any(a <= m.start() and m.end() <= b for a, b in spans):
                errors.append(_error(config, line, f"{what} {text!r} shows the figure {m.group()!r}, which no "
                                     f"phrase of {COURSE_FILE} covers; no claim can produce a figure there: "
                                     f"add the phrase around it to {COURSE_FILE} with its reason, or leave "
                                     "the figure out"))
                break
    return errors


# What may add text to a page after the audit read its HTML: a stylesheet (`content:`), a script, a
# template. The core's own stylesheet and script (they show what backs a figure, and a recording on
# request, from the page's own data) are the only ones; a site's own theme templates, none.
CORE_ASSETS = {"extra_css": ("assets/lessonkit.css",), "extra_javascript": ("assets/lessonkit.js",),
               "theme.custom_dir": ("overrides",)}  # the search dialog's name, the Source link
_WRITES = {"extra_css": "a stylesheet can write text with `content:`",
           "extra_javascript": "a script can write any text into the page",
           "extra_templates": "a template of the site's own writes a page of its own",
           "theme.custom_dir": "templates of the site's own can write text on every page"}


def _writers(value: Mapping[str, yaml.Node]) -> list[tuple[str, int, str]]:
    """Each stylesheet, script and template folder the configuration adds to the theme's."""
    found = []
    for name in ("extra_css", "extra_javascript", "extra_templates"):
        node = value.get(name)
        items = node.value if isinstance(node, yaml.SequenceNode) else [node] if node is not None else []
        for item in items:
            path = item.value if isinstance(item, yaml.ScalarNode) else next(
                (v.value for k, v in item.value if isinstance(k, yaml.ScalarNode) and k.value == "path"
                 and isinstance(v, yaml.ScalarNode)), "?") if isinstance(item, yaml.MappingNode) else "?"
            found.append((name, item.start_mark.line + 1, str(path)))
    theme = value.get("theme")
    if isinstance(theme, yaml.MappingNode):
        for key, item in theme.value:
            if isinstance(key, yaml.ScalarNode) and key.value == "custom_dir":
                found.append(("theme.custom_dir", key.start_mark.line + 1, str(getattr(item, "value", "?"))))
    return found


def _writer_errors(config: SiteConfig) -> list[LessonError]:
    """A stylesheet, script or template that is not the core's own: what it writes, no audit reads."""
    return [_error(config, line, f"{name} {path!r}: {_WRITES[name]}, after the audit has read the page's HTML, "
                   f"so no check sees it; the site uses the core's own only "
                   f"({', '.join(a for assets in CORE_ASSETS.values() for a in assets)}); remove it, or "
                   "write its text in a page, where the audit reads it")
            for name, line, path in config.writers
            if os.path.normpath(path) not in CORE_ASSETS.get(name, ())] + _content_errors(config)


# A CSS `content:` whose string holds a letter or a digit: text a reader sees that is in no page.
_CSS_CONTENT_RE = re.compile(r"""(?<![\w-])content\s*:\s*[^;}]*?(["'])(?:(?!\1).)*?[^\W_](?:(?!\1).)*\1""")
# A `content:` that copies text from the page's markup (an attribute's value, a counter): text no page shows.
_CSS_CONTENT_FROM_RE = re.compile(r"""(?<![\w-])content\s*:[^;}]*?\b(?:attr|counters?)\s*\(""")


def _content_errors(config: SiteConfig) -> list[LessonError]:
    """Text the core's own stylesheet would write with `content:`, each at its file's line."""
    errors = []
    docs = Path(config.folder) / (config.docs_dir or "docs")
    for name, line, path in config.writers:
        if name != "extra_css" or os.path.normpath(path) not in CORE_ASSETS["extra_css"] or not (docs / path).is_file():
            continue
        text = (docs / path).read_text(encoding="utf-8", errors="replace")
        text = re.sub(r"/\*.*?\*/", lambda c: re.sub(r"[^\n]", " ", c.group()), text, flags=re.DOTALL)
        for m in sorted([*_CSS_CONTENT_RE.finditer(text), *_CSS_CONTENT_FROM_RE.finditer(text)], key=lambda m: m.start()):
            errors.append(LessonError(f"{config.docs_dir or 'docs'}/{path}",
                                      text.count("\n", 0, m.start()) + 1,
                                      f"{m.group()!r} writes text that is in no page, so no check reads it; "
                                      "write the text in the page, or leave `content:` empty", rank=0))
    return errors


def _error(config: SiteConfig, line: int | None, message: str) -> LessonError:
    return LessonError(config.path, line, message, rank=0)


def _docs_dir_errors(config: SiteConfig) -> list[LessonError]:
    if config.docs_dir is None:
        return []
    given = os.path.normpath(os.path.join(config.folder, config.docs_dir))
    if given == os.path.normpath(os.path.join(config.folder, DOCS_DIR)):
        return []
    return [_error(config, config.lines["docs_dir"], f"docs_dir is {config.docs_dir!r}: lessonkit "
                   f"checks the pages under {DOCS_DIR}/, so the site would publish pages it never "
                   f"checked; remove docs_dir or write 'docs_dir: {DOCS_DIR}'")]


def _is_lessonkit_hooks(config: SiteConfig, name: str) -> bool:
    path = os.path.normpath(os.path.join(config.folder, name))
    return path in (os.path.normpath(os.path.join(config.folder, HOOKS_FILE)), SHIPPED_HOOKS)


def _hooks_errors(config: SiteConfig) -> list[LessonError]:
    if config.hooks is None:
        if "hooks" in config.lines:
            return []  # unreadable: its problem says why
        return [_error(config, None, "hooks is missing: MkDocs and ProperDocs would publish every "
                       f"page unchecked; add 'hooks: [{HOOKS_FILE}]'")]
    errors = []
    ours = [h for h in config.hooks if _is_lessonkit_hooks(config, h.name)]
    if not ours:
        errors.append(_error(config, config.lines["hooks"], f"hooks lacks {HOOKS_FILE}: MkDocs and "
                             f"ProperDocs would publish every page unchecked; {_FIX_HOOKS}"))
    for hook in ours[1:]:
        errors.append(_error(config, hook.line, f"hook {hook.name!r} is lessonkit's again (first at "
                             f"line {ours[0].line}); {_FIX_HOOKS}"))
    for hook in config.hooks:
        if hook not in ours:
            errors.append(_error(config, hook.line, f"hook {hook.name!r} is not lessonkit's: a hook "
                                 "runs after lessonkit checked a page and can change what it says; "
                                 f"remove it ({_FIX_HOOKS})"))
    return errors


def _extension_errors(config: SiteConfig) -> list[LessonError]:
    if config.extensions is None and "markdown_extensions" in config.lines:
        return []  # unreadable: its problem says why
    extensions = config.extensions or ()
    names = {_extension_name(e.name) for e in extensions}
    line = config.lines.get("markdown_extensions")
    errors = [_error(config, line, f"markdown_extensions lacks {ext}: lessonkit's {why}; add "
                     f"'- {ext}' under markdown_extensions")
              for ext, why in REQUIRED_EXTENSIONS.items() if ext not in names]
    for entry in extensions:
        name = _extension_name(entry.name)
        if name in INCLUDING_EXTENSIONS:
            errors.append(_error(config, entry.line, f"markdown extension {entry.name!r} pulls text in "
                                 "from other files after lessonkit checked the page: an included claim "
                                 "is published unexpanded and an included figure unchecked; remove it "
                                 "(show code with a region directive, tool output with claims)"))
        elif name not in ALLOWED_EXTENSIONS:
            near = difflib.get_close_matches(name, sorted(ALLOWED_EXTENSIONS), n=1, cutoff=0.8)
            fix = (f"did you mean {near[0]!r}?" if near else "remove it, or review its code and add "
                   "it to ALLOWED_EXTENSIONS in lessonkit/site/config.py")
            errors.append(_error(config, entry.line, f"markdown extension {entry.name!r} is not on "
                                 "lessonkit's list: its code runs on every page after the check and "
                                 f"could change what the page says; {fix}"))
        elif name == "lessonkit.site.mdext" and entry.options:
            errors.append(_error(config, entry.line, f"lessonkit.site.mdext is given options "
                                 f"({', '.join(map(repr, entry.options))}): they can switch its checks "
                                 "off or point them at another repository; list it as "
                                 "'- lessonkit.site.mdext' alone"))
    return errors


def _extension_name(name: str) -> str:
    return name.removeprefix("markdown.extensions.")


def _plugin_errors(config: SiteConfig) -> list[LessonError]:
    errors = []
    for plugin in config.plugins or ():
        base = plugin.name.rsplit("/", 1)[-1]
        if base in JINJA_PLUGINS and plugin.options.get("j2_variable_start_string", "{{") == "{{":
            errors.append(_error(config, plugin.line, (
                f"plugin {plugin.name!r} also expands {{{{ ... }}}}: it would turn lessonkit's claims "
                "and directives into Jinja before they are checked; remove it from plugins")))
        elif plugin.name not in ALLOWED_PLUGINS:
            errors.append(_error(config, plugin.line, f"plugin {plugin.name!r} is not on lessonkit's "
                                 "list: a plugin runs after lessonkit checked a page and can change "
                                 "what it says; remove it (plugins may be: "
                                 f"{', '.join(sorted(ALLOWED_PLUGINS))})"))
    return errors


def _inherit_errors(config: SiteConfig) -> list[LessonError]:
    if "INHERIT" not in config.lines:
        return []
    source = repr(config.inherit) if config.inherit else "another file"
    return [_error(config, config.lines["INHERIT"], f"INHERIT pulls settings in from {source}, which "
                   "lessonkit does not read (MkDocs merges this file's over them); copy what is "
                   f"needed into {config.path} and remove INHERIT")]


def site_config_errors(config: SiteConfig) -> list[LessonError]:
    """Every rule the configuration breaks, one error each, in the order of the file's lines."""
    if not config.readable:
        return list(config.problems)
    errors = [*config.problems, *_inherit_errors(config), *_docs_dir_errors(config),
              *_hooks_errors(config), *_extension_errors(config), *_plugin_errors(config),
              *_shown_text_errors(config), *_writer_errors(config)]
    return sorted(errors, key=lambda e: e.line or 0)


# The other names of mkdocs.yml itself, the same YAML under another file name.
RENAMES = ("properdocs.yml", "properdocs.yaml", "mkdocs.yaml")


def _second_config(name: str, why: str) -> LessonError:
    return LessonError(name, None, f"is a second site configuration: {why}, so a build would use "
                       f"settings lessonkit does not check; delete it (the site is configured in "
                       f"{CONFIG} alone)", rank=0)


def load_site_config_errors(folder: Path, config: Path | None = None) -> list[LessonError]:
    """The errors of the configuration in `folder` (mkdocs.yml, or `config`: the file an engine
    read), and one for each other configuration an engine would read instead."""
    config = config or folder / CONFIG
    shown = config.name if config.parent.resolve() == folder.resolve() else str(config)
    others = [(name, why) for name, why in OTHER_CONFIGS.items() if (folder / name).exists()]
    renamed = [name for name, _ in others if name in RENAMES] if not (folder / CONFIG).exists() else []
    if renamed:  # mkdocs.yml renamed (as ProperDocs advises): one cause, said once
        errors = [LessonError(name, None, f"is the site's configuration under a name lessonkit does not "
                              f"read ({CONFIG} is missing); rename it back: git mv {name} {CONFIG} "
                              f"(ProperDocs reads {CONFIG} too: 'properdocs build -f {CONFIG}' builds it "
                              "without advising the rename)", rank=0) for name in renamed]
        errors += [_second_config(name, why) for name, why in others if name not in renamed]
        if config.name == CONFIG:
            return errors
    else:
        errors = [_second_config(name, why) for name, why in others]
    try:
        text = read_text(config, shown)
    except FileNotFoundError:
        return [*errors, LessonError(shown, None, "is missing: it says how MkDocs and ProperDocs build "
                                     "the site, and lessonkit checks that they check every page; "
                                     f"restore it (with 'hooks: [{HOOKS_FILE}]')", rank=0)]
    except OSError as exc:
        return [*errors, LessonError(shown, None, f"cannot read: {exc.strerror}", rank=0)]
    except LessonError as exc:
        return [*errors, exc]
    return (errors + site_config_errors(read_site_config(text, shown, os.path.abspath(folder)))
            + missing_nav_pages(folder, text, shown))


class ConfigVerdict(NamedTuple):
    """What `lessonkit check` reports of mkdocs.yml: its errors, whether it sets strict, and whether
    the two may be kept in the check's verdict (lessonkit.site.verdict). They may when there is no
    error, for every file read then is one the verdict's key covers: mkdocs.yml, the names of the
    other configurations, and the files under docs/ (the nav's pages, the core's stylesheet)."""

    errors: list[LessonError]
    strict: bool
    keepable: bool


def config_verdict(folder: Path) -> ConfigVerdict:
    """The `ConfigVerdict` of the site in `folder`."""
    errors = load_site_config_errors(folder)
    try:
        text = read_text(folder / CONFIG, CONFIG)
    except (OSError, LessonError):
        return ConfigVerdict(errors, False, False)
    inside = all(not os.path.isabs(page) and not os.path.normpath(page).startswith(os.pardir)
                 for page, _ in nav_pages(text))
    return ConfigVerdict(errors, site_is_strict(folder), not errors and inside)


def missing_nav_pages(folder: Path, text: str, shown: str = CONFIG) -> list[LessonError]:
    """An error at its line for each page the nav names that docs/ does not hold: MkDocs only logs it (and
    `-q` hides it), and the reader gets a link to nothing."""
    docs = folder / DOCS_DIR
    missing = [(page, line) for page, line in nav_pages(text) if not (docs / page).is_file()]
    return [LessonError(shown, line, f"the nav names {page!r}, which {DOCS_DIR}/ does not hold, so the site would "
                        f"link to a page that is not there; write the page ({DOCS_DIR}/{page}), or take the entry out "
                        "of the nav", rank=0) for page, line in missing]


def nav_pages(text: str) -> list[tuple[str, int]]:
    """The Markdown files mkdocs.yml's `nav` names in configuration text `text` (relative to
    docs/), each with its line; [] when there is no nav or the text is not YAML."""
    try:
        root = _compose(text)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    pending = [v for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "nav"]
    found: list[tuple[str, int]] = []
    while pending:
        node = pending.pop(0)
        if isinstance(node, yaml.ScalarNode) and node.value.endswith(".md") and "://" not in node.value:
            found.append((node.value, node.start_mark.line + 1))
        elif isinstance(node, yaml.SequenceNode):
            pending[:0] = node.value
        elif isinstance(node, yaml.MappingNode):
            pending[:0] = [v for _, v in node.value]
    return found


def site_is_strict(folder: Path) -> bool:
    """Whether mkdocs.yml in `folder` sets `strict: true` (MkDocs then fails a build on a warning,
    and `lessonkit check` does the same); False when it does not or cannot be read."""
    try:
        root = _compose(read_text(folder / CONFIG, CONFIG))
    except (OSError, LessonError, yaml.YAMLError):
        return False
    if not isinstance(root, yaml.MappingNode):
        return False
    return any(isinstance(key, yaml.ScalarNode) and key.value == "strict" and isinstance(value, yaml.ScalarNode)
               and value.value.lower() in ("true", "yes", "on") for key, value in root.value)



def site_output(folder: Path) -> str:
    """Where mkdocs.yml in `folder` has the site written (`site_dir`, default site); the default
    when it cannot be read."""
    try:
        root = _compose(read_text(folder / CONFIG, CONFIG))
    except (OSError, LessonError, yaml.YAMLError):
        return "site"
    if not isinstance(root, yaml.MappingNode):
        return "site"
    return next((value.value for key, value in root.value if isinstance(key, yaml.ScalarNode)
                 and key.value == "site_dir" and isinstance(value, yaml.ScalarNode) and value.value), "site")
