"""The cache on disk (lessonkit.cache, lessonkit.site.sitecache): a warm check reports exactly what a
check without it reports, and no entry outlives the contents, the stat or the core it came from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import PAGE, REPO, mkdocs_build, rehashed, wait_settled, write_tree

from lessonkit import cache
from lessonkit.cache import FOLDER, HashStore, Store
from lessonkit.site import sitecache
from lessonkit.site.check import CheckedSite, check_site


def check(repo: Path, *args: str, **env: str) -> list[str]:
    """The lines `python -m lessonkit check` writes to stderr, run as its own process."""
    done = subprocess.run([sys.executable, "-m", "lessonkit", "check", "--repo", str(repo), *args],
                          capture_output=True, text=True, cwd=repo, timeout=60,
                          env=dict(os.environ, PYTHONPATH=str(REPO), **env))
    assert done.returncode in (0, 1), done.stderr
    return done.stderr.splitlines()


def uncached(repo: Path) -> list[str]:
    return check(repo, "--no-cache")


def entries(repo: Path) -> list[Path]:
    return sorted(p for p in (repo / FOLDER).rglob("*") if p.is_file())


def same_stat_rewrite(path: Path, old: str, new: str) -> None:
    """Replace `old` by `new` (same length) and put the size and the mtime back as they were."""
    assert len(old) == len(new)
    st = os.stat(path)
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(path).st_size == st.st_size


@pytest.fixture
def settled(demo_repo: Path) -> Path:
    """The demo repository with a wrong claim, every file settled, its cache filled by a check."""
    page = demo_repo / "docs/index.md"
    page.write_text(page.read_text() + "\nIt has {{ 3 @ race:#reports }} reports.\n")
    wait_settled(demo_repo)
    first = check(demo_repo)
    assert first == uncached(demo_repo) and len(first) == 2 and "claim '3'" in first[0]
    assert {p.parent.name for p in entries(demo_repo)} == {"errors", "site", "hashes"}
    return demo_repo


def verdict(repo: Path) -> Path:
    """The file of the whole verdict of `check` (lessonkit.site.verdict) in the repository's cache."""
    return repo / FOLDER / "errors" / "verdict"


def test_a_warm_check_reads_the_cache_and_reports_the_same(settled: Path):
    site = CheckedSite(settled, keep="errors")
    assert [str(e) for e in site.check()] == check(settled)[:-1] == uncached(settled)[:-1]
    assert (site.checks, site.reloads, site.cache_hits) == (0, 0, 1)  # the verdict, before any hashing
    verdict(settled).unlink()  # without it, the site's errors and the page's result are read back
    site = CheckedSite(settled, keep="errors")
    assert [str(e) for e in site.check()] == check(settled)[:-1]
    assert (site.checks, site.reloads, site.cache_hits) == (0, 0, 2)


def test_a_warm_check_reads_every_files_hash_back_as_one_entry(settled: Path, monkeypatch):
    """Every file settled and unchanged: the scan's stamps find the stored hashes, and no file is
    looked up or hashed one by one; a changed stamp does not find them."""
    def refuse(*args):
        raise AssertionError("a warm check looked up a file's hash one by one")

    monkeypatch.setattr(sitecache, "contents", refuse)
    warm = CheckedSite(settled, keep="errors")
    assert [str(e) for e in warm.check()] == uncached(settled)[:-1]
    transcript = settled / "evidence/demo/s1/race.txt"
    st = os.stat(transcript)
    os.utime(transcript, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same bytes and mtime, a new ctime
    wait_settled(settled)
    with pytest.raises(AssertionError, match="one by one"):
        CheckedSite(settled, keep="errors").check()


def test_a_warm_check_reads_back_the_whole_verdict_without_reading_a_page(settled: Path, monkeypatch):
    """Nothing changed since a check stored its verdict: no page file is read, no page result looked up."""
    def refuse(*args, **kwargs):
        raise AssertionError("a warm check of an unchanged site read a page")

    want = uncached(settled)[:-1]
    monkeypatch.setattr(CheckedSite, "_read", refuse)
    monkeypatch.setattr(CheckedSite, "_known", refuse)
    site = CheckedSite(settled, keep="errors")
    assert [str(e) for e in site.check()] == want and site.cache_hits == 1  # the verdict


# What a `check` process imported besides the base layer, printed after its report.
LOADED = ("import sys; from lessonkit.cli.commands import main; status = main(['check', '--repo', sys.argv[1]]); "
          "print(sorted(m for m in sys.modules if m in ('lessonkit.site.check', 'lessonkit.pages.page', "
          "'lessonkit.evidence.sets', 'lessonkit.evidence.manifest', 'lessonkit.cli.accept', "
          "'lessonkit.site.config', 'yaml')))")


def loaded(repo: Path) -> str:
    """The modules of LOADED that a `check` process of `repo` imported."""
    done = subprocess.run([sys.executable, "-c", LOADED, str(repo)], capture_output=True, text=True,
                          cwd=repo, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    return done.stdout.splitlines()[-1]


def test_a_check_that_finds_its_verdict_loads_neither_the_evidence_nor_the_page_modules(settled: Path):
    """The stored verdict is read with the base layer alone (lessonkit.site.verdict), mkdocs.yml's
    part with it; a check that must check a page imports the core, and reads mkdocs.yml."""
    assert loaded(settled) == "[]"
    verdict(settled).unlink()
    assert loaded(settled) == ("['lessonkit.evidence.manifest', 'lessonkit.evidence.sets', 'lessonkit.pages.page', "
                        "'lessonkit.site.check', 'lessonkit.site.config', 'yaml']")


def test_mkdocs_yml_part_of_the_verdict_is_read_again_when_a_file_its_rules_read_changes(settled: Path):
    """The verdict keeps mkdocs.yml's errors; its key covers the other configurations' names and
    the files under docs/ as well as mkdocs.yml, so a second configuration, or text written into
    the core's stylesheet, is reported by the next check as by a check without the cache."""
    second = "properdocs.yml: is a second site configuration"
    (settled / "properdocs.yml").write_text("site_name: other\n")
    wait_settled(settled)
    assert check(settled) == uncached(settled) and any(line.startswith(second) for line in check(settled))
    (settled / "properdocs.yml").unlink()
    config = settled / "mkdocs.yml"
    config.write_text(config.read_text() + "extra_css:\n  - assets/lessonkit.css\n")
    css = settled / "docs/assets/lessonkit.css"
    css.parent.mkdir()
    css.write_text(".lk-v { color: red; }\n")
    wait_settled(settled)
    assert check(settled) == uncached(settled) and not any(second in line or "css" in line for line in check(settled))
    assert loaded(settled) == "[]"  # mkdocs.yml's part is read from the verdict, with the stylesheet as it is
    css.write_text('.lk-v::after { content: " (5 runs)"; }\n')
    wait_settled(settled)
    assert check(settled) == uncached(settled)
    assert any(line.startswith("docs/assets/lessonkit.css:1: 'content:") for line in check(settled))


def test_no_verdict_is_kept_while_a_lesson_reads_an_input_outside_its_folder(demo_repo: Path):
    """The verdict's key covers the files under evidence/ and code/ (lessonkit.site.verdict): a
    runs.toml that names an input elsewhere keeps the check from storing one."""
    (demo_repo / "shared").mkdir()
    (demo_repo / "shared/common.h").write_text("#define N 4\n")
    runs = demo_repo / "code/demo/runs.toml"
    runs.write_text(runs.read_text().replace('inputs = ["demo.cu"]', 'inputs = ["demo.cu", "../../shared/common.h"]'))
    wait_settled(demo_repo)
    assert check(demo_repo) == uncached(demo_repo)
    assert not verdict(demo_repo).exists()
    runs.write_text(runs.read_text().replace(', "../../shared/common.h"', ""))
    wait_settled(demo_repo)
    check(demo_repo)
    assert verdict(demo_repo).exists()


def test_the_verdict_is_not_served_after_a_same_size_page_edit_with_its_mtime_restored(settled: Path):
    same_stat_rewrite(settled / "docs/index.md", "{{ 3 @ race:#reports }}", "{{ 2 @ race:#reports }}")
    assert uncached(settled) == []
    assert check(settled) == []  # within the racy window: no verdict is read or kept
    wait_settled(settled)
    assert check(settled) == []  # settled: a new ctime, a new key


@pytest.mark.parametrize("change", ["added", "removed"])
def test_the_verdict_is_not_served_after_a_page_is_added_or_removed(settled: Path, change: str):
    other = settled / "docs/other.md"
    if change == "removed":
        other.write_text("# Other\n\nIt has {{ 5 @ demo/race:#reports }} reports.\n")
        wait_settled(settled)
        assert any("claim '5'" in line for line in check(settled))
        other.unlink()
    else:
        other.write_text("# Other\n\nIt has {{ 5 @ demo/race:#reports }} reports.\n")
    wait_settled(settled)
    want = uncached(settled)
    assert any("claim '5'" in line for line in want) == (change == "added")
    assert check(settled) == want


def test_a_same_size_transcript_edit_with_its_mtime_restored_is_not_served(settled: Path):
    manifest = settled / "evidence/demo/manifest.json"
    transcript = settled / "evidence/demo/s1/race.txt"
    old_hash = cache.hashlib.sha256(transcript.read_bytes()).hexdigest()
    same_stat_rewrite(transcript, "[120 hazards]", "[121 hazards]")
    new_hash = cache.hashlib.sha256(transcript.read_bytes()).hexdigest()
    same_stat_rewrite(manifest, manifest.read_text(), rehashed(manifest, old_hash, new_hash))  # the forger fixes it
    want = uncached(settled)
    assert any("claim '120'" in line and "'121'" in line for line in want)
    assert check(settled) == want  # within the racy window: hashed from the bytes
    wait_settled(settled)
    assert check(settled) == want  # settled again: its stat is not the one the hash was stored with


def test_a_same_size_region_edit_is_not_served(settled: Path):
    same_stat_rewrite(settled / "code/demo/demo.cu", "snippet: body\n", "snippet: bodx\n")
    want = uncached(settled)
    assert any("no region 'body'" in line for line in want)
    assert check(settled) == want
    wait_settled(settled)
    assert check(settled) == want


def test_an_edited_page_gets_a_new_result(settled: Path):
    page = settled / "docs/index.md"
    page.write_text(page.read_text().replace("{{ 3 @ race:#reports }}", "{{ 2 @ race:#reports }}"))
    assert check(settled) == uncached(settled) == []
    page.write_text(page.read_text().replace("{{ 2 @ race:#reports }}", "{{ 4 @ race:#reports }}"))
    wait_settled(settled)
    assert check(settled) == uncached(settled) != []


def test_a_page_checked_for_its_rendering_is_checked_again_when_its_front_matter_or_the_rendering_changes(
        settled: Path):
    """check audits a page as rendered, so its result also depends on the page's front matter (its
    narrative declarations) and on mkdocs.yml's extensions: editing either is a new key."""
    page = settled / "docs/index.md"
    body = page.read_text().replace("{{ 3 @ race:#reports }}", "{{ 2 @ race:#reports }}") + "Day 120.\n"
    page.write_text('---\nnarrative:\n  "day 120": the day of the course\n---\n' + body)
    wait_settled(settled)
    assert check(settled) == uncached(settled) == []
    page.write_text('---\nnarrative:\n  "day 121": the day of the course\n---\n' + body)  # the same body
    wait_settled(settled)
    want = uncached(settled)
    assert [line.split(": ", 1)[1][:13] for line in want[:-1]] == ["narrative fig", "figure '120' "]
    assert check(settled) == want
    site = CheckedSite(settled, keep="errors")
    site.check()
    with_toc = settled / "mkdocs.yml"
    with_toc.write_text(with_toc.read_text().replace("  - admonition\n", "  - admonition\n  - toc\n"))
    wait_settled(settled)
    again = CheckedSite(settled, keep="errors")
    assert [str(e) for e in again.check()] == want[:-1] and again.checks == 1  # rendered anew, not served


def test_editing_lessonkit_ignores_every_entry(settled: Path, tmp_path_factory, monkeypatch):
    core = tmp_path_factory.mktemp("core") / "lessonkit"
    shutil.copytree(REPO / "lessonkit", core, ignore=shutil.ignore_patterns("__pycache__"))
    warm = CheckedSite(settled, keep="errors")
    warm.check()
    assert warm.cache_hits == 1  # the verdict
    edited = core / "pages" / "claims.py"  # a module of a subpackage counts as a base one does
    edited.write_text(edited.read_text() + "\n# an edit\n")
    monkeypatch.setattr(cache, "_CORE", core)
    cache.core_version.cache_clear()
    try:
        cold = CheckedSite(settled, keep="errors")
        assert [str(e) for e in cold.check()] == uncached(settled)[:-1]
        assert (cold.cache_hits, cold.checks, cold.reloads) == (0, 1, 1)
    finally:
        cache.core_version.cache_clear()


@pytest.mark.parametrize("damage", ["truncated", "flipped byte", "empty", "garbage", "a folder"])
def test_a_damaged_cache_file_is_ignored_and_rewritten(settled: Path, damage: str):
    want = uncached(settled)
    for path in entries(settled):
        data = path.read_bytes()
        if damage == "a folder":
            path.unlink()
            path.mkdir()
            continue
        path.write_bytes({"truncated": data[:len(data) // 2],
                          "flipped byte": data[:-3] + bytes([data[-3] ^ 0x20]) + data[-2:],
                          "empty": b"", "garbage": os.urandom(len(data))}[damage])
    site = CheckedSite(settled, keep="errors")
    assert [str(e) for e in site.check()] == want[:-1] and site.cache_hits == 0
    assert check(settled) == want
    if damage != "a folder":  # rewritten whole: the next process reads them
        again = CheckedSite(settled, keep="errors")
        again.check()
        assert again.cache_hits == 1  # the verdict
        verdict(settled).unlink()  # the site's errors and the page's result were rewritten too
        again = CheckedSite(settled, keep="errors")
        again.check()
        assert (again.checks, again.cache_hits) == (0, 2)


def test_the_cache_can_be_turned_off(demo_repo: Path):
    wait_settled(demo_repo)
    assert check(demo_repo, LESSONKIT_CACHE="off") == check(demo_repo, "--no-cache") == []
    assert not (demo_repo / FOLDER).exists()
    assert check_site(demo_repo, store=Store(None)) == []
    assert not (demo_repo / FOLDER).exists()


def test_nothing_is_stored_for_files_changed_in_the_racy_window(demo_repo: Path, full_racy_window: int):
    assert check(demo_repo) == []  # every file was written just now
    assert not [p for p in entries(demo_repo) if p.parent.name in ("errors", "site")]


def test_a_page_whose_inputs_change_while_it_is_checked_is_not_stored(demo_repo: Path):
    wait_settled(demo_repo)
    site = CheckedSite(demo_repo)
    site.refresh()
    source = demo_repo / "code/demo/demo.cu"
    source.write_text(source.read_text() + "// later\n")  # after the refresh scanned it
    site.page(PAGE, "docs/index.md")
    assert site.checks == 1
    assert not (demo_repo / FOLDER / "pages").exists()


@pytest.mark.parametrize("changed", ["code/demo/runs.toml", "code/twin/runs.toml", "evidence/demo/s1/race.txt",
                                     "evidence/demo/new.txt"])
def test_a_page_whose_runs_toml_or_set_changes_while_it_is_checked_is_not_stored(demo_repo: Path, changed: str):
    _twin_lesson(demo_repo)  # another lesson: its runs.toml counts for every set (a [harness] says how to read)
    site = CheckedSite(demo_repo)
    site.refresh()
    path = demo_repo / changed
    path.write_text((path.read_text() if path.exists() else "") + "\n")  # after the refresh scanned it
    site.page(PAGE, "docs/index.md")
    assert site.checks == 1
    assert not (demo_repo / FOLDER / "pages").exists()
    untouched = CheckedSite(demo_repo)  # the same page over settled files is stored: the test can fail
    wait_settled(demo_repo)
    untouched.refresh()
    untouched.page(PAGE, "docs/index.md")
    assert (demo_repo / FOLDER / "pages").exists()


def test_a_stored_build_result_is_the_page_result(demo_repo: Path):
    wait_settled(demo_repo)
    once = CheckedSite(demo_repo)
    once.refresh()
    first = once.page(PAGE, "docs/index.md")
    again = CheckedSite(demo_repo)
    again.refresh()
    second = again.page(PAGE, "docs/index.md")
    assert (again.checks, again.reloads, again.cache_hits) == (0, 0, 2)
    assert second == first and second is not first


def test_hashes_are_served_only_for_the_stat_they_were_stored_with(tmp_path: Path, full_racy_window: int):
    path = tmp_path / "t.txt"
    path.write_text("aaaa")
    store = HashStore(Store(tmp_path / FOLDER))
    st = os.stat(path)
    store.remember(str(path), st, "fresh")
    assert store.lookup(str(path), st) is None  # changed just now: neither stored nor served
    wait_settled(tmp_path, full_racy_window)
    st = os.stat(path)
    store.remember(str(path), st, "settled")
    store.save()
    reread = HashStore(Store(tmp_path / FOLDER))
    assert reread.lookup(str(path), st) == "settled"
    path.write_text("bbbb")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime; the ctime moved
    assert reread.lookup(str(path), os.stat(path)) is None
    fresh = tmp_path / "u.txt"
    fresh.write_text("x")
    planted = HashStore(Store(tmp_path / FOLDER))
    planted._entries()[str(fresh)] = (cache.stamp(os.stat(fresh)), "planted")
    assert planted.lookup(str(fresh), os.stat(fresh)) is None  # even its own stamp, while racy


@pytest.mark.parametrize(("value", "ns"), [("300", 300_000_000), ("20", 100_000_000), ("", 2_000_000_000),
                                           ("fast", 2_000_000_000), ("-5", 2_000_000_000)])
def test_the_racy_window_is_two_seconds_unless_set_no_shorter_than_100_ms(monkeypatch, value: str, ns: int):
    monkeypatch.setenv(cache.RACY_ENV, value)
    assert cache._racy_ns() == ns


def test_concurrent_writers_leave_whole_entries(tmp_path: Path):
    store = Store(tmp_path / FOLDER)
    values = {f"{k:064x}": "x" * (1 << 16) + str(k) for k in range(8)}
    bad = []

    def write(key: str) -> None:
        for _ in range(20):
            store.put("k", "shared", key, values[key])
            got = Store(tmp_path / FOLDER).get("k", "shared", key)
            if got is not None and got != values[key]:
                bad.append(key)

    threads = [threading.Thread(target=write, args=(key,)) for key in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    assert [p.name for p in (tmp_path / FOLDER / "k").iterdir()] == ["shared"]  # no temporary files


def test_a_key_depends_on_the_value_not_on_how_it_was_built():
    """Equal values give equal keys whether their strings are interned or shared (marshal's newer
    formats write both differently: a result read back from the cache got another key)."""
    made = "DAY27-GLOBAL".lower()  # made at run time: not interned
    assert made is not sys.intern("day27-global")
    assert cache.digest((made, made), [1]) == cache.digest((sys.intern("day27-global"), made.upper().lower()), [1])
    assert cache.digest("a") != cache.digest("b") and cache.digest(("a",)) != cache.digest(["a"])


def test_a_second_build_checks_and_audits_nothing_and_loads_no_evidence(demo_repo: Path, tmp_path: Path,
                                                                          monkeypatch):
    """Every page's result and audit, stored by the first build, is found by the second under the
    same key: the key of a result read back is the key of the result worked out."""
    wait_settled(demo_repo)
    timings = tmp_path / "timings.jsonl"
    monkeypatch.setenv("LESSONKIT_TIMINGS", str(timings))
    for _ in range(2):
        done = mkdocs_build(demo_repo)
        assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in timings.read_text().splitlines())
    assert first["page_checks"] >= 1 and first["evidence_loads"] == 1
    assert (second["page_checks"], second["evidence_loads"]) == (0, 0)


def test_what_the_theme_shows_is_read_once_for_the_same_built_page(demo_repo: Path, monkeypatch):
    """The chrome's errors (lessonkit.site.chrome) are a function of the built page, its content and
    the texts it may show: a later build's session reads them back for the same three, and reads
    the page again when any differs."""
    import lessonkit.site.check as check_module
    from lessonkit.site.chrome import chrome_errors

    reads = []
    monkeypatch.setattr(check_module, "chrome_errors", lambda *a: reads.append(a) or chrome_errors(*a))
    page = "<html><title>Day 27</title><body><nav>Part 4</nav><main>x</main></body></html>"
    want = [str(e) for e in chrome_errors(page, "x", "docs/a.md", ["Day 27"])]
    assert len(want) == 1 and "'Part 4'" in want[0]
    for allowed in (["Day 27"], ["Day 27", "Day 27"], ["Day 27"]):  # the same texts, however listed
        assert [str(e) for e in CheckedSite(demo_repo).chrome("docs/a.md", page, "x", allowed)] == want
    assert len(reads) == 1
    assert CheckedSite(demo_repo).chrome("docs/a.md", page, "x", ["Day 27", "Part 4"]) == []
    assert CheckedSite(demo_repo).chrome("docs/a.md", page.replace("4", "5"), "x", ["Day 27"]) != []
    assert len(reads) == 3


def test_page_key_covers_each_input(tmp_path: Path):
    base = {"repo": tmp_path, "path": "docs/p.md", "offset": 0, "markdown": "x", "catalog": "c",
            "sets": (("s", "1"),), "files": (("a.cu", "/r/a.cu", "h"),)}
    keys = {sitecache.page_key(**base)}
    for field, other in [("path", "docs/q.md"), ("offset", 1), ("markdown", "y"), ("catalog", "d"),
                         ("sets", (("s", "2"),)), ("files", (("a.cu", "/r/a.cu", "i"),)),
                         ("repo", tmp_path / "elsewhere")]:
        keys.add(sitecache.page_key(**{**base, field: other}))
    assert len(keys) == 8


def test_a_cache_folder_in_a_new_place_is_made(tmp_path: Path):
    write_tree(tmp_path, {"x": ""})
    store = Store(tmp_path / "deep" / FOLDER)
    store.put("k", "n", "0" * 64, {"a": (1, 2)})
    assert store.get("k", "n", "0" * 64) == {"a": (1, 2)} and store.get("k", "n", "1" * 64) is None


def test_a_set_behind_a_symlinked_folder_is_read_through(settled: Path, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "demo"
    shutil.move(settled / "evidence/demo", elsewhere)
    (settled / "evidence/demo").symlink_to(elsewhere, target_is_directory=True)
    wait_settled(settled)
    assert check(settled) == uncached(settled)
    transcript, manifest = elsewhere / "s1/race.txt", elsewhere / "manifest.json"
    old_hash = cache.hashlib.sha256(transcript.read_bytes()).hexdigest()
    transcript.write_text(transcript.read_text().replace("[120 hazards]", "[121 hazards]"))
    new_hash = cache.hashlib.sha256(transcript.read_bytes()).hexdigest()
    manifest.write_text(rehashed(manifest, old_hash, new_hash))
    wait_settled(settled), wait_settled(elsewhere)
    want = uncached(settled)
    assert any("claim '120'" in line for line in want)
    assert check(settled) == want


def test_a_transcript_read_in_its_racy_window_is_not_kept_parsed(demo_repo: Path, full_racy_window: int):
    from lessonkit.evidence import sets as evidence

    site = CheckedSite(demo_repo, store=Store(None))
    site.refresh()
    before = dict(evidence._parse_cache)
    ev = site.site.evidence.sets["demo"]
    ev.transcript("s1/race")
    assert evidence._parse_cache == before  # just written: read bytes may not be the hashed ones


def _twin_lesson(repo: Path, harness_edit: tuple[str, str] = ("", "")) -> None:
    """Lesson `twin`: demo's program and runs under another name (its [harness] edited by
    `harness_edit`), and its set recording demo's transcripts byte for byte."""
    from conftest import BARE, RACE, record_set
    shutil.copytree(repo / "code/demo", repo / "code/twin")
    runs = repo / "code/twin/runs.toml"
    runs.write_text(runs.read_text().replace('lesson = "demo"', 'lesson = "twin"').replace(*harness_edit))
    record_set(repo, "twin", {"race": RACE, "bare": BARE})
    wait_settled(repo)


def _parses(monkeypatch) -> list[str]:
    """The files parse_transcript reads from now on, in order."""
    from lessonkit.evidence import sets as evidence
    seen: list[str] = []
    real = evidence.parse_transcript
    monkeypatch.setattr(evidence, "parse_transcript",
                        lambda text, shown, harness=None, **how: seen.append(shown) or real(text, shown, harness, **how))
    monkeypatch.setattr(evidence, "_parse_cache", {})
    return seen


def test_the_same_bytes_read_by_the_same_harness_in_two_lessons_are_parsed_once(demo_repo: Path, monkeypatch):
    _twin_lesson(demo_repo)
    seen = _parses(monkeypatch)
    sets = CheckedSite(demo_repo, store=Store(None)).site.evidence.sets
    demo, twin = sets["demo"].transcript("s1/bare"), sets["twin"].transcript("s1/bare")
    assert seen == ["evidence/demo/s1/bare.txt"]
    assert twin.source == "evidence/twin/s1/bare.txt" and demo.source == "evidence/demo/s1/bare.txt"
    assert twin.collections() == demo.collections() and twin.collections()["rows"]
    assert twin.derived is demo.derived  # the query indexes are built once for both


def test_the_size_of_bytes_parsed_elsewhere_is_known_without_reading_them(demo_repo: Path, monkeypatch):
    from lessonkit.evidence.sets import EvidenceSet
    _twin_lesson(demo_repo)
    _parses(monkeypatch)
    sets = CheckedSite(demo_repo, store=Store(None)).site.evidence.sets
    sets["demo"].transcript("s1/bare")  # parsed here: its bytes read once
    read: list[str] = []
    real = EvidenceSet.transcript_text
    monkeypatch.setattr(EvidenceSet, "transcript_text", lambda ev, name: read.append(name) or real(ev, name))
    size = (demo_repo / "evidence/twin/s1/bare.txt").stat().st_size
    assert sets["twin"].transcript_size("s1/bare") == size and read == []  # the parse knows the size
    assert sets["twin"].transcript_size("s1/race") == (demo_repo / "evidence/twin/s1/race.txt").stat().st_size
    assert read == ["s1/race"]  # never parsed: read for its size, once
    assert sets["twin"].transcript_size("s1/race") and read == ["s1/race"]


def test_the_same_bytes_read_by_another_harness_are_parsed_again(demo_repo: Path, monkeypatch):
    _twin_lesson(demo_repo, ('threads = "int"', 'threads = "str"'))
    seen = _parses(monkeypatch)
    sets = CheckedSite(demo_repo, store=Store(None)).site.evidence.sets
    demo, twin = sets["demo"].transcript("s1/bare"), sets["twin"].transcript("s1/bare")
    assert seen == ["evidence/demo/s1/bare.txt", "evidence/twin/s1/bare.txt"]
    assert {r["threads"] for r in demo.collections()["rows"]} != {r["threads"] for r in twin.collections()["rows"]}


def test_a_stray_compiled_file_in_a_set_is_seen(settled: Path):
    (settled / "evidence/demo/stray.pyc").write_bytes(b"\0")
    wait_settled(settled)
    want = uncached(settled)
    assert any("stray.pyc: is not in the manifest" in line for line in want)
    assert check(settled) == want


def test_a_region_directive_over_two_lines_depends_on_its_file(settled: Path):
    page = settled / "docs/index.md"
    text = page.read_text().replace("{{ region demo/demo.cu body ", "{{ region demo/demo.cu\nbody ")
    page.write_text(text)
    wait_settled(settled)
    assert check(settled) == uncached(settled)
    same_stat_rewrite(settled / "code/demo/demo.cu", "snippet: body\n", "snippet: bodx\n")
    wait_settled(settled)
    want = uncached(settled)
    assert any("no region 'body'" in line for line in want)
    assert check(settled) == want


def test_a_set_whose_name_is_not_one_word_is_an_input_all_the_same(settled: Path):
    from conftest import BARE, RACE, record_set, rewrite_provenance

    record_set(settled, "demo", {"race": RACE, "bare": BARE}, set_name="demo.v2")
    page = settled / "docs/index.md"
    page.write_text(page.read_text() + "\nRecorded on an {{ NVIDIA H200 @ demo.v2:gpu }}.\n")
    wait_settled(settled)
    assert check(settled) == uncached(settled)
    rewrite_provenance(settled, "demo.v2", gpu="NVIDIA H100")
    wait_settled(settled)
    want = uncached(settled)
    assert any("'NVIDIA H100'" in line for line in want)
    assert check(settled) == want


def test_a_page_citing_a_set_whose_name_holds_a_dot_is_served_warm(settled: Path):
    """A set named '<lesson>-<suffix>.<n>' (day62-racecheck-cuda12.4) is one input, read with its
    lesson's runs.toml: a warm check answers the page from the cache instead of checking it again."""
    from conftest import BARE, RACE, record_set

    record_set(settled, "demo", {"race": RACE, "bare": BARE}, set_name="demo-cuda12.4")
    page = settled / "docs/index.md"
    page.write_text(page.read_text() + "\nRecorded on an {{ NVIDIA H200 @ demo-cuda12.4:gpu }}.\n")
    wait_settled(settled)
    assert check(settled) == uncached(settled)
    verdict(settled).unlink()  # the page's own entry is read, not the whole verdict
    warm = CheckedSite(settled, keep="errors")
    warm.check()
    assert (warm.checks, warm.reloads, warm.cache_hits) == (0, 0, 2)  # the site's errors, the page


@pytest.mark.parametrize("claim", ["{{ NVIDIA H200 @ demo.v2:gpu }}", "{{ NVIDIA H200 @\ndemo.v2:gpu }}",
                                   "{{ NVIDIA\nH200 @ demo.v2:gpu }}"])
def test_a_page_is_kept_with_the_sets_its_check_read(settled: Path, claim: str):
    """No second parser guesses a page's inputs from its text: the check records every set it looks
    up as it looks it up, however the claim is written over lines, and the page's entry on disk holds
    them, each checked when it is read. A change to the set then shows, from cold."""
    from conftest import BARE, RACE, record_set, rewrite_provenance

    record_set(settled, "demo", {"race": RACE, "bare": BARE}, set_name="demo.v2")
    page = settled / "docs/index.md"
    page.write_text(page.read_text() + f"\nRecorded on an {claim}.\n")
    wait_settled(settled)
    first = check(settled)
    assert first == uncached(settled) and not any("H100" in line for line in first)
    verdict(settled).unlink()  # the page's own entry is read, not the whole verdict
    warm = CheckedSite(settled, keep="errors")
    warm.check()
    assert (warm.checks, warm.cache_hits) == (0, 2)  # the site's errors, the page
    rewrite_provenance(settled, "demo.v2", gpu="NVIDIA H100")
    wait_settled(settled)
    want = uncached(settled)
    assert any("'NVIDIA H100'" in line for line in want)
    assert check(settled) == want


@pytest.mark.parametrize("named, made", [
    ("{{ diagram demo/diagrams/d.svg }}", {"code/demo/diagrams/d.svg": '<svg viewBox="0 0 9 9"><title>t</title></svg>'}),
    ("A tile of {{ 4 @ other/x.cu:kTiles }}.", {"code/other/x.cu": "constexpr int kTiles = 4;\n"}),
])
def test_a_file_a_page_looked_for_is_a_dependency_until_it_appears(settled: Path, named: str, made: dict[str, str]):
    """A file the page names that does not exist yet (a diagram, a constant in a folder not made yet) is
    recorded as looked for, or the folders under code/ are in the catalog: when it appears, the cached
    error gives way to what the page says then."""
    page = settled / "docs/index.md"
    page.write_text(page.read_text() + f"\n{named}\n")
    wait_settled(settled)
    before = uncached(settled)
    assert check(settled) == before
    write_tree(settled, made)
    wait_settled(settled)
    after = uncached(settled)
    assert after != before and check(settled) == after

