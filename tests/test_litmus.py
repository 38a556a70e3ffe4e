"""The litmus runner's bookkeeping and statistics on the CPU, and the compiled code: accesses and fences where the test says."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

LESSON = REPO / "code/deeper-weak-memory"
EVIDENCE = REPO / "evidence/deeper-weak-memory"
spec = importlib.util.spec_from_file_location("litmus", LESSON / "litmus.py")
litmus = importlib.util.module_from_spec(spec)
sys.modules["litmus"] = litmus
spec.loader.exec_module(litmus)

# The order of the accesses under test and the fences, per kernel (role 0, then role 1).
PTX_EXPECTED = {
    "mp_none": ["st.relaxed", "st.relaxed", "ld.relaxed", "ld.relaxed"],
    "mp_cta": ["st.relaxed", "membar.cta", "st.relaxed", "ld.relaxed", "membar.cta", "ld.relaxed"],
    "mp_gpu": ["st.relaxed", "membar.gl", "st.relaxed", "ld.relaxed", "membar.gl", "ld.relaxed"],
    "mp_sys": ["st.relaxed", "membar.sys", "st.relaxed", "ld.relaxed", "membar.sys", "ld.relaxed"],
    "mp_gpu_writer": ["st.relaxed", "membar.gl", "st.relaxed", "ld.relaxed", "ld.relaxed"],
    "mp_gpu_reader": ["st.relaxed", "st.relaxed", "ld.relaxed", "membar.gl", "ld.relaxed"],
    "mp_rel_acq": ["st.relaxed", "st.release", "ld.acquire", "ld.relaxed"],
    "sb_none": ["st.relaxed", "ld.relaxed", "st.relaxed", "ld.relaxed"],
    "sb_gpu": ["st.relaxed", "membar.gl", "ld.relaxed", "st.relaxed", "membar.gl", "ld.relaxed"],
    "lb_none": ["ld.relaxed", "st.relaxed", "ld.relaxed", "st.relaxed"],
    "lb_gpu": ["ld.relaxed", "membar.gl", "st.relaxed", "ld.relaxed", "membar.gl", "st.relaxed"],
    "corr_none": ["st.relaxed", "ld.relaxed", "ld.relaxed"],
}
# The CUDA C++ variants: plain (weak) accesses, or a volatile flag, between the two fences.
PTX_EXPECTED_CXX = {
    "mp_gpu_plain": ["st", "membar.gl", "st", "ld", "membar.gl", "ld"],
    "mp_gpu_volatile": ["st", "membar.gl", "st.volatile", "ld.volatile", "membar.gl", "ld"],
}
# The end of every kernel's SASS: the last load of a placement map (LDG.E), the accesses under
# test and the fences in the test's order, then the two stores of the results and the store of
# the block's multiprocessor id (STG.E). The
# relaxed accesses are STRONG.GPU, the volatile ones STRONG.SYS, the plain ones weak (.E only).
_G, _S = "STG.E.STRONG.GPU", "LDG.E.STRONG.GPU"
_FENCE_GPU = ["MEMBAR.SC.GPU", "CCTL.IVALL"]   # __threadfence(): a barrier, then an invalidation of the L1 (CCTL)
_TAIL = ["STG.E", "STG.E", "STG.E"]  # the two results, then thread 0's store of the block's %smid
SASS_EXPECTED = {
    "mp_none": ["LDG.E", _G, _G, _S, _S, *_TAIL],
    "mp_cta": ["LDG.E", _G, "MEMBAR.SC.CTA", _G, _S, "MEMBAR.SC.CTA", _S, *_TAIL],
    "mp_gpu": ["LDG.E", _G, *_FENCE_GPU, _G, _S, *_FENCE_GPU, _S, *_TAIL],
    "mp_sys": ["LDG.E", _G, "MEMBAR.SC.SYS", "CCTL.IVALL", _G, _S, "MEMBAR.SC.SYS", "CCTL.IVALL", _S, *_TAIL],
    "mp_gpu_writer": ["LDG.E", _G, *_FENCE_GPU, _G, _S, _S, *_TAIL],
    "mp_gpu_reader": ["LDG.E", _G, _G, _S, *_FENCE_GPU, _S, *_TAIL],
    # A release is a GPU-scope barrier before the flag's store; an acquire is a strong load
    # followed by an invalidation of the L1 (CCTL), so the data load that follows misses it.
    "mp_rel_acq": ["LDG.E", _G, "MEMBAR.ALL.GPU", _G, _S, "CCTL.IVALL", _S, *_TAIL],
    "mp_gpu_plain": ["LDG.E", "STG.E", *_FENCE_GPU, "STG.E", "LDG.E", *_FENCE_GPU, "LDG.E", *_TAIL],
    "mp_gpu_volatile": ["LDG.E", "STG.E", *_FENCE_GPU, "STG.E.STRONG.SYS", "LDG.E.STRONG.SYS", *_FENCE_GPU,
                        "LDG.E", *_TAIL],
    "sb_none": ["LDG.E", _G, _S, _G, _S, *_TAIL],
    "sb_gpu": ["LDG.E", _G, *_FENCE_GPU, _S, _G, *_FENCE_GPU, _S, *_TAIL],
    "lb_none": ["LDG.E", _S, _G, _S, _G, *_TAIL],
    "lb_gpu": ["LDG.E", _S, *_FENCE_GPU, _G, _S, *_FENCE_GPU, _G, *_TAIL],
    "corr_none": ["LDG.E", _G, _S, _S, *_TAIL],
}
_PTX_OP_RE = re.compile(r"\b(?P<op>(?:ld|st)\.(?:relaxed|acquire|release)\.gpu|membar\.\w+|fence\.[\w.]+)")
_PTX_CXX_RE = re.compile(r"\b(?P<op>(?:ld|st)(?:\.volatile)?\.global|membar\.\w+)")
_SASS_OP_RE = re.compile(r"\b(?P<op>(?:STG|LDG)\.E(?:\.STRONG\.(?:GPU|SYS))?|MEMBAR\.[A-Z.]+|CCTL\.IVALL)(?![\w.])")


def _ptx_entries(tmp_path: Path) -> dict[str, str]:
    assert shutil.which("nvcc"), "nvcc is required"
    ptx = tmp_path / "litmus.ptx"
    subprocess.run(["nvcc", "-ptx", "-O3", "-arch=sm_90", "-o", str(ptx), str(LESSON / "litmus.cu")], check=True)
    entries = re.split(r"\.entry\s+(\w+)\(", ptx.read_text())
    return dict(zip(entries[1::2], entries[2::2]))


def _ptx(tmp_path: Path) -> dict[str, list[str]]:
    """Each kernel's accesses under test and fences, in PTX order, as 'st.relaxed', 'membar.gl', ..."""
    found = {}
    for name, body in _ptx_entries(tmp_path).items():
        ops = [m.group("op") for m in _PTX_OP_RE.finditer(body)]
        found[name] = [o.rsplit(".", 1)[0] if o.startswith(("ld", "st")) else o for o in ops]
    return found


def _ptx_cxx(tmp_path: Path) -> dict[str, list[str]]:
    """The C++ variants' global accesses and fences, from the access before the first fence to the one after the last."""
    found = {}
    for name, body in _ptx_entries(tmp_path).items():
        ops = [m.group("op").replace(".global", "") for m in _PTX_CXX_RE.finditer(body)]
        fences = [k for k, o in enumerate(ops) if o.startswith("membar")]
        found[name] = ops[fences[0] - 1:fences[-1] + 2] if fences else []
    return found


def sass_tails(text: str, expected: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each function's last len(expected[name]) memory accesses and fences in a cuobjdump -sass listing."""
    parts = re.split(r"\n\s*Function : (\w+)\n", text)
    found = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        ops = [m.group("op") for m in _SASS_OP_RE.finditer(body)]
        found[name] = ops[-len(expected.get(name, [])):] if name in expected else ops
    return found


def _fresh_evidence() -> None:
    """Skip unless the recorded evidence was made from today's inputs (litmus.cu, the litmus*.py; the build flags stale evidence)."""
    transcripts = json.loads((EVIDENCE / "manifest.json").read_text())["transcripts"]
    inputs = next(e for e in transcripts.values() if e["group"] == "campaign")["inputs"]
    for name in tomllib.loads((LESSON / "runs.toml").read_text())["inputs"]:
        if inputs.get(f"code/deeper-weak-memory/{name}") != hashlib.sha256((LESSON / name).read_bytes()).hexdigest():
            pytest.skip(f"evidence/deeper-weak-memory was recorded from another {name}; "
                        "re-record with `.venv/bin/python scripts/refresh.py deeper-weak-memory`")


def _runs() -> dict[str, dict]:
    return {r["name"]: r for r in tomllib.loads((LESSON / "runs.toml").read_text())["run"]}


# ------------------------------------------------------------------------------ imports and placement

def test_importing_litmus_does_not_import_cupy():
    code = (f"import importlib.util,sys; s=importlib.util.spec_from_file_location('l', r'{LESSON}/litmus.py'); "
            "m=importlib.util.module_from_spec(s); sys.modules['l']=m; s.loader.exec_module(m); "
            "print('cupy' in sys.modules, 'scipy' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False False"


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


def test_default_map_puts_every_reader_one_cta_before_its_writer():
    h = litmus.Heuristics("t", blocks=32, threads=64)
    offsets = litmus.cta_offsets(litmus.make_maps(h, False, np.random.default_rng(3)), h.threads)
    assert set(offsets.tolist()) == {h.blocks - 1}


def test_random_threads_pair_ctas_by_a_random_permutation():
    h = litmus.Heuristics("t", blocks=64, threads=32, random_threads=True)
    maps = litmus.make_maps(h, False, np.random.default_rng(11))
    offsets = litmus.cta_offsets(maps, h.threads)
    assert 0 not in offsets                                   # never the writer's own CTA
    assert len(set(offsets.tolist())) > h.blocks // 4         # not one fixed offset (today's "one CTA before")
    assert np.mean(offsets == h.blocks - 1) < 0.1
    # the pairing is a permutation of CTAs: each writer CTA's readers all live in one other CTA, a bijection
    writer = np.argsort(maps.writer_inst)
    reader = np.argsort(maps.reader_inst)
    pairs = set(zip((writer // h.threads).tolist(), (reader // h.threads).tolist()))
    assert len(pairs) == h.blocks and len({b for _, b in pairs}) == h.blocks
    # and the lanes are shuffled: a writer's lane does not fix its reader's lane
    assert np.mean(writer % h.threads == reader % h.threads) < 0.2


def test_random_threads_draw_a_new_pairing_each_time():
    h = litmus.Heuristics("t", blocks=64, threads=32, random_threads=True)
    rng = np.random.default_rng(5)
    first, second = (litmus.cta_offsets(litmus.make_maps(h, False, rng), h.threads) for _ in range(2))
    assert (first != second).any()


def test_random_locations_do_not_move_threads():
    h = litmus.Heuristics("t", blocks=16, threads=32, random_locations=True, stride=4)
    maps = litmus.make_maps(h, False, np.random.default_rng(2))
    assert set(litmus.cta_offsets(maps, h.threads).tolist()) == {h.blocks - 1}
    assert h.cluster_instances == 8 and litmus.Heuristics("t").cluster_instances == 32


def test_heuristic_names_say_what_they_do():
    sets = {h.name: h for h in litmus.heuristic_sets(132)}
    assert (sets["random threads"].random_threads, sets["random threads"].random_locations) == (True, False)
    assert (sets["random locations"].random_threads, sets["random locations"].random_locations) == (False, True)
    assert sets["barrier + jitter"].barrier and sets["barrier + jitter"].jitter > 0
    assert not any(h.jitter for name, h in sets.items() if name != "barrier + jitter")


def test_broken_map_is_caught():
    h = litmus.Heuristics("t", blocks=4, threads=32)
    maps = litmus.make_maps(h, False, np.random.default_rng(1), broken=True)
    assert litmus.shared_locations(maps) == h.instances // 2


# ------------------------------------------------------------------------------ statistics

def test_clopper_pearson():
    low, high = litmus.clopper_pearson(5, 100)
    assert round(low, 4) == 0.0164 and round(high, 4) == 0.1128   # the textbook interval for 5/100
    low, high = litmus.clopper_pearson(0, 10 ** 10)
    assert low == 0.0 and abs(high - (1 - 0.025 ** (1e-10))) < 1e-15  # zero: only an upper bound
    with pytest.raises(ValueError, match=r"^3 successes in 2 trials; expected 0 <= k <= n and n > 0$"):
        litmus.clopper_pearson(3, 2)


def _clustered_units(rng: np.random.Generator, units: int, clusters: int, cluster: int, rate: float) -> np.ndarray:
    """Weak counts per unit (slice): the rate varies from unit to unit, and a cluster goes weak whole."""
    unit_rate = rng.gamma(4.0, rate / 4.0, units)
    return rng.binomial(clusters, unit_rate) * cluster


def test_instance_level_clopper_pearson_misses_clustered_truth_and_slice_t_covers_it():
    rng = np.random.default_rng(2015)
    units, clusters, cluster, rate = 40, 1024, 32, 0.05
    per_unit = clusters * cluster
    cp_hits = t_hits = t_kind = 0
    trials = 300
    for _ in range(trials):
        weak = _clustered_units(rng, units, clusters, cluster, rate)
        low, high = litmus.clopper_pearson(int(weak.sum()), units * per_unit)
        cp_hits += low <= rate <= high
        e = litmus.estimate(weak, np.full(units, per_unit), units, cluster)
        t_kind += e.kind == "t-slices"      # clusters where a unit happened to see nothing
        t_hits += e.low <= rate <= e.high
    assert cp_hits / trials < 0.5      # instances taken as independent: far too narrow
    assert t_kind / trials >= 0.9 and t_hits / trials >= 0.9      # slices as the units: about 95%


def test_zero_rows_get_clopper_pearson_over_clusters_not_instances():
    units, per_unit, cluster = 20, 8 * 4_194_304, 32
    e = litmus.estimate(np.zeros(units, dtype=np.int64), np.full(units, per_unit), 0, cluster)
    clusters = units * per_unit // cluster
    assert (e.rate, e.low, e.high, e.kind, e.se) == (0.0, 0.0, litmus.clopper_pearson(0, clusters)[1], "clusters", None)
    per_instance = litmus.clopper_pearson(0, units * per_unit)[1]
    assert 31 < e.high / per_instance < 33


def test_rare_rows_fall_back_to_clusters_and_bracket_the_rate():
    weak, sizes = np.full(8, 95, dtype=np.int64), np.full(8, 10 ** 6)
    assert litmus.estimate(weak, sizes, 20, 32).kind == "t-slices"
    e = litmus.estimate(weak, sizes, 19, 32)          # 19 weak groups: one short of t
    assert e.kind == "clusters" and e.low <= e.rate <= e.high
    assert e.high == litmus.clopper_pearson(8 * 95, 8 * 10 ** 6 // 32)[1]               # as many weak clusters as weak
    assert e.low == litmus.clopper_pearson(-(-8 * 95 // 32), 8 * 10 ** 6 // 32)[0] / 32  # as few as can hold them
    weak[3] = 0                                       # one slice without a weak outcome
    assert litmus.estimate(weak, sizes, 400, 32).kind == "clusters"


def test_ratio_interval_is_the_t_interval_of_equal_slices_and_weights_unequal_ones():
    from scipy import stats

    weak = np.array([100, 120, 90, 150, 110])
    e = litmus.ratio_interval(weak, np.full(5, 10_000))
    rates = weak / 10_000
    low, high = stats.t.interval(0.95, 4, loc=rates.mean(), scale=stats.sem(rates))
    assert (round(e.low, 12), round(e.high, 12), round(e.se, 12)) == (round(low, 12), round(high, 12),
                                                                      round(stats.sem(rates), 12))
    uneven = litmus.ratio_interval(np.array([10, 300]), np.array([1_000, 30_000]))
    assert uneven.rate == 310 / 31_000 and uneven.se == 0.0        # both slices at 1%: no spread
    with pytest.raises(ValueError, match=r"^1 unit\(s\) with 1 sizes; a t interval needs at least 2 units"):
        litmus.ratio_interval(np.array([1]), np.array([10]))


def test_overdispersion_tells_clumps_from_independent_instances():
    rng = np.random.default_rng(9)
    independent = rng.binomial(32768, 0.01, 200)
    assert 0.6 < litmus.overdispersion(independent, 32768) < 1.5
    assert litmus.overdispersion(_clustered_units(rng, 200, 1024, 32, 0.01), 32768) > 20
    assert litmus.overdispersion(np.zeros(5), 100) is None


def test_repeats_contained_and_overlap():
    assert litmus.repeats_contained([1.0, 1.1], [0.8, 0.9], [1.2, 1.3])
    assert not litmus.repeats_contained([1.0, 1.25], [0.8, 1.05], [1.2, 1.45])   # 1.25 is outside the first
    assert litmus.intervals_overlap([0.8, 1.05], [1.2, 1.45])
    assert not litmus.intervals_overlap([0.8, 1.25], [1.2, 1.45])
    assert litmus.repeats_contained([0.0, 0.0, 0.0], [0.0] * 3, [1e-9] * 3)


def test_heterogeneity_is_scipys_one_way_anova_and_says_when_it_cannot_test():
    from scipy.stats import f_oneway

    groups = [[1.0, 1.2, 0.9], [1.1, 1.0, 1.3], [0.8, 1.0, 1.1]]
    assert litmus.heterogeneity_p(groups) == f_oneway(*groups).pvalue > 0.3
    assert litmus.heterogeneity_p([[1.0, 1.01, 0.99], [2.0, 2.01, 1.99]]) < 1e-6
    assert litmus.heterogeneity_p([[1.0, 1.1]]) is None                 # one repeat
    assert litmus.heterogeneity_p([[1.0], [1.1]]) is None               # one slice each
    assert litmus.heterogeneity_p([[0.0, 0.0], [0.0, 0.0]]) is None     # nothing varies


def test_holm():
    assert litmus.holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert litmus.holm([None, 0.5, None, 0.01]) == [None, 0.5, None, 0.02]
    assert litmus.holm([0.6, 0.7]) == [1.0, 1.0]
    assert litmus.holm([]) == []


# ------------------------------------------------------------------------------ rows

def _bins(launches: int, per_launch: int, weak_every: int = 1, weak: int = 3) -> np.ndarray:
    """Launches of an MP row: `weak` weak outcomes in every `weak_every`-th launch, the rest spread evenly."""
    bins = np.zeros((launches, 5), dtype=np.int64)
    for k in range(launches):
        w = weak if k % weak_every == 0 else 0
        rest = per_launch - w
        bins[k, :4] = [rest // 3, rest // 3, w, rest - 2 * (rest // 3)]
    return bins


def _row(c, repeat: int, repeats: int, slices: list[np.ndarray]) -> tuple[dict, list[dict]]:
    walls = [0.1] * len(slices)
    rounds = [repeat + k * repeats for k in range(len(slices))]
    return (litmus.make_row(c, repeat, repeats, slices, walls),
            litmus.slice_records(c, repeat, slices, walls, rounds))


def test_rows_carry_the_histogram_rate_interval_and_repeat():
    h = litmus.Heuristics("none", blocks=4, threads=32)
    c = litmus.Config("mp-none", "heuristics", "mp", "none", h)
    row, records = _row(c, 2, 5, [_bins(40, h.instances)] * 4)
    assert (row["config"], row["repeat"], row["repeats"], row["instances"], row["launches"], row["groups"],
            row["slices"]) == ("mp-none", 2, 5, 160 * 128, 160, 20, 4)
    assert row["weak"] == row["o10"] == 480 and row["o00"] + row["o01"] + row["o10"] + row["o11"] == row["instances"]
    assert row["ci_kind"] == "t-slices" and row["ci_low"] == row["ci_high"] == row["rate"] == 480 / (160 * 128)
    assert row["per_100k"] == row["rate"] * 1e5 and row["o00_fraction"] == row["o00"] / row["instances"]
    assert row["interleaved"] == row["o01"] and row["interleaved_fraction"] == row["o01_fraction"] > 0
    assert sum(r["o01"] for r in records) == row["o01"] and sum(r["interleaved"] for r in records) == row["o01"]
    assert row["wall_s"] == 0.4 and row["instances_per_s"] == row["instances"] / 0.4
    assert all(isinstance(v, (str, int, float, bool)) or v is None for v in row.values())
    assert [(r["slice"], r["round"], r["weak"], r["instances"]) for r in records] == [
        (1, 2, 120, 40 * 128), (2, 7, 120, 40 * 128), (3, 12, 120, 40 * 128), (4, 17, 120, 40 * 128)]
    assert _row(c, 1, 1, [_bins(40, h.instances, weak=0)] * 4)[0]["ci_kind"] == "clusters"
    sb = litmus.Config("sb-none", "tests", "sb", "none", h)
    sb_row = _row(sb, 1, 1, [_bins(8, h.instances)] * 2)[0]
    assert sb_row["weak"] == 16 * ((128 - 3) // 3) and sb_row["interleaved"] == sb_row["o11"]
    lb = litmus.Config("lb-none", "tests", "lb", "none", h)
    lb_row = _row(lb, 1, 1, [_bins(8, h.instances)] * 2)[0]
    assert lb_row["weak"] == lb_row["o11"] and lb_row["interleaved"] == lb_row["o00"]


def test_histograms_that_do_not_add_up_are_errors():
    good = _bins(8, 128)
    bad = good.copy()
    bad[3, 4] = 2
    with pytest.raises(litmus.LitmusError) as exc:
        litmus.check_histograms(bad, 128)
    assert str(exc.value) == ("launch 4: histogram [41, 41, 3, 43, 2]: a result other than 0 or 1 was read; "
                              "expected only 0 and 1")
    short = good.copy()
    short[5, 0] -= 2
    with pytest.raises(litmus.LitmusError) as exc:
        litmus.check_histograms(short, 128)
    assert str(exc.value) == "launch 6: histogram [39, 41, 3, 43] sums to 126; expected the 128 instances that ran"
    c = litmus.Config("mp-none", "t", "mp", "none", litmus.Heuristics("none", blocks=4, threads=32))
    with pytest.raises(litmus.LitmusError) as exc:
        litmus.make_row(c, 1, 1, [_bins(16, 128), _bins(12, 128)], [0.1, 0.1])
    assert str(exc.value) == "slice 2: 12 launches do not make whole groups of 8"


def _varying_slices(rng: np.random.Generator, per_launch: int, n: int) -> list[np.ndarray]:
    out = []
    for _ in range(n):
        bins = _bins(40, per_launch)
        bins[:, 2] = rng.integers(1, 7, 40)       # weak outcomes that vary from launch to launch
        bins[:, 3] = per_launch - bins[:, :3].sum(axis=1)
        out.append(bins)
    return out


def test_summary_over_repeats():
    h = litmus.Heuristics("none", blocks=4, threads=32)
    c = litmus.Config("mp-none", "heuristics", "mp", "none", h)
    rng = np.random.default_rng(4)
    made = [_row(c, k, 5, _varying_slices(rng, h.instances, 4)) for k in range(1, 6)]
    rows, records = [r for r, _ in made], [x for _, xs in made for x in xs]
    s = litmus.summarise(rows, records)
    assert (s["config"], s["repeats"], s["slices"], s["ci_kind"]) == ("mp-none", 5, 20, "t-slices")
    assert s["instances"] == 5 * 160 * 128 and s["weak"] == sum(r["weak"] for r in rows)
    assert s["rate"] == s["weak"] / s["instances"]
    assert s["ci_low"] <= s["rate"] <= s["ci_high"] and s["rate_min"] <= s["rate"] <= s["rate_max"]
    assert s["contained"] == litmus.repeats_contained([r["rate"] for r in rows], [r["ci_low"] for r in rows],
                                                      [r["ci_high"] for r in rows])
    assert s["heterogeneity_p"] is not None and s["agree"] == (s["heterogeneity_p"] >= 0.05)
    zero_made = [_row(c, k, 3, [_bins(40, h.instances, weak=0)] * 4) for k in (1, 2, 3)]
    zero = litmus.summarise([r for r, _ in zero_made], [x for _, xs in zero_made for x in xs])
    assert (zero["rate"], zero["ci_kind"], zero["heterogeneity_p"], zero["agree"]) == (0.0, "clusters", None, True)
    assert zero["ci_high"] == litmus.clopper_pearson(0, 3 * 160 * 128 // 32)[1]
    # Holm over the campaign: the adjusted p is never below the raw one, and sets `agree`
    litmus.judge_agreement([s, zero])
    assert s["heterogeneity_p_holm"] >= s["heterogeneity_p"] and zero["heterogeneity_p_holm"] is None
    assert s["agree"] == (s["heterogeneity_p_holm"] >= 0.05)


class _DriftingRunner:
    """A stand-in for the GPU: each call's weak rate follows a slow drift over the campaign, times a config factor.

    The drift is what the H200 showed (stressed and barrier rows moved by up to 15% between
    stretches of one campaign); each call also adds launch-to-launch noise in clumps of 32.
    """

    def __init__(self, seed: int, drift: float = 0.15):
        self.rng, self.calls, self.drift = np.random.default_rng(seed), 0, drift

    def run(self, c, seconds: float, min_instances: int = 0):
        self.calls += 1
        level = 1 + self.drift * np.sin(self.calls / 40.0)             # slow: one cycle over ~250 calls
        per_launch, launches = c.h.instances, 24
        clusters = per_launch // 32
        weak = self.rng.binomial(clusters, 0.01 * level * self.rng.gamma(8.0, 1 / 8.0, launches)) * 32
        bins = np.zeros((launches, 5), dtype=np.int64)
        bins[:, 2] = weak
        bins[:, 3] = per_launch - weak
        return bins, 0.01


def _judged(configs, rows, records) -> list[dict]:
    """Each config's summary with the campaign's agreement verdicts, as litmus.campaign makes them."""
    summaries = [litmus.summarise([r for r in rows if r["config"] == c.key],
                                  [x for x in records if x["config"] == c.key]) for c in configs]
    litmus.judge_agreement(summaries)
    return summaries


def _campaign(runner, configs, repeats: int, slices: int):
    rows, records = litmus.measure_all(runner, configs, repeats, 1.0, lambda s: None, slices=slices)
    return rows, records, _judged(configs, rows, records)


def _drift_configs(n: int) -> list:
    h = litmus.Heuristics("none", blocks=64, threads=256)
    return [litmus.Config(f"mp-none-{k}", "t", "mp", "none", h) for k in range(n)]


def test_interleaved_slices_give_repeats_that_agree_under_drift():
    configs = _drift_configs(6)
    failures = 0
    for seed in range(12):
        rows, records, summaries = _campaign(_DriftingRunner(seed), configs, repeats=5, slices=8)
        failures += not all(s["agree"] for s in summaries)
    # a campaign whose intervals are right disagrees about one time in twenty (Holm keeps the family at 5%)
    assert failures <= 2
    # each repeat samples the whole campaign: rounds r, r + 5, r + 10, ...
    assert sorted({x["round"] for x in records if x["repeat"] == 2}) == list(range(2, 41, 5))
    assert all(r["slices"] == 8 and r["ci_kind"] == "t-slices" for r in rows)


def test_contiguous_repeats_under_drift_disagree():
    """The design that failed on the H200: each repeat one stretch of time. The agreement test catches it."""
    configs = _drift_configs(6)
    caught = 0
    for seed in range(6):
        runner = _DriftingRunner(seed)
        parts = []
        for repeat in range(1, 6):                      # repeat 1's eight slices, then repeat 2's, ...
            rows_r, rec_r = litmus.measure_all(runner, configs, 1, 1.0, lambda s: None, slices=8)
            parts.append(([{**r, "repeat": repeat} for r in rows_r], [{**x, "repeat": repeat} for x in rec_r]))
        rows = [r for p, _ in parts for r in p]
        records = [x for _, p in parts for x in p]
        caught += not all(s["agree"] for s in _judged(configs, rows, records))
    assert caught >= 5


def test_schema_in_the_docstring_names_every_field():
    h = litmus.Heuristics("none", blocks=4, threads=32)
    c = litmus.Config("mp-none", "t", "mp", "none", h)
    row, records = _row(c, 1, 2, [_bins(40, 128)] * 4)
    row2, records2 = _row(c, 2, 2, [_bins(40, 128)] * 4)
    summary = litmus.summarise([row, row2], records + records2)
    doc = litmus.__doc__
    missing = sorted(k for k in {**row, **summary, **records[0]}
                     if not k.endswith("_text") and not re.search(rf"\b{k}\b", doc))
    assert missing == []
    for k in ("format", "ci_method", "agreement_method", "slices_per_repeat", "campaign_s", "gpu_s", "budget_s",
              "checks_passed", "best_heuristics"):
        assert re.search(rf"\b{k}\b", doc), k


def test_short_forms():
    assert [litmus.sci(x) for x in (0, 0.0572, 1.35e-05, 3.11e10, 12.0)] == ["0", "0.0572", "1.35e-05", "3.11e+10", "12"]


def test_overrides():
    h = litmus.with_overrides(litmus.Heuristics("none"), "stress_blocks=8,barrier=1,stress_pattern=load-load,jitter=99")
    assert (h.stress_blocks, h.barrier, h.stress_pattern, h.jitter) == (8, True, "load-load", 99)
    with pytest.raises(SystemExit):
        litmus.with_overrides(litmus.Heuristics("none"), "warp=3")


# ------------------------------------------------------------------------------ the campaign's plan

def test_config_keys():
    assert litmus.config_key("mp", "none", "none") == "mp-none"
    assert litmus.config_key("mp", "gpu", "barrier + jitter") == "mp-gpu-barrier-jitter"
    assert litmus.config_key("mp", "none", "random threads") == "mp-none-random-threads"
    assert litmus.config_key("mp", "cta", "none", same_cta=True) == "mp-cta-same-cta"
    assert litmus.config_key("mp", "gpu", "none", suffix="soundness") == "mp-gpu-soundness"


def test_campaign_plan():
    sets = litmus.heuristic_sets(132)
    heur = litmus.campaign_configs(sets, None, 10 ** 10)
    rest = litmus.campaign_configs(sets, sets[0], 10 ** 10)
    keys = [c.key for c in heur + rest]
    assert {"mp-none", "mp-none-random-threads", "mp-none-random-locations", "mp-rel-acq", "mp-gpu-plain",
            "mp-gpu-volatile", "mp-gpu-soundness", "mp-gpu-broken-map"} <= set(keys)
    assert len({c.key for c in heur}) == len(heur) and len({c.key for c in rest}) == len(rest)
    # every fence variant is measured under the best set; no fenced row with jitter (it separates the roles)
    fences = {c.fence for c in rest if c.table == "fences"}
    assert fences == {f for t, f in litmus.KERNELS if t == "mp"}
    assert not any(c.h.jitter for c in rest)
    assert all((c.test, c.fence) in litmus.KERNELS for c in heur + rest)
    # the C++ variants: a volatile flag is strong, so the model orders it; a plain flag is a data race
    assert "gpu-volatile" in litmus.ORDERED and "gpu-plain" not in litmus.ORDERED


def test_overlap_check_reads_the_interleaved_bin_not_reader_first():
    """A fenced zero counts only where the roles interleaved (MP: 01); reader first (00) is no overlap."""
    base = {"config": "mp-gpu", "fence": "gpu", "map": "sound", "weak": 0, "agree": True, "contained": True}
    reader_first = {**base, "o00_fraction": 0.45, "o01_fraction": 0.0, "interleaved_fraction": 0.0}
    interleaved = {**base, "o00_fraction": 0.0, "o01_fraction": 0.48, "interleaved_fraction": 0.48}
    row = {"map": "broken", "weak": 5}
    check = {c["check"]: c for c in litmus.campaign_checks([reader_first], [row], 1.0, 180.0)}["fenced-overlap"]
    assert not check["passed"] and check["detail"].endswith(": none")
    check = {c["check"]: c for c in litmus.campaign_checks([interleaved], [row], 1.0, 180.0)}["fenced-overlap"]
    assert check["passed"] and check["detail"].endswith("mp-gpu 48.00%")
    # the bin each test calls interleaved: the outcome no sequential run of the two roles gives
    assert {t: d["interleaved"] for t, d in litmus.TESTS.items()} == {
        "mp": (0, 1), "sb": (1, 1), "lb": (0, 0), "corr": (0, 1)}


def test_checks_gate_on_the_harness_bug_and_the_budget():
    row = {"map": "broken", "weak": 0}
    s = {"config": "mp-gpu", "fence": "gpu", "map": "sound", "weak": 0, "o00_fraction": 0.0,
         "interleaved_fraction": 0.2, "agree": True, "contained": False}
    checks = {c["check"]: c for c in litmus.campaign_checks([s], [row], 181.0, 180.0)}
    assert not checks["harness-bug"]["passed"] and checks["harness-bug"]["gate"]
    assert not checks["budget"]["passed"] and checks["budget"]["detail"] == "campaign 181.0 s of 180 s"
    assert checks["fenced-overlap"]["passed"] and not checks["fenced-overlap"]["gate"]
    checks = {c["check"]: c for c in litmus.campaign_checks([s], [{**row, "weak": 5}], 100.0, 180.0)}
    assert all(c["passed"] for c in checks.values())


class _FakeGpu:
    """Runner's interface without a GPU: weak outcomes where no fence orders both sides, and under the broken map."""

    gpu, sms, setup_s = "fake", 4, 0.0

    def __init__(self, cubin, seed):
        self.rng = np.random.default_rng(seed)

    def warm_up(self, seconds: float = 0.0) -> None:
        pass

    def run(self, c, seconds: float, min_instances: int = 0):
        per_launch = c.h.instances
        launches = max(3 * litmus.LAUNCHES_PER_GROUP, -(-min_instances // per_launch))
        launches = -(-launches // litmus.LAUNCHES_PER_GROUP) * litmus.LAUNCHES_PER_GROUP
        rate = 1e-4 if c.broken else 0.0 if c.fence in litmus.ORDERED or c.test == "corr" else 0.01
        weak = self.rng.binomial(per_launch // 32, rate, launches) * 32 if rate else np.zeros(launches, np.int64)
        bins = np.zeros((launches, 5), dtype=np.int64)
        w0, w1 = litmus.TESTS[c.test]["weak"]
        i0, i1 = litmus.TESTS[c.test]["interleaved"]
        bins[:, w0 * 2 + w1] = weak
        bins[:, i0 * 2 + i1] = (per_launch - weak) // 2          # half the roles interleave
        other = next(k for k in range(4) if k not in (w0 * 2 + w1, i0 * 2 + i1))
        bins[:, other] = per_launch - bins[:, :4].sum(axis=1)
        return bins, max(seconds, 1e-3)


def test_campaign_end_to_end_without_a_gpu(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr(litmus, "Runner", _FakeGpu)
    out = tmp_path / "litmus.json"
    status = litmus.main(["campaign", "--json", str(out), "--seconds", "0.008", "--soundness", "1e9"])
    data = json.loads(out.read_text())
    printed = capsys.readouterr().out
    assert status == 0 and data["checks_passed"] and data["format"] == 4
    assert (data["repeats"], data["slices_per_repeat"]) == (5, litmus.SLICES)
    assert data["ci_method"] == litmus.CI_METHOD and data["agreement_method"] == litmus.AGREEMENT_METHOD
    configs = {c["config"]: c for c in data["configs"]}
    assert len(data["rows"]) == 5 * len(configs) and len(data["slices"]) == 5 * litmus.SLICES * len(configs)
    for r in data["rows"]:      # the slices add up to their row
        mine = [x for x in data["slices"] if x["config"] == r["config"] and x["repeat"] == r["repeat"]]
        assert len(mine) == litmus.SLICES == r["slices"]
        assert sum(x["weak"] for x in mine) == r["weak"] and sum(x["instances"] for x in mine) == r["instances"]
        assert sorted(x["round"] for x in mine) == list(range(r["repeat"], 5 * litmus.SLICES + 1, 5))
    gpu_fenced = next(c for c in configs.values() if c["table"] == "fences" and c["fence"] == "gpu")
    assert configs["mp-none"]["ci_kind"] == "t-slices" and gpu_fenced["ci_kind"] == "clusters"
    assert configs["mp-none"]["heterogeneity_p_holm"] >= configs["mp-none"]["heterogeneity_p"]
    checks = {c["check"]: c for c in data["checks"]}
    assert checks["harness-bug"]["passed"] and checks["fenced-zero"]["passed"]
    assert checks["fenced-overlap"]["passed"] and re.search(r"mp-gpu-volatile\S* 50\.00%", checks["fenced-overlap"]["detail"])
    assert "mp-gpu-plain" not in checks["fenced-zero"]["detail"]
    assert checks["repeats-agree"]["passed"] == all(c["agree"] for c in configs.values())
    assert "round 40/40 (repeat 5)" in printed and "best heuristic set:" in printed
    assert all(json.loads(json.dumps(v)) == v for r in data["rows"] for v in r.values())   # flat JSON scalars


def test_runs_toml_and_readme():
    runs = _runs()
    campaign = runs["campaign"]
    assert (campaign.get("exclusive"), campaign.get("repeat", 1), campaign.get("gate")) == (True, 1, True)
    functions = re.findall(r"-fun (\w+)", runs["sass"]["command"])
    # every kernel whose result the page quotes: all of them
    assert sorted(functions) == sorted(litmus.KERNELS.values()) == sorted(SASS_EXPECTED)
    readme_lines = {line.strip() for line in (LESSON / "README.md").read_text().splitlines()}
    assert {r["command"] for r in runs.values()} <= readme_lines


# ------------------------------------------------------------------------------ compiled code

def test_ptx_keeps_accesses_and_fences_in_test_order(tmp_path: Path):
    found = _ptx(tmp_path)
    assert {name: found.get(name) for name in PTX_EXPECTED} == PTX_EXPECTED
    assert set(litmus.KERNELS.values()) <= set(found)
    assert set(PTX_EXPECTED) | set(PTX_EXPECTED_CXX) == set(litmus.KERNELS.values())
    cxx = _ptx_cxx(tmp_path)
    assert {name: cxx.get(name) for name in PTX_EXPECTED_CXX} == PTX_EXPECTED_CXX
    # the C++ variants have no relaxed access under test: the learner's code is what runs
    assert all(found[name] == ["membar.gl", "membar.gl"] for name in PTX_EXPECTED_CXX)


def test_release_acquire_kernel_uses_release_and_acquire(tmp_path: Path):
    found = _ptx(tmp_path)
    assert found["mp_rel_acq"].count("st.release") == 1 and found["mp_rel_acq"].count("ld.acquire") == 1
    assert not any(o.startswith(("membar", "fence")) for o in found["mp_rel_acq"])
    assert not any("release" in o or "acquire" in o for name, ops in found.items() if name != "mp_rel_acq" for o in ops)


def test_sass_tails_find_a_moved_access():
    body = ("        /*0010*/ LDG.E R3, desc[UR6][R2.64] ;\n        /*0020*/ STG.E.STRONG.GPU desc[UR6][R2.64], R1 ;\n"
            "        /*0030*/ LDG.E.STRONG.GPU R4, desc[UR6][R4.64] ;\n        /*0040*/ STG.E desc[UR6][R6.64], R4 ;\n"
            "        /*0050*/ STG.E desc[UR6][R8.64], R4 ;\n        /*0060*/ STG.E desc[UR6][R10.64], R5 ;\n")
    text = f"\n\t\tFunction : k\n{body}"
    assert sass_tails(text, {"k": ["LDG.E", _G, _S, *_TAIL]}) == {"k": ["LDG.E", _G, _S, *_TAIL]}
    swapped = text.replace("STG.E.STRONG.GPU desc[UR6][R2.64], R1", "LDG.E.STRONG.GPU R9, desc[UR6][R2.64]", 1)
    assert sass_tails(swapped, {"k": ["LDG.E", _G, _S, *_TAIL]}) == {"k": ["LDG.E", _S, _S, *_TAIL]}


def recorded(group: str) -> list[Path]:
    """Every recording of `group` in the evidence set, session by session (the manifest names their files)."""
    transcripts = json.loads((EVIDENCE / "manifest.json").read_text())["transcripts"]
    return [EVIDENCE / e["file"] for _, e in sorted(transcripts.items()) if e["group"] == group]


def test_recorded_sass_keeps_the_order():
    """Each session's evidence holds the SASS of every kernel the page quotes: no access merged, moved or dropped."""
    _fresh_evidence()
    functions = re.findall(r"-fun (\w+)", _runs()["sass"]["command"])
    assert recorded("sass")
    for path in recorded("sass"):
        assert sass_tails(path.read_text(), SASS_EXPECTED) == {name: SASS_EXPECTED[name] for name in functions}, path


@pytest.mark.parametrize("session", range(3))
def test_recorded_campaign_meets_its_checks(session):
    _fresh_evidence()
    paths = recorded("campaign-results")
    if session >= len(paths):
        return  # the set keeps fewer sessions: nothing more to check (the first always exists)
    data = json.loads(paths[session].read_text())
    rows, configs = data["rows"], data["configs"]
    assert data["ci_method"] and data["campaign_s"] <= 180 and data["checks_passed"]
    for r in rows:
        assert r["o00"] + r["o01"] + r["o10"] + r["o11"] == r["instances"]
        assert r["ci_low"] <= r["rate"] <= r["ci_high"]
    assert all(c["repeats"] >= 3 for c in configs)
    for c in configs:
        assert sorted(r["repeat"] for r in rows if r["config"] == c["config"]) == list(range(1, c["repeats"] + 1))
    ordered = [c for c in configs if c["fence"] in litmus.ORDERED and c["map"] == "sound"]
    assert ordered and all(c["weak"] == 0 for c in ordered)
    # a fenced zero that is not blind: its roles interleaved (MP's 01) in a good share of the instances
    assert any(c["interleaved_fraction"] >= 0.01 for c in ordered)
    assert all(r["interleaved_fraction"] >= 0.01 for r in rows if r["table"] == "fences" and r["fence"] in litmus.ORDERED)
    assert next(c for c in configs if c["config"] == "mp-rel-acq")["weak"] == 0
    # where the roles ran: read in every row; both roles in one CTA are on one multiprocessor, always
    assert all(r["placement_launches"] > 0 and 0 <= r["same_sm_fraction"] <= 1 for r in rows)
    assert all(r["same_sm_fraction"] == 1 for r in rows if r["placement"] == "same-cta")
    assert all(r["weak"] > 0 for r in rows if r["map"] == "broken")
    assert sum(r["instances"] for r in rows if r["table"] == "soundness") >= 10 ** 10
    # format 3: each row is its slices, spread over the campaign, and every config's repeats agree
    assert data["format"] == 4 and data["slices_per_repeat"] >= 2
    for r in rows:
        mine = [x for x in data["slices"] if x["config"] == r["config"] and x["repeat"] == r["repeat"]]
        assert len(mine) == r["slices"] == data["slices_per_repeat"]
        assert (sum(x["weak"] for x in mine), sum(x["instances"] for x in mine)) == (r["weak"], r["instances"])
        assert len({x["round"] % data["repeats"] for x in mine}) == 1       # one repeat's rounds, r, r + R, ...
    assert all(c["agree"] for c in configs) and any(c["heterogeneity_p"] is not None for c in configs)
    agree = next(c for c in data["checks"] if c["check"] == "repeats-agree")
    assert agree["passed"] and data["agreement_method"] == litmus.AGREEMENT_METHOD
