"""`python -m lessonkit verify-site SITE_DIR`: catch a site engine that published pages unchecked.

Every page lessonkit expanded and checked carries `CHECKED_MARK` (the MkDocs hooks and the
Markdown extension add it). A built page without it that still shows a claim
(`{{ VALUE @ REF:QUERY }}`) or a directive (`{{ region ... }}`, ...) was published by an engine
that never ran lessonkit: the hooks were ignored, or the extension was not configured. A page
with an unfilled transcript slot ran the expansion but not its second half.

It also refuses what it cannot verify: a folder with no built page (an empty folder, `docs/`,
`site/` after a failed build), a page of the site the folder lacks (the pages of the
repository's docs/ and nav; without the repository, those the build's search index lists) or
that lessonkit never checked, and a checked page that is not one of them (a stale page of an
earlier build).

With the repository it was built from (`--repo`, default the folder above SITE_DIR when it
holds mkdocs.yml and docs/, as for site/), every built page is also audited as a reader sees it (lessonkit.pages.audit), so an
engine that ran the expansion but skipped the audit, or changed the page after it, is caught;
and the published recordings (evidence/SET/FILE under the site's root, lessonkit.pages.published)
are held to the evidence: each one a page shows or links must be there with the sha256 its
set's manifest records, and the folder may hold nothing else.
"""

from __future__ import annotations

import argparse
import difflib
import html
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.evidence.manifest import Manifest, read_manifest, regular_file_sha256
from lessonkit.pages.marks import RESERVED_RE
from lessonkit.pages.scan import DIRECTIVES
from lessonkit.site.config import CONFIG, DOCS_DIR, nav_pages
from lessonkit.textio import read_text

if TYPE_CHECKING:
    from lessonkit.pages.published import Published

CHECKED_MARK = "\n<!-- lessonkit: checked -->\n"
START_MARK = "\n<!-- lessonkit: page -->\n"  # where the page's own content begins, inside the theme's
_DIRECTIVES = DIRECTIVES
_TOKEN_RE = re.compile(r"""\{\{(?P<body>[^{}\n]{1,400}?)\}\}""", re.VERBOSE)
_DIRECTIVE_RE = re.compile(rf"""^\s*(?P<word>{'|'.join(_DIRECTIVES)})\b""", re.VERBOSE)
_SLOT_RE = re.compile(r"""<div\ data-lk-slot="\d+"></div>""", re.VERBOSE)
_FIX = ("the engine published it without lessonkit; MkDocs and ProperDocs need "
        "'hooks: [hooks/lessonkit_hooks.py]', other engines 'markdown_extensions: [lessonkit.site.mdext]'")


def unexpanded(text: str, shown: str) -> list[LessonError]:
    """Errors for the claims, directives and transcript slots that reached a built page as is."""
    errors: list[LessonError] = []
    for m in _SLOT_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        errors.append(LessonError(shown, line, f"transcript slot {m.group(0)!r} was never filled; "
                                  "the engine ran lessonkit's expansion but not its postprocessor"))
    if m := RESERVED_RE.search(text):
        line = text.count("\n", 0, m.start()) + 1
        errors.append(LessonError(shown, line, f"holds U+{ord(m.group()):X}, a mark of lessonkit's produced text, "
                                  "which the published page must not: the engine ran lessonkit's expansion but "
                                  "not its postprocessor, or the page was edited after the build"))
    if CHECKED_MARK.strip() in text:
        return errors  # expanded and checked: any '{{' left is a literal the author escaped
    for m in _TOKEN_RE.finditer(text):
        body = html.unescape(m.group("body"))
        kind = ("claim" if " @ " in body else
                "directive" if _DIRECTIVE_RE.match(body) else None)
        if kind:
            line = text.count("\n", 0, m.start()) + 1
            errors.append(LessonError(shown, line, f"unexpanded {kind} {'{{' + body + '}}'!r}; {_FIX}"))
    return errors


SEARCH_INDEX = "search/search_index.json"
# The search index each engine writes, and the key of its list of entries.
_INDEXES = {SEARCH_INDEX: "docs",  # MkDocs, ProperDocs, Material for MkDocs
            "search.json": "items"}  # Zensical


def _no_page(site_dir: Path) -> list[LessonError]:
    """The refusal of a folder that holds no built page, or nothing."""
    if any(site_dir.rglob("*.html")):
        return []
    return [LessonError(site_dir.as_posix(), None, "holds no built page (no .html file): an empty folder, a "
                        "source folder or a build that failed; build the site (mkdocs build) "
                        "and name the folder it wrote", rank=0)]


def indexed_pages(site_dir: Path) -> tuple[list[str], list[LessonError]]:
    """The pages of the build, as its search index lists them (relative to `site_dir`), or why
    `site_dir` is not a site that can be verified; used only when the repository the site was
    built from is unknown (with it, `repo_pages` says what the build must hold).

    The search plugin of MkDocs and ProperDocs (Material's too), and Zensical, write it after
    the last page, each page by its address relative to the site, in the nav or not.
    """
    shown = site_dir.as_posix()
    if errors := _no_page(site_dir):
        return [], errors
    found = [(name, key) for name, key in _INDEXES.items() if (site_dir / name).is_file()]
    if not found:
        return [], [LessonError(shown, None, f"is not a built site: no {SEARCH_INDEX} (MkDocs, ProperDocs) "
                                "or search.json (Zensical), the list of its pages a build writes after the "
                                "last one; build with 'search' in mkdocs.yml's plugins (its default)", rank=0)]
    name, key = found[0]
    try:
        locations = [d["location"] for d in json.loads((site_dir / name).read_text(encoding="utf-8"))[key]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [], [LessonError(f"{shown}/{name}", None, f"is not a search index a build wrote "
                                f"({type(exc).__name__}: {exc}); build the site again", rank=0)]
    pages = []
    for location in locations:
        if isinstance(location, str) and "#" not in location:
            page = location + "index.html" if location == "" or location.endswith("/") else location
            if page not in pages:
                pages.append(page)
    return pages, []


def repo_pages(site_dir: Path, repo: Path) -> tuple[list[str], list[LessonError]]:
    """The pages a build of `repo` must hold (relative to `site_dir`): one for every Markdown file
    under docs/ and every page mkdocs.yml's nav names, whatever the engine's own search index
    says (a build that stopped half-way may write an index of the pages it reached); an error
    for each that `site_dir` lacks and each nav entry docs/ lacks."""
    from lessonkit.site.verdict import docs_pages

    if errors := _no_page(site_dir):
        return [], errors
    docs = repo / "docs"
    names = [path.relative_to(docs).as_posix() for _, path in docs_pages(repo, docs)]
    try:
        nav = nav_pages(read_text(repo / CONFIG, CONFIG))
    except (OSError, LessonError):
        nav = []  # lessonkit check reports a missing or unreadable mkdocs.yml
    in_nav = {name for name, _ in nav}
    for name, line in nav:
        if not (docs / name).is_file():
            errors.append(LessonError(CONFIG, line, f"nav names {name!r}, which {DOCS_DIR}/ lacks; add the "
                                      "page or remove the entry", rank=0))
    pages = []
    for name in names:
        built = built_page(site_dir, name)
        if built is not None:
            pages.append(built.relative_to(site_dir).as_posix())
            continue
        where = f"{site_dir.as_posix()}/{page_locations(name)[0]}"
        listed = "listed in mkdocs.yml's nav and " if name in in_nav else ""
        errors.append(LessonError(where, None, f"is missing: {DOCS_DIR}/{name} is a page of the site "
                                  f"({listed}under {DOCS_DIR}/), so the build stopped before writing it or "
                                  "it was deleted since; build the site again"))
    return pages, errors


def verify_site(site_dir: Path, repo: Path | None = None) -> list[LessonError]:
    """Every page of the site missing or not checked by lessonkit, every checked page the site
    does not have, and every unexpanded claim, directive or slot in the HTML pages under
    `site_dir`; with `repo`, the repository the site was built from, the pages are those of its
    docs/ and nav (else those the build's search index lists), and every built page is audited."""
    if not site_dir.is_dir():
        return [LessonError(str(site_dir), None, "is not a folder; expected a built site (mkdocs build)")]
    pages, errors = repo_pages(site_dir, repo) if repo is not None else indexed_pages(site_dir)
    if errors and not pages:
        return errors
    if repo is None:
        for page in pages:
            if not (site_dir / page).is_file():
                errors.append(LessonError(f"{site_dir.as_posix()}/{page}", None, "is missing: the search "
                                          "index lists it, so the build stopped before writing it or it was "
                                          "deleted since; build the site again"))
    not_listed = ("no page under docs/ is built there" if repo is not None
                  else "its search index does not list it")
    listed = set(pages)
    for page in sorted(site_dir.rglob("*.html")):
        rel = page.relative_to(site_dir).as_posix()
        shown = (site_dir / rel).as_posix()
        text = page.read_text(encoding="utf-8", errors="replace")
        errors.extend(unexpanded(text, shown))
        checked = CHECKED_MARK.strip() in text
        if rel in listed and not checked and not any(e.path == shown for e in errors):
            errors.append(LessonError(shown, None, f"is a page of the build that lessonkit never checked; {_FIX}"))
        elif rel not in listed and checked:
            errors.append(LessonError(shown, None, "was checked by lessonkit but is not a page of this build "
                                      f"({not_listed}): left by an earlier build; build "
                                      "into an empty folder (mkdocs build --clean)"))
    errors.extend(_marked_indexes(site_dir))
    if repo is not None:
        programs = program_pages(repo)
        errors.extend(unproduced_pages(site_dir, listed | programs))
    if repo is not None and not errors:
        errors.extend(audit_site(site_dir, repo))
        if not errors:  # the pages are the build's: their search entries must be what they make
            errors.extend(search_errors(site_dir, listed, programs))
    return errors


def _marked_indexes(site_dir: Path) -> list[LessonError]:
    """An error for each search index that holds a mark of lessonkit's produced text."""
    errors = []
    for rel in _INDEXES:
        index = site_dir / rel
        try:
            data = json.loads(index.read_text(encoding="utf-8")) if index.is_file() else None
        except ValueError:
            continue  # not an index: search_errors says so
        if data is not None and RESERVED_RE.search(json.dumps(data, ensure_ascii=False)):
            errors.append(LessonError(index.as_posix(), None, "holds a mark of lessonkit's produced text "
                                      "(U+F0000 to U+FFFFF), which the published site must not: the search index "
                                      "was made before lessonkit removed them; build the site again"))
    return errors


# What a build writes besides the pages of docs/: the theme's not-found page, and each lesson's
# program page (lessonkit.site.programs), which shows files, not checked prose.
_NOT_FOUND = "404.html"


def program_pages(repo: Path) -> set[str]:
    """Where a build puts each lesson's program page (code/LESSON/, lessonkit.site.programs)."""
    lessons = [p.parent.name for p in (repo / "code").glob("*/runs.toml")]
    return {f"code/{n}/index.html" for n in lessons} | {f"code/{n}.html" for n in lessons}


def unproduced_pages(site_dir: Path, made: set[str]) -> list[LessonError]:
    """Every HTML page under `site_dir` that the build does not make (`made`: the pages of docs/ and
    the programs' pages): a page added after it."""
    errors = []
    for page in sorted(site_dir.rglob("*.html")):
        rel = page.relative_to(site_dir).as_posix()
        if rel in made or rel == _NOT_FOUND:
            continue
        if CHECKED_MARK.strip() in page.read_text(encoding="utf-8", errors="replace"):
            continue  # a checked page left by an earlier build: reported as such above
        errors.append(LessonError(f"{site_dir.as_posix()}/{rel}", None, "is a page the build did not make: no "
                                  "page of docs/ or the nav is built there, and it is not the theme's 404 "
                                  "page nor a lesson's program page; remove it, or add its Markdown to docs/ "
                                  "and build again"))
    return errors


def _material_sections(content: str) -> list[tuple[str | None, str, str]] | None:
    """(section id, title, text) of each section Material's search makes of a page's content, as
    its search plugin makes them (its own parser); None when Material is not installed."""
    try:
        from material.plugins.search.plugin import Parser
    except ImportError:
        return None
    parser = Parser()
    parser.feed(content)
    parser.close()
    return [(section.id, "".join(section.title).strip(), "".join(section.text).strip())
            for section in parser.data if not section.is_excluded()]


def search_errors(site_dir: Path, listed: set[str], programs: set[str] = frozenset()) -> list[LessonError]:
    """Each entry of Material's search index (search/search_index.json) that the build did not
    make: one that points at no page of the build, or whose text is not what Material's search
    makes of that page's built content (a figure edited in the index, an entry added)."""
    index = site_dir / "search" / "search_index.json"
    if not index.is_file():
        return []  # another engine's index (Zensical's), or none
    shown = index.as_posix()
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        entries = data.get("docs", [])
        material = "fields" in (data.get("config") or {})  # Material's index; MkDocs' own search differs
    except (ValueError, AttributeError) as exc:
        return [LessonError(shown, None, f"is not the search index a build writes: {exc}")]
    locations = {}  # how an entry names a page: x/ with directory URLs, x/index.html or x.html without
    for rel in listed | set(programs):
        locations[rel] = locations[rel.removesuffix("index.html")] = rel
    made: dict[str, list[str] | None] = {}
    errors = []
    for k, entry in enumerate(entries if isinstance(entries, list) else []):
        location = str(entry.get("location", "")) if isinstance(entry, dict) else ""
        page = location.split("#", 1)[0]
        if page not in locations:
            errors.append(LessonError(shown, None, f"entry {k} points at {location!r}, which is no page of this "
                                      "build: the index was edited after the build; build the site again"))
            continue
        if page not in made:
            built = site_dir / locations[page]
            sections = _material_sections(page_content(built.read_text(encoding="utf-8", errors="replace"))) \
                if built.is_file() else []
            made[page] = None if sections is None or not material else [text for _, _, text in sections]
        texts = made[page]
        if texts is None:
            continue  # without Material, only where entries point is checked
        text = str(entry.get("text", ""))
        if text in texts:
            texts.remove(text)  # each section once
        else:
            errors.append(LessonError(shown, None, f"entry {k} ({location!r}) holds a text Material's search does "
                                      f"not make of its page as built ({text[:80]!r}): the index was edited after "
                                      "the build; build the site again"))
    return errors


def page_content(html: str) -> str:
    """The part of a built page that its Markdown made: between the marks lessonkit adds, or the
    whole page when they are missing (an engine that never ran lessonkit)."""
    start, end = html.find(START_MARK.strip()), html.find(CHECKED_MARK.strip())
    return html[start:end] if 0 <= start < end else html


def page_locations(docs_path: str) -> list[str]:
    """Where a build puts the page `docs_path` (relative to docs/), relative to the site: x/index.html
    (directory URLs, the default) or x.html."""
    stem = docs_path.removesuffix(".md")
    name = stem.rsplit("/", 1)[-1]
    return ([f"{stem[:-len(name)]}index.html"] if name in ("index", "README")
            else [f"{stem}/index.html", f"{stem}.html"])


def built_page(site_dir: Path, docs_path: str) -> Path | None:
    """Where a build put the page `docs_path` (relative to docs/): x/index.html or x.html."""
    return next((site_dir / c for c in page_locations(docs_path) if (site_dir / c).is_file()), None)


def audit_site(site_dir: Path, repo: Path) -> list[LessonError]:
    """The rendered-page audit (lessonkit.pages.audit) of every page of `repo`'s docs/, as the repository
    renders it, and an error for each page built under `site_dir` that is not that rendering."""
    from lessonkit.site.check import CheckedSite  # the whole core: only the audit needs it
    from lessonkit.site.rendered import Renderer
    from lessonkit.site.verdict import docs_pages, rendering_key

    session = CheckedSite(repo)
    session.refresh()
    renderer = Renderer(rendering_key(repo))
    errors: list[LessonError] = []
    docs = repo / "docs"
    recordings: dict[str, tuple[Published, str]] = {}  # path in the site -> (recording, a page showing it)
    for shown, path in docs_pages(repo, docs):
        built = built_page(site_dir, path.relative_to(docs).as_posix())
        if built is None:
            continue  # not published: nothing a reader sees
        result = session.check_page_file(shown, path)
        for item in result.published:
            recordings.setdefault(item.path, (item, shown))
        try:
            source = read_text(path, shown)
        except LessonError as exc:
            errors.append(exc)
            continue
        # The published page holds no marks of what was produced (lessonkit.pages.marks), so the audit reads
        # the repository's own rendering of the page, with them; the built page must then be that rendering.
        rendered = renderer.render(result)
        found = session.audit(shown, rendered, source)
        errors.extend(found)
        if not found:
            html = page_content(built.read_text(encoding="utf-8", errors="replace"))  # our own output
            errors.extend(rendering_errors(built, html, result.fill(rendered)))
    return errors + recording_errors(site_dir, repo, recordings)


class _Tokens(HTMLParser):
    """A page's content as a sequence of tags (with their attributes) and runs of text, white space
    collapsed. Left out, because engines differ in them and a reader reads none of them: a relative
    link's or image's target (x.md, ../x/, x.html; an absolute one, a fragment and a scheme such as
    javascript: stay in), a search engine's hints (data-search-*), and the classes of the spans
    inside code, which colour its tokens and differ between versions of Pygments."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[tuple[str, ...]] = []
        self.code = 0  # how many <code> elements are open

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        kept = tuple(sorted((k, v or "") for k, v in attrs
                            if not (k in ("href", "src") and v and ":" not in v and not v.startswith("#"))
                            and not k.startswith("data-search")
                            and not (self.code and tag == "span" and k == "class")))
        self.out.append(("<", tag) + tuple(f"{k}={v}" for k, v in kept))
        self.code += tag == "code"

    def handle_endtag(self, tag: str) -> None:
        self.code -= tag == "code" and self.code > 0
        self.out.append(("</", tag))

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text:
            self.out.append(("", text))


def _tokens(text: str) -> list[tuple[str, ...]]:
    parser = _Tokens()
    parser.feed(text)
    parser.close()
    return parser.out


def rendering_errors(built: Path, html: str, expected: str) -> list[LessonError]:
    """An error when the built page's content (`html`) differs from what its Markdown renders to
    (`expected`): a figure, a table cell or a script changed or added after the build."""
    got, want = _tokens(html), _tokens(expected)
    if got == want:
        return []
    matcher = difflib.SequenceMatcher(a=want, b=got, autojunk=False)
    op, a0, a1, b0, b1 = next(o for o in matcher.get_opcodes() if o[0] != "equal")
    def shown(tokens: list[tuple[str, ...]]) -> str:
        return " ".join(t[1] if not t[0] else f"{t[0]}{' '.join(t[1:])}>" for t in tokens)[:100]
    what = {"replace": f"shows {shown(got[b0:b1])!r} where its Markdown renders {shown(want[a0:a1])!r}",
            "insert": f"shows {shown(got[b0:b1])!r}, which its Markdown does not render",
            "delete": f"lacks {shown(want[a0:a1])!r}, which its Markdown renders"}[op]
    return [LessonError(built.as_posix(), None, f"was changed after the build: it {what}; build the site "
                        "again from the repository")]


def recording_errors(site_dir: Path, repo: Path, recordings: dict[str, tuple[Published, str]]) -> list[LessonError]:
    """Each recording the pages show or link (`recordings`: its path in the site -> it and a page
    showing it) that `site_dir` lacks or holds with other bytes than its manifest's sha256, and
    each file under the site's evidence/ that is none of them."""
    from lessonkit.pages.published import (
        EVIDENCE_FOLDER,  # the core: only a check with the repository needs it
    )

    errors: list[LessonError] = []
    manifests: dict[str, Manifest | LessonError] = {}
    for rel, (item, page) in sorted(recordings.items()):
        shown = f"{site_dir.as_posix()}/{rel}"
        if item.set_name not in manifests:
            try:
                manifests[item.set_name] = read_manifest(repo / "evidence" / item.set_name, f"evidence/{item.set_name}")
            except LessonError as exc:
                manifests[item.set_name] = exc
                errors.append(exc)
        manifest = manifests[item.set_name]
        if isinstance(manifest, LessonError):
            continue  # reported once, above
        recorded = next((e.sha256 for e in manifest.entries.values() if e.file == item.file), None)
        digest = regular_file_sha256(str(site_dir / rel))
        if digest is None:
            errors.append(LessonError(shown, None, f"is missing: {page} shows or links this recording, so its link is "
                                      "broken; build the site again (Zensical: zensical build --clean, as a "
                                      "rebuild from its cache converts no page and writes no recording)"))
        elif digest != recorded:
            errors.append(LessonError(shown, None, f"is not the recording the evidence holds: its sha256 is "
                                      f"{digest[:12]}, evidence/{item.set_name}/manifest.json records "
                                      f"{(recorded or 'none')[:12]}; it was changed after the build: build the "
                                      "site again"))
    folder = site_dir / EVIDENCE_FOLDER
    for file in sorted(folder.rglob("*")) if folder.is_dir() else []:
        rel = file.relative_to(site_dir).as_posix()
        if rel not in recordings and not file.is_dir():
            errors.append(LessonError(f"{site_dir.as_posix()}/{rel}", None, "is not a recording any page of the "
                                      f"site shows or links, and the build publishes only those under "
                                      f"{EVIDENCE_FOLDER}/: left by an earlier build or added since; build into "
                                      "an empty folder (mkdocs build --clean)"))
    return errors


HELP = ("check a built site: every page of docs/ and the nav is there and was checked by "
        "lessonkit, no page shows a claim or directive unexpanded, every page passes the audit of what a reader "
        "sees, and the published recordings are the evidence's; exit 1 naming each page otherwise")


DESCRIPTION = ("Check a folder a build wrote (mkdocs build, properdocs build, zensical build): every "
               "page of the site (docs/ and mkdocs.yml's nav; without the repository, the build's search index) is there and was expanded and checked by "
               "lessonkit, no page shows a claim {{ ... @ ... }} or a directive unexpanded, and no "
               "checked page is left from an earlier build; with --repo, every page passes the audit of what a reader sees (lessonkit.pages.audit), "
               "and the recordings published under evidence/ are exactly those the pages show or link, each with the "
               "sha256 its manifest records. Refuses a folder that is not a built "
               "site (an empty folder, docs/). Exit 0 when all holds, 1 naming each page otherwise.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of `verify-site`."""
    parser.add_argument("site_dir", type=Path, metavar="SITE_DIR",
                        help="the folder a build wrote (site/, or the folder given to build -d)")
    parser.add_argument("--repo", type=Path, default=None,
                        help="the repository the site was built from (docs/, evidence/): its pages are "
                        "audited as built (default: the folder above SITE_DIR when it holds mkdocs.yml "
                        "and docs/, as for site/)")


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every built page was expanded and checked; 1 listing each page and text otherwise."""
    repo = args.repo
    if repo is None:
        above = args.site_dir.resolve().parent
        repo = above if (above / "mkdocs.yml").is_file() and (above / "docs").is_dir() else None
    errors = verify_site(args.site_dir, repo)
    if errors:
        print(LessonErrors(errors).report(), file=sys.stderr)
        return 1
    pages, _ = repo_pages(args.site_dir, repo) if repo is not None else indexed_pages(args.site_dir)
    audited = ""
    if repo is not None:
        folder = args.site_dir / "evidence"
        published = sum(f.is_file() for f in folder.rglob("*")) if folder.is_dir() else 0
        audited = (f"; the pages of {repo / 'docs'} pass the audit as built, and every recording they show "
                   f"({published}) is the evidence's")
    n = len(pages)
    print(f"ok: {'the' if n == 1 else 'all'} {n} page{'' if n == 1 else 's'} of the build under {args.site_dir} "
          f"expanded and checked by lessonkit; none shows a claim or directive unexpanded{audited}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m lessonkit verify-site SITE_DIR` on its own; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit verify-site", description=DESCRIPTION)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
