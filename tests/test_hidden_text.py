"""Text the checks would read differently from a reader: invisible characters and look-alike letters
(refused on the rendered page, where character references are read decoded, as a reader reads
them), claims in comments, comments splitting a line."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from conftest import checked, errs

from lessonkit.pages.marks import Marks
from lessonkit.pages.readertext import read_html

CLAIM = "{{ 8 @ demo/race:reports[severity=Warning].hazards }}"


@pytest.mark.parametrize("char, name", [
    ("\u00ad", "SOFT HYPHEN"), ("\u200b", "ZERO WIDTH SPACE"), ("\u2060", "WORD JOINER"),
    ("\u200d", "ZERO WIDTH JOINER"), ("\u3164", "HANGUL JUNGSEONG FILLER) (as NFKC reads the character written there"),
])
def test_an_invisible_character_splitting_a_summary(demo_repo: Path, char: str, name: str):
    """One error, the cause: not one more for each figure of the summary it split."""
    text = f"It ends with `RACECHECK SUM{char}MARY: 0 hazards displayed (0 errors, 0 warnings)` {CLAIM}.\n"
    assert checked(demo_repo, text) == [
        (f"docs/p.md:1: invisible character U+{ord(unicodedata.normalize('NFKC', char)):04X} ({name}): a reader "
         "does not see it, and it splits "
         "the words and figures around it; remove it")]


def test_an_invisible_character_is_reported_once_a_line(demo_repo: Path):
    assert [e[:12] for e in checked(demo_repo, "a\u200bb\u200bc\n\nd\u200be\n")] == ["docs/p.md:1:", "docs/p.md:3:"]


def test_a_zero_width_joiner_inside_an_emoji_and_a_byte_order_mark_pass(demo_repo: Path):
    assert checked(demo_repo, "\ufeffThe team \U0001f469\u200d\U0001f4bb wrote it.\n") == []


@pytest.mark.parametrize("ref", ["&#82;", "&#x52;"])
def test_a_character_reference_is_read_as_the_letter_a_reader_sees(demo_repo: Path, ref: str):
    """The audit reads the page decoded, as a reader does: a summary spelt with a reference is the
    summary, and is refused as typed output like any other."""
    found = checked(demo_repo, f"It ended with {ref}ACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings); "
                               f"{CLAIM}.\n")
    assert len(found) == 1 and "is not, verbatim, a summary line" in found[0], found
    assert checked(demo_repo, f"{ref}acecheck found {CLAIM} hazards.\n") == []  # a letter: the word a reader reads


@pytest.mark.parametrize("ref", ["&#51;", "&#0051;", "&#x33;"])
def test_a_digit_written_as_a_reference_is_a_typed_figure(demo_repo: Path, ref: str):
    found = checked(demo_repo, f"It found {ref} races.\n")
    assert len(found) == 1 and found[0].startswith("docs/p.md:1: figure '3' is typed, not produced"), found


def test_character_references_for_symbols_and_in_code_pass(demo_repo: Path):
    assert checked(demo_repo, "a &#8211; b &#x2192; c &amp; d `&rarr;` ``x&amp;``\n\n```text\n&rarr;\n```\n") == []


def test_a_claim_inside_a_comment(demo_repo: Path):
    """The rendered page holds the claim's marks inside the comment, where a reader never sees them."""
    message = ("docs/p.md:{}: a claim inside an HTML comment is checked but never shown, while the text beside "
               "the comment is shown unchecked; take the claim out of the comment, or delete it")
    assert message.format(1) in checked(demo_repo, f"<!-- {CLAIM} -->3 hazards")
    assert message.format(3) in checked(demo_repo, f"text\n\n<!--\nnote\n{CLAIM}\n-->\n3 hazards")


def test_a_comment_never_closed_hides_the_rest_of_the_page(demo_repo: Path):
    """Python-Markdown shows a comment it never sees closed as text ('&lt;!--'): the page then shows
    what follows, as the audit reads it. Raw HTML with one (a browser hides all after it) is refused,
    once, not once for each claim it hides."""
    text = f"text\n\n<!-- a note for authors\n\n{CLAIM}\n\nmore {CLAIM}\n"
    assert checked(demo_repo, text) == []
    marks = Marks()
    read = read_html(f"<p>text</p>\n<!-- note <p>{marks.wrap('8')}</p>", marks.records)
    assert [line.text for line in read.lines] == ["text"]
    assert [r[2] for r in read.refused] == [
        ("an HTML comment '<!--' opened here is never closed, so everything after it is hidden from the "
         "reader while the checks still read it; close it with '-->' where the note ends")]


def test_a_comment_between_two_stretches_of_text_joins_them_as_a_browser_does(demo_repo: Path):
    """The audit reads the words a browser joins: a summary split by a comment is a summary."""
    text = f"<code>RACECHECK<!-- --> SUMMARY: 0 hazards displayed (0 errors, 0 warnings)</code> {CLAIM}"
    found = checked(demo_repo, text)
    assert len(found) == 1 and found[0].startswith("docs/p.md:1: quote 'RACECHECK SUMMARY: 0 hazards displayed "
                                                   "(0 errors, 0 warnings)"), found


def test_comments_on_their_own_or_after_text_and_in_code_blocks_pass(demo_repo: Path):
    text = ("<!-- a note for authors -->\n\nSome text. <!-- why -->\n\n<!--\nlonger\nnote\n-->\n\n"
            "```html\nA<!-- -->B\n```\n\nwrite `A<!-- -->B` to join them\n")
    assert checked(demo_repo, text) == []


# -- typed tool output -------------------------------------------------------------------------------

@pytest.mark.parametrize("typed", [
    "========= Error: Race reported between Write access at k()+0x90 in demo.cu:4",
    "Error: Race reported between Write access at k()+0x90 in demo.cu:4",
    "  Warning: Potential WAR hazard detected at __shared__ 0x8 in block (0,0,0) :",
    "Barrier error detected. Divergent thread(s) in block.",
])
def test_a_code_block_that_types_sanitizer_output(demo_repo: Path, typed: str):
    text = f"{CLAIM} hazards.\n\n```console\n$ compute-sanitizer ./demo\n{typed}\n{typed}\n```\n"
    assert checked(demo_repo, text) == [
        (f"docs/p.md:5: a reader sees compute-sanitizer output {typed.strip()[:60]!r} that no transcript "
         "produced; show what a run printed with {{ transcript RUN }}")]


def test_sanitizer_words_in_prose_a_quoted_summary_and_a_recorded_transcript_pass(demo_repo: Path):
    text = ("racecheck says Race reported between two accesses.\n\n{{ transcript demo/race }}\n\n"
            "```text\n{{ ========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning) @ demo/race:summary }}"
            "\n```\n").replace("{{ =========", "========= {{")
    assert errs(demo_repo, text) == []


# -- the page's structure as Markdown reads it -------------------------------------------------------

def test_inline_code_of_three_backticks_opens_no_fence(demo_repo: Path):
    text = "```demo``` is the binary.\n\nIt found 3\u200b races.\n"
    assert checked(demo_repo, text) == [
        ("docs/p.md:3: invisible character U+200B (ZERO WIDTH SPACE): a reader does not see it, and it splits the "
         "words and figures around it; remove it")]


def test_a_fence_inside_an_admonition_is_a_code_block(demo_repo: Path):
    text = f"{CLAIM} hazards.\n\n??? note \"output\"\n    ```text\n    ========= Error: Race reported between\n    ```\n"
    assert checked(demo_repo, text) == [
        ("docs/p.md:5: a reader sees compute-sanitizer output '========= Error: Race reported between' that no "
         "transcript produced; show what a run printed with {{ transcript RUN }}")]


def test_a_quote_under_a_setext_heading_needs_its_own_citation(demo_repo: Path):
    """A run cited in another sentence, above the heading or not, does not cover a quote."""
    text = (f"{CLAIM} hazards.\n\nElsewhere\n---------\n\n"
            "It ends with `RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)`.\n")
    assert checked(demo_repo, text) == [
        ("docs/p.md:6: quote 'RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)' belongs to the run "
         "cited in its sentence, and its sentence cites none; cite the run there with a claim, or write the quote "
         "as a claim: {{ QUOTE @ RUN:summary }}")]
    assert checked(demo_repo, text.replace("It ends", f"With {CLAIM} hazards, it ends")) == []


@pytest.mark.parametrize("ref, code", [("&shy;", "00AD"), ("&ZeroWidthSpace;", "200B"), ("&#x200B;", "200B"),
                                       ("&zwj;", "200D")])
def test_a_character_reference_to_an_invisible_character(demo_repo: Path, ref: str, code: str):
    found = checked(demo_repo, f"RACECHECK {ref}SUMMARY: 0 hazards; {CLAIM}\n")
    assert len(found) == 1 and found[0].startswith(f"docs/p.md:1: invisible character U+{code} ("), found


@pytest.mark.parametrize("ref", ["&colon;", "&period;", "&num;"])
def test_a_character_reference_to_ascii_punctuation_is_read_as_it(demo_repo: Path, ref: str):
    assert checked(demo_repo, f"x{ref}y\n") == []


@pytest.mark.parametrize("markup", [
    "<style>.x{font-size:0}</style>", "<script>document.title='x'</script>", '<span hidden>x</span>',
    '<div style="display:none" markdown>', "<template>x</template>", '<span aria-hidden="true">x</span>',
    "`<` <b hidden>x</b>", "`<a` then <i style=x>y</i>", "<noscript>x</noscript>",
])
def test_markup_that_hides_styles_or_scripts_text(demo_repo: Path, markup: str):
    """Read on the rendered page, where the element and its attributes are what they are, however the
    Markdown wrote them (a code span before it that shows a '<' as typed changes nothing)."""
    found = checked(demo_repo, f"{CLAIM} hazards. {markup}")
    assert len(found) == 1 and found[0].startswith("docs/p.md:1: ") and found[0].endswith(
        "hides, styles or scripts text on the page, so a reader and the checks would read different things; "
        "remove it (the site's stylesheet and script are in docs/assets/)"), found


def test_attributes_an_attribute_list_writes_are_read_as_written(demo_repo: Path):
    """With attr_list (the site's mkdocs.yml has it), `{: style=... }` writes the attribute itself."""
    from conftest import mkdocs_yml

    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace("  - admonition\n", "  - admonition\n  - attr_list\n"))
    for markup in ("Hidden text.\n{: hidden }", 'Text.\n{: style="color:red" }'):
        found = checked(demo_repo, f"{CLAIM} hazards.\n\n{markup}\n")
        assert len(found) == 1 and "hides, styles or scripts text on the page" in found[0], found


def test_a_markdown_table_s_alignment_is_no_style(demo_repo: Path):
    assert checked(demo_repo, "| a | b |\n| :--- | ---: |\n| x | y |\n") == []


def test_a_reference_repeated_on_a_line_is_reported_once(demo_repo: Path):
    found = checked(demo_repo, "a&#x200B;b&#x200B; and &ZeroWidthSpace;\n\nc&#x200B;\n")
    assert [e[:30] for e in found] == ["docs/p.md:1: invisible charact", "docs/p.md:3: invisible charact"], found


def test_markup_words_in_prose_and_code_pass(demo_repo: Path):
    text = ("The hidden state of a warp; its style of scheduling. A <b>bold</b> word, `<span hidden>` in code, "
            "&lt;tag&gt; &amp; &quot;q&quot; &nbsp; &minus;1 &#8211; fine.")
    assert errs(demo_repo, text) == []


# -- summary quotes split by formatting ----------------------------------------------------------------

@pytest.mark.parametrize("quote", [
    "**RACECHECK** SUMMARY: 0 hazards displayed (0 errors, 0 warnings)",
    "RACE**CHECK** SUMMARY: 0 hazards displayed (0 errors, 0 warnings)",
    "RACECHECK SUMMARY: <strong>0</strong> hazards displayed (0 errors, 0 warnings)",
    "`RACECHECK SUMMARY:` 0 hazards displayed (0 errors, 0 warnings)",
])
def test_a_summary_quote_split_by_formatting(demo_repo: Path, quote: str):
    """The rendered page reads the quote as a reader does, through the formatting: it is checked."""
    assert checked(demo_repo, f"{CLAIM} hazards; the run ends with {quote}.") == [
        ("docs/p.md:1: quote 'RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)' is not, verbatim, a "
         "summary line of every recording of a run cited in its sentence; they say: 'RACECHECK SUMMARY: 2 hazards "
         "displayed (1 error, 1 warning)' in evidence/demo/s1/race.txt (line 13)")]
    right = quote.replace("0 hazards", "2 hazards").replace("0</strong> hazards", "2</strong> hazards")
    assert checked(demo_repo, f"{CLAIM} hazards; the run ends with "
                   f"{right.replace('(0 errors, 0 warnings)', '(1 error, 1 warning)')}.") == []


def test_a_summary_broken_over_two_lines_for_a_reader_leaves_its_figures_typed(demo_repo: Path):
    """After a <br> the reader sees the figures on a line of their own: typed figures, not a quote."""
    found = checked(demo_repo, f"{CLAIM} hazards; the run ends with RACECHECK SUMMARY:<br>0 hazards displayed "
                    "(0 errors, 0 warnings).")
    assert len(found) == 3 and all(e.startswith("docs/p.md:1: figure '0' is typed, not produced") for e in found), found


def test_summary_quotes_in_code_spans_and_emphasis_around_them_pass(demo_repo: Path):
    text = (f"{CLAIM} hazards; it ends with **`RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)`** "
            "and the `RACECHECK SUMMARY` line is the last.")
    assert checked(demo_repo, text) == []


@pytest.mark.parametrize("block", [
    "    ========= Error: Race reported between Write access",
    "<pre><code>========= Error: Race reported between Write access</code></pre>",
    "<pre><samp>========= Error: Race reported between Write access</samp></pre>",  # as a transcript shows it
    "```text\nERROR: Race  reported   between Write access\n```",
])
def test_typed_output_in_other_code_blocks(demo_repo: Path, block: str):
    found = checked(demo_repo, f"{CLAIM} hazards.\n\n{block}\n")
    line = 4 if block.startswith("```") else 3
    assert len(found) == 1 and found[0].startswith(f"docs/p.md:{line}: a reader sees compute-sanitizer output"), found


def test_markup_shown_as_typed_in_a_code_span_is_no_disguise(demo_repo: Path):
    assert errs(demo_repo, f"{CLAIM} hazards. Writing `**RACECHECK** SUMMARY: 0 …` is refused.") == []


# -- the third trial -----------------------------------------------------------------------------------

def test_a_word_that_mixes_lookalike_scripts(demo_repo: Path):
    assert checked(demo_repo, f"{CLAIM}; `RA\u0421ECHECK SUMMARY: 0 hazards displayed`\n") == [
        ("docs/p.md:1: the word 'RA\u0421ECHECK' hides '\u0421' (CYRILLIC CAPITAL LETTER ES) among Latin letters; "
         "a reader cannot tell them apart, and reads another word than the one written; spell it in Latin letters")]


def test_words_in_one_script_pass(demo_repo: Path):
    assert checked(demo_repo, f"{CLAIM} hazards; \u0394t is small, na\u00efve code, "
                              "\u0441\u0438\u043d\u0445\u0440\u043e.\n") == []


@pytest.mark.parametrize("text", [
    "[RACECHECK](https://docs.nvidia.com/compute-sanitizer/) SUMMARY: 0 hazards displayed (0 errors, 0 warnings)",
    "RACECHECK SUMMARY:\n<span>0</span> hazards displayed (0 errors, 0 warnings)",
])
def test_a_summary_quote_split_by_a_link_or_a_line_break(demo_repo: Path, text: str):
    assert checked(demo_repo, f"{CLAIM} hazards.\n\n{text}.\n") == [
        ("docs/p.md:3: quote 'RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)' belongs to the run "
         "cited in its sentence, and its sentence cites none; cite the run there with a claim, or write the quote "
         "as a claim: {{ QUOTE @ RUN:summary }}")]


@pytest.mark.parametrize("markup", ["<template>x</template>", "<noscript>x</noscript>"])
def test_more_markup_that_hides_text(demo_repo: Path, markup: str):
    found = checked(demo_repo, f"{CLAIM} hazards. RACECHECK{markup} done")
    assert len(found) == 1 and "hides, styles or scripts text on the page" in found[0], found


def test_a_claim_in_an_html_table_is_refused(demo_repo: Path):
    found = checked(demo_repo, f"<table><tr><td>one</td><td>{CLAIM}</td></tr></table>")
    assert [e.split(" nothing binds")[0] for e in found] == ["docs/p.md:1: a claim in a table written by hand:"]
    assert checked(demo_repo, "<table><tr><td>one</td><td>plain words</td></tr></table>") == []


@pytest.mark.parametrize("before", ["1[]()", "1![](x.svg)", " \u2013", "(\u2012", " \ufe63"])
def test_a_figure_joined_through_an_empty_link_an_image_or_a_dash(demo_repo: Path, before: str):
    found = checked(demo_repo, f"In all{before}{CLAIM} hazards")
    joined = [e for e in found if "right before it" in e]
    assert len(joined) == 1 and (len(found) == 1 or "x.svg" in before), found


def test_units_against_a_figure_and_a_range_typed_up_to_a_claim_pass(demo_repo: Path):
    assert errs(demo_repo, f"{CLAIM}s, {CLAIM}ms, {CLAIM}x, the {CLAIM}th, and 2\u2013{CLAIM} hazards") == []
    found = checked(demo_repo, f"{CLAIM}s, {CLAIM}ms, {CLAIM}x, the {CLAIM}th, and 2\u2013{CLAIM} hazards")
    assert not [e for e in found if "runs into" in e], found


@pytest.mark.parametrize("line", ["======== Invalid __shared__ write of size 4 bytes",
                                  "<pre>====<b></b>===== Race reported between</pre>"])
def test_typed_output_with_a_short_or_split_prefix(demo_repo: Path, line: str):
    found = checked(demo_repo, f"{CLAIM} hazards.\n\n{line}\n")
    assert len(found) == 1 and "a reader sees compute-sanitizer output" in found[0], found


def test_the_micro_prefix_of_a_unit_is_no_look_alike(demo_repo: Path):
    """µs, with the micro sign (U+00B5, which NFKC reads as Greek mu) or with the Greek letter: a unit."""
    assert checked(demo_repo, f"{CLAIM} hazards in a few \u00b5s, or \u03bcs.\n") == []
    found = checked(demo_repo, f"{CLAIM} hazards in a few \u0455econds.\n")  # a Cyrillic dze: no unit's prefix
    assert len(found) == 1 and "hides '\u0455' (CYRILLIC SMALL LETTER DZE)" in found[0], found


@pytest.mark.parametrize(("text", "code"), [("Predi\ufe0fction four held.", "FE0F"), ("It had\u28004 races.", "2800")])
def test_a_variation_selector_among_letters_and_a_blank_braille_cell_are_invisible(demo_repo: Path, text: str,
                                                                                    code: str):
    found = checked(demo_repo, text + "\n")
    assert len(found) == 1 and f"invisible character U+{code}" in found[0], found


@pytest.mark.parametrize("word", ["Y\u0131ld\u0131z", "a k\u03a9 resistor", "\u03b5max", "\u0261ood"])
def test_a_latin_letter_of_another_alphabet_a_units_symbol_and_a_variables_name_pass(demo_repo: Path, word: str):
    assert checked(demo_repo, f"{CLAIM} hazards, {word}.\n") == []


def test_a_letter_drawn_as_a_digit_standing_alone_among_latin_words(demo_repo: Path):
    """Cyrillic З reads as 3 in "Prediction З died"; inside a word of its own script it is a letter."""
    found = checked(demo_repo, "Prediction \u0417 died.\n")
    assert len(found) == 1 and "'\u0417' (CYRILLIC CAPITAL LETTER ZE) stands alone among Latin words" in found[0], found
    assert checked(demo_repo, "The word \u0417\u0430\u043f\u0430\u0434 is Russian.\n") == []
