"""The built site without the pages of lessons not recorded yet (lessonkit.evidence.unrecorded) where a
reader finds pages: the sitemap, the site's search index and search engines.

MkDocs writes sitemap.xml (and a gzipped copy) from every page of the nav, and the theme's search
plugin indexes every page; a lesson that waits for its first recording is a page of the site but not
one to offer. Its entries are taken out after the build (the gzipped sitemap is written again from
what is left), whatever theme and search plugin made them, and its page asks robots not to index it.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urljoin

_URL_RE = re.compile(r"""[ \t]*<url>\s*<loc>(?P<loc>[^<]*)</loc>.*?</url>\n?""", re.DOTALL)


def drop_from_sitemap(site_dir: Path, site_url: str, pages: Iterable[str]) -> None:
    """Remove the entries of `pages` (their URLs relative to the site's root) from site_dir/sitemap.xml and
    its .gz copy; nothing happens where there is no sitemap or no page to remove."""
    path = site_dir / "sitemap.xml"
    drop = {urljoin(site_url, page) for page in pages} | set(pages)
    if not drop or not path.is_file():
        return
    text = path.read_text(encoding="utf-8")
    kept = _URL_RE.sub(lambda m: "" if m.group("loc") in drop else m.group(), text)
    if kept == text:
        return
    path.write_text(kept, encoding="utf-8")
    with gzip.GzipFile(site_dir / "sitemap.xml.gz", "wb", mtime=0) as f:
        f.write(kept.encode("utf-8"))


def drop_from_search(site_dir: Path, pages: Iterable[str]) -> None:
    """Remove the entries of `pages` (URLs relative to the site's root, 'day3-add-one/') and of their
    sections from the search index (search/search_index.json), if the site has one."""
    path = site_dir / "search" / "search_index.json"
    prefixes = tuple(page for page in pages if page)
    if not prefixes or not path.is_file():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    docs = index.get("docs", [])
    kept = [d for d in docs if not str(d.get("location", "")).startswith(prefixes)]
    if len(kept) != len(docs):
        index["docs"] = kept
        path.write_text(json.dumps(index, separators=(",", ":")), encoding="utf-8")


_HEAD_RE = re.compile(r"""<head(?:\s[^>]*)?>""", re.IGNORECASE)


def noindex(page_html: str) -> str:
    """The page with `<meta name="robots" content="noindex">` first in its head (once)."""
    tag = '<meta name="robots" content="noindex">'
    if tag in page_html:
        return page_html
    m = _HEAD_RE.search(page_html)
    return page_html if m is None else page_html[:m.end()] + tag + page_html[m.end():]
