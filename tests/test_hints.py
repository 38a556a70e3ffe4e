"""The audit's hints: a typed figure's "the evidence says N" offers a field of the page's own lesson
first, ranked by the words around the figure, says when only another lesson's evidence holds it, and
never names a set the page does not cite; a phrase it suggests to declare clears the error."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from lessonkit.cache import Store
from lessonkit.pages.figures import evidence_places
from lessonkit.site.check import CheckedSite, Site, strip_front_matter
from tests.conftest import BARE, RACE, REPO, RUNS, SOURCE, checked, record_set, write_tree

_PHRASE_RE = re.compile(r"""narrative: \{(".*?"): "why"\}$""")


def _hint(errors: list[str], figure: str) -> str:
    found = [e for e in errors if f"figure {figure!r} is typed" in e]
    assert len(found) == 1, errors
    return found[0]


def test_the_field_whose_name_the_sentence_shares_comes_first(demo_repo: Path):
    head = "{{ evidence demo }}\n\n"
    threads = _hint(checked(demo_repo, head + "Each block has 256 threads.\n"), "256")
    assert "the evidence says 256 (in demo/race: rows.threads" in threads
    warp = _hint(checked(demo_repo, head + "The warp size is 32 lanes.\n"), "32")
    assert "the evidence says 32 (in demo/bare: warp_size, and 3 other fields)" in warp, warp
    rows = _hint(checked(demo_repo, head + "A block of 32 threads.\n"), "32")
    assert "(in demo/bare: rows.threads" in rows, rows


def test_a_figure_only_another_lesson_holds_is_said_to_be_another_lessons(demo_repo: Path):
    write_tree(demo_repo, {"code/other/demo.cu": SOURCE, "code/other/runs.toml": RUNS.replace('"demo"', '"other"')})
    record_set(demo_repo, "other", {"race": RACE.replace("[120 hazards]", "[98765 hazards]"), "bare": BARE})
    page = ("{{ evidence demo }}\n\nThe other lesson's error had {{ 98765 @ other/race:reports[severity=Error].hazards }}"
            " hazards.\n\nHere the error had 98765 hazards too.\n")
    hint = _hint(checked(demo_repo, page), "98765")
    assert ("only another lesson's evidence holds 98765 (in other/race: reports.hazards; lesson other), which may "
            "count something else") in hint, hint
    assert "the evidence says" not in hint


CONTEXTS = [
    "It launches blocks of 256-thread size.",
    "The size (256) is fixed.",
    "Write x=256, then y.",
    "It was 256% of the other.",
    "He said \u201c256\u201d twice.",
    "At the end: 256.",
    "256 blocks ran first.",
    "Sizes 256/512 are both fine.",
    "A sum of 3,456 values.",
    "An offset of 0.25 was seen.",
]


@pytest.mark.parametrize("sentence", CONTEXTS)
def test_every_suggested_phrase_once_declared_clears_its_error(demo_repo: Path, sentence: str):
    body = "{{ evidence demo }}\n\n" + sentence + "\n"
    errors = checked(demo_repo, body)
    assert errors, sentence
    declared = []
    for error in errors:
        m = _PHRASE_RE.search(error)
        assert m is not None, error  # every figure error offers a phrase
        declared.append(json.loads(m.group(1)))
    front = "---\nnarrative:\n" + "".join(f"  {json.dumps(p)}: the test's phrase\n" for p in dict.fromkeys(declared))
    assert checked(demo_repo, front + "---\n" + body) == [], (sentence, declared)


def _unique_figures(sets: dict) -> dict[str, tuple[str, str]]:
    """For each set that has one, a whole number of five digits or more that no other set holds, and
    the words of the field that holds it ('block elements' for 'bare-results: variants.block_elements')."""
    places = {name: evidence_places(ev) for name, ev in sets.items()}
    out = {}
    for name, own in places.items():
        others = set().union(*(set(p) for n, p in places.items() if n != name))
        mine = [f for f in own if f.isdigit() and len(f) >= 5 and f not in others]
        if mine:
            field = own[mine[0]][0].split(": ", 1)[1].split(".")[-1]
            out[name] = (mine[0], field.replace("_", " "))
    return out


@pytest.mark.parametrize("page", sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md")))
def test_every_hint_on_a_real_page_names_a_set_it_cites_or_says_it_does_not(page: str, tmp_path: Path):
    """Each set's own figure, typed into the page beside its field's words: a set the page does not cite
    is never named; one of another lesson (or on a page of no lesson) is said to maybe count something else."""
    repo = tmp_path / "repo"
    for name in ("docs", "code", "evidence", "hooks", "overrides"):
        shutil.copytree(REPO / name, repo / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("mkdocs.yml", "narrative.yml", "sources.yml"):
        if (REPO / name).exists():
            shutil.copy(REPO / name, repo / name)
    site = Site.load(repo)
    text = (repo / page).read_text()
    body, offset = strip_front_matter(text)
    result = site.page(body, page, offset)
    cited = {s for s, _ in result.cited} | {n for n in result.looked_up if n in site.evidence.sets}
    own_set = site.evidence.sets.get(result.default_set or "")
    own = own_set.lesson if own_set is not None else result.unrecorded  # the lesson the page is about
    figures = {name: fw for name, fw in _unique_figures(site.evidence.sets).items() if fw[0] not in text}
    assert figures, "no set holds a figure of its own"
    typed = "\n\n" + " ".join(f"The {words} was {f} here." for f, words in figures.values()) + "\n"
    checker = CheckedSite(repo, store=Store(None), keep="errors")
    checker.refresh()
    errors = [str(e) for e in checker.page_text(text + typed, page).errors]
    for name, (figure, _) in figures.items():
        hint = _hint(errors, figure)
        lesson = site.evidence.sets[name].lesson
        if name not in cited:
            assert "no claim, directive or table produced it" in hint, (name, hint)
        elif own is None:
            assert f"the cited evidence holds {figure} (in {name}" in hint and "may count something else" in hint, \
                (name, hint)
        elif lesson != own:
            assert f"only another lesson's evidence holds {figure} (in {name}" in hint, (name, hint)
        else:
            assert f"the evidence says {figure} (in {name}" in hint, (name, hint)
        assert not any(f"(in {other}/" in hint or f"(in {other}:" in hint for other in site.evidence.sets
                       if other not in cited), hint


def test_a_figure_whose_field_shares_no_word_with_the_sentence_is_called_a_likely_coincidence(demo_repo: Path):
    hint = _hint(checked(demo_repo, "{{ evidence demo }}\n\nIt took 120 microseconds.\n"), "120")
    assert "no field whose name matches the sentence holds it (the cited evidence has 120 in demo/race: " \
           "reports.hazards, which may count something else)" in hint, hint


def test_a_heading_s_permalink_mark_is_not_in_the_suggested_phrase(demo_repo: Path):
    config = demo_repo / "mkdocs.yml"
    config.write_text(config.read_text().replace("  - admonition\n", "  - admonition\n  - toc:\n      permalink: true\n"))
    errors = checked(demo_repo, "{{ evidence demo }}\n\n## Why 77 threads?\n")
    phrase = _PHRASE_RE.search(_hint(errors, "77")).group(1)
    assert "\u00b6" not in phrase and json.loads(phrase) == "Why 77 threads?"
