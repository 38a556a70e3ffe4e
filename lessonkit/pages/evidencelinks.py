"""A page's own links to published recordings: each must lead to a recording the evidence holds.

The build publishes recordings at evidence/SET/FILE under the site's root
(lessonkit.pages.published). A link the author writes there (a Markdown link or image, a
reference definition, an HTML `href` or `src`) is published along with the page when SET holds a
recording FILE, and refused, at its line, when it does not: the site would show a broken link,
or a file the refresh never wrote. A link counts as leading there when it does from where the
engine reads it (relative to the page's Markdown file under docs/, as MkDocs resolves Markdown
links), from where the built page lies with directory URLs (as a browser resolves raw HTML), or
from the site's root (`/evidence/...`).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from urllib.parse import unquote

from lessonkit.pages.claimcheck import PageState
from lessonkit.pages.published import EVIDENCE_FOLDER, Published, built_location
from lessonkit.pages.scan import Lines, code_spans

_URL_RE = re.compile(
    r"""\]\(\s*<?(?P<inline>[^)\s>]+)                              # [text](url) and ![alt](url)
      |^[ ]{0,3}\[[^\]]+\]:\s*<?(?P<definition>[^\s>]+)          # [name]: url
      |\b(?:href|src)\s*=\s*(?:"(?P<dq>[^"]*)"|'(?P<sq>[^']*)'|(?P<bare>[^\s"'>]+))  # an HTML attribute
    """, re.VERBOSE | re.IGNORECASE)
_SCHEME_RE = re.compile(r"""^[a-z][a-z0-9+.-]*:""", re.IGNORECASE)


# A line that may hold a link: found in one search over the page (Lines.find), not line by line.
_LINKING_RE = re.compile(r"""\]\(|\]:|=""")


def check_evidence_links(page: PageState, out: Lines, in_fence: list[bool]) -> None:
    """Publish each recording the page's own text links under evidence/; refuse a link there to
    anything the evidence does not hold (see the module's docstring)."""
    docs_path = _docs_path(page.path)
    for i in out.find(_LINKING_RE):
        line = out[i]
        if line.generated or in_fence[i]:
            continue
        text = line.text
        for a, b in code_spans(text):  # shown as typed
            text = text[:a] + " " * (b - a) + text[b:]
        for m in _URL_RE.finditer(text):
            url = next(g for g in m.groups() if g is not None)
            target = _published_path(url, docs_path)
            if target is not None:
                _check_target(page, line.src, url, target)


def _docs_path(path: str) -> str:
    """The page's path under docs/ (`docs/reference/x.md` -> `reference/x.md`)."""
    return path.split("/", 1)[1] if "/" in path else path


def _published_path(url: str, docs_path: str) -> str | None:
    """The path under the site's root that `url`, written in page `docs_path`, leads to when that
    lies under evidence/ (any of the ways in the module's docstring); None otherwise."""
    if _SCHEME_RE.match(url) or url.startswith("//"):
        return None  # another site, or mail
    path = unquote(url.split("#", 1)[0].split("?", 1)[0])
    if not path:
        return None
    if path.startswith("/"):
        bases = [""]
        path = path.lstrip("/")
    else:
        bases = [posixpath.dirname(docs_path), posixpath.dirname(built_location(docs_path))]
    for base in bases:
        resolved = posixpath.normpath(posixpath.join(base, path))
        if resolved.startswith(EVIDENCE_FOLDER + "/"):
            return resolved
    return None


def _check_target(page: PageState, index: int, url: str, target: str) -> None:
    """Publish `target` (evidence/SET/FILE) with the page, or refuse the link at source line `index`."""
    parts = target.split("/")
    set_name = parts[1]
    if set_name in page.broken_sets:
        return  # the set's own error comes first
    ev = page.sets.get(set_name)
    lead = f"link {url!r} leads to {target} in the built site"
    if ev is None:
        page.error(index, f"{lead}, but there is no evidence set {set_name!r}{_close(set_name, page.sets)}; the "
                   f"build publishes there only the recordings of the sets: {', '.join(sorted(page.sets)) or 'none'}")
        return
    files = {entry.file: name for name, entry in ev.entries.items()}
    file = "/".join(parts[2:])
    if file not in files:
        page.error(index, f"{lead}, but {ev.shown} holds no recording {file!r}{_close(file, files)}; the build "
                   "publishes there only the recordings the evidence holds, so the link would be broken; "
                   f"link one of {ev.shown}'s recordings (its manifest.json lists them)")
        return
    page.result.published.append(Published(ev.name, file, ev.root / file))


def _close(name: str, known) -> str:
    """'; did you mean 'x'?' when `known` holds a name close to `name`, else ''."""
    found = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {found[0]!r}?)" if found else ""
