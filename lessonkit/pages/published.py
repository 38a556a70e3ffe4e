"""The recordings a page shows or links, published as files of the built site.

Every recording a transcript box cites, and every recording a page links in its own text, is
published byte for byte at one place of the site, `evidence/SET/FILE` under its root, whichever
pages show it. A transcript box is rendered before the page's place in the built site is known,
so its links start at the site's root; `with_site_root` prefixes them with the way up to the root
once it is known (`../` for day62/index.html, nothing for day62.html), so they work with and
without directory URLs and under any sub-path.
"""

from __future__ import annotations

import html
import posixpath
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from lessonkit.evidence.sets import EvidenceSet

EVIDENCE_FOLDER = "evidence"  # under the built site's root
LINK_CLASS = "lk-evidence"  # a link to a published recording, made by the core (lessonkit.js loads it)
_LINK_OPEN = f'<a class="{LINK_CLASS}" href="'


@dataclass(frozen=True, order=True)
class Published:
    """A recording published as a file of the built site: evidence/SET/FILE, a copy of `source`."""

    set_name: str
    file: str
    source: Path

    @property
    def path(self) -> str:
        """Where the built site holds it, relative to the site's root."""
        return f"{EVIDENCE_FOLDER}/{self.set_name}/{self.file}"


def recordings_of(ev: EvidenceSet, group: str) -> list[Published]:
    """Every recording of run `group` of `ev` (or the one recording it names), as published."""
    return [Published(ev.name, ev.entries[n].file, ev.root / ev.entries[n].file) for n in ev.recordings(group)]


def evidence_link(published: Published, text: str) -> str:
    """An HTML link to the published recording, from the site's root until `with_site_root` places it."""
    return f'{_LINK_OPEN}{html.escape(quote(published.path), quote=True)}">{html.escape(text)}</a>'


def with_site_root(block: str, root: str) -> str:
    """A rendered block with its evidence links made relative to a page `root` below the site's root.

    Only the core writes `_LINK_OPEN`: every text from a file is escaped, so a transcript line
    cannot hold the `<` it starts with.
    """
    return block.replace(_LINK_OPEN, _LINK_OPEN + root) if root else block


def site_root(dest: str) -> str:
    """The way up from a built page (`dest`, relative to the site: day62/index.html) to the site's root."""
    return "../" * posixpath.normpath(dest).count("/")


def built_location(docs_path: str, directory_urls: bool = True) -> str:
    """Where a build puts the page `docs_path` (relative to docs/), relative to the site: x/index.html
    (directory URLs, MkDocs' default) or x.html; an index or README page is the folder's index.html."""
    stem = docs_path.removesuffix(".md")
    folder, _, name = stem.rpartition("/")
    if name in ("index", "README"):
        return posixpath.join(folder, "index.html")
    return f"{stem}/index.html" if directory_urls else f"{stem}.html"
