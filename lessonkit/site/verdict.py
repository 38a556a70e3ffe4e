"""The whole verdict of `lessonkit check`, kept in the cache on disk, and what its key is made of.

A check whose inputs did not change since a check that stored its verdict reads the verdict back
as one entry (`check_site`). The key stands for everything a check reads:

- every file and folder under evidence/ and code/, by its stat (`scan`);
- every page under docs/, by its stat (`docs_pages`), and every other file there (the core's
  stylesheet, which mkdocs.yml's rules read);
- which of the other site configurations an engine would read exist (lessonkit.repo.OTHER_CONFIGS);
- the rendering (`rendering_key`): mkdocs.yml, narrative.yml and sources.yml by their bytes,
  and the installed Markdown packages by their files' stats.

A stat stands for a file's bytes only once the file has settled (lessonkit.cache.RACY_NS, the
window of every cache), so a file changed within that window gives no key; and a verdict is
kept only when the key is the same after the check as before it. The verdict holds the site's
errors, and mkdocs.yml's errors and strictness when mkdocs.yml has none (lessonkit.site.config.
ConfigVerdict says when those may be kept).

This module imports the base layer alone, so a check that finds its verdict (`lookup`) loads
neither the evidence nor the page modules: `lessonkit check` imports lessonkit.site.check, which
checks the pages, only on a miss, and neither PyYAML nor lessonkit.site.config when mkdocs.yml's
part was kept. At a hundred lessons that saved some 0.15 s of the 0.65 s a warm check took, and
mkdocs.yml's part some 0.1 s more.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from lessonkit import cache
from lessonkit.cache import Store
from lessonkit.errors import LessonError
from lessonkit.repo import COURSE_FILE, OTHER_CONFIGS, SOURCES_FILE

Scan = dict[str, tuple[int, ...] | None]  # path under a root -> its stamp (None: a folder)
Scans = tuple[Scan, Scan]  # evidence/ and code/
COMPILED = (".pyc", ".pyo")
# The packages whose code renders a page: a new install of one is a new rendering.
PACKAGES = ("markdown", "pymdownx", "pygments")


def scan(root: Path | str, skip_compiled: bool = False, links: list[str] | None = None) -> Scan:
    """Every file and folder under `root` with its stat stamp, sorted; {} when there is no such
    folder. A folder's name ends with the path separator; a file that cannot be stat'ed, or is
    not a regular file, has the stamp (). `skip_compiled` leaves out compiled Python files
    (under code/, where Python may write them at any time and no check reads them). The name of
    each symbolic link met is added to `links`, if given."""
    found: Scan = {}
    top = os.path.realpath(root)
    pending = [(os.fspath(root), "", top)]  # (folder, its name under root, its real path)
    seen = {top}
    while pending:
        folder, rel, real_folder = pending.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = rel + entry.name
            if links is not None and entry.is_symlink():
                links.append(name)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:  # a symlinked folder is read through, once
                found[name + os.sep] = None
                # A plain folder's real path is its parent's and its name: resolved only through a link.
                real = (os.path.realpath(entry.path) if entry.is_symlink()
                        else os.path.join(real_folder, entry.name))
                if real not in seen:
                    seen.add(real)
                    pending.append((entry.path, name + os.sep, real))
            elif not (skip_compiled and entry.name.endswith(COMPILED)):
                try:
                    st = entry.stat()
                    # A fifo or device is never read (it could block); () never counts as settled.
                    found[name] = cache.stamp(st) if stat.S_ISREG(st.st_mode) else ()
                except OSError:
                    found[name] = ()
    return dict(sorted(found.items()))


def scan_tree(repo: Path, links: list[str] | None = None) -> Scans:
    """The scans of evidence/ and code/ (without compiled Python files); the symbolic links met
    are added to `links`, if given."""
    return scan(repo / "evidence", links=links), scan(repo / "code", skip_compiled=True, links=links)


def settled_since(listing: Scan, now_ns: int) -> bool:
    """Whether every file of a scan taken at `now_ns` had been unchanged for the racy window: its
    stamp then identifies its bytes, so a later scan with the same stamps saw the same bytes."""
    limit = now_ns - cache.RACY_NS
    return all(stamp is None or (len(stamp) == 5 and max(stamp[3], stamp[4]) < limit)
               for stamp in listing.values())


def scans_digest(scans: tuple[Scan, ...]) -> str:
    """sha256 of scans (each sorted by path, so the same files give the same bytes)."""
    return hashlib.sha256(cache.value_bytes(scans)).hexdigest()


def docs_pages(repo: Path, docs: Path | None = None) -> list[tuple[str, Path]]:
    """Every page under docs/ as (the path messages name it by, the file)."""
    docs = docs or repo / "docs"
    pages = []
    for page_path in sorted(docs.rglob("*.md")):
        shown = (page_path.relative_to(repo).as_posix() if page_path.is_relative_to(repo)
                 else str(page_path))
        pages.append((shown, page_path))
    return pages


class Rendering(NamedTuple):
    """What a page's rendering depends on besides the page: mkdocs.yml's bytes (b"" when there is
    none), and `key`, a sha256 over them and each installed rendering package (its file and stat:
    a reinstall is a new key)."""

    config: bytes
    key: str


def rendering_key(repo: Path) -> Rendering:
    """The site's `Rendering` now, without importing the rendering packages; the renderer
    (lessonkit.site.rendered) renders by exactly these bytes of mkdocs.yml. The key covers
    narrative.yml and sources.yml too: a page's audit and claims read them."""
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
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None and spec.origin else ""
        try:
            st = os.stat(origin)
            h.update(f"\0{name}\0{origin}\0{st.st_ino}\0{st.st_size}\0{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"\0{name}\0{origin}".encode())
    return Rendering(config, h.hexdigest())


def encode_errors(errors: Iterable[LessonError]) -> list[tuple[Any, ...]]:
    """Errors as marshal-able data: each LessonError's fields, in the order it pickles them."""
    return [e.__reduce__()[1] for e in errors]


def decode_errors(data: Any) -> list[LessonError]:
    return [LessonError(*fields) for fields in data]


ConfigPart = tuple[list[LessonError], bool]  # mkdocs.yml's errors, and whether it sets strict


class Lookup(NamedTuple):
    """What `lookup` found: the pages, the scans and when they began, the verdict's key (None: it
    may not be kept), the site's errors stored for it (None: there is no verdict), and mkdocs.yml's
    part of it (None: not kept)."""

    pages: list[tuple[str, Path]]
    scanned: tuple[int, Scans]
    key: str | None
    errors: list[LessonError] | None
    config: ConfigPart | None = None


def key(repo: Path, pages: list[tuple[str, Path]], scanned: tuple[int, Scans]) -> str | None:
    """The key of the verdict on `pages` with the files of `scanned` (a scan and the time it
    began), or None when a file had not settled by then."""
    now, scans = scanned
    if not all(settled_since(listing, now) for listing in scans):
        return None
    stamps = []
    for shown, path in pages:
        try:
            st = os.stat(path)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or not cache.settled(st, now):
            return None
        stamps.append((shown, os.fspath(path), cache.stamp(st)))
    docs = scan(repo / "docs")  # what mkdocs.yml's rules read there
    if not settled_since(docs, now):
        return None
    others = tuple(name for name in OTHER_CONFIGS if os.path.lexists(repo / name))
    return cache.digest("verdict", str(repo), os.path.realpath(repo), os.path.realpath(repo / "code"),
                        scans_digest(scans), rendering_key(repo).key, tuple(stamps), scans_digest((docs,)),
                        others)


def lookup(store: Store | None, repo: Path, docs: Path | None = None) -> Lookup:
    """The pages and the files now, and the verdict `store` holds for them (none without a store)."""
    pages = docs_pages(repo, docs)
    scanned = time.time_ns(), scan_tree(repo)
    found = key(repo, pages, scanned) if store is not None and store.folder is not None else None
    errors = config = None
    if found is not None:
        try:
            stored = store.get("errors", "verdict", found)
            errors = decode_errors(stored["site"])
            config = None if stored["config"] is None else (decode_errors(stored["config"]), bool(stored["strict"]))
        except (TypeError, ValueError, KeyError):
            errors = config = None  # none stored, or not one this version reads
    return Lookup(pages, scanned, found, errors, config)


def keep(store: Store, repo: Path, looked: Lookup, errors: list[LessonError], config: ConfigPart | None) -> None:
    """Store the verdict worked out for `looked` (the site's errors, and mkdocs.yml's part unless
    None), if none of its inputs changed meanwhile."""
    if looked.key is not None and key(repo, looked.pages, (time.time_ns(), scan_tree(repo))) == looked.key:
        store.put("errors", "verdict", looked.key, {
            "site": encode_errors(errors), "config": None if config is None else encode_errors(config[0]),
            "strict": config is not None and config[1]})

