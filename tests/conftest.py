"""Fixture trees for the tests: small lessons, evidence sets and sites, made on the spot."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

# The cache's racy window (lessonkit.cache.RACY_NS: how long after a change a file's stat does not yet
# stand for its bytes), 250 ms for these processes and every process they start, set before lessonkit
# is imported: a test waits for its files to settle (wait_settled) that long instead of two seconds.
# The tests of the window itself ask for the full one (full_racy_window).
os.environ.setdefault("LESSONKIT_RACY_MS", "250")

from lessonkit import cache
from lessonkit.cache import Store
from lessonkit.evidence.manifest import (
    Manifest,
    TranscriptEntry,
    input_hashes,
    manifest_to_text,
    parse_manifest,
    read_manifest,
    sha256_file,
    write_manifest,
)
from lessonkit.pages.marks import strip
from lessonkit.site.check import CheckedSite, Site

REPO = Path(__file__).resolve().parent.parent
HOOKS = REPO / "hooks" / "lessonkit_hooks.py"

SOURCE = """\
// a tiny lesson
__global__ void k(float* a) {
    // snippet: body
    a[threadIdx.x] += 1.0f;
    a[threadIdx.x] *= 2.0f;
    // end snippet
}
"""

BUILD = "nvcc -lineinfo -arch=sm_90 -o demo demo.cu"

RUNS = f"""\
lesson = "demo"
inputs = ["demo.cu"]

[build]
sm_90 = "{BUILD}"

[[run]]
name = "race"
command = "compute-sanitizer --tool racecheck ./demo"

[[run]]
name = "bare"
command = "./demo"
gate = true
""" + r"""
[harness.types]
warp_size = "int"
threads = "int"
mismatches = "int"
first_bad = "int"
gated = "yes-no"

[[harness.table]]
collection = "rows"
header = '^threads \s*\|\s* kernel \s*\|\s* mismatches \s*\|\s* first\ bad \s*\|\s* gated$'
row_starts = '^[0-9] | \|'
row = '''
    ^(?P<threads>\d+) \s*\|\s* (?P<kernel>\w+) \s*\|\s* (?P<mismatches>\d+) \s*\|\s*
    (?:-|(?P<first_bad>\d+)) \s*\|\s* (?P<gated>yes|no)$'''

[[harness.line]]
pattern = '''^device:\s+(?P<gpu>.+?) \s+\|\s+ compute\ capability\s+(?P<compute_capability>\S+)
             \s+\|\s+ warp\ size\s+(?P<warp_size>\d+)$'''

[[harness.line]]
pattern = '^mode:\s+(?P<mode>\S+)$'
"""

README = f"""# demo

```console
{BUILD}
./demo
compute-sanitizer --tool racecheck ./demo
```
"""

RACE = """\
========= COMPUTE-SANITIZER
device: NVIDIA H200 | compute capability 9.0 | warp size 32
mode: buggy
threads | kernel | mismatches | first bad | gated
     32 | k      |          0 |         - | no
    256 | k      |          7 |        64 | no
========= Error: Race reported between Read access at k(float *)+0x10 in demo.cu:4
=========     and Write access at k(float *)+0x20 in demo.cu:4 [120 hazards]
========= 
========= Warning: Race reported between Read access at k(float *)+0x10 in demo.cu:4
=========     and Write access at k(float *)+0x20 in demo.cu:4 [8 hazards]
========= 
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
"""

BARE = """\
device: NVIDIA H200 | compute capability 9.0 | warp size 32
mode: all
threads | kernel | mismatches | first bad | gated
     32 | k      |          0 |         - | no
"""

DATE = "2026-11-29T12:00:00Z"  # every recording's date in record_set; STARTED is a moment into its second
STARTED = 1_795_953_600.25

PROVENANCE = {"gpu": "NVIDIA H200", "compute_capability": "9.0", "driver": "580.159.04",
              "nvcc": "13.0.88", "compute_sanitizer": "2025.3.1.0"}

PAGE = """\
# Demo

{{ evidence demo }}

{{ region demo/demo.cu body highlight=4@race:reports[severity=Error].line }}

racecheck found {{ 2 @ race:#reports }} reports; the error has {{ 120 @ race:reports[severity=Error].hazards }} hazards,
and it ends with RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning).

{{ transcript race }}
"""


def commit(repo: Path) -> None:
    """Commit everything, as an author has before a refresh."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)
    if not (repo / ".git").exists():
        git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=author", "-c", "user.email=author@example.org", "commit", "-q", "-m", "pages")


def write_tree(root: Path, files: dict[str, str]) -> None:
    """Write {relative path: text} under root."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` (a set's sessions' folders too) by its path there, and its bytes."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def record_set(repo: Path, lesson: str, transcripts: dict[str, str | list[str]], set_name: str | None = None,
               provenance: dict | None = None, arch: str = "sm_90", walls: dict[str, list[float]] | None = None,
               refresh_ids: dict[str, list[str | None]] | None = None, refresh: str | None = None,
               more_sessions: list[dict[str, str | list[str]]] | None = None,
               session_provenance: list[dict] | None = None) -> Path:
    """Write evidence/<set>/ as the refresh would: transcripts, hashes of today's inputs, manifest.

    A list of texts records that many repeats of the run (NAME.r1 .. NAME.rN). The transcripts
    are session s1's; `more_sessions` adds s2, s3 ... with their own. `walls` gives a run's wall
    times (default 1.5 s each), `refresh_ids` its recordings' refresh ids in s1 (default none, as
    before refreshes were noted; later sessions: one id each), `refresh` the set's refresh command,
    `session_provenance` each session's own provenance beyond what `provenance` gives.
    """
    from lessonkit.evidence.manifest import (
        Session,
        entry_name,
        recording_file,
        recording_name,
        split_provenance,
    )
    from lessonkit.evidence.spec import RunSpec, load_spec

    spec = load_spec(repo / "code", lesson)
    set_name = set_name or lesson
    folder = repo / "evidence" / set_name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    entries = {}
    sessions = {}
    fixed, own = split_provenance(provenance or PROVENANCE)
    for number, texts_of in enumerate([transcripts, *(more_sessions or [])], start=1):
        sid = f"s{number}"
        (folder / sid).mkdir()
        extra = (session_provenance or [])[number - 1] if number <= len(session_provenance or []) else {}
        sessions[sid] = Session(sid, {**own, "started": DATE, "gpu_uuid": f"GPU-{number:08d}", **extra})
        for group, texts in texts_of.items():
            texts = [texts] if isinstance(texts, str) else texts
            run = spec.run(group) or RunSpec(group, "?", 300.0, False, ())
            inputs = input_hashes(repo, spec, run, spec.build[arch])
            fmt = "json" if group.endswith("-json") else "text"
            for k, text in enumerate(texts, start=1):
                name = entry_name(sid, recording_name(group, k, len(texts)))
                file = f"{sid}/" + recording_file(f"{group}.{'json' if fmt == 'json' else 'txt'}", k, len(texts))
                (folder / file).write_text(text, encoding="utf-8")
                wall_s = (walls or {}).get(group, [1.5] * len(texts))[k - 1] if number == 1 else 1.5
                refresh_id = ((refresh_ids or {}).get(group, [None] * len(texts))[k - 1] if number == 1
                              else f"{DATE}/{number}")
                entries[name] = TranscriptEntry(
                    name=name, file=file, command=run.command, exit_code=0, timed_out=False, wall_s=wall_s,
                    date=DATE, inputs=inputs, sha256=sha256_file(folder / file), format=fmt,
                    group=group, repeat=k, repeats=len(texts), exclusive=run.exclusive,
                    started=STARTED, ended=STARTED + wall_s, refresh_id=refresh_id, session=sid)
    write_manifest(folder, Manifest(lesson, arch, spec.build[arch], refresh or f".venv/bin/python scripts/refresh.py {lesson}",
                                    fixed, entries, sessions))
    return folder


@contextmanager
def sigint_as_at_a_terminal() -> Iterator[None]:
    """Start children inside this to give them SIGINT at its default, so Python turns it into
    KeyboardInterrupt as at a terminal (Ctrl-C), even where the test runner ignores SIGINT (nohup, a
    background job of a script): an ignored signal is inherited through exec and Python then installs
    no handler, while a caught one is reset to the default. So SIGINT is caught here meanwhile (no
    preexec_fn, which is unsafe beside threads such as Playwright's)."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


def newest_change_ns(root: Path) -> int:
    """The latest mtime or ctime of `root` and everything under it, the cache's own folder left out."""
    newest = 0
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d != Path(cache.FOLDER).parts[0]]
        for name in (".", *files):
            try:
                st = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return newest


def wait_settled(root: Path, window_ns: int | None = None, ceiling_s: float = 30.0) -> None:
    """Wait until every file and folder under `root` counts as settled for the cache (last changed
    more than `window_ns` ago: lessonkit.cache.settled), and no longer. A file's ctime cannot be set
    into the past (os.utime moves it to now), so this waits; it polls, since the files may have been
    written well before the call."""
    deadline = time.monotonic() + ceiling_s
    while True:
        left_ns = newest_change_ns(root) + (cache.RACY_NS if window_ns is None else window_ns) - time.time_ns()
        if left_ns < 0:
            return
        assert time.monotonic() < deadline, f"{root} kept changing for {ceiling_s:g} s"
        time.sleep(left_ns / 1e9 + 0.005)


def rewrite_entry(repo: Path, name: str, set_name: str = "demo", **changes) -> None:
    """Change one entry of evidence/<set_name>/manifest.json through the refresh's writer (its digest made anew)."""
    folder = repo / "evidence" / set_name
    m = read_manifest(folder, f"evidence/{set_name}")
    write_manifest(folder, replace(m, entries={**m.entries, name: replace(m.entries[name], **changes)}))


def rewrite_provenance(repo: Path, set_name: str = "demo", **changes) -> None:
    """Change evidence/<set_name>/manifest.json's provenance through the refresh's writer (its set_digest made
    anew): a field the set holds fixed in the set's own provenance, any other in every session's."""
    from lessonkit.evidence.manifest import Session, split_provenance

    folder = repo / "evidence" / set_name
    m = read_manifest(folder, f"evidence/{set_name}")
    fixed, own = split_provenance(changes)
    sessions = {sid: Session(sid, {**s.provenance, **own}) for sid, s in m.sessions.items()}
    write_manifest(folder, replace(m, provenance={**m.provenance, **fixed}, sessions=sessions))


def rehashed(manifest: Path, old: str, new: str) -> str:
    """The manifest's text with the recording of sha256 `old` given sha256 `new`, its digest made anew: what a
    forger who edits a transcript writes with the manifest module (or a refresh that recorded new bytes)."""
    m = parse_manifest(manifest.read_text(encoding="utf-8"), f"evidence/{manifest.parent.name}")
    entries = {n: replace(e, sha256=new) if e.sha256 == old else e for n, e in m.entries.items()}
    assert entries != m.entries, (manifest, old)
    return manifest_to_text(replace(m, entries=entries))


def mkdocs_yml(extra: str = "") -> str:
    """A small site config that uses the project's hooks and extension (a fast built-in theme);
    it passes lessonkit.site.config's rules."""
    return f"""site_name: fixture
theme:
  name: mkdocs
hooks:
  - {HOOKS}
markdown_extensions:
  - admonition
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.highlight
  - lessonkit.site.mdext
{extra}"""


# Tests marked `alone` time something, so their timed part has the test run's CPUs to itself: while
# it runs, the other pytest-xdist workers of the run wait between tests (a process outside the run
# still shares the machine, and can still slow it). Every test holds a
# shared lock on one file for the whole of its run (setup, call, teardown: the session fixtures it
# sets up too); an `alone` test's call holds it exclusively. A second lock, taken to queue for the
# first and let go at once, keeps a worker that is between two tests from taking the shared lock
# again ahead of an `alone` test that is waiting for it. Both files are in pytest's folder of the
# run, which holds each worker's own (and which pytest removes with its old runs). The `alone` tests
# come last, when the other workers are running their last tests or have none left. Without workers
# there is nothing to wait for.
def _locked(folder: Path, name: str, mode: int) -> int:
    fd = os.open(folder / f"{name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, mode)
    return fd


_CPUS = pytest.StashKey[int]()


def _hold_cpus(item: pytest.Item, mode: int) -> None:
    """Let go of the item's lock on the CPUs, if any, and queue for it in `mode`."""
    if _CPUS in item.stash:
        os.close(item.stash[_CPUS])
    folder = Path(item.config.option.basetemp).parent
    queue = _locked(folder, "queue", fcntl.LOCK_EX)
    item.stash[_CPUS] = _locked(folder, "cpus", mode)
    os.close(queue)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("alone") is not None)  # stable: the rest keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not hasattr(item.config, "workerinput"):
        yield
        return
    _hold_cpus(item, fcntl.LOCK_SH)
    try:
        yield
    finally:
        os.close(item.stash[_CPUS])
        del item.stash[_CPUS]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    if not (hasattr(item.config, "workerinput") and item.get_closest_marker("alone")):
        yield
        return
    _hold_cpus(item, fcntl.LOCK_EX)
    try:
        yield
    finally:
        _hold_cpus(item, fcntl.LOCK_SH)


@pytest.fixture(scope="session", autouse=True)
def temporary_folder_left_clean(tmp_path_factory):
    """The tests, and every process they start, leave nothing in the temporary folder.

    They get one of their own (TMPDIR, and tempfile's default in this process); at the end it
    must be empty: a `mkdocs serve` killed before it removed its build folder (mkdocs_*), a
    benchmark or a refresh that left scratch files, fail the session. pytest's own folders
    (tmp_path) are made before, in the usual place.
    """
    tmp_path_factory.getbasetemp()
    folder = Path(tempfile.mkdtemp(prefix="lessonkit-tests-"))
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = str(folder)
    try:
        yield folder
    finally:
        if saved[0] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[0]
        tempfile.tempdir = saved[1]
        end = time.monotonic() + 5  # a browser or server just stopped may still be tidying up
        while any(folder.iterdir()) and time.monotonic() < end:
            time.sleep(0.1)
        # Chromium's own scratch files (.org.chromium.Chromium.*), which it sometimes leaves when the
        # browser is closed, are Chromium's, not ours: seen once in a CI run; everything else counts.
        left = sorted(p.name for p in folder.iterdir() if not p.name.startswith(".org.chromium.Chromium."))
        shutil.rmtree(folder, ignore_errors=True)
    assert left == [], f"the tests left these in the temporary folder: {left}"


@pytest.fixture
def full_racy_window(monkeypatch) -> int:
    """The cache's default racy window (two seconds), here and in the processes a test starts: for a
    test that must act on a file while it is still racy, however slow the machine is."""
    monkeypatch.setenv(cache.RACY_ENV, "")
    monkeypatch.setattr(cache, "RACY_NS", cache._racy_ns())
    assert cache.RACY_NS == 2_000_000_000
    return cache.RACY_NS


@pytest.fixture
def demo_repo(tmp_path: Path) -> Path:
    """A repository with one lesson, its recorded evidence and one good page."""
    write_tree(tmp_path, {
        "code/demo/demo.cu": SOURCE, "code/demo/runs.toml": RUNS, "code/demo/README.md": README,
        "docs/index.md": PAGE, "mkdocs.yml": mkdocs_yml(),
    })
    record_set(tmp_path, "demo", {"race": RACE, "bare": BARE})
    return tmp_path


def mkdocs_build(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Run `mkdocs build` in repo as CI does; returns the finished process (lessonkit importable
    from anywhere, as CI's editable install makes it, for lessonkit.site.mdext)."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "-q", "-d", str(repo / "site"), *args],
                          cwd=repo, capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, request) -> Path:
    """The project's own site, built with MkDocs (strict) as CI builds it, once for the whole run: the
    first pytest-xdist worker to ask builds it in pytest's folder of the run, the others wait for it
    (a lock there) and read the same files. Tests only read it (one that changes a site copies it)."""
    run = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput"):
        run = run.parent
    out, built = run / "project-site", run / "project-site.built"
    held = _locked(run, "project-site", fcntl.LOCK_EX)
    try:
        if not built.exists():
            shutil.rmtree(out, ignore_errors=True)
            done = mkdocs_build(REPO, "--strict", "-d", str(out))
            assert done.returncode == 0, done.stderr
            built.touch()
    finally:
        os.close(held)
    return out


_WHY_RE = re.compile(r' data-lk-why="[^"]*"')


def run_page(repo: Path, text: str):
    """Check `text` as the page docs/p.md of the repository at `repo`; in its Markdown, the words on
    each produced figure saying what backs it (data-lk-why) are left out, so tests read the
    figures (tests/test_explain.py holds those words), and so are the marks around what the core
    produced (lessonkit.pages.marks), which `result.marked` keeps."""
    result = Site.load(repo).page(text, "docs/p.md")
    result.marked = _WHY_RE.sub("", result.markdown)  # type: ignore[attr-defined]
    result.markdown = strip(result.marked)  # type: ignore[attr-defined]
    return result


def errs(repo: Path, text: str) -> list[str]:
    """The errors of `text` as the page docs/p.md, as messages."""
    return [str(e) for e in run_page(repo, text).errors]


def checked(repo: Path, text: str, path: str = "docs/p.md") -> list[str]:
    """Every error `lessonkit check` reports for `text` as the page file `path` of the repository at
    `repo`, as messages: its Markdown's, then the audit's of the page as the site renders it."""
    site = CheckedSite(repo, store=Store(None), keep="errors")
    site.refresh()
    return [str(e) for e in site.page_text(text, path).errors]


# Debian's chromium, driven by Playwright for the browser tests (tests/test_browser.py,
# tests/test_serve_errors.py): headless, and quiet on the network.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    """One Chromium for a test module."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()
