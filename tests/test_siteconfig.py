"""The site's configuration (lessonkit.site.config): one test per rule, asserting the whole message,
then the files beside mkdocs.yml, then `lessonkit check` on a configuration that publishes
unchecked pages while the engine and verify-site pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HOOKS, REPO, mkdocs_build, write_tree

from lessonkit.site.config import load_site_config_errors, read_site_config, site_config_errors
from lessonkit.site.verify import main as verify_main

GOOD = """\
site_name: fixture
hooks:
  - hooks/lessonkit_hooks.py
markdown_extensions:
  - pymdownx.superfences
  - pymdownx.highlight
  - lessonkit.site.mdext
"""
HOOKS_FIX = "hooks must be exactly [hooks/lessonkit_hooks.py]"


def errors(text: str) -> list[str]:
    return [str(e) for e in site_config_errors(read_site_config(text, "mkdocs.yml", "/site"))]


def test_a_good_configuration_has_no_errors():
    assert errors(GOOD) == []
    assert errors(GOOD.replace("site_name: fixture\n", "site_name: fixture\ndocs_dir: ./docs/\n")) == []
    assert errors(GOOD + "plugins:\n  - search:\n      lang: en\n  - material/search\n") == []
    assert errors(GOOD.replace("  - hooks/lessonkit_hooks.py", "  - /site/hooks/lessonkit_hooks.py")) == []
    assert errors(GOOD.replace("  - hooks/lessonkit_hooks.py", f"  - {HOOKS}")) == []  # the shipped file
    assert errors(GOOD + "  - toc:\n      slugify: !!python/object/apply:pymdownx.slugs.slugify {kwds: {case: lower}}\n"
                  "  - pymdownx.emoji:\n      emoji_generator: !!python/name:material.extensions.emoji.to_svg\n"
                  "extra:\n  version: !ENV [VERSION, dev]\n") == []


def test_addresses_from_the_environment_are_accepted():
    """The site's address and repository may come from the environment (!ENV, with or without a
    default): they change links, not pages. The settings that decide what is checked may not."""
    addresses = ("site_url: !ENV [LESSONKIT_SITE_URL, \"http://127.0.0.1:8000/\"]\n"
                 "repo_url: !ENV LESSONKIT_REPO_URL\nedit_uri: !ENV LESSONKIT_EDIT_URI\n")
    assert errors(addresses + GOOD) == []
    assert errors(addresses + GOOD.replace("hooks:\n  - hooks/lessonkit_hooks.py",
                                           "hooks: !ENV [HOOKS, hooks/lessonkit_hooks.py]")) == [
        ("mkdocs.yml:5: hooks is given through tag '!ENV', so its value is made while the engine reads "
         "the file; write it out plainly")]


def test_the_sites_own_configuration_has_no_errors():
    assert load_site_config_errors(REPO) == []


def test_docs_dir_elsewhere():
    assert errors(GOOD + "docs_dir: pages\n") == [
        ("mkdocs.yml:8: docs_dir is 'pages': lessonkit checks the pages under docs/, so the site would "
        "publish pages it never checked; remove docs_dir or write 'docs_dir: docs'")]


def test_docs_dir_from_the_environment():
    assert errors(GOOD + "docs_dir: !ENV [PAGES, docs]\n") == [
        ("mkdocs.yml:8: docs_dir is given through tag '!ENV', so its value is made while the engine "
        "reads the file; write it out plainly")]


def test_hooks_missing():
    assert errors(GOOD.replace("hooks:\n  - hooks/lessonkit_hooks.py\n", "")) == [
        ("mkdocs.yml: hooks is missing: MkDocs and ProperDocs would publish every page unchecked; "
        "add 'hooks: [hooks/lessonkit_hooks.py]'")]


def test_hooks_without_lessonkits():
    assert errors(GOOD.replace("  - hooks/lessonkit_hooks.py", "  - hooks/mine/lessonkit_hooks.py")) == [
        ("mkdocs.yml:2: hooks lacks hooks/lessonkit_hooks.py: MkDocs and ProperDocs would publish every "
        f"page unchecked; {HOOKS_FIX}"),
        ("mkdocs.yml:3: hook 'hooks/mine/lessonkit_hooks.py' is not lessonkit's: a hook runs after "
        f"lessonkit checked a page and can change what it says; remove it ({HOOKS_FIX})")]


def test_a_second_hook_that_could_rewrite_checked_pages():
    assert errors(GOOD.replace("  - hooks/lessonkit_hooks.py\n", "  - hooks/lessonkit_hooks.py\n  - hooks/zz.py\n")) == [
        ("mkdocs.yml:4: hook 'hooks/zz.py' is not lessonkit's: a hook runs after lessonkit checked a "
        f"page and can change what it says; remove it ({HOOKS_FIX})")]


def test_lessonkits_hooks_twice():
    assert errors(GOOD.replace("  - hooks/lessonkit_hooks.py\n",
                               "  - hooks/lessonkit_hooks.py\n  - ./hooks/lessonkit_hooks.py\n")) == [
        f"mkdocs.yml:4: hook './hooks/lessonkit_hooks.py' is lessonkit's again (first at line 3); {HOOKS_FIX}"]


def test_required_extensions_missing():
    assert errors(GOOD.replace("  - pymdownx.highlight\n  - lessonkit.site.mdext\n", "")) == [
        ("mkdocs.yml:4: markdown_extensions lacks pymdownx.highlight: lessonkit's regions are numbered "
        "with their file's own lines and highlighted by it; add '- pymdownx.highlight' under "
        "markdown_extensions"),
        ("mkdocs.yml:4: markdown_extensions lacks lessonkit.site.mdext: lessonkit's checks run through it in "
        "engines that ignore hooks (Zensical); add '- lessonkit.site.mdext' under markdown_extensions")]


def test_no_markdown_extensions_at_all():
    assert errors(GOOD.split("markdown_extensions")[0]) == [
        f"mkdocs.yml: markdown_extensions lacks {ext}: lessonkit's {why}; add '- {ext}' under markdown_extensions"
        for ext, why in [
            ("pymdownx.superfences", ("code regions and transcripts are fenced blocks (plain Markdown and "
                                     "fenced_code show them as raw fences)")),
            ("pymdownx.highlight", "regions are numbered with their file's own lines and highlighted by it"),
            ("lessonkit.site.mdext", "checks run through it in engines that ignore hooks (Zensical)")]]


def test_an_extension_that_includes_files():
    message = ("pulls text in from other files after lessonkit checked the page: an included claim is "
               "published unexpanded and an included figure unchecked; remove it (show code with a "
               "region directive, tool output with claims)")
    assert errors(GOOD + "  - pymdownx.snippets:\n      base_path: [docs]\n  - markdown_include.include\n") == [
        f"mkdocs.yml:8: markdown extension 'pymdownx.snippets' {message}",
        f"mkdocs.yml:10: markdown extension 'markdown_include.include' {message}"]


def test_an_extension_lessonkit_does_not_know():
    assert errors(GOOD + "  - zz\n  - markdown.extensions.smarty\n") == [
        ("mkdocs.yml:8: markdown extension 'zz' is not on lessonkit's list: its code runs on every page "
        "after the check and could change what the page says; remove it, or review its code and add "
        "it to ALLOWED_EXTENSIONS in lessonkit/site/config.py"),
        ("mkdocs.yml:9: markdown extension 'markdown.extensions.smarty' is not on lessonkit's list: its "
        "code runs on every page after the check and could change what the page says; remove it, or "
        "review its code and add it to ALLOWED_EXTENSIONS in lessonkit/site/config.py")]


def test_a_misspelt_extension_gets_a_suggestion():
    assert errors(GOOD + "  - pymdownx.detail\n") == [
        ("mkdocs.yml:8: markdown extension 'pymdownx.detail' is not on lessonkit's list: its code runs "
        "on every page after the check and could change what the page says; did you mean 'pymdownx.details'?")]


def test_the_extension_with_options():
    assert errors(GOOD.replace("  - lessonkit.site.mdext\n", "  - lessonkit.site.mdext:\n      passive: true\n")) == [
        ("mkdocs.yml:7: lessonkit.site.mdext is given options ('passive'): they can switch its checks off or "
        "point them at another repository; list it as '- lessonkit.site.mdext' alone")]


def test_a_plugin_other_than_search():
    assert errors(GOOD + "plugins:\n  - search\n  - awesome-pages\n") == [
        ("mkdocs.yml:10: plugin 'awesome-pages' is not on lessonkit's list: a plugin runs after lessonkit "
        "checked a page and can change what it says; remove it (plugins may be: material/search, search)")]


def test_a_plugin_that_expands_braces():
    assert errors(GOOD + "plugins:\n  - macros\n  - markdownextradata:\n      data: x\n") == [
        f"mkdocs.yml:{line}: plugin {name!r} also expands {{{{ ... }}}}: it would turn lessonkit's claims "
        "and directives into Jinja before they are checked; remove it from plugins"
        for line, name in [(9, "macros"), (10, "markdownextradata")]]
    # Other delimiters keep claims away from Jinja, but the plugin still runs after the check.
    assert errors(GOOD + "plugins:\n  - macros:\n      j2_variable_start_string: '[['\n") == [
        ("mkdocs.yml:9: plugin 'macros' is not on lessonkit's list: a plugin runs after lessonkit "
        "checked a page and can change what it says; remove it (plugins may be: material/search, search)")]


def test_inherit():
    assert errors("INHERIT: base.yml\n" + GOOD) == [
        ("mkdocs.yml:1: INHERIT pulls settings in from 'base.yml', which lessonkit does not read (MkDocs "
        "merges this file's over them); copy what is needed into mkdocs.yml and remove INHERIT")]


def test_python_tags_that_run_code():
    assert errors(GOOD + "extra:\n  a: !!python/object/apply:os.system ['touch x']\n"
                  "  b: !!python/name:zz.rewrite\n  c: !!python/tuple [1, 2]\n") == [
        ("mkdocs.yml:9: tag '!!python/object/apply:os.system' runs Python code while the engine reads "
        "this file, before lessonkit checks anything; remove it (of such tags only "
        "'!!python/object/apply:pymdownx.slugs.slugify' is allowed)"),
        ("mkdocs.yml:10: tag '!!python/name:zz.rewrite' imports 'zz' while the engine reads this file, "
        "and its code could change pages after lessonkit checked them; name a function of "
        "markdown.extensions.toc, material.extensions.emoji, pymdownx.arithmatex, pymdownx.emoji, "
        "pymdownx.slugs, pymdownx.superfences")]


def test_keys_the_engine_would_read_differently():
    assert errors(GOOD + "docs_dir: docs\n<<: {docs_dir: pages}\ndocs_dir: pages\n? !ENV [UNSET, plugins]\n: [x]\n") == [
        ("mkdocs.yml:9: merge key '<<' in the configuration brings in settings lessonkit does not read "
        "here; write them out"),
        "mkdocs.yml:10: docs_dir is given again (first at line 8); MkDocs keeps the last one: keep one",
        "mkdocs.yml:11: a key of the configuration is not plain text (tag '!ENV'); write the key out"]


def test_not_yaml_and_not_settings():
    assert errors("site_name: [x\n") == [
        ("mkdocs.yml:2: cannot be read as YAML: expected ',' or ']', but got '<stream end>'; fix it "
        "(MkDocs cannot read it either)")]
    assert errors("- site_name\n") == ["mkdocs.yml:1: is not a mapping of settings; write 'NAME: VALUE' lines"]


# The files: the configuration an engine reads, and any other it would read instead.

def test_second_configurations_beside_mkdocs_yml(tmp_path: Path):
    write_tree(tmp_path, {"mkdocs.yml": GOOD, "properdocs.yml": GOOD, "mkdocs.yaml": GOOD, "zensical.toml": ""})
    assert [str(e) for e in load_site_config_errors(tmp_path)] == [
        f"{name}: is a second site configuration: {why}, so a build would use settings lessonkit does "
        "not check; delete it (the site is configured in mkdocs.yml alone)"
        for name, why in [("properdocs.yml", "ProperDocs reads it instead of mkdocs.yml"),
                          ("mkdocs.yaml", ("MkDocs and ProperDocs read it when mkdocs.yml is missing or "
                                          "named with -f")),
                          ("zensical.toml", "Zensical reads it instead of mkdocs.yml")]]


@pytest.mark.parametrize("name", ["properdocs.yml", "mkdocs.yaml"])
def test_mkdocs_yml_renamed(tmp_path: Path, name: str):
    """Renamed as ProperDocs advises: one error, which does not assume mkdocs.yml is still there,
    from `check` and from the hooks under an engine that read the renamed file."""
    write_tree(tmp_path, {name: GOOD})
    expected = [(f"{name}: is the site's configuration under a name lessonkit does not read (mkdocs.yml is "
                 f"missing); rename it back: git mv {name} mkdocs.yml (ProperDocs reads mkdocs.yml too: "
                 "'properdocs build -f mkdocs.yml' builds it without advising the rename)")]
    assert [str(e) for e in load_site_config_errors(tmp_path)] == expected
    assert [str(e) for e in load_site_config_errors(tmp_path, tmp_path / name)] == expected


def test_missing_configuration(tmp_path: Path):
    assert [str(e) for e in load_site_config_errors(tmp_path)] == [
        ("mkdocs.yml: is missing: it says how MkDocs and ProperDocs build the site, and lessonkit "
        "checks that they check every page; restore it (with 'hooks: [hooks/lessonkit_hooks.py]')")]


# End to end: a configuration that publishes unchecked pages while the engine passes.

def test_check_refuses_a_configuration_that_publishes_unchecked_pages(demo_repo: Path):
    config = demo_repo / "mkdocs.yml"
    text = config.read_text()
    config.write_text("docs_dir: pages\n" + text.replace(f"hooks:\n  - {HOOKS}\n", "")
                      .replace("  - lessonkit.site.mdext\n", "#  - lessonkit.site.mdext\n"))
    write_tree(demo_repo, {"pages/index.md": "# Home\n\nERROR SUMMARY: 7 errors\n"})
    built = mkdocs_build(demo_repo)
    assert built.returncode == 0, built.stderr  # the engine alone publishes the unchecked page
    assert verify_main([str(demo_repo / "site")]) == 1  # nothing unexpanded shows it, but it lacks the mark
    done = subprocess.run([sys.executable, "-m", "lessonkit", "check", "--repo", str(demo_repo)],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        ("mkdocs.yml: hooks is missing: MkDocs and ProperDocs would publish every page unchecked; add "
        "'hooks: [hooks/lessonkit_hooks.py]'"),
        ("mkdocs.yml:1: docs_dir is 'pages': lessonkit checks the pages under docs/, so the site would "
        "publish pages it never checked; remove docs_dir or write 'docs_dir: docs'"),
        ("mkdocs.yml:5: markdown_extensions lacks lessonkit.site.mdext: lessonkit's checks run through it in "
        "engines that ignore hooks (Zensical); add '- lessonkit.site.mdext' under markdown_extensions"),
        "3 errors found"]


def test_a_nav_entry_to_a_missing_page_is_an_error_at_its_line(demo_repo: Path):
    """MkDocs only logs it (and -q hides that); check and the build refuse it, naming the nav's line."""
    from conftest import mkdocs_yml
    (demo_repo / "mkdocs.yml").write_text(mkdocs_yml("nav:\n  - Home: index.md\n  - Gone: gone.md\n"))
    line = (demo_repo / "mkdocs.yml").read_text().splitlines().index("  - Gone: gone.md") + 1
    message = (f"mkdocs.yml:{line}: the nav names 'gone.md', which docs/ does not hold, so the site would link to a "
               "page that is not there; write the page (docs/gone.md), or take the entry out of the nav")
    assert [str(e) for e in load_site_config_errors(demo_repo)] == [message]
    done = mkdocs_build(demo_repo)
    assert done.returncode == 1 and message in done.stderr
    (demo_repo / "docs/gone.md").write_text("# Back\n")
    assert load_site_config_errors(demo_repo) == []


def test_the_footer_s_copyright_line_is_read_as_the_reader_sees_it(tmp_path: Path):
    """Material shows `copyright` at the foot of every page: a figure there stands inside a course phrase."""
    folder = tmp_path / "site"
    folder.mkdir()
    shown = GOOD + "copyright: Recorded on 5 GPUs, 2026\n"
    found = [str(e) for e in site_config_errors(read_site_config(shown, "mkdocs.yml", str(folder)))]
    assert found == [("mkdocs.yml:8: copyright 'Recorded on 5 GPUs, 2026' shows the figure '5', which no phrase of "
                     "narrative.yml covers; no claim can produce a figure there: add the phrase around it to "
                     "narrative.yml with its reason, or leave the figure out")]
    (folder / "narrative.yml").write_text("on N GPUs, N: the number of machines and the year, an example\n")
    assert [str(e) for e in site_config_errors(read_site_config(shown, "mkdocs.yml", str(folder)))] == []


@pytest.mark.parametrize(("setting", "what"), [
    ("extra_javascript:\n  - assets/lessonkit.js\n  - extra.js\n", "extra_javascript 'extra.js': a script can write any text"),
    ("extra_javascript:\n  - path: mine.mjs\n    type: module\n", "extra_javascript 'mine.mjs': a script can write any text"),
    ("extra_css:\n  - assets/mine.css\n", "extra_css 'assets/mine.css': a stylesheet can write text with `content:`"),
    ("extra_templates:\n  - about.html\n", "extra_templates 'about.html': a template of the site's own"),
    ("theme:\n  name: material\n  custom_dir: mine\n", "theme.custom_dir 'mine': templates of the site's own"),
])
def test_a_stylesheet_script_or_template_of_the_sites_own_is_refused(setting: str, what: str):
    """What they write reaches the reader after the audit read the page's HTML: one error each, at its line."""
    found = errors(GOOD + setting)
    assert len(found) == 1 and found[0].startswith("mkdocs.yml:") and what in found[0], found
    named = what.split("'")[1]
    where = next(k + 1 for k, text in enumerate((GOOD + setting).split("\n")) if named in text)
    assert found[0].startswith(f"mkdocs.yml:{where}: "), found


def test_the_core_stylesheet_may_not_write_text(tmp_path: Path):
    """`content: "…"` with a letter or a digit is text in no page; an empty one, or one in a comment, is not."""
    (tmp_path / "docs/assets").mkdir(parents=True)
    css = tmp_path / "docs/assets/lessonkit.css"
    config = GOOD + "extra_css:\n  - assets/lessonkit.css\n"
    css.write_text('a::before { content: ""; }\n/* content: "42" */\n.x { width: max-content; }\n')
    assert [str(e) for e in site_config_errors(read_site_config(config, "mkdocs.yml", str(tmp_path)))] == []
    assert errors(GOOD + "extra_css:\n  - ./assets/lessonkit.css\ntheme:\n  name: material\n  custom_dir: overrides/\n") == []
    css.write_text(css.read_text() + '.lk-v::after {\n  content: " (5 runs)";\n}\n')
    found = [str(e) for e in site_config_errors(read_site_config(config, "mkdocs.yml", str(tmp_path)))]
    assert found == [("docs/assets/lessonkit.css:5: 'content: \" (5 runs)\"' writes text that is in no page, so no "
                      "check reads it; write the text in the page, or leave `content:` empty")]
