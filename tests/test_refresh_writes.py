"""The refresh when it cannot write: a full disk, a read-only evidence folder, a missing tool. Each
is one message and exit 2, with the old evidence byte for byte as it was. The refresh runs in this
process (its main, with the GPU tools faked) so the failures can be injected: the tests run as root,
where a chmod does not stop a write, and a small tmpfs cannot be mounted."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import snapshot
from fake_gpu import make_lab

from lessonkit.evidence import refresh as rf

ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # as write(2) reports it: no file name
KEPT = "; the old evidence is kept and nothing was recorded\n"


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """A repository whose demo set was recorded by the refresh, this process set up to run it again."""
    repo, env = make_lab(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(tempfile, "tempdir", env["TMPDIR"])
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}  # main sets them
    assert rf.main(["demo", "--repo", str(repo)]) == 0
    try:
        yield repo
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)




def refresh_fails(repo: Path, capsys) -> str:
    """Run the refresh again; it must exit 2, keep the old evidence and leave no scratch folder."""
    before = snapshot(repo / "evidence/demo")
    capsys.readouterr()
    assert rf.main(["demo", "--repo", str(repo)]) == 2
    assert snapshot(repo / "evidence/demo") == before
    assert sorted(p.name for p in (repo / "evidence").iterdir()) == ["demo"]
    assert not any(Path(tempfile.gettempdir()).iterdir())  # the build folder went too
    return capsys.readouterr().err


def scratch_path(repo: Path, name: str) -> str:
    """The path of `name` in the refresh's scratch folder, as the message shows it."""
    return f"evidence/.refresh.demo.{os.getpid()}/{name}"


def test_a_full_disk_while_writing_a_transcript(recorded: Path, capsys, monkeypatch):
    real = Path.write_bytes

    def full(self, *args, **kwargs):
        if ".refresh." in str(self):
            raise ENOSPC
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "write_bytes", full)
    assert refresh_fails(recorded, capsys) == (
        f"refresh: cannot write {scratch_path(recorded, 's1/bare.txt')}: No space left on device" + KEPT)


def test_a_full_disk_while_writing_the_manifest(recorded: Path, capsys, monkeypatch):
    def full(fd: int) -> None:
        raise ENOSPC  # where a full disk shows on a file system that defers its writes
    monkeypatch.setattr(os, "fsync", full)
    assert refresh_fails(recorded, capsys) == (
        f"refresh: cannot write {scratch_path(recorded, 'manifest.json')}: No space left on device" + KEPT)


def test_a_full_disk_in_the_build_folder(recorded: Path, capsys, monkeypatch):
    real = shutil.copy2

    def full(src, dst, **kwargs):
        if Path(dst).name == "demo.cu":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        return real(src, dst, **kwargs)
    monkeypatch.setattr(shutil, "copy2", full)
    build = Path(tempfile.gettempdir()) / "100-days-of-gpu/demo/code/demo"
    assert refresh_fails(recorded, capsys) == (
        f"refresh: cannot write {build}/demo.cu: No space left on device" + KEPT)


def test_a_read_only_evidence_folder(recorded: Path, capsys, monkeypatch):
    real = Path.mkdir

    def read_only(self, *args, **kwargs):
        if self.parent == recorded / "evidence":
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "mkdir", read_only)
    assert refresh_fails(recorded, capsys) == (
        f"refresh: cannot write evidence/.refresh.demo.{os.getpid()}: Read-only file system" + KEPT)


def test_a_swap_refused_by_the_file_system(recorded: Path, capsys, monkeypatch):
    def refused(a, b):
        raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(a), None, str(b))
    monkeypatch.setattr(rf, "swap_in", refused)
    assert refresh_fails(recorded, capsys) == ("refresh: cannot write evidence/demo: Permission denied" + KEPT)


def test_a_full_disk_while_copying_names_the_copy_not_its_source(recorded: Path, capsys, monkeypatch):
    """shutil's copy reports a full disk with the source as its file name (filename2: the destination)."""
    real = shutil.copy2

    def full(src, dst, **kwargs):
        if ".refresh." in str(dst):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src), None, str(dst))
        return real(src, dst, **kwargs)
    monkeypatch.setattr(shutil, "copy2", full)
    assert refresh_fails_with_only(recorded, capsys) == (
        f"refresh: cannot write {scratch_path(recorded, 's1/race.txt')}: No space left on device" + KEPT)


def refresh_fails_with_only(repo: Path, capsys) -> str:
    """refresh_fails for `--only bare`: the other recordings are copied from the old set."""
    before = snapshot(repo / "evidence/demo")
    capsys.readouterr()
    assert rf.main(["demo", "--repo", str(repo), "--only", "bare"]) == 2
    assert snapshot(repo / "evidence/demo") == before
    return capsys.readouterr().err


def test_a_missing_tool(recorded: Path, capsys, monkeypatch):
    (Path(os.environ["PATH"].split(os.pathsep)[0]) / "compute-sanitizer").unlink()
    assert refresh_fails(recorded, capsys) == (
        "refresh: the refresh needs a GPU machine; not found on PATH: compute-sanitizer (the sanitizer)\n")


def test_a_full_tmpdir_while_the_runs_go_is_one_message(recorded: Path, capsys, monkeypatch):
    """The run ledger is written as each run starts; $TMPDIR full there is the refresh's one message, exit 2."""
    real = Path.write_text

    def full(self, *args, **kwargs):
        if self.name.endswith(".pids.part"):
            raise ENOSPC
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "write_text", full)
    ledger = Path(os.environ["TMPDIR"]) / "100-days-of-gpu/demo.pids"
    assert refresh_fails(recorded, capsys) == (
        f"refresh: cannot write {ledger}: No space left on device; the refresh keeps its lock, its run ledger and its "
        "build folder there (TMPDIR, else /tmp)" + KEPT)


def test_the_lock_has_one_place_and_a_refresh_that_cannot_take_it_there_refuses(recorded: Path, capsys,
                                                                                 monkeypatch, tmp_path):
    """TMPDIR that cannot be written is refused, never swapped for another folder (tempfile.gettempdir() would
    fall back to /tmp, where a second refresh of the lesson could take a second lock)."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where TMPDIR names a folder\n")
    monkeypatch.setenv("TMPDIR", str(blocked))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() would now pick a fallback folder
    fallback = Path(tempfile.gettempdir()) / "100-days-of-gpu"
    assert fallback.parent != blocked
    before = snapshot(recorded / "evidence/demo")
    capsys.readouterr()
    assert rf.main(["demo", "--repo", str(recorded)]) == 2
    assert capsys.readouterr().err == (
        f"refresh: cannot write {blocked}/100-days-of-gpu/demo.lock: Not a directory; the refresh keeps its lock, its "
        "run ledger and its build folder there (TMPDIR, else /tmp)" + KEPT)
    assert snapshot(recorded / "evidence/demo") == before and not (fallback / "demo.lock").exists()
