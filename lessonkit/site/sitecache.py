"""What `CheckedSite` keeps in the cache on disk: the site's own errors and each page's result,
each keyed by the contents it was computed from (lessonkit.cache says how entries are kept).

The site's errors (evidence integrity and freshness, lesson READMEs) are derived from the files
under evidence/ and code/: their key covers every file there (its path and sha256) and every
folder. A page's result is derived from its text, the catalog (the list of sets, of the lessons not
recorded yet with their inputs, of the folders under code/), and what its check read, recorded as it
read it: the sets it looked up or cited (their files, and every lesson's runs.toml, whose [harness]
says how a set's transcripts read), the code files its directives and claims read or looked for,
and the runs.toml of each set's lesson. An entry's key covers the page's own text and the catalog;
the entry holds the recorded dependencies with their digests, each compared when the entry is read
(the shape of a build cache keyed by recorded dependencies, as Sphinx's `note_dependency` records
them), as `PageInputs` does within a process. An entry is stored only when the files it was derived
from had settled (a lesson whose runs.toml names inputs outside code/<lesson>/ is computed afresh
every time).
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from lessonkit import cache
from lessonkit.errors import LessonError
from lessonkit.evidence.manifest import MISSING, adopt_hashes, known_hashes, sha256_file
from lessonkit.evidence.spec import load_spec
from lessonkit.pages.marks import Mark
from lessonkit.pages.published import Published
from lessonkit.pages.result import ClaimOutcome, PageResult
from lessonkit.site.verdict import (
    COMPILED,
    Scan,
    Scans,
    decode_errors,
    encode_errors,
    scans_digest,
    settled_since,
)

DIRECTORY = "directory"




def contents(root: Path, listing: Scan) -> dict[str, str]:
    """sha256 of each file of a scan of `root` ('directory' for a folder, 'missing' unreadable)."""
    out: dict[str, str] = {}
    folder = os.fspath(root)
    for rel, stamp in listing.items():  # plain strings: a warm check hashes none, but names every file
        out[rel] = (DIRECTORY if stamp is None else file_content(os.path.join(folder, rel)) if stamp
                    else MISSING)
    return out


def site_contents(store: cache.Store, repo: Path, scans: Scans, now_ns: int,
                  meanwhile: Callable[[], None] | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """`contents` of the scans of evidence/ and code/ taken at `now_ns`. When every file had
    settled by then, its stamp stands for its bytes (as in the hash store), so the answer an
    earlier process stored for the same stamps is read back as one entry instead of looking up
    some 12,000 files one by one; otherwise, or when there is none, each file is looked up or
    hashed, and the answer kept for the next process.

    `meanwhile`: work of the caller's that needs no hash. When the files must be hashed and it is
    given, they are hashed in a forked process while this one runs it (a cold check: reading the
    manifests beside hashing every recording); see `beside`."""
    key = None
    if store.folder is not None and all(settled_since(scan, now_ns) for scan in scans):
        key = cache.digest("contents", str(repo), os.path.realpath(repo), scans_digest(scans))
        stored = store.get("site", "contents", key)
        if (isinstance(stored, tuple) and len(stored) == 2 and all(isinstance(d, dict) for d in stored)
                and stored[0].keys() == scans[0].keys() and stored[1].keys() == scans[1].keys()):
            return stored[0], stored[1]
    if meanwhile is None:
        found = _hash_scans(repo, scans)
    else:
        found = beside(_hash_scans, (repo, scans), meanwhile)
    if key is not None:
        store.put("site", "contents", key, found)
    return found


def _hash_scans(repo: Path, scans: Scans) -> tuple[dict[str, str], dict[str, str]]:
    return contents(repo / "evidence", scans[0]), contents(repo / "code", scans[1])


# What the forked process of `beside` runs (set in the parent just before it forks).
_BESIDE: tuple[Callable[..., Any], tuple[Any, ...]] | None = None


def _run_beside() -> tuple[Any, dict[str, tuple[tuple[int, ...], str]]]:
    """In the forked process: the work, and the hashes it kept that the parent did not have."""
    assert _BESIDE is not None
    work, args = _BESIDE
    before = known_hashes()
    result = work(*args)
    return result, {k: v for k, v in known_hashes().items() if before.get(k) != v}


def beside(work: Callable[..., Any], args: tuple[Any, ...], meanwhile: Callable[[], None]) -> Any:
    """`work(*args)` in a forked process while this one runs `meanwhile()`; its answer, and the
    file hashes it kept, as if it had run here (lessonkit.evidence.manifest.adopt_hashes).

    Where a process cannot be forked safely (`can_fork`), or the forked one dies or fails, `work` runs here after
    `meanwhile`: the same answer, later."""
    global _BESIDE
    if not can_fork():
        meanwhile()
        return work(*args)
    from concurrent.futures import (
        ProcessPoolExecutor,  # imported here: only a check that forks needs it
    )

    _BESIDE = (work, args)
    try:
        with ProcessPoolExecutor(1, mp_context=fork_context()) as pool:
            future = pool.submit(_run_beside)
            meanwhile()
            try:
                result, hashes = future.result()
            except Exception:  # noqa: BLE001  died (BrokenProcessPool) or failed: run it here
                return work(*args)
    finally:
        _BESIDE = None
    adopt_hashes(hashes)
    return result


def fork_context() -> Any:
    """The multiprocessing context that forks (`can_fork` says when that is safe); multiprocessing
    is imported only when a process is forked."""
    import multiprocessing
    return multiprocessing.get_context("fork")


def can_fork() -> bool:
    """Whether this process may fork workers that share what it loaded: on Linux (macOS's system
    libraries are not safe to use in a forked child; Windows cannot fork), and only while it
    runs one thread (a fork copies no other thread, and a lock another thread held stays held)."""
    if threading.active_count() != 1 or not sys.platform.startswith("linux"):
        return False
    import multiprocessing  # imported here: a check that forks nothing does not pay for it
    return "fork" in multiprocessing.get_all_start_methods()


def file_content(path: Path | str) -> str:
    """The file's sha256, 'directory', or 'missing' (cannot be read)."""
    try:
        return sha256_file(path)
    except IsADirectoryError:
        return DIRECTORY
    except OSError:
        return MISSING




def site_key(repo: Path, evidence: dict[str, str], code: dict[str, str]) -> str:
    """The key of the site's own errors: every file and folder under evidence/ and code/."""
    return cache.digest("site", str(repo), os.path.realpath(repo),
                        tuple(sorted(evidence.items())), tuple(sorted(code.items())))


def inputs_inside(repo: Path, lessons: Iterable[str]) -> bool:
    """Whether the site's errors read only files the scans hashed: every lesson a set names is
    a folder of code/, and every input of its runs.toml lies inside that folder and is not a
    compiled Python file (the scan of code/ leaves those out)."""
    for lesson in lessons:
        if not lesson or lesson in (".", "..") or "/" in lesson or "\\" in lesson:
            return False
    for spec_path in sorted((repo / "code").glob("*/runs.toml")):
        try:
            spec = load_spec(repo / "code", spec_path.parent.name)
        except LessonError:
            continue  # its error is derived from its own text
        for rel in spec.inputs + tuple(i for r in spec.runs for i in r.inputs):
            if (os.path.isabs(rel) or ".." in Path(rel).parts or rel.startswith(("/", "\\"))
                    or rel.endswith(COMPILED)):
                return False
    return True


def page_key(repo: Path, path: str, offset: int, markdown: str, catalog: str,
             sets: tuple[tuple[str, str], ...], files: tuple[tuple[str, str, str], ...]) -> str:
    """The key of a page's result: its text and everything it reads."""
    return cache.digest("page", str(repo), os.path.realpath(repo), os.path.realpath(repo / "code"),
                        path, offset, markdown, catalog, sets, files)


def code_files(repo: Path, paths: Iterable[str]) -> tuple[tuple[str, str, str], ...]:
    """(path under code/, the file it resolves to, its sha256) of each file the regions read."""
    out = []
    for rel in sorted(paths):
        path = repo / "code" / rel
        out.append((rel, os.path.realpath(path), file_content(path)))
    return tuple(out)


def entry_name(path: str) -> str:
    """The file name of a page's entry (one per page: a newer result replaces the older)."""
    return hashlib.sha256(path.encode("utf-8", "surrogateescape")).hexdigest()[:40]


# -- results as plain data ---------------------------------------------------------------------


def _encode_error(error: LessonError | None) -> tuple[Any, ...] | None:
    return None if error is None else (error.path, error.line, error.message, error.rank)


def encode_result(result: PageResult) -> dict[str, Any]:
    """A page's result as marshal-able data."""
    return {
        "markdown": result.markdown,
        "errors": encode_errors(result.errors),
        "cited": sorted(result.cited),
        "blocks": list(result.blocks),
        "claims": [(c.line, c.start, c.end, c.value, c.ref_query, _encode_error(c.error), c.fix,
                    c.skipped, c.set_name, list(c.sets), c.file, c.backing, c.derived, c.recorded) for c in result.claims],
        "published": [(p.set_name, p.file, str(p.source)) for p in result.published],
        "sources": sorted(result.sources),
        "looked_up": sorted(result.looked_up),
        "marks": [(m.why, m.kind, [list(r) for r in m.runs], m.line, m.unit) for m in result.marks],
        "unrecorded": result.unrecorded,
        "default_set": result.default_set,
    }


def decode_result(data: Any) -> PageResult:
    """The page's result from `encode_result`'s data."""
    errors = decode_errors(data["errors"])
    by_value = {(e.path, e.line, e.message, e.rank): e for e in errors}  # shared, as when fresh
    claims = []
    for line, start, end, value, ref_query, error, fix, skipped, set_name, sets, file, backing, derived, recorded in data[
            "claims"]:
        err = None if error is None else by_value.get(tuple(error)) or LessonError(*error)
        claims.append(ClaimOutcome(line, start, end, value, ref_query, err, fix, skipped, set_name,
                                   tuple(sets), file, backing, derived, recorded))
    return PageResult(
        markdown=data["markdown"], errors=errors, cited={tuple(c) for c in data["cited"]},
        blocks=list(data["blocks"]), claims=claims,
        published=[Published(set_name, file, Path(source)) for set_name, file, source in data["published"]],
        sources=set(data["sources"]), looked_up=set(data["looked_up"]),
        marks=[Mark(why, kind, tuple(tuple(r) for r in runs), line, unit)
               for why, kind, runs, line, unit in data["marks"]],
        unrecorded=data.get("unrecorded"),
        default_set=data.get("default_set"))
