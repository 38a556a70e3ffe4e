"""The litmus runner's bookkeeping on the CPU, and the compiled code: accesses and fences where the test says."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO

LESSON = REPO / "code/deeper-weak-memory"
spec = importlib.util.spec_from_file_location("litmus", LESSON / "litmus.py")
litmus = importlib.util.module_from_spec(spec)
sys.modules["litmus"] = litmus
spec.loader.exec_module(litmus)

# The order of the accesses under test and the fences, per kernel (role 0, then role 1).
PTX_EXPECTED = {
    "mp_none": ["st", "st", "ld", "ld"],
    "mp_cta": ["st", "membar.cta", "st", "ld", "membar.cta", "ld"],
    "mp_gpu": ["st", "membar.gl", "st", "ld", "membar.gl", "ld"],
    "mp_sys": ["st", "membar.sys", "st", "ld", "membar.sys", "ld"],
    "mp_gpu_writer": ["st", "membar.gl", "st", "ld", "ld"],
    "mp_gpu_reader": ["st", "st", "ld", "membar.gl", "ld"],
    "sb_none": ["st", "ld", "st", "ld"],
    "sb_gpu": ["st", "membar.gl", "ld", "st", "membar.gl", "ld"],
    "lb_none": ["ld", "st", "ld", "st"],
    "lb_gpu": ["ld", "membar.gl", "st", "ld", "membar.gl", "st"],
    "corr_none": ["st", "ld", "ld"],
}
SASS_EXPECTED = {
    "mp_none": ["STG", "STG", "LDG", "LDG"],
    "mp_cta": ["STG", "MEMBAR.SC.CTA", "STG", "LDG", "MEMBAR.SC.CTA", "LDG"],
    "mp_gpu": ["STG", "MEMBAR.SC.GPU", "STG", "LDG", "MEMBAR.SC.GPU", "LDG"],
    "sb_none": ["STG", "LDG", "STG", "LDG"],
    "corr_none": ["STG", "LDG", "LDG"],
}


def test_importing_litmus_does_not_import_cupy():
    code = (f"import importlib.util,sys; s=importlib.util.spec_from_file_location('l', r'{LESSON}/litmus.py'); "
            "m=importlib.util.module_from_spec(s); sys.modules['l']=m; s.loader.exec_module(m); print('cupy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.parametrize("same_cta", [False, True])
@pytest.mark.parametrize("random_threads, random_locations, stride", [(False, False, 1), (True, False, 1), (True, True, 4), (False, True, 3)])
def test_no_two_instances_share_a_location(same_cta, random_threads, random_locations, stride):
    h = litmus.Heuristics("t", blocks=16, threads=64, random_threads=random_threads,
                          random_locations=random_locations, stride=stride)
    maps = litmus.make_maps(h, same_cta, np.random.default_rng(7))
    locs = np.concatenate([maps.xloc, maps.yloc])
    assert len(np.unique(locs)) == 2 * h.instances and locs.max() < maps.words
    assert litmus.shared_locations(maps) == 0 and litmus.roles_cover_every_instance(maps)
    # where each instance's two roles run
    writer_thread = np.empty(h.instances, dtype=np.int64)
    reader_thread = np.empty(h.instances, dtype=np.int64)
    writer_thread[maps.writer_inst] = np.arange(h.instances)
    reader_thread[maps.reader_inst] = np.arange(h.instances)
    same = writer_thread // h.threads == reader_thread // h.threads
    assert same.all() if same_cta else not same.any()
    assert (writer_thread != reader_thread).all()


def test_broken_map_is_caught():
    h = litmus.Heuristics("t", blocks=4, threads=32)
    maps = litmus.make_maps(h, False, np.random.default_rng(1), broken=True)
    assert litmus.shared_locations(maps) == h.instances // 2


def test_clopper_pearson():
    low, high = litmus.clopper_pearson(5, 100)
    assert round(low, 4) == 0.0164 and round(high, 4) == 0.1128   # the textbook interval for 5/100
    low, high = litmus.clopper_pearson(0, 10 ** 10)
    assert low == 0.0 and abs(high - (1 - 0.025 ** (1e-10))) < 1e-15  # zero: only an upper bound


def test_rows_add_up_and_name_the_weak_outcome():
    row = litmus.make_row("t", "mp", "none", "inter-cta", "none", np.array([50, 30, 15, 5, 0]), 2.0, 100)
    assert (row.instances, row.weak, row.o10) == (100, 15, 15) and row.weak_per_s == 7.5
    assert litmus.make_row("t", "sb", "none", "x", "none", np.array([7, 1, 1, 1, 0]), 1.0, 10).weak == 7
    assert litmus.make_row("t", "lb", "none", "x", "none", np.array([7, 1, 1, 1, 0]), 1.0, 10).weak == 1
    with pytest.raises(ValueError, match="a result other than 0 or 1"):
        litmus.make_row("t", "mp", "none", "x", "none", np.array([1, 1, 1, 1, 2]), 1.0, 4)
    with pytest.raises(ValueError, match=r"sums to 10, but 12 instances ran"):
        litmus.make_row("t", "mp", "none", "x", "none", np.array([7, 1, 1, 1, 0]), 1.0, 12)


def test_short_forms():
    assert [litmus.sci(x) for x in (0, 0.0572, 1.35e-05, 3.11e10, 12.0)] == ["0", "0.0572", "1.35e-05", "3.11e+10", "12"]


def test_overrides():
    h = litmus.with_overrides(litmus.Heuristics("none"), "stress_blocks=8,barrier=1,stress_pattern=load-load")
    assert (h.stress_blocks, h.barrier, h.stress_pattern) == (8, True, "load-load")
    with pytest.raises(SystemExit):
        litmus.with_overrides(litmus.Heuristics("none"), "warp=3")


def test_ptx_keeps_accesses_and_fences_in_test_order(tmp_path: Path):
    assert shutil.which("nvcc"), "nvcc is required"
    ptx = tmp_path / "litmus.ptx"
    subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_90", "-o", str(ptx), str(LESSON / "litmus.cu")], check=True)
    text = ptx.read_text()
    entries = re.split(r"\.entry\s+(\w+)\(", text)
    found = {}
    for name, body in zip(entries[1::2], entries[2::2]):
        ops = re.findall(r"\b(ld\.relaxed\.gpu|st\.relaxed\.gpu|membar\.\w+|fence\.[\w.]+)", body)
        found[name] = [o.split(".")[0] if o.startswith(("ld", "st")) else o for o in ops]
    for name, expected in PTX_EXPECTED.items():
        assert found[name] == expected, name


def test_recorded_sass_keeps_the_order():
    """The H200 evidence holds the SASS of the main kernels: no access merged, moved or dropped."""
    text = (REPO / "evidence/deeper-weak-memory/sass.txt").read_text()
    parts = re.split(r"\n\s*Function : (\w+)\n", text)
    found = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        ops = re.findall(r"\b((?:STG|LDG)\.E\.STRONG\.GPU|MEMBAR\.[A-Z.]+)\b", body)
        found[name] = [o.split(".")[0] if o.startswith(("STG", "LDG")) else o for o in ops]
    assert found == SASS_EXPECTED


def test_recorded_campaign_meets_its_checks():
    data = json.loads((REPO / "evidence/deeper-weak-memory/litmus.json").read_text())
    rows = data["rows"]
    for r in rows:
        assert r["o00"] + r["o01"] + r["o10"] + r["o11"] == r["instances"]
    gpu_both = [r for r in rows if r["fence"] in ("gpu", "sys") and r["table"] != "harness-bug"]
    assert gpu_both and all(r["weak"] == 0 for r in gpu_both)
    assert sum(r["instances"] for r in rows if r["table"] == "soundness") >= 10 ** 10
    assert next(r for r in rows if r["table"] == "harness-bug")["weak"] > 0
