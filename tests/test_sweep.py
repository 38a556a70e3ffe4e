"""The sweep's bookkeeping on the CPU, NumPy standing in for CuPy; and that CI never imports CuPy."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO

spec = importlib.util.spec_from_file_location("sweep", REPO / "code/day62-racecheck/sweep.py")
sweep = importlib.util.module_from_spec(spec)
sys.modules["sweep"] = sweep  # dataclasses look their module up by name
spec.loader.exec_module(sweep)


def test_importing_the_sweep_does_not_import_cupy():
    code = f"import importlib.util,sys; s=importlib.util.spec_from_file_location('s', r'{REPO}/code/day62-racecheck/sweep.py'); " \
           "m=importlib.util.module_from_spec(s); sys.modules['s']=m; s.loader.exec_module(m); print('cupy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_inputs_keep_float_sums_exact():
    small, large = sweep.make_input(sweep.SMALL), sweep.make_input(sweep.LARGE)
    assert small[-1] == sweep.SMALL - 1 and large.max() == sweep.MOD - 1
    assert sweep.input_rule(sweep.SMALL) == "i" and sweep.input_rule(sweep.LARGE) == "i mod 4096"
    for x in (small, large):
        assert sweep.scan_reference(x, 1024).max() < 2 ** 24


def test_scan_reference_restarts_at_each_tile():
    x = np.arange(10, dtype=np.float32)
    assert sweep.scan_reference(x, 4).tolist() == [0, 1, 3, 6, 4, 9, 15, 22, 8, 17]


def test_reverse_reference_zero_past_the_end():
    x = np.arange(1, 7, dtype=np.float32)  # 1..6, tiles of 4: [1 2 3 4] [5 6 _ _]
    assert sweep.reverse_reference(x, 4).tolist() == [4, 3, 2, 1, 0, 0]


@pytest.mark.parametrize(("n", "threads"), [(8803, 32), (8803, 256), (8803, 1024), (64, 32), (5, 8)])
def test_reverse_reference_matches_the_harness_definition(n, threads):
    x = sweep.make_input(n)
    # racecheck.cu's reverseReference, element by element
    want = [float(x[i - i % threads + threads - 1 - i % threads]) if i - i % threads + threads - 1 - i % threads < n
            else 0.0 for i in range(n)]
    assert sweep.reverse_reference(x, threads).tolist() == want


def test_a_fix_shares_its_buggy_twins_reference():
    assert sweep.reference_key("scanTileRacy", 64, 8803) == sweep.reference_key("scanTileFixed", 64, 8803)
    assert sweep.reference_key("reverseTilesDivergentBarrier", 64, 8803) == \
        sweep.reference_key("reverseTilesFixed", 64, 8803) == ("reverse", 64, 8803)
    assert sweep.reference_key("scanTileRacy", 64, 8803) != sweep.reference_key("scanTileRacy", 128, 8803)


def test_grid_matches_the_harness():
    assert sweep.grid("scanTileRacy", 8803, 256) == 35
    assert sweep.grid("reverseTilesDivergentBarrier", 8803, 256) == 9
    assert sweep.grid("reverseTilesFixed", 1 << 22, 1024) == 1024


def test_summarize_counts_launches_and_elements():
    never = np.iinfo(np.int32).max
    cell = sweep.summarize("scanTileRacy", 64, 100, np.array([0, 3, 0, 5]), np.array([never, 40, never, 17]), 0.25)
    assert (cell.launches, cell.wrong_launches, cell.mismatched_elements, cell.worst_launch, cell.first_bad) == (4, 2, 8, 5, 17)
    assert cell.role == "buggy" and cell.input == "i"
    clean = sweep.summarize("scanTileFixed", 64, 100, np.zeros(3), np.full(3, never), 0.1)
    assert (clean.role, clean.wrong_launches, clean.first_bad) == ("control", 0, None)


def test_json_shape_is_queryable_by_the_site():
    from lessonkit.evidence.jsontranscript import parse_json_transcript
    from lessonkit.pages.query import show
    cell = sweep.summarize("scanTileRacy", 64, 100, np.array([1]), np.array([3]), 0.1)
    text = json.dumps(sweep.results_json([cell], {"format": 1, "wall_s": 1.0}))
    t = parse_json_transcript(text, "sweep.json")
    (row,) = t.collections()["cells"]
    assert show(row["wrong_launches"]) == "1" and t.scalars["wall_s"] == 1.0
    assert set(row) == {"kernel", "role", "threads", "n", "input", "launches", "wrong_launches",
                        "mismatched_elements", "worst_launch", "first_bad", "seconds", "compiler"}


def test_table_lists_every_cell():
    cells = [sweep.summarize(k, 32, 10, np.array([0]), np.array([0]), 0.0) for k in sweep.BUGGY + sweep.CONTROL]
    assert len(sweep.table(cells).splitlines()) == 5


def test_recorded_sweep_controls_are_all_zero():
    # sweep.json with one recording, sweep.r1.json .. sweep.rN.json with repeat = N
    folder = REPO / "evidence/day62-racecheck"
    recordings = [p for p in folder.rglob("*.json") if re.fullmatch(r"sweep(\.r\d+)?\.json", p.name)]
    assert recordings
    for path in recordings:
        data = json.loads(path.read_text())
        controls = [c for c in data["cells"] if c["role"] == "control"]
        assert len(controls) == 24 and all(c["wrong_launches"] == 0 for c in controls), path.name
        assert data["controls_clean"] is True, path.name


def test_build_cubin_compiles_the_lesson_source_in_the_folder_given(tmp_path):
    assert shutil.which("nvcc"), "nvcc is required: CI compiles the lesson's CUDA code"
    cubin, command = sweep.build_cubin(tmp_path, sweep.SOURCE, "sm_90")
    assert cubin == tmp_path / "racecheck.cubin" and cubin.stat().st_size > 0
    assert command == f"nvcc -cubin -std=c++17 -O2 -lineinfo -arch=sm_90 -o racecheck.cubin {sweep.SOURCE}"
    # every kernel the sweep launches is in it, by its extern "C" name
    data = cubin.read_bytes()
    assert all(k.encode() in data for k in sweep.BUGGY + sweep.CONTROL)


def test_a_missing_prebuilt_cubin_is_an_error(tmp_path):
    missing = str(tmp_path / "old.cubin")
    with pytest.raises(SystemExit) as exc:
        sweep.prebuilt_cubin(missing)
    assert str(exc.value) == (f"sweep.py: --cubin {missing!r} is not a file; leave --cubin out to build "
                              "racecheck.cu afresh")


def test_by_default_the_cubin_is_built_afresh():
    assert sweep.parse_args([]).cubin is None
    assert sweep.parse_args(["--cubin", "k.cubin"]).cubin == "k.cubin"


def test_report_fails_on_a_control_mismatch(tmp_path, capsys):
    class FakeGpu:
        gpu, arch = "Fake GPU", "sm_90"

    never = np.iinfo(np.int32).max
    ok = sweep.summarize("scanTileFixed", 32, 10, np.zeros(2), np.full(2, never), 0.1)
    bad = sweep.summarize("reverseTilesFixed", 32, 10, np.array([0, 1]), np.array([never, 3]), 0.1)
    assert sweep.report([ok], 1.0, FakeGpu, str(tmp_path / "a.json")) == 0
    assert sweep.report([ok, bad], 1.0, FakeGpu, str(tmp_path / "b.json")) == 1
    out = capsys.readouterr().out
    assert "CONTROL FAILED: reverseTilesFixed at 32 threads, n=10: 1 of 2 launches wrong, first bad index 3" in out
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["controls_clean"] is False and data["launches_total"] == 4 and len(data["cells"]) == 2


# -- one factor at a time: both compilers' cubins in one process, alternating --------------------

def test_compilers_are_read_as_labelled_pairs():
    assert sweep.compilers("13.0=nvcc, 12.4=/opt/cuda-12.4/bin/nvcc") == [("13.0", "nvcc"),
                                                                          ("12.4", "/opt/cuda-12.4/bin/nvcc")]
    for bad, said in [("13.0=nvcc", "two or more"), ("a=nvcc,a=nvcc2", "two or more"), ("nvcc,b=x", "is not LABEL=NVCC")]:
        with pytest.raises(SystemExit) as exc:
            sweep.compilers(bad)
        assert said in str(exc.value)


def test_each_cubin_goes_first_as_often_and_the_launches_split_evenly():
    assert [sweep.round_order(["a", "b"], r) for r in range(4)] == [["a", "b"], ["b", "a"], ["a", "b"], ["b", "a"]]
    assert sweep.shares(1000, 10) == [100] * 10 and sweep.shares(7, 3) == [3, 2, 2] and sum(sweep.shares(101, 10)) == 101
    with pytest.raises(SystemExit):
        sweep.shares(5, 6)


class _FakeLauncher:
    """The GPU side stood in for: every launch is right except the racy scan's at 1024 threads, which
    goes wrong in every launch of cubin 'b'; the order of the calls is kept."""

    def __init__(self, prebuilt, nvccs):
        self.cp = type("cp", (), {"asarray": staticmethod(np.asarray), "float32": np.float32,
                                  "empty": staticmethod(np.empty)})
        self.gpu, self.cc, self.arch = "Fake GPU", "9.0", "sm_90"
        self.builds = {label: {"compiler": label, "nvcc": nvcc, "release": f"release {label}", "build": f"{nvcc} ..."}
                       for label, nvcc in nvccs}
        self.calls: list[tuple] = []

    def launches(self, kernel, threads, x, d_in, d_out, launches, compiler=None):
        self.calls.append((kernel, threads, len(x), compiler, launches))
        bad = kernel == "scanTileRacy" and threads == 1024 and compiler == "b"
        never = np.iinfo(np.int32).max
        return (np.full(launches, 3 if bad else 0), np.full(launches, 5 if bad else never), 0.001)


def test_the_crossed_sweep_alternates_the_cubins_and_names_each_cells_compiler(monkeypatch, tmp_path, capsys):
    made = []
    monkeypatch.setattr(sweep, "Launcher", lambda prebuilt, nvccs: made.append(_FakeLauncher(prebuilt, nvccs)) or made[-1])
    out = tmp_path / "crossed.json"
    assert sweep.main(["--compilers", "a=nvcc,b=/opt/b/nvcc", "--rounds", "4", "--sizes", "8803", "--threads",
                       "256,1024", "--launches-small", "10", "--json", str(out)]) == 0
    calls = made[0].calls
    first_cell = [c for c in calls if c[:3] == ("scanTileRacy", 256, 8803)]
    assert [c[3] for c in first_cell] == ["a", "b", "b", "a", "a", "b", "b", "a"]  # alternating, round by round
    assert [c[4] for c in first_cell] == [3, 3, 3, 3, 2, 2, 2, 2]                # 10 launches each, in 4 rounds
    data = json.loads(out.read_text())
    assert data["rounds"] == 4 and [c["compiler"] for c in data["compilers"]] == ["a", "b"]
    racy = {(c["threads"], c["compiler"]): (c["wrong_launches"], c["launches"]) for c in data["cells"]
            if c["kernel"] == "scanTileRacy"}
    assert racy == {(256, "a"): (0, 10), (256, "b"): (0, 10), (1024, "a"): (0, 10), (1024, "b"): (10, 10)}
    assert "cubin: /opt/b/nvcc ... (b: release b)" in capsys.readouterr().out
