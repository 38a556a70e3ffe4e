"""Engines: MkDocs and ProperDocs through the hooks, any engine through the Markdown extension,
`verify-site` for an engine that ran neither, and the hooks' setup checks."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import markdown
import pytest
from conftest import HOOKS, PAGE, REPO, mkdocs_yml

from lessonkit.errors import LessonErrors
from lessonkit.site.verify import CHECKED_MARK, unexpanded, verify_site
from lessonkit.site.verify import main as verify_main

# PYTHONPATH: a site that lists lessonkit.site.mdext imports it while the engine reads mkdocs.yml.
ENV = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true", PYTHONPATH=str(REPO))
WRONG_CLAIM = ("docs/index.md:7: claim '121' (race:reports[severity=Error].hazards) disagrees with "
               "evidence/demo/s1/race.txt; it says '120' (line 7)")
FIX = ("the engine published it without lessonkit; MkDocs and ProperDocs need "
       "'hooks: [hooks/lessonkit_hooks.py]', other engines 'markdown_extensions: [lessonkit.site.mdext]'")


def engine_build(repo: Path, engine: str, config: str = "mkdocs.yml") -> subprocess.CompletedProcess:
    """`python -m ENGINE build` of repo into repo/site (ProperDocs with Material, the site's theme:
    its copy of the 'mkdocs' theme is a separate package)."""
    if engine == "properdocs":
        edit(repo / config, "theme:\n  name: mkdocs\n", "theme:\n  name: material\n")
    return subprocess.run([sys.executable, "-m", engine, "build", "-q", "-f", config, "-d", str(repo / "site")],
                          cwd=repo, capture_output=True, text=True, env=ENV, timeout=180, check=False)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize("engine", ["mkdocs", "properdocs"])
def test_engine_builds_a_checked_site(demo_repo: Path, engine: str, capsys):
    done = engine_build(demo_repo, engine)
    assert done.returncode == 0, done.stderr
    html = re.sub(r' data-lk-why="[^"]*"', "", (demo_repo / "site/index.html").read_text())
    assert 'the error has <span class="lk-v">120</span> hazards,' in html and CHECKED_MARK.strip() in html
    assert verify_main([str(demo_repo / "site")]) == 0
    assert capsys.readouterr().out == (f"ok: the 1 page of the build under {demo_repo / 'site'} "
                                       "expanded and checked by lessonkit; none shows a claim or directive "
                                       f"unexpanded; the pages of {demo_repo / 'docs'} pass the audit as built, "
                                       "and every recording they show (1) is the evidence's\n")


@pytest.mark.parametrize("engine", ["mkdocs", "properdocs"])
def test_engine_refuses_a_wrong_claim(demo_repo: Path, engine: str):
    edit(demo_repo / "docs/index.md", "{{ 120 @", "{{ 121 @")
    done = engine_build(demo_repo, engine)
    assert done.returncode != 0
    assert f"lessonkit found problems:\n{WRONG_CLAIM}\n1 error found" in done.stderr


def test_verify_site_names_page_and_text_when_hooks_are_off(demo_repo: Path, capsys):
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace(f"hooks:\n  - {HOOKS}\n", "hooks: []\n")
                                          .replace("  - lessonkit.site.mdext\n", ""))
    done = engine_build(demo_repo, "mkdocs")
    assert done.returncode == 0, done.stderr  # an engine that ignores lessonkit publishes the raw page
    assert verify_main([str(demo_repo / "site")]) == 1
    html = (demo_repo / "site/index.html").read_text().splitlines()
    line = next(i for i, text in enumerate(html, 1) if "{{ evidence demo }}" in text)
    page = f"{(demo_repo / 'site').as_posix()}/index.html"
    assert capsys.readouterr().err.splitlines() == [
        f"{page}:{line}: unexpanded directive '{{{{ evidence demo }}}}'; {FIX}",
        (f"{page}:{line + 1}: unexpanded directive "
        f"'{{{{ region demo/demo.cu body highlight=4@race:reports[severity=Error].line }}}}'; {FIX}"),
        f"{page}:{line + 2}: unexpanded claim '{{{{ 2 @ race:#reports }}}}'; {FIX}",
        f"{page}:{line + 2}: unexpanded claim '{{{{ 120 @ race:reports[severity=Error].hazards }}}}'; {FIX}",
        f"{page}:{line + 4}: unexpanded directive '{{{{ transcript race }}}}'; {FIX}",
        "5 errors found"]


def test_verify_site_accepts_escaped_braces_on_a_checked_page(demo_repo: Path):
    # (3: a figure the evidence does not hold; a 2 shown unchecked would fail the audit)
    edit(demo_repo / "docs/index.md", "# Demo\n", "# Demo\n\nWrite `\\{{ 3 @ race:#reports }}` to quote a count.\n")
    done = engine_build(demo_repo, "mkdocs")
    assert done.returncode == 0, done.stderr
    assert "{{ 3 @ race:#reports }}" in (demo_repo / "site/index.html").read_text()
    assert verify_main([str(demo_repo / "site")]) == 0


def test_verify_site_reports_an_unfilled_slot():
    assert [str(e) for e in unexpanded(f'<p>x</p>\n<div data-lk-slot="0"></div>{CHECKED_MARK}', "site/a.html")] == [
        ("site/a.html:2: transcript slot '<div data-lk-slot=\"0\"></div>' was never filled; "
        "the engine ran lessonkit's expansion but not its postprocessor")]


def test_verify_site_needs_a_folder(tmp_path: Path, capsys):
    assert verify_main([str(tmp_path / "nothing")]) == 1
    assert capsys.readouterr().err == (f"{tmp_path / 'nothing'}: is not a folder; expected a built site "
                                       "(mkdocs build)\n1 error found\n")


NO_PAGE = ("holds no built page (no .html file): an empty folder, a source folder or a build that failed; "
           "build the site (mkdocs build) and name the folder it wrote")


@pytest.mark.parametrize("folder", ["empty", "docs"])
def test_verify_site_refuses_a_folder_without_built_pages(demo_repo: Path, folder: str, capsys):
    (demo_repo / "empty").mkdir()
    assert verify_main([str(demo_repo / folder)]) == 1
    assert capsys.readouterr().err == f"{(demo_repo / folder).as_posix()}: {NO_PAGE}\n1 error found\n"


def test_verify_site_refuses_what_no_build_wrote(demo_repo: Path, tmp_path_factory: pytest.TempPathFactory,
                                                 capsys):
    """HTML pages without the build's list of its pages, and no repository to say what they should be."""
    assert engine_build(demo_repo, "mkdocs").returncode == 0
    (demo_repo / "site/search/search_index.json").unlink()
    site = (demo_repo / "site").rename(tmp_path_factory.mktemp("elsewhere") / "site")
    assert verify_main([str(site)]) == 1
    assert capsys.readouterr().err == (
        f"{site.as_posix()}: is not a built site: no search/search_index.json (MkDocs, "
        "ProperDocs) or search.json (Zensical), the list of its pages a build writes after the last one; "
        "build with 'search' in mkdocs.yml's plugins (its default)\n1 error found\n")


def built_elsewhere(repo: Path, tmp_path: Path) -> Path:
    """The site of `repo` built with MkDocs, in a folder of its own outside the repository."""
    done = engine_build(repo, "mkdocs")
    assert done.returncode == 0, done.stderr
    return (repo / "site").rename(tmp_path / "built")


def missing(site: Path, page: str, docs: str, nav: bool = False) -> str:
    listed = "listed in mkdocs.yml's nav and " if nav else ""
    return (f"{site.as_posix()}/{page}: is missing: docs/{docs} is a page of the site ({listed}under docs/), "
            "so the build stopped before writing it or it was deleted since; build the site again")


def test_verify_site_refuses_a_site_that_lacks_a_page_of_its_build(demo_repo: Path, capsys):
    (demo_repo / "docs/other.md").write_text("# Other\n\nNo claim here.\n")
    assert engine_build(demo_repo, "mkdocs").returncode == 0
    assert verify_main([str(demo_repo / "site")]) == 0
    capsys.readouterr()
    (demo_repo / "site/other/index.html").unlink()  # as a build stopped halfway leaves it
    assert verify_main([str(demo_repo / "site")]) == 1
    assert capsys.readouterr().err == missing(demo_repo / "site", "other/index.html", "other.md") + "\n1 error found\n"


def test_verify_site_takes_the_pages_from_the_repository_not_the_search_index(demo_repo: Path, tmp_path: Path):
    """A page gone with its search-index entry is still missing: docs/ and the nav say what the site holds."""
    (demo_repo / "docs/other.md").write_text("# Other\n\nNo claim here.\n")
    site = built_elsewhere(demo_repo, tmp_path)
    assert verify_site(site, demo_repo) == []
    (site / "other/index.html").unlink()
    index = site / "search/search_index.json"
    data = json.loads(index.read_text())
    data["docs"] = [d for d in data["docs"] if not d["location"].startswith("other/")]
    index.write_text(json.dumps(data))
    assert [str(e) for e in verify_site(site, demo_repo)] == [missing(site, "other/index.html", "other.md")]


def test_verify_site_refuses_a_half_built_site(demo_repo: Path, tmp_path: Path):
    """A build that failed half-way (Zensical stops at the first page lessonkit refuses): every page
    it did not write is named, the nav's and the others."""
    (demo_repo / "docs/a.md").write_text("# A\n\nNo claim here.\n")
    (demo_repo / "docs/b.md").write_text("# B\n\nNo claim here.\n")
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml() + "nav:\n  - index.md\n  - A: a.md\n  - b.md\n")
    site = built_elsewhere(demo_repo, tmp_path)
    assert verify_site(site, demo_repo) == []
    for page in ("a/index.html", "b/index.html"):
        (site / page).unlink()
    assert [str(e) for e in verify_site(site, demo_repo)] == [
        missing(site, "a/index.html", "a.md", nav=True), missing(site, "b/index.html", "b.md", nav=True)]


def test_verify_site_refuses_a_nav_entry_docs_lacks(demo_repo: Path, tmp_path: Path):
    site = built_elsewhere(demo_repo, tmp_path)
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml() + "nav:\n  - index.md\n  - gone.md\n")
    line = len(mkdocs_yml().splitlines()) + 3
    assert [str(e) for e in verify_site(site, demo_repo)] == [
        f"mkdocs.yml:{line}: nav names 'gone.md', which docs/ lacks; add the page or remove the entry"]


def test_verify_site_refuses_a_page_lessonkit_never_checked(demo_repo: Path, capsys):
    """An engine without lessonkit publishes a page with no claim: nothing unexpanded, but unchecked."""
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace(f"hooks:\n  - {HOOKS}\n", "hooks: []\n")
                                          .replace("  - lessonkit.site.mdext\n", ""))
    (demo_repo / "docs/index.md").write_text("# Home\n\nERROR SUMMARY: 7 errors\n")
    assert engine_build(demo_repo, "mkdocs").returncode == 0
    assert verify_main([str(demo_repo / "site")]) == 1
    assert capsys.readouterr().err == (f"{(demo_repo / 'site').as_posix()}/index.html: is a page of the build "
                                       f"that lessonkit never checked; {FIX}\n1 error found\n")


def test_verify_site_refuses_a_checked_page_of_an_earlier_build(demo_repo: Path, capsys):
    assert engine_build(demo_repo, "mkdocs").returncode == 0
    (demo_repo / "site/old").mkdir()
    (demo_repo / "site/old/index.html").write_text((demo_repo / "site/index.html").read_text())
    assert verify_main([str(demo_repo / "site")]) == 1
    assert capsys.readouterr().err == (
        f"{(demo_repo / 'site').as_posix()}/old/index.html: was checked by lessonkit but is not a page of this "
        "build (no page under docs/ is built there): left by an earlier build; build into an empty "
        "folder (mkdocs build --clean)\n1 error found\n")


def test_cli_runs_verify_site(demo_repo: Path):
    done = subprocess.run([sys.executable, "-m", "lessonkit", "verify-site", str(demo_repo / "nothing")],
                          cwd=REPO, capture_output=True, text=True, env=ENV, check=False)
    assert done.returncode == 1
    assert done.stderr == f"{demo_repo / 'nothing'}: is not a folder; expected a built site (mkdocs build)\n1 error found\n"


# The Python-Markdown extension, as an engine without hooks (Zensical) uses it.

def convert(repo: Path, text: str, **config) -> str:
    md = markdown.Markdown(extensions=["lessonkit.site.mdext", "pymdownx.superfences", "pymdownx.highlight",
                                       "pymdownx.details"],
                           extension_configs={"lessonkit.site.mdext": {"repo": str(repo), **config}})
    return md.convert(text)


def test_extension_expands_checks_and_fills(demo_repo: Path):
    html = re.sub(r' data-lk-why="[^"]*"', "", convert(demo_repo, PAGE))
    assert 'racecheck found <span class="lk-v">2</span> reports; the error has <span class="lk-v">120</span> hazards,' in html
    assert '<details class="abstract lk-transcript">' in html and 'data-search-exclude' in html
    assert "data-lk-slot" not in html and html.endswith(CHECKED_MARK.strip())
    assert unexpanded(html, "x.html") == []


def test_extension_fails_on_a_wrong_claim_naming_the_page(demo_repo: Path):
    edit(demo_repo / "docs/index.md", "{{ 120 @", "{{ 121 @")
    with pytest.raises(LessonErrors) as caught:
        convert(demo_repo, (demo_repo / "docs/index.md").read_text())
    assert str(caught.value) == f"{WRONG_CLAIM}\n1 error found"


def test_extension_counts_lines_under_front_matter(demo_repo: Path):
    page = demo_repo / "docs/index.md"
    page.write_text("---\ntitle: Demo\n---\n" + PAGE.replace("{{ 120 @", "{{ 121 @"))
    with pytest.raises(LessonErrors) as caught:
        convert(demo_repo, PAGE.replace("{{ 120 @", "{{ 121 @"))  # the engine strips the front matter
    assert str(caught.value) == WRONG_CLAIM.replace("index.md:7:", "index.md:10:") + "\n1 error found"


# A '{{' never closed, late in a page that the engines read differently: front matter (blank lines in and
# after it, a '{{' in its YAML), then blocks that Markdown extensions move or wrap (admonitions, details,
# HTML with Markdown inside, attribute lists, a table, fences). Every path names the '{{''s own line.
LATE_OPEN = "The end: {{ 3 @ race:#reports"
FRONT_AND_BLOCKS = """---
title: Demo

description: "about {{ braces in YAML"
---


""" + PAGE + """
!!! note "A note"
    Text in a note.

<div markdown="1">
**Bold** inside HTML.

| a | b |
|---|---|
| x | y |
</div>

```text
int main() { return x; }
```

Paragraph with attributes.
{: .lead }

??? info "Folded"
    Folded text.

<details><summary>More</summary>
Raw HTML block.
</details>

""" + LATE_OPEN + """
is left open here.
"""


def as_zensical_gives(data: bytes) -> str:
    """The text Zensical 0.0.73 hands the extension (seen with it): the byte-order mark dropped, front
    matter cut where its lines end in '\n' or '\r\n' (with '\r' alone it is not seen), and the
    rest as written, blank lines and line ends included."""
    text = data.decode("utf-8-sig")
    front = re.match(r"---[ \t]*\r?\n.*?\r?\n---[ \t]*\r?\n", text, re.DOTALL)
    return text[front.end():] if front else text


@pytest.mark.parametrize("ending, mark", [("\n", b""), ("\r\n", b""), ("\r", b""), ("\n", b"\xef\xbb\xbf")],
                         ids=["LF", "CRLF", "CR", "BOM"])
def test_a_brace_never_closed_is_named_at_its_own_line_by_check_the_hooks_and_the_extension(
        demo_repo: Path, ending: str, mark: bytes):
    line = FRONT_AND_BLOCKS.split("\n").index(LATE_OPEN) + 1
    want = (f"docs/index.md:{line}: '{LATE_OPEN.removeprefix('The end: ')}' is never closed: no '}}}}' before the end of the page; "
            "close it, or write \\{{ for literal braces")
    data = mark + FRONT_AND_BLOCKS.replace("\n", ending).encode()
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml("  - attr_list\n  - md_in_html\n  - tables\n"))
    (demo_repo / "docs/index.md").write_bytes(data)
    checked = subprocess.run([sys.executable, "-m", "lessonkit", "check", "--no-cache"], cwd=demo_repo,
                             capture_output=True, text=True, env=ENV, timeout=120)
    assert (checked.returncode, checked.stderr) == (1, f"{want}\n1 error found\n")
    built = engine_build(demo_repo, "mkdocs")
    assert built.returncode == 1 and f"\n{want}\n1 error found" in built.stderr
    with pytest.raises(LessonErrors) as caught:
        convert(demo_repo, as_zensical_gives(data), docs_dir="docs")
    if ending == "\r":  # the front matter is the page's text to this engine: its '{{' is too, at its own line
        want = ("docs/index.md:4: '{{ braces in YAML\"' is never closed: no '}}' before the end of its paragraph "
                "(line 5); close it, or write \\{{ for literal braces\n" + want + "\n2 errors found")
    else:
        want += "\n1 error found"
    assert str(caught.value) == want


def test_extension_fails_on_stale_evidence(demo_repo: Path):
    edit(demo_repo / "code/demo/demo.cu", "// a tiny lesson", "// a tiny lesson, edited")
    with pytest.raises(LessonErrors) as caught:
        convert(demo_repo, PAGE)
    assert "evidence/demo/manifest.json: code/demo/demo.cu has sha256 " in str(caught.value)


def test_passive_extension_leaves_the_page_to_the_hooks(demo_repo: Path):
    assert "{{ 2 @ race:#reports }}" in convert(demo_repo, PAGE, passive=True)


def test_hooks_and_extension_together_check_once(demo_repo: Path):
    assert "  - lessonkit.site.mdext\n" in mkdocs_yml()
    done = engine_build(demo_repo, "mkdocs")
    assert done.returncode == 0, done.stderr
    assert (demo_repo / "site/index.html").read_text().count(CHECKED_MARK.strip()) == 1


# Setup checks: the hooks refuse a configuration that would publish raw or unchecked pages.

def test_refuses_fenced_code_instead_of_superfences(demo_repo: Path):
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace("pymdownx.superfences", "fenced_code"))
    done = engine_build(demo_repo, "mkdocs")
    assert done.returncode != 0
    assert ("lessonkit cannot check this site:\nmkdocs.yml:6: markdown_extensions lacks pymdownx.superfences: "
            "lessonkit's code regions and transcripts are fenced blocks (plain Markdown and fenced_code "
            "show them as raw fences); add '- pymdownx.superfences' under markdown_extensions\n") in done.stderr


def test_refuses_missing_highlight(demo_repo: Path):
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace("  - pymdownx.highlight\n", ""))
    done = engine_build(demo_repo, "properdocs")
    assert done.returncode != 0
    assert ("mkdocs.yml:6: markdown_extensions lacks pymdownx.highlight: lessonkit's regions are numbered "
            "with their file's own lines and highlighted by it; add '- pymdownx.highlight' under "
            "markdown_extensions\n") in done.stderr


def load_hooks():
    spec = importlib.util.spec_from_file_location("lessonkit_hooks_under_test", HOOKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_setup_errors_apply_the_site_config_rules_to_the_file_the_engine_read(demo_repo: Path):
    config = demo_repo / "mkdocs.yml"
    config.write_text(mkdocs_yml() + "plugins:\n  - macros\n")
    assert load_hooks().setup_errors(SimpleNamespace(config_file_path=str(config))) == [
        ("mkdocs.yml:13: plugin 'macros' also expands {{ ... }}: it would turn lessonkit's claims and "
         "directives into Jinja before they are checked; remove it from plugins")]


def test_refuses_a_hook_that_rewrites_checked_pages(demo_repo: Path):
    (demo_repo / "hooks").mkdir()
    (demo_repo / "hooks/zz.py").write_text("def on_page_content(html, **kwargs):\n"
                                           "    return html.replace('2 reports', '3 reports')\n")
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml().replace(f"  - {HOOKS}\n", f"  - {HOOKS}\n  - hooks/zz.py\n"))
    done = engine_build(demo_repo, "mkdocs")
    assert done.returncode != 0 and not (demo_repo / "site/index.html").exists()
    assert ("lessonkit cannot check this site:\nmkdocs.yml:6: hook 'hooks/zz.py' is not lessonkit's: a "
            "hook runs after lessonkit checked a page and can change what it says; remove it (hooks "
            "must be exactly [hooks/lessonkit_hooks.py])\n") in done.stderr


def test_properdocs_refuses_a_properdocs_yml_beside_mkdocs_yml(demo_repo: Path):
    edit(demo_repo / "mkdocs.yml", "theme:\n  name: mkdocs\n", "theme:\n  name: material\n")
    (demo_repo / "properdocs.yml").write_text((demo_repo / "mkdocs.yml").read_text())
    done = subprocess.run([sys.executable, "-m", "properdocs", "build", "-q", "-d", str(demo_repo / "site")],
                          cwd=demo_repo, capture_output=True, text=True, env=ENV, timeout=180, check=False)
    assert done.returncode != 0
    assert ("lessonkit cannot check this site:\nproperdocs.yml: is a second site configuration: "
            "ProperDocs reads it instead of mkdocs.yml, so a build would use settings lessonkit does "
            "not check; delete it (the site is configured in mkdocs.yml alone)\n") in done.stderr


def test_a_good_setup_has_no_setup_errors(demo_repo: Path):
    from mkdocs.config import load_config
    assert load_hooks().setup_errors(load_config(str(REPO / "mkdocs.yml"))) == []
