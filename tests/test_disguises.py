"""A hostile author's tries against the marks and the rendered-page audit (working session 8), each
refused by the mechanism named in its test: the page's own words in a table are not marked, a label is
a value of the evidence, a value's characters open no markup, and what a browser shows that the model
read otherwise (CDATA, raw-text elements, a linked stylesheet, an SVG picture, a sidebar label, the
front matter, the theme's settings, a stylesheet copying an attribute) is read or refused."""

from __future__ import annotations

from pathlib import Path

import markdown
import pytest
from conftest import checked

from lessonkit.pages.marks import Marks, strip
from lessonkit.pages.page import inline_text
from lessonkit.pages.render import produced
from lessonkit.site.config import read_site_config, site_config_errors

HEAD = "{{ evidence demo }}\n\n"
CLAIM = "{{ 8 @ race:reports[severity=Warning].hazards }}"


def test_a_table_templates_own_words_are_the_pages(demo_repo: Path):
    """Only the fields' values of a cell are the evidence's: the template's words around them are
    read as the page's, so a count in words there is a count like any other."""
    assert checked(demo_repo, HEAD + '{{ table race:rows rows=threads cell="{mismatches} wrong" }}\n') == []
    found = checked(demo_repo, HEAD + '{{ table race:rows rows=threads cell="{mismatches} wrong in a thousand launches" }}\n')
    assert any("the count 'thousand' before 'launches'" in e for e in found), found


def test_a_listed_label_is_a_value_of_the_evidence(demo_repo: Path):
    assert checked(demo_repo, HEAD + "{{ table race:rows rows=threads:256|32 cell=mismatches }}\n") == []
    found = checked(demo_repo, HEAD + '{{ table race:rows "rows=threads:256|37 wrong of 100" cell=mismatches }}\n')
    assert any("lists '37 wrong of 100', which no record of the sources' sets has as its threads" in e for e in found), found


def test_a_values_characters_open_no_markup_across_its_marks():
    """A value inside the core's span is written with character references for Markdown's inline
    syntax: an '*' in it cannot pair with one the page types after it (without them it does)."""
    value = "k(float *)"
    bare = markdown.markdown(f"see {produced(Marks(), value)} and this* too")
    safe = markdown.markdown(f"see {produced(Marks(), inline_text(value))} and this* too")
    assert "<em>" in bare and "<em>" not in safe
    assert "k(float *)" in strip(safe).replace("&#42;", "*")


@pytest.mark.parametrize("markup, refused", [
    ('<svg width="9" height="9" role="img"><text x="0" y="5"><![CDATA[37 wrong sums]]></text></svg>',
     "figure '37' is typed, not produced"),
    ("<xmp><!-- 38 wrong sums --></xmp>", "'<xmp>' shows its content as raw text"),
    ("<textarea rows=1><!-- 38 wrong --></textarea>", "'<textarea>' shows its content as raw text"),
    ('<link rel="stylesheet" href="data:text/css,p::after{content:%2237%22}">', "'<link>' hides, styles or scripts"),
    ('<svg width="9" height="9" role="img"><image href="data:image/png;base64,AAAA" width="9" height="9"/></svg>',
     "a <image> (data:image/png;base64,AAAA) shows the reader text no check can read"),
    ('<h3 data-toc-label="Why 37 of 100 broke" markdown>Why it broke</h3>', "data-toc-label names the heading"),
    ("The fenced version failed nine times in ten.", "the count 'nine' before 'times'"),
])
def test_what_a_browser_shows_otherwise_is_read_or_refused(demo_repo: Path, markup: str, refused: str):
    found = checked(demo_repo, HEAD + f"{CLAIM} hazards.\n\n{markup}\n")
    assert any(refused in e for e in found), found


def test_every_text_of_the_front_matter_is_read(demo_repo: Path):
    found = checked(demo_repo, '---\nsubtitle: "racy: 37 of 100 sums wrong"\n---\n' + HEAD + f"{CLAIM} hazards.\n")
    assert any("the front matter's subtitle 'racy: 37 of 100 sums wrong' shows the figure '37'" in e
               for e in found), found


def test_a_slot_copied_by_hand_is_refused_by_check_as_by_the_build(demo_repo: Path):
    """`check` leaves a transcript's slot empty (it audits no recording's text), but marked as the build
    marks it, so a copy of the slot is the same record shown twice in both."""
    page = HEAD + "{{ transcript race }}\n\n<div data-lk-slot=\"0\"></div>\n"
    found = checked(demo_repo, page)
    assert any("that lessonkit did not write (mark" in e and "is used twice" in e for e in found), found


def test_the_themes_own_words_and_a_stylesheet_copying_an_attribute_are_read(tmp_path: Path):
    config = ("site_name: fixture\nhooks:\n  - hooks/lessonkit_hooks.py\nmarkdown_extensions:\n  - pymdownx.superfences\n"
              "theme:\n  name: material\n  palette:\n    - scheme: default\n      toggle:\n"
              "        icon: material/weather-night\n        name: \"Dark mode (racy: 37 of 100 wrong)\"\n")
    found = [str(e) for e in site_config_errors(read_site_config(config, "mkdocs.yml", str(tmp_path)))]
    assert any("theme.palette.toggle.name 'Dark mode (racy: 37 of 100 wrong)' shows the figure '37'" in e
               for e in found), found
    (tmp_path / "docs/assets").mkdir(parents=True)
    (tmp_path / "docs/assets/lessonkit.css").write_text(".x[data-note]::after { content: attr(data-note); }\n")
    config = ("site_name: fixture\nhooks:\n  - hooks/lessonkit_hooks.py\nmarkdown_extensions:\n  - pymdownx.superfences\n"
              "  - pymdownx.highlight\nextra_css:\n  - assets/lessonkit.css\n")
    found = [str(e) for e in site_config_errors(read_site_config(config, "mkdocs.yml", str(tmp_path)))
             if "lessonkit.css" in str(e)]
    assert found == [("docs/assets/lessonkit.css:1: 'content: attr(' writes text that is in no page, so no "
                      "check reads it; write the text in the page, or leave `content:` empty")], found


def test_what_a_template_writes_around_the_content_is_read(demo_repo: Path):
    """The built page is read whole: a figure a template of the project's own (overrides/) shows in the
    header, the navigation or the footer fails the build, unless it is in a text the checks read (the
    site's name, a page's title, a heading of the page)."""
    from conftest import mkdocs_build

    (demo_repo / "mkdocs.yml").write_text((demo_repo / "mkdocs.yml").read_text().replace(
        "  name: mkdocs\n", "  name: mkdocs\n  custom_dir: overrides\n"))
    (demo_repo / "overrides").mkdir()
    template = '{% extends "base.html" %}\n{% block site_name %}<b>{{ config.site_name }}</b>{% endblock %}\n'
    (demo_repo / "overrides/main.html").write_text(template)
    assert mkdocs_build(demo_repo).returncode == 0
    (demo_repo / "overrides/main.html").write_text(template.replace("</b>", " (racy: 37 of 100 sums wrong)</b>"))
    done = mkdocs_build(demo_repo)
    assert done.returncode != 0
    assert ("the theme shows 'fixture (racy: 37 of 100 sums wrong)' around the page's content, with the figure "
            "'37'") in done.stderr, done.stderr
