"""The whole site: every evidence set, every lesson's commands, every page; checked once or across rebuilds.

`Site` checks a repository as it is now. `CheckedSite` keeps a site checked while its
files change (`mkdocs serve`): it reloads the evidence when a file under evidence/ or code/
changed and re-checks exactly the pages whose inputs changed (the page, the evidence sets
it cites or names, the code files its regions come from), reusing every other page's
result, so its errors are always those a full check of the same files would report. With the
cache on disk (lessonkit.cache, lessonkit.site.sitecache) a new process, `check` or a build, starts
from the results an earlier one stored for the same contents.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from lessonkit import cache
from lessonkit.cache import HashStore, Store
from lessonkit.errors import LessonError, LessonErrors, report_order
from lessonkit.evidence.manifest import use_hash_store
from lessonkit.evidence.sets import (
    Evidence,
    ReadSets,
    load_all_evidence,
    read_evidence_sets,
    set_folders,
)
from lessonkit.evidence.spec import load_spec
from lessonkit.pages.claimcheck import program_constant
from lessonkit.pages.frontmatter import read_front_matter
from lessonkit.pages.narrative import load_course
from lessonkit.pages.page import process_page
from lessonkit.pages.result import PageResult
from lessonkit.pages.sources import SOURCES_FILE, load_sources
from lessonkit.site import sitecache, verdict
from lessonkit.site.chrome import chrome_errors
from lessonkit.site.config import ConfigVerdict, config_verdict
from lessonkit.site.inputs import (
    MISSING,
    FileDigests,
    PageInputs,
    combine,
)
from lessonkit.site.rendered import Renderer
from lessonkit.site.verdict import Rendering, rendering_key
from lessonkit.textio import FRONT_MATTER_RE, read_text


@dataclass
class Site:
    """What a build needs once: the repository root and its checked evidence."""

    repo: Path
    evidence: Evidence
    transcripts: bool = True  # render transcript blocks; off when only the errors are wanted

    @classmethod
    def load(cls, repo: Path, read: ReadSets | None = None) -> Site:
        """Load and check all evidence under `repo` (`read`: its manifests as just read)."""
        return cls(repo, load_all_evidence(repo, read))

    def site_errors(self) -> list[LessonError]:
        """Errors that belong to no page: evidence integrity and freshness, lesson READMEs; and a
        note for each lesson not recorded yet."""
        found = (self.evidence.errors + check_lesson_readmes(self.repo)
                 + [u.note() for u in self.evidence.unrecorded.values()])
        return list(dict.fromkeys(found))  # a runs.toml that cannot be read is found by both: one error

    def page(self, markdown: str, path: str, line_offset: int = 0) -> PageResult:
        """Expand and check one page's Markdown (`path` as messages name it)."""
        return process_page(markdown, path, self.repo, self.evidence.sets,
                            self.evidence.unreadable, line_offset, self.transcripts, self.evidence.unrecorded,
                            sources=load_sources(self.repo))


def strip_front_matter(text: str) -> tuple[str, int]:
    """The page without its YAML front matter, and how many lines were removed."""
    m = FRONT_MATTER_RE.match(text)
    if not m:
        return text, 0
    rest = text[m.end():]
    stripped = rest.lstrip("\n")
    return stripped, text.count("\n") - stripped.count("\n")


def _split_page(text: str, path: str) -> tuple[str, int, str]:
    """A page file's text without its front matter, the lines removed, and the text removed;
    LessonErrors when its front matter cannot be read as every engine reads it."""
    front = read_front_matter(text, path)
    if front.errors:
        raise LessonErrors(front.errors)
    body, offset = strip_front_matter(text)
    return body, offset, text[:len(text) - len(body)]


def check_lesson_readmes(repo: Path) -> list[LessonError]:
    """Each code/<lesson>/README.md shows every build line and command of its runs.toml verbatim."""
    errors: list[LessonError] = []
    code = repo / "code"
    for spec_path in sorted(code.glob("*/runs.toml")) if code.is_dir() else []:
        lesson = spec_path.parent.name
        try:
            spec = load_spec(code, lesson)
        except LessonError as exc:
            errors.append(exc)
            continue
        readme = spec_path.parent / "README.md"
        shown = f"code/{lesson}/README.md"
        if not readme.is_file():
            errors.append(LessonError(shown, None, "is missing; it must show the build lines and "
                                      "commands of runs.toml"))
            continue
        try:
            text = read_text(readme, shown)
        except LessonError as exc:
            errors.append(exc)
            continue
        except OSError as exc:
            errors.append(LessonError(shown, None, f"cannot read: {exc.strerror}", rank=0))
            continue
        # A command counts only as a whole line (a console block may prefix it with "$ ").
        shown_lines = {line.strip().removeprefix("$ ") for line in text.splitlines()}
        wanted = [(f"build line {arch}", line) for arch, line in spec.build.items()]
        wanted += [(f"run {r.name!r}", r.command) for r in spec.runs]
        for what, command in wanted:
            if command not in shown_lines:
                errors.append(LessonError(shown, None, f"does not show the {what} of {spec.path}: "
                                          f"{command!r}; copy it verbatim so readers run what the "
                                          "evidence ran"))
    return errors


def missing_package(exc: ModuleNotFoundError) -> LessonError:
    """The error for a check run by a Python without the site's packages: it names that Python, the package, and
    the README's command (the project's virtual environment), not mkdocs.yml, which is right."""
    name = (exc.name or str(exc)).split(".")[0]
    return LessonError(sys.executable, None, f"this Python lacks the package {name!r}, which the site's pages are "
                       "rendered with, so it cannot check them; run the check with the project's environment, as the "
                       "README sets it up: .venv/bin/python -m lessonkit check", rank=0)


def check_site(repo: Path, docs: Path | None = None, store: Store | None = None, jobs: int | None = 1,
               looked: verdict.Lookup | None = None) -> list[LessonError]:
    """All errors of the site: evidence, lesson READMEs and every page under docs/.

    The stored verdict when nothing changed since it was kept (lessonkit.site.verdict; `looked`:
    that lookup, already done); otherwise the results of unchanged inputs come from the
    repository's cache on disk (`store`, default: the repository's unless LESSONKIT_CACHE is off),
    see CheckedSite, and up to `jobs` processes (None: one for each CPU this process may use)
    check the pages that must be checked.
    """
    return CheckedSite(repo, store=store, keep="errors", jobs=jobs or available_cpus()).check(docs, looked)


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# Pages per worker process below which checking them in one process is quicker than starting
# workers (a page of Day 62's size takes some 250 ms to check, rendered and audited; a forked
# worker some 10 ms to start, and it parses again the recordings its pages share with another's).
PAGES_PER_JOB = 2

# The site the forked workers check pages of (set in the parent just before it forks).
_FORKED: CheckedSite | None = None


# Allocations between the young generation's collections in a worker. Checking a page allocates
# many short-lived objects, and what the worker shares was frozen before the fork, so collecting
# less often only lets a few pages' cycles wait longer (about 6 % of a worker's time saved).
WORKER_GC_THRESHOLD = 20_000


def _worker_started() -> None:
    gc.set_threshold(WORKER_GC_THRESHOLD, *gc.get_threshold()[1:])


def _check_in_worker(item: tuple[str, Path]) -> tuple[tuple[PageInputs, PageResult], int, int]:
    """In a worker: check one page of the forked site; (its entry, checks run, cache hits)."""
    site = _FORKED
    assert site is not None
    checks, hits = site.checks, site.cache_hits
    site.check_page_file(*item)
    return site._pages[item[0]], site.checks - checks, site.cache_hits - hits


def _catalog(names: set[str], unreadable: set[str], unrecorded: Mapping[str, tuple[str, ...]],
             scans: verdict.Scans) -> str:
    """The digest of the list of sets (readable, unreadable, not recorded yet) and of the folders
    under code/ (a claim's `LESSON/FILE` is read as a lesson's file only when code/LESSON is a
    folder): what a page may name that does not exist."""
    folders = sorted({rel.split(os.sep, 1)[0] for rel in scans[1] if os.sep in rel})
    return combine([(name, "set") for name in sorted(names)]
                   + [(name, "unreadable") for name in sorted(unreadable)]
                   + [(name, "unrecorded " + " ".join(files)) for name, files in sorted(unrecorded.items())]
                   + [(folder, "folder") for folder in folders])


@dataclass
class CheckedSite:
    """A site kept checked across rebuilds: `refresh` once per build, then `page` for each page.

    With a cache on disk (`store`, lessonkit.cache), a new process starts from what an earlier
    one derived from the same files: the site's own errors, and each page's result (`keep` =
    "pages", for a build, which audits each page's HTML with `audit`) or only its errors (`keep` =
    "errors", for `check`: a page's errors are then its Markdown's and the audit's of the page
    rendered as the site renders it, lessonkit.site.rendered). The evidence is loaded only when a
    page must be checked.
    """

    repo: Path
    digests: FileDigests = field(default_factory=FileDigests)
    store: Store | None = None    # None: the repository's cache, unless LESSONKIT_CACHE is off
    keep: str = "pages"           # what the cache keeps of a page: "pages" or "errors"
    reloads: int = 0              # times the evidence was loaded (for tests and the benchmark)
    checks: int = 0               # page checks that ran (not answered from an earlier result)
    cache_hits: int = 0           # results read from the cache on disk (site errors, pages)
    jobs: int = 1                 # processes that may check pages when many must be (`errors`)
    forked: int = 0               # worker processes started to check pages (for tests)
    config_checked: ConfigVerdict | None = None  # mkdocs.yml's, when `check` worked it out to keep it
    _site: Site | None = None
    _site_sets: dict[str, str] = field(default_factory=dict)  # set digests when _site was loaded
    _tree: str = ""
    _scanned: int = 0
    _scans: verdict.Scans = ({}, {})
    _scans_settled: bool = False  # whether every file of _scans had settled by then
    _set_digests: dict[str, str] = field(default_factory=dict)
    _set_folders: dict[str, str] = field(default_factory=dict)
    _lessons: dict[str, str] = field(default_factory=dict)  # set name -> its lesson (code/<lesson>/runs.toml)
    _unrecorded: frozenset[str] = frozenset()  # the lessons with a runs.toml and no evidence yet
    _catalog: str = ""
    _site_errors: list[LessonError] = field(default_factory=list)
    _pages: dict[str, tuple[PageInputs, PageResult]] = field(default_factory=dict)
    _audits: dict[str, tuple[str, list[LessonError]]] = field(default_factory=dict)
    _by_folder: tuple[verdict.Scan | None, dict[str, tuple[verdict.Scan, bool]]] = (None, {})
    _specs: list[tuple[str, tuple[int, ...] | None]] = field(default_factory=list)  # runs.toml of that scan
    _specs_settled: bool = True   # whether every one of them had settled by that scan
    _manifests: ReadSets | None = None  # the manifests as the last refresh read them, for the next load
    _rendering: Rendering = field(default_factory=lambda: Rendering(b"", ""))  # as of the last refresh
    _renderer: tuple[Rendering, Renderer] | None = None  # the renderer made for that, on first use

    def __post_init__(self) -> None:
        if self.store is None:
            self.store = Store.for_repo(self.repo)
        self.hashes = HashStore(self.store)

    @property
    def site(self) -> Site:
        """The evidence as loaded after the last refresh that saw a change (loaded on first use)."""
        if self._site is None or self._site_sets is not self._set_digests:
            before, before_digests = self._site, self._site_sets
            read, self._manifests = self._manifests, None
            self._site = Site.load(self.repo, read)
            self._site.transcripts = self.keep == "pages"  # "errors": no transcript HTML
            self.reloads += 1
            sets = self._site.evidence.sets
            if before is not None:  # a set whose files are unchanged keeps its parsed transcripts
                for name, old in before.evidence.sets.items():
                    if (name in sets and type(old) is type(sets[name])
                            and before_digests.get(name) == self._set_digests.get(name)):
                        sets[name] = old
            self._site_sets = self._set_digests
        return self._site

    def refresh(self, scanned: tuple[int, verdict.Scans] | None = None) -> None:
        """Take the files under evidence/ and code/ as they are now (or as `scanned`, a scan of
        both and the time it began, shows them). If any changed, the site's own errors are those
        the cache on disk holds for these contents, or computed (and stored)."""
        use_hash_store(self.hashes if self.store.folder is not None else None)
        self._manifests = None
        if self.keep == "errors":
            self._rendering = rendering_key(self.repo)
        now, scans = scanned or (time.time_ns(), verdict.scan_tree(self.repo))
        if self._tree and (scans is self._scans or scans == self._scans) and self._scans_settled:
            return  # no file changed since a scan that saw every file settled: their bytes are the same
        evidence, code = sitecache.site_contents(self.store, self.repo, scans, now, self._read_manifests
                                                 if self.jobs > 1 and self._site is None else None)
        tree = sitecache.site_key(self.repo, evidence, code)
        settled = all(verdict.settled_since(scan, now) for scan in scans)
        if tree == self._tree:
            self._scanned, self._scans, self._scans_settled = now, scans, settled
            return
        self._digest_sets(evidence, code)
        self._scanned, self._scans, self._tree, self._scans_settled = now, scans, tree, settled
        stored = self.store.get("site", "errors", tree)
        try:
            errors = verdict.decode_errors(stored["errors"])
            names, unreadable = set(stored["sets"]), set(stored["unreadable"])
            unrecorded = {lesson: tuple(files) for lesson, files in stored["unrecorded"].items()}
            lessons = {str(n): str(lesson) for n, lesson in stored["lessons"].items()}
            self.cache_hits += 1
        except (TypeError, KeyError, ValueError, AttributeError):
            errors, names, unreadable, unrecorded, lessons = self._site_verdict(tree, scans, settled)
        self._site_errors = errors
        self._lessons = lessons
        self._unrecorded = frozenset(unrecorded)
        self._catalog = _catalog(names, unreadable, unrecorded, scans)
        self.hashes.save()

    def _site_verdict(self, tree: str, scans: verdict.Scans, settled: bool) -> tuple[
            list[LessonError], set[str], set[str], dict[str, tuple[str, ...]], dict[str, str]]:
        """The site's own errors, its sets (readable and not), its lessons not recorded yet (with
        their inputs) and each set's lesson, worked out from the files; stored under `tree` when
        every file had settled, the lessons read nothing outside their folders, and no file changed
        while they were read."""
        site = self.site
        errors = site.site_errors()
        names, unreadable = set(site.evidence.sets), set(site.evidence.unreadable)
        unrecorded = {u.lesson: tuple(sorted(u.inputs)) for u in site.evidence.unrecorded.values()}
        lessons = {n: ev.lesson for n, ev in site.evidence.sets.items()}
        if (self.store.folder is not None
                and settled
                and sitecache.inputs_inside(self.repo, lessons.values()) and verdict.scan_tree(self.repo) == scans):
            self.store.put("site", "errors", tree, {
                "errors": verdict.encode_errors(errors), "sets": sorted(names),
                "unreadable": sorted(unreadable), "unrecorded": unrecorded, "lessons": lessons})
        return errors, names, unreadable, unrecorded, lessons

    def _digest_sets(self, evidence: Mapping[str, str], code: Mapping[str, str]) -> None:
        """Each set's digest, of its files (`evidence`: digests by path under evidence/) and of every
        lesson's runs.toml (`code`: the same under code/), and the folder each set is read from."""
        # A set may be read from another folder than its name (evidence/.old.<set> after a
        # refresh stopped mid-swap): its files count for the set.
        folders = {folder.name: name for name, folder in set_folders(self.repo).items()}
        per_set: dict[str, list[tuple[str, str]]] = {}
        for rel, digest in evidence.items():
            top = rel.split(os.sep, 1)[0]
            per_set.setdefault(folders.get(top, top), []).append((rel, digest))
        # A set is read by its lesson's runs.toml ([harness]): a change there counts for every set.
        specs = [(os.sep + rel, digest) for rel, digest in code.items() if rel.endswith(os.sep + "runs.toml")]
        self._set_digests = {name: combine(items + specs) for name, items in per_set.items()}
        self._set_folders = {name: top for top, name in folders.items()}

    @property
    def last_scan(self) -> tuple[int, verdict.Scans] | None:
        """The scan of evidence/ and code/ the last refresh took, and when it began, if every file
        had settled by then: given back to `refresh`, nothing is read (lessonkit.site.changes says
        when the hooks may)."""
        return (self._scanned, self._scans) if self._tree and self._scans_settled else None

    @property
    def set_lessons(self) -> Mapping[str, str]:
        """Each readable evidence set's lesson (its program in code/<lesson>/), as the last refresh
        read the manifests: known without loading the evidence."""
        return MappingProxyType(self._lessons)

    def _read_manifests(self) -> None:
        """Read every set's manifest for the first load of the evidence, while its files are
        hashed in another process (a check from cold, which loads the evidence next)."""
        self._manifests = read_evidence_sets(self.repo)

    def _inputs(self, markdown: str, offset: int, source: tuple[str, str], front: str = "") -> PageInputs:
        """A page's own inputs, taken before it is checked (a later edit shows as a change): its text,
        its file, and the catalog (the sets, the lessons not recorded yet, the folders under code/,
        the list of published works), which holds whatever a page may name that does not exist yet.
        What else it reads is recorded as the check reads it (`_recorded`)."""
        return PageInputs(markdown, offset, source,
                          self._catalog + "|" + self.digests.digest(self.repo / SOURCES_FILE), (), (), front)

    def _recorded(self, inputs: PageInputs, result: PageResult) -> PageInputs:
        """`inputs` with what the check read, as it read it: every set it looked up or cited, the code
        files its directives and claims read or looked for (result.sources), and the runs.toml of each
        set's lesson (its display names)."""
        names = {n for n in result.looked_up if n in self._set_digests} | {s for s, _ in result.cited}
        files = set(result.sources) | {f"{self._lessons.get(n, n)}/runs.toml" for n in names}
        return replace(inputs, sets=tuple(sorted((n, self._set_digests.get(n, MISSING)) for n in names)),
                       files=tuple(sorted((f, self.digests.digest(self.repo / "code" / f)) for f in files)))

    def _holds(self, inputs: PageInputs) -> bool:
        """Whether a page's earlier result still holds for today's evidence and code."""
        return (inputs.catalog == self._catalog + "|" + self.digests.digest(self.repo / SOURCES_FILE)
                and all(self._set_digests.get(n, MISSING) == d for n, d in inputs.sets)
                and all(self.digests.digest(self.repo / "code" / f) == d for f, d in inputs.files))

    def _disk_key(self, inputs: PageInputs, path: str) -> str:
        """The key of what the page's `inputs` determine: its own (a page's entry, whose recorded
        dependencies are checked on reading), or its own and its recorded ones (its audit's)."""
        files = sitecache.code_files(self.repo, (f for f, _ in inputs.files))
        key = sitecache.page_key(self.repo, path, inputs.offset, inputs.markdown, inputs.catalog,
                                 inputs.sets, files)
        # `check` audits the page as rendered: its front matter and the rendering count too.
        return cache.digest("checked", key, inputs.front, self._rendering.key) if self.keep == "errors" else key

    def _unchanged_since_refresh(self, inputs: PageInputs) -> bool:
        """Whether the files a page's result was derived from had settled before the last refresh
        and are as it found them: only then may the result be stored for their contents."""
        now, (evidence, code) = self._scanned, self._scans
        if self._by_folder[0] is not evidence:  # the last scans, by top folder and runs.toml (once per scan)
            self._split_scans(now, evidence, code)
        if not all(self._set_unchanged(name) for name, _ in inputs.sets):
            return False
        if inputs.sets and not self._specs_settled:
            return False
        code_dir = os.path.join(self.repo, "code")
        files = [(rel, code.get(os.path.normpath(rel))) for rel, _ in inputs.files]
        if not all(stamp is not None and verdict.settled_since({rel: stamp}, now) for rel, stamp in files):
            return False
        for rel, stamp in files + (self._specs if inputs.sets else []):
            try:
                if cache.stamp(os.stat(os.path.join(code_dir, rel))) != stamp:
                    return False
            except OSError:
                return False
        return True

    def _split_scans(self, now: int, evidence: verdict.Scan, code: verdict.Scan) -> None:
        """The last scan of evidence/ by top folder, each with whether it had settled by the scan (fixed
        once the scan is: worked out here, once a scan), and the lessons' runs.toml files likewise."""
        folders: dict[str, verdict.Scan] = {}
        for rel, stamp in evidence.items():
            folders.setdefault(rel.split(os.sep, 1)[0], {})[rel] = stamp
        self._by_folder = (evidence, {top: (scan, verdict.settled_since(scan, now)) for top, scan in folders.items()})
        self._specs = [(rel, code[rel]) for rel in code if rel.endswith(os.sep + "runs.toml")]
        self._specs_settled = all(verdict.settled_since({rel: stamp}, now) for rel, stamp in self._specs)

    def _set_unchanged(self, name: str) -> bool:
        """Whether set `name`'s folder had settled by the last scan and holds the same files now."""
        top = self._set_folders.get(name, name)
        mine, settled = self._by_folder[1].get(top, ({}, True))
        if not settled:
            return False
        folder = os.path.join(self.repo, "evidence", top)
        again = {top + os.sep + rel: stamp for rel, stamp in verdict.scan(folder).items()}
        again.update({top + os.sep: None} if os.path.isdir(folder) else {})
        return mine == again

    def _stored(self, inputs: PageInputs, path: str) -> tuple[str, PageResult | None, PageInputs]:
        """The page's disk key and its result from the cache on disk, if there and if every dependency it
        recorded is as it was (then with `inputs` holding them)."""
        key = self._disk_key(inputs, path)
        data = self.store.get(self.keep, sitecache.entry_name(path), key)
        if data is None:
            return key, None, inputs
        try:
            sets = tuple((str(n), str(d)) for n, d in data["sets"])
            files = tuple(tuple(f) for f in data["files"])
            if (any(self._set_digests.get(n, MISSING) != d for n, d in sets)
                    or sitecache.code_files(self.repo, (f for f, _, _ in files)) != files):
                return key, None, inputs
            result = (sitecache.decode_result(data["result"]) if self.keep == "pages"
                      else PageResult("", verdict.decode_errors(data["result"])))
        except (TypeError, KeyError, ValueError):
            return key, None, inputs
        self.cache_hits += 1
        return key, result, replace(inputs, sets=sets, files=tuple(
            (f, self.digests.digest(self.repo / "code" / f)) for f, _, _ in files))

    def _known(self, markdown: str, path: str, line_offset: int, source: Path | None,
               source_digest: str | None, front: str = "") -> PageResult | tuple[PageInputs, str]:
        """The page's earlier result, kept in memory or on disk, when none of its inputs changed
        (then kept in memory); else its inputs, taken now, and its key on disk ("" without one)."""
        assert self._tree, "call refresh() first"
        cached = self._pages.get(path)
        if (cached is not None and cached[0].markdown == markdown and cached[0].offset == line_offset
                and cached[0].front == front and self._holds(cached[0])):
            return cached[1]
        if source is not None and source_digest is None:
            source_digest = self.digests.digest(source)
        inputs = self._inputs(markdown, line_offset,
                              (os.fspath(source), source_digest or "") if source else ("", ""), front)
        key, result, recorded = self._stored(inputs, path) if self.store.folder is not None else ("", None, inputs)
        if result is not None:
            self._pages[path] = (recorded, result)
            return result
        return inputs, key

    def page(self, markdown: str, path: str, line_offset: int = 0, source: Path | None = None,
             source_digest: str | None = None, front: str = "") -> PageResult:
        """The page's result: the earlier one when none of its inputs changed, else a new check.

        `source` is the page's file and `source_digest` its identity taken before it was read
        (taken now if not given), so `needs_check` can tell when it was edited since. With
        `keep` = "errors" (`check`), the result holds only the page's errors: its Markdown's, then
        the audit's of the page rendered as the site renders it (lessonkit.site.rendered), `front`
        being the file's text above `markdown` (its front matter), as a build reports them.
        """
        known = self._known(markdown, path, line_offset, source, source_digest, front)
        if isinstance(known, PageResult):
            return known
        inputs, key = known
        result = self.site.page(markdown, path, line_offset)
        self.checks += 1
        if self.keep == "errors":
            result = PageResult("", result.errors + self._audit_rendered(path, result, front + markdown),
                                cited=result.cited, looked_up=result.looked_up, sources=result.sources)
        inputs = self._recorded(inputs, result)
        if key and self._unchanged_since_refresh(inputs):
            data = (sitecache.encode_result(result) if self.keep == "pages"
                    else verdict.encode_errors(result.errors))
            self.store.put(self.keep, sitecache.entry_name(path), key, {
                "sets": [list(s) for s in inputs.sets],
                "files": [list(f) for f in sitecache.code_files(self.repo, (f for f, _ in inputs.files))],
                "result": data})
        self._pages[path] = (inputs, result)
        return result

    def _audit_rendered(self, path: str, result: PageResult, source: str) -> list[LessonError]:
        """The audit's errors (lessonkit.pages.audit) for the page's result rendered as the site
        renders it: what the hooks' `audit` finds in a build's HTML, without a build."""
        from lessonkit.pages.audit import audit_page  # imported here: a warm check audits nothing

        return audit_page(lambda: result.fill(self.renderer.render(result), origins=True), source, path, result, self.site.evidence.sets,
                          load_course(self.repo), self.constant)

    @property
    def renderer(self) -> Renderer:
        """The site's Markdown renderer (mkdocs.yml's extensions) as of the last refresh."""
        if self._renderer is None or self._renderer[0] != self._rendering:
            try:
                self._renderer = (self._rendering, Renderer(self._rendering))
            except ModuleNotFoundError as exc:  # this interpreter lacks the site's packages
                raise missing_package(exc) from exc
            except Exception as exc:  # an extension that cannot be loaded as listed
                raise LessonError("mkdocs.yml", None, f"cannot render the pages with its markdown_extensions "
                                  f"({type(exc).__name__}: {exc}); the build cannot either: fix the extension "
                                  "or its options", rank=0) from exc
        return self._renderer[1]

    def constant(self, ref_query: str) -> tuple[object, str] | str | None:
        """A constant of a lesson's program that ran (LESSON/FILE:NAME): its value and definition, or why not."""
        return program_constant(self.repo, ref_query, self.site.evidence.sets, self.site.evidence.unrecorded)

    def audit(self, path: str, html: str, source: str) -> list[LessonError]:
        """The rendered-page audit's errors (lessonkit.pages.audit) for page `path`, checked first with `page`:
        `html` as rendered (its slots filled here, if they are not yet), `source` the page's file (front matter included). An earlier audit of the
        same HTML and file over the same inputs is reused, from memory or from the cache on disk."""
        inputs, result = self._pages[path]
        course = load_course(self.repo)
        from lessonkit.pages.audit import bound_files  # the program files its bound phrases read

        key = cache.digest("audit", self._disk_key(inputs, path), html, source, course.text,
                           sitecache.code_files(self.repo, bound_files(source, path)))
        known = self._audits.get(path)
        if known is not None and known[0] == key:
            return known[1]
        data = self.store.get("audit", sitecache.entry_name(path), key)
        try:
            errors = verdict.decode_errors(data)
        except (TypeError, KeyError, ValueError):
            from lessonkit.pages.audit import audit_page  # here: a warm build audits nothing

            # read whole, as a reader sees it: its slots filled (a diagram's text is read, and named at its SVG's lines)
            errors = audit_page(result.fill(html, origins=True), source, path, result, self.site.evidence.sets, course,
                                self.constant)
            if self._unchanged_since_refresh(inputs):
                self.store.put("audit", sitecache.entry_name(path), key, verdict.encode_errors(errors))
        self._audits[path] = (key, errors)
        return errors

    def chrome(self, path: str, page_html: str, content: str, allowed: Iterable[str]) -> list[LessonError]:
        """The errors of what the theme shows around page `path`'s content (lessonkit.site.chrome):
        read back from the cache on disk when the built page, its content and the texts it may show
        are those of an earlier build (a pure function of them: no file is read, nothing can be racy)."""
        texts = tuple(sorted(set(allowed)))
        key = cache.digest("chrome", path, page_html, content, texts)
        try:
            return verdict.decode_errors(self.store.get("chrome", sitecache.entry_name(path), key))
        except (TypeError, ValueError):
            errors = chrome_errors(page_html, content, path, texts)
            self.store.put("chrome", sitecache.entry_name(path), key, verdict.encode_errors(errors))
            return errors

    def needs_check(self, path: str, source: Path) -> bool:
        """Whether page `path` must be read and checked again: new, its file edited, or inputs changed."""
        cached = self._pages.get(path)
        return (cached is None or cached[0].source != (os.fspath(source), self.digests.digest(source))
                or not self._holds(cached[0]))

    def _read(self, source: Path, path: str) -> tuple[str, int, str, str]:
        """`_split_page` of a page file's text, and the file's identity taken before it was read;
        LessonError (at `path`) when it is not UTF-8, LessonErrors as `_split_page`."""
        digest = self.digests.digest(source)
        text = read_text(source, path)
        body, offset = strip_front_matter(text)
        front = text[:len(text) - len(body)]
        if front:  # YAML read once per front matter text, even across processes (the cache on disk)
            key = cache.digest("front", path, front)
            known = self.store.get("front", sitecache.entry_name(path), key)
            try:
                errors = verdict.decode_errors(known)
            except (TypeError, KeyError, ValueError):
                errors = list(read_front_matter(text, path).errors)
                self.store.put("front", sitecache.entry_name(path), key, verdict.encode_errors(errors))
            if errors:
                raise LessonErrors(errors)
        return body, offset, front, digest

    def check_page_file(self, path: str, source: Path) -> PageResult:
        """Read page `path` from `source` (front matter stripped) and check it; a page that is not
        UTF-8, or whose front matter has a key that is not text, has those errors alone, until its
        file changes."""
        try:
            body, offset, front, digest = self._read(source, path)
        except (LessonError, LessonErrors) as exc:
            digest = self.digests.digest(source)
            result = PageResult("", exc.errors if isinstance(exc, LessonErrors) else [exc])
            self._pages[path] = (self._inputs("", 0, (os.fspath(source), digest)), result)
            return result
        return self.page(body, path, offset, source, digest, front)

    def page_text(self, text: str, path: str) -> PageResult:
        """Check `text` as the whole file of page `path` (front matter included), as
        `check_page_file` checks a file: for a text that is not on disk (the mutation test)."""
        try:
            body, offset, front = _split_page(text, path)
        except LessonErrors as exc:
            return PageResult("", exc.errors)
        return self.page(body, path, offset, front=front)

    def figures(self, text: str, path: str) -> list[tuple[int | None | tuple[str, int], str, str]]:
        """What backs each figure of page `path` (`text`: its file) that a reader sees and no claim produced:
        (its line, or (file, line) for a diagram's text, the figure, in words), from the audit of the page as rendered (`explain` lists them)."""
        from lessonkit.pages.audit import audit_page

        try:
            body, offset, _ = _split_page(text, path)
        except LessonErrors:
            return []  # check reports it
        result = self.site.page(body, path, offset)  # the whole Markdown, as a build renders it
        found: list[tuple[int | None, str, str]] = []
        audit_page(lambda: result.fill(self.renderer.render(result), origins=True), text, path, result, self.site.evidence.sets,
                   load_course(self.repo), self.constant, lambda line, figure, what: found.append((line, figure, what)))
        return found

    def _stored_page_file(self, path: str, source: Path) -> bool:
        """Whether page `path`'s result for its file as it is now is known without checking it (in
        memory or on disk; then kept, as `page` keeps it): no evidence is loaded to find out."""
        try:
            body, offset, front, digest = self._read(source, path)
        except (LessonError, LessonErrors):
            return False  # check_page_file reports it
        return isinstance(self._known(body, path, offset, source, digest, front), PageResult)

    def site_errors(self) -> list[LessonError]:
        """Errors that belong to no page (the course's narrative phrases, evidence integrity and
        freshness, lesson READMEs)."""
        return list(load_course(self.repo).errors) + list(load_sources(self.repo).errors) + list(self._site_errors)

    def errors(self, pages: Iterable[tuple[str, Path]]) -> list[LessonError]:
        """The site's errors and those of `pages` ((path as named, file)), each checked if it must be.

        Results of pages no longer listed are forgotten.
        """
        wanted = dict(pages)
        for path in [p for p in self._pages if p not in wanted]:
            del self._pages[path]
        errors = self.site_errors()
        self._check_files([(path, source) for path, source in wanted.items() if self.needs_check(path, source)])
        for path in wanted:
            errors.extend(self._pages[path][1].errors)
        self.hashes.save()
        return errors

    def _check_files(self, todo: list[tuple[str, Path]]) -> None:
        """check_page_file for each of `todo`, in up to `jobs` processes when there are enough.

        The workers are forked once the evidence is loaded, so they share it as the parent has
        it (nothing is read twice) and each sends back its pages' results; a page is checked
        as it would be here. Only on Linux (macOS's system libraries are not safe to use in a
        forked child; Windows cannot fork), and only from a process running one thread (a fork
        copies no other thread, and a lock another thread held stays held in the copy). If a
        worker dies, every page of `todo` is checked here."""
        if self.jobs > 1 and len(todo) >= 2 * PAGES_PER_JOB:
            # What the disk has needs no worker (nor the evidence): look until enough pages for
            # two workers must be checked; the workers look up the rest themselves.
            pending, rest = [], iter(todo)
            for path, source in rest:
                if not self._stored_page_file(path, source):
                    pending.append((path, source))
                    if len(pending) == 2 * PAGES_PER_JOB:
                        break
            todo = pending + list(rest)
        jobs = min(self.jobs, len(todo) // PAGES_PER_JOB)
        if jobs < 2 or not sitecache.can_fork() or not self._check_in_workers(todo, jobs):
            for path, source in todo:
                self.check_page_file(path, source)

    def _check_in_workers(self, todo: list[tuple[str, Path]], jobs: int) -> bool:
        """Check `todo` in `jobs` forked workers and keep their results; False (nothing kept) when
        a worker died (killed, out of memory)."""
        # Imported here: a check that forks no worker (a warm one) does not pay for them.
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        global _FORKED
        self.site  # noqa: B018  loaded here, once, for every worker to share
        if self.keep == "errors":
            self.renderer  # noqa: B018  and the renderer with its extensions' modules
        _FORKED = self
        gc.freeze()  # what is loaded now stays where it is: a worker's collections do not copy it
        try:
            with ProcessPoolExecutor(jobs, mp_context=sitecache.fork_context(),
                                     initializer=_worker_started) as pool:
                done = list(pool.map(_check_in_worker, todo))
        except BrokenProcessPool:
            return False
        finally:
            _FORKED = None
            gc.unfreeze()
        self.forked += jobs
        for (path, _), (entry, checks, hits) in zip(todo, done):
            self._pages[path] = entry
            self.checks += checks
            self.cache_hits += hits
        return True

    def check(self, docs: Path | None = None, looked: verdict.Lookup | None = None) -> list[LessonError]:
        """What a full check would report, re-checking only what changed since the last call.

        `check` (keep "errors", a cache on disk) first looks for the whole verdict
        (lessonkit.site.verdict), unless `looked` is that lookup, already done: when no file it
        reads changed since a check that stored one, its errors are read back as one entry,
        without reading the pages, their results or the files under evidence/ and code/."""
        if looked is None:
            looked = verdict.lookup(self.store if self.keep == "errors" else None, self.repo, docs)
        if looked.errors is not None:
            self.cache_hits += 1
            return looked.errors
        self.refresh(looked.scanned)
        errors = sorted(self.errors(looked.pages), key=report_order)  # as a report lists them
        # A lesson whose runs.toml names an input outside code/<lesson>/ makes the verdict depend
        # on a file the key does not cover: it is worked out afresh every time.
        if looked.key is not None and sitecache.inputs_inside(self.repo, self._lessons.values()):
            self.config_checked = config = config_verdict(self.repo)
            verdict.keep(self.store, self.repo, looked, errors, config[:2] if config.keepable else None)
        return errors
