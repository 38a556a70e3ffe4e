"""Source regions: parsing, every malformed marker, and paths that leave code/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lessonkit.errors import LessonError, LessonErrors
from lessonkit.pages.regions import load_region, parse_regions

WHERE = LessonError("docs/p.md", 7, "asked for by region 'a'")


def messages(text: str) -> list[str]:
    with pytest.raises(LessonErrors) as info:
        parse_regions(text, "code/x.cu")
    return [str(e) for e in info.value.errors]


def test_regions_keep_file_line_numbers():
    text = "int a;\n// snippet: one\nline2;\nline3;\n// end snippet\n# snippet: two\npy\n# end snippet\n"
    regions = parse_regions(text, "code/x.cu")
    assert (regions["one"].first, regions["one"].last, regions["one"].text) == (3, 4, "line2;\nline3;")
    assert (regions["two"].first, regions["two"].last, regions["two"].text) == (7, 7, "py")
    assert regions["one"].contains(4) and not regions["one"].contains(5)


def test_unterminated_region():
    assert messages("a\n// snippet: open\nb\n") == [
        "code/x.cu:2: region 'open' is never closed; expected '// end snippet'"]


def test_stray_end():
    assert messages("a\n// end snippet\n") == ["code/x.cu:2: '// end snippet' with no open region"]


def test_duplicate_name():
    text = "// snippet: a\nx\n// end snippet\n// snippet: a\ny\n// end snippet\n"
    assert messages(text) == ["code/x.cu:4: duplicate region 'a'; it is already defined at line 1"]


def test_nested_region():
    text = "// snippet: outer\n// snippet: inner\n// end snippet\n"
    assert messages(text) == [
        ("code/x.cu:2: region 'inner' opens inside region 'outer' (opened at line 1); regions cannot "
        "nest: close it with '// end snippet' first")]


def test_marker_without_name():
    assert messages("// snippet:\n// end snippet\n")[0] == (
        "code/x.cu:1: bad region marker '// snippet:'; expected '// snippet: NAME' with NAME of "
        "letters, digits, '-', '_' or '.'")


def test_all_marker_errors_are_reported_together():
    assert len(messages("// end snippet\n// snippet: a\n// snippet: b\n")) == 3


@pytest.fixture
def code(tmp_path: Path) -> Path:
    (tmp_path / "code" / "l").mkdir(parents=True)
    (tmp_path / "code" / "l" / "k.cu").write_text("// snippet: a\nx\n// end snippet\n")
    (tmp_path / "outside.cu").write_text("// snippet: a\nsecret\n// end snippet\n")
    return tmp_path / "code"


def test_load_region(code: Path):
    assert load_region(code, "l/k.cu", "a", WHERE).text == "x"


def test_unknown_name_lists_the_known_ones(code: Path):
    with pytest.raises(LessonError) as info:
        load_region(code, "l/k.cu", "b", WHERE)
    assert str(info.value) == "docs/p.md:7: no region 'b' in 'code/l/k.cu'; the regions there are: a"


def test_missing_file(code: Path):
    with pytest.raises(LessonError) as info:
        load_region(code, "l/none.cu", "a", WHERE)
    assert str(info.value) == ("docs/p.md:7: source file 'code/l/none.cu' does not exist; "
                               "asked for by region 'a'")


def test_dotdot_path_is_refused(code: Path):
    with pytest.raises(LessonError) as info:
        load_region(code, "../outside.cu", "a", WHERE)
    assert str(info.value) == ("docs/p.md:7: source path '../outside.cu' leaves code/ through '..'; "
                               "asked for by region 'a'")


def test_absolute_path_is_refused(code: Path):
    with pytest.raises(LessonError) as info:
        load_region(code, str(code.parent / "outside.cu"), "a", WHERE)
    assert "is absolute; expected a path relative to code/" in str(info.value)
    assert str(info.value).startswith("docs/p.md:7: ")


def test_symlink_out_of_code_is_refused(code: Path):
    os.symlink(code.parent / "outside.cu", code / "l" / "link.cu")
    with pytest.raises(LessonError) as info:
        load_region(code, "l/link.cu", "a", WHERE)
    assert "source path 'l/link.cu' leaves code/ through a symlink" in str(info.value)


def test_marker_error_names_page_and_source(code: Path):
    (code / "l" / "bad.cu").write_text("// snippet: a\nx\n")
    with pytest.raises(LessonErrors) as info:
        load_region(code, "l/bad.cu", "a", WHERE)
    assert [str(e) for e in info.value.errors] == [
        "docs/p.md:7: in region 'a': code/l/bad.cu:1: region 'a' is never closed; expected '// end snippet'"]


def test_a_misspelt_region_name_gets_a_suggestion(tmp_path):
    from lessonkit.errors import LessonError
    from lessonkit.pages.regions import load_region
    (tmp_path / "l").mkdir()
    (tmp_path / "l/a.cu").write_text("// snippet: racy-step\nx;\n// end snippet\n// snippet: fixed\ny;\n// end snippet\n")
    where = LessonError("docs/p.md", 3, "asked for by region 'racy-stpe'")
    with pytest.raises(LessonError) as info:
        load_region(tmp_path, "l/a.cu", "racy-stpe", where)
    assert str(info.value) == ("docs/p.md:3: no region 'racy-stpe' in 'code/l/a.cu'; did you mean 'racy-step'? "
                               "the regions there are: fixed, racy-step")
