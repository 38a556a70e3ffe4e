"""Figures quoted from a published work: claims on the course's sources.yml, each figure listed once
with the place in the work that gives it."""

from __future__ import annotations

from pathlib import Path

from lessonkit.cli.explain import explain
from lessonkit.pages.sources import parse_sources
from tests.conftest import checked, errs

SOURCES = """\
alglave2015:
  cite: Alglave et al., GPU concurrency, ASPLOS
  year: 2015
  url: https://doi.org/10.1145/2694344.2694391
  figures:
    t6-titan-bank: {value: "2,888", where: "Table 6: MP across CTAs, GTX Titan, general bank conflicts"}
manual:
  cite: NVIDIA, Compute Sanitizer user manual
  url: https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer/index.html
  figures:
    print-limit: {value: "100", where: "the default of --print-limit"}
"""

PAGE = ("The paper saw {{ 2,888 @ sources/alglave2015:t6-titan-bank }} weak outcomes (ASPLOS "
        "{{ 2015 @ sources/alglave2015:year }}); the tool keeps {{ 100 @ sources/manual:print-limit }} records.\n")


def _with_sources(repo: Path, text: str = SOURCES) -> None:
    (repo / "sources.yml").write_text(text)


def test_a_quoted_figure_holds_and_its_reader_sees_where_it_is_from(demo_repo: Path):
    _with_sources(demo_repo)
    assert checked(demo_repo, PAGE) == []
    (demo_repo / "docs/p.md").write_text(PAGE)
    lines, errors = explain(demo_repo, demo_repo / "docs/p.md")
    assert errors == []
    assert ("    2,888: a published figure; quoted from Alglave et al., GPU concurrency, ASPLOS (2015), "
            "https://doi.org/10.1145/2694344.2694391: Table 6: MP across CTAs, GTX Titan, general bank conflicts; "
            "no recording of this course holds it") in lines


def test_a_figure_the_list_gives_otherwise_is_refused_with_its_line(demo_repo: Path):
    _with_sources(demo_repo, SOURCES.replace('"2,888"', '"2,889"'))
    assert errs(demo_repo, PAGE) == [
        ("docs/p.md:1: claim '2,888' (sources/alglave2015:t6-titan-bank) disagrees with sources.yml; it says '2889' "
        "(line 6)")]


def test_a_work_or_figure_the_list_lacks_is_named(demo_repo: Path):
    _with_sources(demo_repo)
    found = errs(demo_repo, "A {{ 2,888 @ sources/alglave2016:t6-titan-bank }} and {{ 2,888 @ sources/alglave2015:t6 }}.\n")
    assert found == [
        ("docs/p.md:1: claim '2,888' (sources/alglave2016:t6-titan-bank): sources.yml lists no work 'alglave2016'; "
        "did you mean 'alglave2015'?"),
        ("docs/p.md:1: claim '2,888' (sources/alglave2015:t6): sources.yml gives no figure 't6' of 'alglave2015'; "
        "it gives: year, t6-titan-bank (a figure the page quotes from a work is listed there once, with where the "
        "work gives it)")]


def test_an_entry_that_cannot_be_read_is_one_error_at_its_line():
    bad = parse_sources(SOURCES.replace("  url: https://doi.org/10.1145/2694344.2694391\n", "").replace(
        '{value: "100", where: "the default of --print-limit"}', '{value: "100"}'))
    assert [str(e) for e in bad.errors] == [
        "sources.yml:1: work 'alglave2015' has no url",
        ("sources.yml:10: figure 'print-limit' of 'manual' needs a value and where the work gives it: "
        "{value: \"2,888\", where: \"Table 6: ...\"}")]
    assert list(bad.works) == ["manual"] and bad.works["manual"].figures == {}


def test_the_list_s_errors_are_the_sites(demo_repo: Path):
    _with_sources(demo_repo, "alglave2015: [1, 2]\n")
    from lessonkit.cache import Store
    from lessonkit.site.check import CheckedSite
    site = CheckedSite(demo_repo, store=Store(None), keep="errors")
    assert "sources.yml:1: work 'alglave2015' must map cite, year, url and figures" in [str(e) for e in site.check()]
