"""`python -m lessonkit accept`: rewrite the value of every claim that the evidence no longer supports.

An author's loop is refresh, review, accept, commit. Accept lists every claim that no
longer holds as `page:line: old -> new`, with its sentence before and after, and, once
confirmed, replaces only the value before the claim's `@`; every other byte of the page stays
as it was. The new value is exact when every recording agrees, a rounded `~V` when a rounded
claim's values all round to one V, and otherwise a range around every value
(lessonkit.pages.claims.accepted_value). A claim whose reference or query is broken, or whose
evidence set has errors, is refused: its error is printed and nothing is changed for it.
Running it twice changes nothing.

Each change is classified (`classify`). Drift is a new value of the same kind that says the
same thing: a count still nonzero, a range still a range of about its width. A change of
meaning is anything a reader would read differently: a word (a verdict, a severity), a zero
becoming nonzero or back, one value becoming a spread or a spread collapsing to one value, a
range widening past what the looseness rule would let it be, a difference changing direction,
and a claim whose reference or query is not where it was in the last commit (a claim moved to
another field or run, or written since: its value is the author's to state). Confirming
(`--yes`, or "y" at a terminal) writes drift only; a change of meaning is written only when the
author names it, `--confirm PAGE:LINE`.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from lessonkit.errors import LessonError
from lessonkit.pages.claims import ClaimValue, ClaimValueError, allowed_width, parse_claim_value
from lessonkit.pages.scan import tokens
from lessonkit.repo import repo_root
from lessonkit.site.check import Site, strip_front_matter
from lessonkit.textio import decode_utf8

EXIT_DONE = 0         # every claim holds, or every stale one was rewritten
EXIT_UNCONFIRMED = 1  # stale claims listed, nothing written: no --yes and no terminal, or the author said no
EXIT_REFUSED = 2      # some claims cannot be accepted (their errors are printed); the others were rewritten


@dataclass(frozen=True)
class Edit:
    """One value to rewrite: text[start:end] of `page` (offsets into the file's text) is `old`."""

    page: str
    line: int
    start: int
    end: int
    old: str
    new: str
    meaning: str = ""   # why this is a change of meaning; "" for drift
    before: str = ""    # the claim's sentence as a reader sees it, with the old value
    after: str = ""     # the same sentence with the new value

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


# -- what a change means ---------------------------------------------------------------------

_VS_RE = re.compile(r"""\s+vs\s+""")


def _admits_zero(value: ClaimValue) -> bool:
    if value.kind == "exact":
        return _is_zero(value.text)
    return value.low <= 0 <= value.high


def _is_zero(text: str) -> bool:
    try:
        return float(text.replace(",", "")) == 0.0
    except ValueError:
        return False


def _middle(value: ClaimValue) -> float | None:
    if value.kind == "exact":
        try:
            return float(value.text.replace(",", ""))
        except ValueError:
            return None
    return float((value.low + value.high) / 2)


def _numeric(value: ClaimValue) -> bool:
    return value.kind != "exact" or _middle(value) is not None


def classify(old: str, new: str) -> str:
    """Why changing a claim's value from `old` to `new` changes what the sentence says; "" for drift."""
    old_sides, new_sides = _VS_RE.split(old.strip()), _VS_RE.split(new.strip())
    if len(old_sides) != len(new_sides):
        return "a difference became a sameness, or the reverse"
    if len(old_sides) == 2:
        return _classify_comparison(old_sides, new_sides)
    try:
        was, now = parse_claim_value(old), parse_claim_value(new)
    except ClaimValueError:
        return "the value cannot be read as before"
    if not _numeric(was) or not _numeric(now):
        return "a word changed (a verdict, a name, a severity)"
    return _classify_numbers(was, now)


def _classify_comparison(old_sides: list[str], new_sides: list[str]) -> str:
    """`classify` of a comparison's two sides, each, and of its direction."""
    for a, b in zip(old_sides, new_sides):
        why = classify(a, b)
        if why:
            return why
    try:
        olds = [_middle(parse_claim_value(t)) for t in old_sides]
        news = [_middle(parse_claim_value(t)) for t in new_sides]
    except ClaimValueError:
        return "the value cannot be read as before"
    if None not in olds and None not in news and (olds[0] < olds[1]) != (news[0] < news[1]):
        return "the difference changed direction: the side that was smaller is now the larger"
    return ""


def _classify_numbers(was: ClaimValue, now: ClaimValue) -> str:
    """`classify` of two numeric values: their kind (exact, range), zero, a range's width."""
    if was.kind != now.kind:
        if was.kind == "range" and now.kind == "exact":
            return "a range collapsed to one value: every recording now agrees"
        if was.kind == "exact" and now.kind == "range":
            return "one value became a range: the recordings no longer agree"
        return f"{'an' if was.kind == 'exact' else 'a'} {was.kind} value became a {now.kind} one"
    if _admits_zero(was) != _admits_zero(now):
        return ("a count went from nonzero to zero" if _admits_zero(now) else
                "a zero became nonzero") if was.kind == "exact" else \
            ("a range now reaches zero" if _admits_zero(now) else "a range no longer reaches zero")
    if was.kind == "range":
        widest, _ = allowed_width(was, [was.low, was.high])
        if now.high - now.low > widest:
            return (f"the range widened past what its old width allows ({now.high - now.low} wide, "
                    f"against at most {widest})")
    return ""


# -- the sentence a claim stands in ----------------------------------------------------------

_CLAIM_BODY_RE = re.compile(r"""\s*(?P<value>[^{}]*?)\s@\s""")  # inside the braces of a claim: its value
_VALUE_BODY_RE = re.compile(r"""\s*value\s+(?P<query>[^{}]*?)\s*$""")  # of a generated figure: its query
_SENTENCE_END_RE = re.compile(r"""(?<=[.!?:;])\s+(?=[A-Z(`*_\[])|\n\s*\n|\n(?=\s*(?:[-*+]|\d+\.)\s)""")
_TAG_RE = re.compile(r"""<[^<>{}]*>""")


def sentence_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the sentence around text[start:end] begins and ends (a paragraph or list item at most)."""
    left = [m.end() for m in _SENTENCE_END_RE.finditer(text, max(0, start - 600), start)]
    lo = left[-1] if left else max(0, text.rfind("\n\n", 0, start) + 2)
    right = _SENTENCE_END_RE.search(text, end, end + 600)
    return lo, right.start() if right else min(len(text), end + 300)


def shown_sentence(text: str, lo: int, hi: int, marks: list[tuple[int, int, str]]) -> str:
    """text[lo:hi] as a reader reads it, on one line: each mark (start, end, value) shown as [value],
    every other claim as its value, a generated figure as <its query>, tags left out."""
    pieces, pos = [], lo
    for start, end, value in sorted(marks):
        pieces += [text[pos:start], "\x00" + value + "\x01"]
        pos = end
    pieces.append(text[pos:hi])
    shown = _braces_shown(_CLAIM_BODY_RE, "{value}", "".join(pieces))
    shown = _TAG_RE.sub(" ", shown)
    shown = _braces_shown(_VALUE_BODY_RE, "<{query}>", shown)  # a generated figure
    return " ".join(shown.split()).replace("\x00", "[").replace("\x01", "]")


def _braces_shown(body_re: re.Pattern[str], form: str, text: str) -> str:
    """`text` with each `{{ … }}` (the page scanner's tokens) whose body `body_re` matches shown as
    `form`, filled from the match's groups; other braces are left as they are."""
    pieces, pos = [], 0
    for token in tokens(text):
        m = body_re.match(token.body)
        if m is not None:
            pieces += [text[pos:token.start], form.format(**m.groupdict())]
            pos = token.end
    return "".join(pieces) + text[pos:]


def sentence(text: str, start: int, end: int, value: str) -> str:
    """The sentence around text[start:end] with `value` in its place, claims shown as their values,
    on one line."""
    lo, hi = sentence_span(text, start, end)
    return shown_sentence(text, lo, hi, [(start, end, value)])


# -- which claims the author wrote or moved since the last commit ------------------------------

def _committed(repo: Path, page: str) -> str | None:
    """`page` as the last commit has it, or None (no git, not committed)."""
    try:
        done = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{page}"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _refs(claims) -> list[str]:
    return [" ".join(c.ref_query.split()) for c in claims]


def _unmoved(now: list, then: list | None) -> set[int]:
    """Indexes into `now` (claims of one file, in order) whose reference and query stand where they
    stood in `then` (the committed file's claims): difflib's longest matching blocks."""
    if then is None:
        return set()
    kept: set[int] = set()
    matcher = difflib.SequenceMatcher(a=_refs(then), b=_refs(now), autojunk=False)
    for block in matcher.get_matching_blocks():
        kept.update(range(block.b, block.b + block.size))
    return kept


@dataclass
class Plan:
    """What accept would do: the edits, and the claims it refuses with their errors."""

    edits: list[Edit] = field(default_factory=list)
    refused: list[LessonError] = field(default_factory=list)
    held_back: dict[str, int] = field(default_factory=dict)  # set -> stale claims on it, while it has errors


def _read_page(path: Path, shown: str) -> str:
    """The page's text exactly as stored (no newline translation), so offsets are the file's."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return decode_utf8(data, shown)  # raises the LessonError naming the first bad byte


def plan_accept(repo: Path, docs: Path | None = None) -> Plan:
    """Check every page under docs/ and plan a new value for each claim that no longer holds."""
    site = Site.load(repo)
    troubled = {e.path.split("/")[1] for e in site.evidence.errors if e.path.startswith("evidence/")}
    plan = Plan()
    docs = docs or repo / "docs"
    seen: set[tuple[str, int]] = set()  # a diagram shown on two pages is planned once
    for page_path in sorted(docs.rglob("*.md")):
        shown = page_path.relative_to(repo).as_posix() if page_path.is_relative_to(repo) else str(page_path)
        text = _read_page(page_path, shown)
        body, line_offset = strip_front_matter(text)
        base = len(text) - len(body)  # the body is the end of the file's text
        claims = site.page(body, shown, line_offset).claims
        unmoved = _unmoved_claims(repo, site, shown, claims)
        for k, claim in enumerate(claims):
            if claim.error is None or claim.skipped or (claim.file or shown, claim.start) in seen:
                continue
            seen.add((claim.file or shown, claim.start))
            where, at, written = (shown, base, text) if claim.file is None else \
                (claim.file, 0, _read_page(repo / claim.file, claim.file))
            _plan_claim(plan, claim, where, at, written, troubled, k in unmoved)
    return plan


def _plan_claim(plan: Plan, claim, where: str, at: int, written: str, troubled: set[str], unmoved: bool) -> None:
    """Add to `plan` what becomes of one claim that does not hold (written in `written` from `at` on,
    the file `where`): held back while its set has errors, refused when no fix is known or its value is
    not written as shown, else an edit, marked a change of meaning where it is one or where the claim
    is not `unmoved` since the last commit."""
    held = [name for name in claim.sets or (claim.set_name,) if name in troubled]
    if held:
        plan.held_back[held[0]] = plan.held_back.get(held[0], 0) + 1
    elif claim.fix is None:
        plan.refused.append(claim.error)
    elif written[at + claim.start:at + claim.end] != claim.value:
        plan.refused.append(LessonError(where, claim.line, f"claim {claim.value!r} ({claim.ref_query}) "
                                        "is not accepted: its value is not written on one line as shown; "
                                        f"write {claim.fix!r} by hand"))
    else:
        meaning = classify(claim.value, claim.fix)
        if not meaning and not unmoved:
            meaning = ("the claim's reference or query is not where it was in the last commit "
                       "(a claim written, or moved to another field or run, since): its value is "
                       "yours to state")
        start, end = at + claim.start, at + claim.end
        plan.edits.append(Edit(where, claim.line, start, end, claim.value, claim.fix, meaning,
                               sentence(written, start, end, claim.value),
                               sentence(written, start, end, claim.fix)))


def _unmoved_claims(repo: Path, site: Site, shown: str, claims: list) -> set[int]:
    """Indexes of the page's claims (a page's own, and a diagram's, each against its own file's last
    commit) whose reference and query stand where they stood."""
    committed = _committed(repo, shown)
    then = None
    if committed is not None:
        body, line_offset = strip_front_matter(committed)
        then = site.page(body, shown, line_offset).claims
    kept: set[int] = set()
    by_file: dict[str | None, list[int]] = {}
    for k, claim in enumerate(claims):
        by_file.setdefault(claim.file, []).append(k)
    for file, indexes in by_file.items():
        earlier = None if then is None else [c for c in then if c.file == file]
        if file is not None and _committed(repo, file) is None:
            earlier = None  # a diagram not committed: nothing to compare with
        for j in _unmoved([claims[k] for k in indexes], earlier):
            kept.add(indexes[j])
    return kept


def apply_edits(repo: Path, edits: list[Edit]) -> list[str]:
    """Rewrite the values in place (each page replaced atomically); returns the pages changed."""
    by_page: dict[str, list[Edit]] = {}
    for edit in edits:
        by_page.setdefault(edit.page, []).append(edit)
    for page, page_edits in by_page.items():
        path = repo / page
        text = _read_page(path, page)
        for edit in sorted(page_edits, key=lambda e: e.start, reverse=True):
            if text[edit.start:edit.end] != edit.old:
                raise LessonError(page, edit.line, f"changed while accept ran: expected {edit.old!r} here; "
                                  "run accept again")
            text = text[:edit.start] + edit.new + text[edit.end:]
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".accept")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                f.write(text)
            os.chmod(tmp, path.stat().st_mode & 0o7777)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return list(by_page)


def _confirmed(count: int, pages: int, yes: bool, stdin: TextIO, out: TextIO) -> bool:
    if yes:
        return True
    if not stdin.isatty():
        print("nothing written: confirm with --yes (there is no terminal to ask)", file=out)
        return False
    out.write(f"rewrite {count} claim value{'s' if count != 1 else ''} in {pages} page{'s' if pages != 1 else ''}? [y/N] ")
    out.flush()
    if stdin.readline().strip().lower() in ("y", "yes"):
        return True
    print("nothing written: not confirmed", file=out)
    return False


HELP = ("list the claims the evidence no longer supports as page:line: old -> new, and rewrite their "
        "values once confirmed (--yes: without asking)")
DESCRIPTION = """\
After a refresh, list every claim whose value the new evidence no longer supports, as
PAGE:LINE: OLD -> NEW with its sentence before and after, and once you confirm, rewrite those
values and nothing else on the pages. Each change is drift (a new value that says the same
thing) or a change of meaning (a word, zero to nonzero or back, one value to a range or back,
a range widening past its allowance, a difference changing direction, a claim moved or written
since the last commit); confirming writes drift, and a change of meaning only when named with
--confirm PAGE:LINE. The new value is exact when every recording agrees, rounded (~V) for a rounded claim,
and otherwise a range around every recorded value. A claim whose reference is broken, or
whose evidence set has errors, is listed and left alone.

exit status: 0 every claim holds or was rewritten; 1 nothing written (not confirmed, or no
terminal to ask and no --yes); 2 some claims could not be accepted, or are changes of meaning
not confirmed by name (listed), the others were rewritten."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare accept's arguments on `parser`."""
    parser.add_argument("--repo", type=Path, default=None, metavar="PATH",
                        help="the repository's root folder (default: the nearest folder from here up "
                             "that holds mkdocs.yml beside code/ or evidence/)")
    parser.add_argument("--yes", action="store_true",
                        help="rewrite the drifted values without asking (needed where there is no terminal "
                             "to ask); changes of meaning still need --confirm")
    parser.add_argument("--confirm", action="append", metavar="PAGE:LINE",
                        help="also rewrite the change of meaning listed at PAGE:LINE (repeat for each), "
                             "once you have read its sentence before and after")


def run(args: argparse.Namespace, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    """Run accept with parsed arguments; returns EXIT_DONE, EXIT_UNCONFIRMED or EXIT_REFUSED."""
    stdin = stdin or sys.stdin
    out = out or sys.stdout
    repo = repo_root(args.repo, Path.cwd())
    plan = plan_accept(repo)
    confirmed = set(getattr(args, "confirm", None) or ())
    refused = _report(plan, confirmed, out)
    plan.edits = [e for e in plan.edits if not e.meaning or e.where in confirmed]
    if not plan.edits:
        if not refused:
            print("every claim holds; nothing to accept", file=out)
        return EXIT_REFUSED if refused else EXIT_DONE
    pages = len({e.page for e in plan.edits})
    if not _confirmed(len(plan.edits), pages, args.yes, stdin, out):
        return EXIT_UNCONFIRMED
    apply_edits(repo, plan.edits)
    print(f"rewrote {len(plan.edits)} claim value{'s' if len(plan.edits) != 1 else ''} in {pages} "
          f"page{'s' if pages != 1 else ''}; review with git diff, then run .venv/bin/python -m lessonkit check", file=out)
    return EXIT_REFUSED if refused else EXIT_DONE


def _report(plan: Plan, confirmed: set[str], out: TextIO) -> bool:
    """Print each edit of `plan` with its sentence before and after, then what is not written: the
    changes of meaning not `confirmed`, a --confirm that names none, the claims held back on a set
    with errors, the claims refused. Whether anything was not written."""
    unknown = sorted(confirmed - {e.where for e in plan.edits if e.meaning})
    for edit in plan.edits:
        kind = f"change of meaning: {edit.meaning}" if edit.meaning else "drift"
        print(f"{edit.where}: {edit.old} -> {edit.new} ({kind})", file=out)
        print(f"  before: {edit.before}", file=out)
        print(f"  after:  {edit.after}", file=out)
    held = [e for e in plan.edits if e.meaning and e.where not in confirmed]
    if held:
        print(f"not written without your confirmation by name ({len(held)}): read each sentence, then "
              "run accept again with " + " ".join(f"--confirm {e.where}" for e in held), file=out)
    for where in unknown:
        print(f"--confirm {where}: no change of meaning is listed at {where}", file=out)
    for set_name, count in sorted(plan.held_back.items()):
        print(f"evidence/{set_name}: {count} claim{'s' if count != 1 else ''} on it not accepted while the set "
              "has errors (.venv/bin/python -m lessonkit check lists them); fix or refresh it, then accept", file=out)
    if plan.refused:
        print(f"not accepted ({len(plan.refused)}; fix by hand):", file=out)
        for error in plan.refused:
            print(f"  {error}", file=out)
    return bool(plan.refused or plan.held_back or held or unknown)


def main(argv: list[str] | None = None, stdin: TextIO | None = None, out: TextIO | None = None) -> int:
    """`python -m lessonkit accept [--repo R] [--yes]`; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m lessonkit accept", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv), stdin, out)
    except LessonError as exc:
        print(exc, file=sys.stderr)
        return EXIT_UNCONFIRMED
