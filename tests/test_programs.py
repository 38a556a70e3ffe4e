"""The lessons' programs as the site publishes them (lessonkit.site.programs): which files, which
lessons a page shows, the page listing them; then a build that publishes them byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import mkdocs_build, write_tree

from lessonkit.pages.result import PageResult
from lessonkit.site.programs import (
    ProgramFile,
    lesson_folders,
    lesson_spec,
    page_programs,
    program_files,
    program_page,
)
from lessonkit.site.verify import verify_site

RUNS = """\
lesson = "l"
inputs = ["a.cu", "sub/b.h", "../outside.txt", "missing.cu", "./a.cu"]

[build]
sm_90 = "nvcc -o a a.cu"

[[run]]
name = "bare"
command = "./a"
inputs = ["tool.py", "a.cu"]
"""


def lesson_tree(root: Path, runs: str = RUNS) -> None:
    write_tree(root, {"code/l/README.md": "# l\n", "code/l/runs.toml": runs, "code/l/a.cu": "int a;\n",
                      "code/l/sub/b.h": "int b;\n", "code/l/tool.py": "print()\n", "code/l/a": "\x7fELF",
                      "code/outside.txt": "not the lesson's\n", "code/notes/x.md": "no runs.toml\n"})


def names(files: list[ProgramFile]) -> list[tuple[str, str]]:
    return [(f.name, f.role) for f in files]


def test_a_program_is_its_runs_toml_and_its_inputs(tmp_path: Path):
    lesson_tree(tmp_path)
    assert lesson_folders(tmp_path) == ["l"]
    files = program_files(tmp_path, "l")
    # Each input once, in runs.toml's order; the README (prose no check binds), the binary a build
    # left, a missing input and one outside the folder are not published.
    assert names(files) == [
        ("runs.toml", "the build lines and the commands the evidence was recorded with"),
        ("a.cu", "an input of every recording"),
        ("sub/b.h", "an input of every recording"),
        ("tool.py", "an input of the run 'bare'"),
    ]
    assert [f.path for f in files] == [tmp_path / "code/l" / f.name for f in files]


def test_a_link_leaving_the_folder_is_not_published(tmp_path: Path):
    lesson_tree(tmp_path)
    (tmp_path / "code/l/sub/b.h").unlink()
    os.symlink(tmp_path / "code/outside.txt", tmp_path / "code/l/sub/b.h")
    (tmp_path / "code/l/tool.py").unlink()
    os.symlink("a.cu", tmp_path / "code/l/tool.py")  # a link to a file inside: published
    assert [f.name for f in program_files(tmp_path, "l")] == ["runs.toml", "a.cu", "tool.py"]


def test_an_unreadable_runs_toml_publishes_itself_and_no_commands(tmp_path: Path):
    lesson_tree(tmp_path, runs="lesson = \n")
    assert [f.name for f in program_files(tmp_path, "l")] == ["runs.toml"]
    assert lesson_spec(tmp_path, "l") is None
    assert "<pre>" not in program_page("l", program_files(tmp_path, "l"), None)


def test_the_program_page_shows_how_to_build_and_run_from_runs_toml(tmp_path: Path):
    lesson_tree(tmp_path, runs=RUNS.replace('command = "./a"', 'command = "./a --n 3 <in>"'))
    spec = lesson_spec(tmp_path, "l")
    text = program_page("l", program_files(tmp_path, "l"), spec)
    assert "<p>For <code>sm_90</code>:</p>\n<pre><code>nvcc -o a a.cu</code></pre>" in text
    assert "<p>The run <code>bare</code>:</p>\n<pre><code>./a --n 3 &lt;in&gt;</code></pre>" in text


def test_a_page_shows_the_programs_its_regions_come_from():
    result = PageResult("", sources={"b/x.cu", "a/diagrams/d.svg", "b/y.cu"}, cited={("set-c", "run")})
    assert page_programs(result, {"set-c": "c"}) == ["a", "b"]


def test_a_page_without_regions_shows_the_programs_of_the_sets_it_cites():
    result = PageResult("", cited={("set-c", "run"), ("set-c2", "run"), ("set-d", "other"), ("gone", "run")})
    assert page_programs(result, {"set-c": "c", "set-c2": "c", "set-d": "d"}) == ["c", "d"]
    assert page_programs(PageResult(""), {"set-c": "c"}) == []


def test_the_program_page_escapes_names_and_links_each_file():
    files = [ProgramFile("a&b <c>.cu", Path("x"), 'an input of the run "r"')]
    text = program_page("l", files)
    assert text.startswith("---\nsearch:\n  exclude: true\n---\n\n# <code>code/l/</code>\n")
    assert ('<tr><td><a href="a%26b%20%3Cc%3E.cu"><code>a&amp;b &lt;c&gt;.cu</code></a></td>'
            "<td>an input of the run &quot;r&quot;</td></tr>") in text


def test_a_build_publishes_each_program_byte_for_byte(demo_repo: Path):
    (demo_repo / "code/demo/demo").write_bytes(b"\x7fELF\x00 a binary the reader's build left")
    readme = demo_repo / "code/demo/README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "\nIt sums 8803 wrong in 99 launches.\n",
                      encoding="utf-8")
    done = mkdocs_build(demo_repo)
    assert done.returncode == 0, done.stderr
    folder = demo_repo / "site/code/demo"
    published = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    # The README's figures, which no check binds, reach no reader: it is not published.
    assert published == ["demo.cu", "index.html", "runs.toml"]
    assert not any("8803 wrong in 99" in p.read_text(encoding="utf-8", errors="replace")
                   for p in (demo_repo / "site").rglob("*") if p.is_file())
    for name in ("demo.cu", "runs.toml"):
        assert (folder / name).read_bytes() == (demo_repo / "code/demo" / name).read_bytes()
    listing = (folder / "index.html").read_text(encoding="utf-8")
    assert '<a href="demo.cu"><code>demo.cu</code></a>' in listing
    assert "lessonkit: checked" not in listing  # lessonkit's own page, not a page of docs/ it checked
    assert verify_site(demo_repo / "site", demo_repo) == []
