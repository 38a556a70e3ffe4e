#!/usr/bin/env python3
"""Parallel GPU litmus tests (MP, SB, LB, CoRR) on CuPy: how often does the GPU show a weak outcome?

The kernels are litmus.cu's, compiled by nvcc to litmus.cubin and loaded with CuPy. Each
launch runs one test instance per testing thread; an outcome histogram is counted on the
GPU and only its bins come back. NumPy builds the placement maps; SciPy gives the
Clopper-Pearson intervals. CuPy is imported only where the GPU is used, so the
bookkeeping below runs (and is tested) on a machine without a GPU.

  python3 litmus.py campaign --json litmus.json      # the recorded campaign
  python3 litmus.py run --test mp --fence gpu --barrier --seconds 2
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np

# The outcome (r0, r1) that sequential consistency forbids, per test; bins are r0 * 2 + r1.
TESTS = {
    "mp": {"weak": (1, 0), "what": "r0 = y = 1 but r1 = x = 0"},
    "sb": {"weak": (0, 0), "what": "both loads miss the other thread's store"},
    "lb": {"weak": (1, 1), "what": "both loads see the store that comes after the other load"},
    "corr": {"weak": (1, 0), "what": "a newer value, then an older one, from one location"},
}
# Kernel names in litmus.cu, per test and fence variant.
KERNELS = {
    ("mp", "none"): "mp_none", ("mp", "cta"): "mp_cta", ("mp", "gpu"): "mp_gpu", ("mp", "sys"): "mp_sys",
    ("mp", "gpu-writer"): "mp_gpu_writer", ("mp", "gpu-reader"): "mp_gpu_reader",
    ("sb", "none"): "sb_none", ("sb", "gpu"): "sb_gpu", ("lb", "none"): "lb_none", ("lb", "gpu"): "lb_gpu",
    ("corr", "none"): "corr_none",
}
STRESS_PATTERNS = {"store-store": 0, "store-load": 1, "load-store": 2, "load-load": 3}
MAP_VARIANTS = 4  # random maps are drawn this many times per configuration and rotated per launch


@dataclass(frozen=True)
class Heuristics:
    """One heuristic set: each switch on or off, with its sizes."""

    name: str
    blocks: int = 16384            # testing blocks
    threads: int = 256             # threads per testing block
    random_threads: bool = False   # random placement of instances over threads and CTAs
    random_locations: bool = False # random placement of locations, `stride` words apart
    stride: int = 1
    stress_blocks: int = 0         # extra CTAs that hammer scratch memory during the test
    stress_iters: int = 0
    stress_pattern: str = "store-load"
    stress_lines: int = 64
    stress_stride: int = 32        # words between stressed lines (32 words = 128 bytes)
    barrier: bool = False          # spin barrier (with a timeout) right before the test
    barrier_spins: int = 4096
    pre_stress_iters: int = 0      # stress by the testing threads themselves, before the test

    @property
    def instances(self) -> int:
        """Test instances per launch: one per testing thread."""
        return self.blocks * self.threads


@dataclass(frozen=True)
class Maps:
    """Where each instance runs and where its locations are; `words` is the size of `mem`."""

    writer_inst: np.ndarray
    reader_inst: np.ndarray
    xloc: np.ndarray
    yloc: np.ndarray
    words: int


def make_maps(h: Heuristics, same_cta: bool, rng: np.random.Generator, broken: bool = False) -> Maps:
    """Thread t plays role 0 of instance writer_inst[t] and role 1 of reader_inst[t].

    Role 1 of an instance runs one CTA further on (inter-CTA) or half a CTA further on
    (same CTA). Locations are bijective unless `broken`, which makes each instance of the
    second half share y with one of the first half (which runs earlier): the harness bug that
    produces false weak outcomes under any fence.
    """
    n, w = h.instances, h.threads
    t = np.arange(n, dtype=np.int64)
    if same_cta:
        partner = t - t % w + (t % w + w // 2) % w
    else:
        partner = (t + w) % n
    inst = rng.permutation(n) if h.random_threads else t
    writer_inst = inst
    reader_inst = inst[partner]
    slots_x = rng.permutation(n) if h.random_locations else t
    slots_y = rng.permutation(n) if h.random_locations else t
    stride = h.stride if h.random_locations else 1
    xloc = slots_x * stride
    yloc = (n + slots_y) * stride
    if broken:
        yloc = yloc[t % (n // 2)]  # instance k + n/2 shares y with instance k
    return Maps(writer_inst.astype(np.uint32), reader_inst.astype(np.uint32), xloc.astype(np.uint32),
                yloc.astype(np.uint32), int(2 * n * stride))


def shared_locations(maps: Maps) -> int:
    """How many locations more than one instance uses (0 for a sound map)."""
    counts = np.bincount(np.concatenate([maps.xloc, maps.yloc]), minlength=maps.words)
    return int(np.count_nonzero(counts > 1))


def roles_cover_every_instance(maps: Maps) -> bool:
    """Each instance has exactly one thread in each role."""
    n = len(maps.writer_inst)
    return bool((np.bincount(maps.writer_inst, minlength=n) == 1).all() and
                (np.bincount(maps.reader_inst, minlength=n) == 1).all())


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Exact binomial confidence interval for k successes in n trials (SciPy's beta quantiles)."""
    from scipy.stats import beta

    if n <= 0:
        raise ValueError("no trials")
    low = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def sci(x: float) -> str:
    """A figure as a page quotes it: three significant digits, scientific for small or large."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        return f"{x:.3g}"
    return f"{x:.2e}"


@dataclass
class Row:
    """One measured configuration: counts, rate with its interval, and speed."""

    table: str
    test: str
    fence: str
    placement: str
    heuristics: str
    instances: int
    weak: int
    o00: int
    o01: int
    o10: int
    o11: int
    wall_s: float
    rate: float = 0.0
    ci_low: float = 0.0
    ci_high: float = 0.0
    instances_per_s: float = 0.0
    weak_per_s: float = 0.0
    text: dict = field(default_factory=dict)


def make_row(table: str, test: str, fence: str, placement: str, heuristics: str, bins: np.ndarray,
             wall_s: float, expected: int) -> Row:
    """Turn an outcome histogram into a Row; raises if it does not add up to the instances run."""
    bins = [int(b) for b in bins]
    if len(bins) != 5 or bins[4] != 0:
        raise ValueError(f"histogram {bins}: a result other than 0 or 1 was read")
    instances = sum(bins[:4])
    if instances != expected:
        raise ValueError(f"histogram {bins[:4]} sums to {instances}, but {expected} instances ran")
    w0, w1 = TESTS[test]["weak"]
    weak = bins[w0 * 2 + w1]
    low, high = clopper_pearson(weak, instances)
    row = Row(table, test, fence, placement, heuristics, instances, weak, *bins[:4], round(wall_s, 3),
              weak / instances, low, high, instances / wall_s, weak / wall_s)
    row.text = {"rate": sci(row.rate), "ci_low": sci(low), "ci_high": sci(high),
                "instances": sci(instances), "instances_per_s": sci(row.instances_per_s),
                "weak_per_s": sci(row.weak_per_s)}
    return row


def row_json(row: Row) -> dict:
    """A Row as the evidence records it: numbers, plus the page's short forms as *_text fields."""
    data = asdict(row)
    text = data.pop("text")
    data.update({f"{k}_text": v for k, v in text.items()})
    return data


def format_row(r: Row) -> str:
    """One progress line."""
    return (f"{r.table:<11} {r.test:<4} {r.fence:<10} {r.placement:<9} {r.heuristics:<24} "
            f"{r.instances:>14,d} {r.weak:>10,d}  rate {r.text['rate']:>8} [{r.text['ci_low']}, {r.text['ci_high']}]  "
            f"{r.text['instances_per_s']:>8} inst/s  {r.text['weak_per_s']:>8} weak/s  {r.wall_s:6.2f} s")


# ------------------------------------------------------------------------------------------ GPU side

class Runner:
    """Launches litmus.cu's kernels with CuPy and counts outcomes on the GPU."""

    def __init__(self, cubin: Path, seed: int):
        import cupy as cp

        self.cp = cp
        self.module = cp.RawModule(path=str(cubin))
        self.histogram = self.module.get_function("histogram")
        self.rng = np.random.default_rng(seed)
        self.scratch = cp.zeros(1 << 22, dtype=cp.uint32)
        self.barrier = cp.zeros(1, dtype=cp.uint32)
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"]
        self.gpu = name.decode() if isinstance(name, bytes) else str(name)
        self.sms = int(props["multiProcessorCount"])

    def run(self, test: str, fence: str, h: Heuristics, seconds: float = 0.0, min_instances: int = 0,
            same_cta: bool = False, broken: bool = False) -> tuple[np.ndarray, float, int]:
        """Launch until both `seconds` and `min_instances` are reached; returns (bins, wall seconds, instances run)."""
        cp = self.cp
        fn = self.module.get_function(KERNELS[(test, fence)])
        variants = []
        for _ in range(MAP_VARIANTS if (h.random_threads or h.random_locations) else 1):
            maps = make_maps(h, same_cta, self.rng, broken)
            if not broken and (shared_locations(maps) or not roles_cover_every_instance(maps)):
                raise RuntimeError("placement map is not a bijection")  # never silently
            variants.append(tuple(cp.asarray(a) for a in (maps.writer_inst, maps.reader_inst, maps.xloc, maps.yloc)))
        mem = cp.zeros(maps.words, dtype=cp.uint32)
        r0 = cp.zeros(h.instances, dtype=cp.uint32)
        r1 = cp.zeros(h.instances, dtype=cp.uint32)
        bins = cp.zeros(5, dtype=cp.uint64)
        grid = h.blocks + h.stress_blocks
        u = np.uint32
        scalars = (u(h.blocks), u(h.instances), u(h.stress_iters), u(STRESS_PATTERNS[h.stress_pattern]),
                   u(h.stress_lines), u(h.stress_stride), u(h.pre_stress_iters),
                   u(h.barrier_spins if h.barrier else 0))
        hist_grid = min(4 * self.sms, -(-h.instances // 256))
        launches = 0
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        while True:
            for _ in range(8):
                w_i, r_i, x_l, y_l = variants[launches % len(variants)]
                mem.fill(0)
                self.barrier.fill(0)
                fn((grid,), (h.threads,), (mem, r0, r1, w_i, r_i, x_l, y_l, self.barrier, self.scratch) + scalars)
                self.histogram((hist_grid,), (256,), (r0, r1, u(h.instances), bins))
                launches += 1
            cp.cuda.Device().synchronize()
            wall = time.perf_counter() - start
            if wall >= seconds and launches * h.instances >= min_instances:
                break
        return cp.asnumpy(bins), wall, launches * h.instances


def heuristic_sets(sms: int) -> list[Heuristics]:
    """The sets the campaign compares for MP. Barrier sets use a grid that fits on the GPU at once."""
    resident = sms * 4  # 256-thread blocks: four per SM leaves room for stress blocks
    big = Heuristics("none")
    small = replace(big, blocks=resident)
    stress = dict(stress_blocks=sms * 2, stress_iters=1024, stress_pattern="store-load")
    return [
        big,
        replace(big, name="random threads", random_threads=True),
        replace(big, name="random locations", random_locations=True, stride=4),
        replace(small, name="stress", **stress),
        replace(small, name="stress + random threads", random_threads=True, **stress),
        replace(small, name="barrier", barrier=True),
        replace(small, name="barrier + random", barrier=True, random_threads=True, random_locations=True, stride=4),
        replace(small, name="barrier + stress", barrier=True, **stress),
        replace(small, name="barrier + light stress", barrier=True, stress_blocks=sms, stress_iters=256),
        replace(small, name="barrier + pre-stress", barrier=True, pre_stress_iters=64),
    ]


def with_overrides(h: Heuristics, text: str) -> Heuristics:
    """`h` with fields changed by 'key=value,...' (booleans as 0/1, patterns by name)."""
    changes = {}
    types = {f.name: f.type for f in fields(Heuristics)}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, _, value = part.partition("=")
        if key not in types or key == "name":
            raise SystemExit(f"--with: unknown heuristic {key!r}; known: {', '.join(sorted(types))}")
        kind = types[key]
        changes[key] = value if kind == "str" else bool(int(value)) if kind == "bool" else int(value)
    if "stress_pattern" in changes and changes["stress_pattern"] not in STRESS_PATTERNS:
        raise SystemExit(f"--with: stress_pattern must be one of {', '.join(STRESS_PATTERNS)}")
    return replace(h, name=h.name + (f" ({text})" if text else ""), **changes)


def campaign(runner: Runner, seconds: float, soundness_instances: int, out) -> dict:
    """The recorded campaign: throughput, heuristics, fences, other tests, placement, soundness."""
    rows: list[Row] = []

    def measure(table, test, fence, h, placement="inter-cta", same_cta=False, broken=False, min_instances=0,
                secs=None) -> Row:
        bins, wall, ran = runner.run(test, fence, h, secs if secs is not None else seconds, min_instances, same_cta, broken)
        row = make_row(table, test, fence, placement, h.name, bins, wall, ran)
        rows.append(row)
        out(format_row(row))
        if test == "corr" and row.weak:
            out(f"FINDING: CoRR showed {row.weak} weak outcomes; the PTX memory model forbids them")
        if fence in ("gpu", "sys") and not broken and row.weak:
            out(f"FINDING: {test.upper()} with {fence}-scope fences on both sides showed {row.weak} weak outcomes")
        return row

    sets = heuristic_sets(runner.sms)
    none = sets[0]
    measure("throughput", "mp", "none", none)
    heur = [measure("heuristics", "mp", "none", h) for h in sets]
    best_row = max(heur, key=lambda r: (r.weak_per_s, r.rate))
    best = next(h for h in sets if h.name == best_row.heuristics)
    out(f"best heuristic set: {best.name} ({best_row.text['weak_per_s']} weak outcomes per second)")
    for fence in ("none", "cta", "gpu", "sys", "gpu-writer", "gpu-reader"):
        measure("fences", "mp", fence, best)
    for test, fence in (("sb", "none"), ("sb", "gpu"), ("lb", "none"), ("lb", "gpu"), ("corr", "none")):
        measure("tests", test, fence, best)
    for fence in ("none", "cta"):
        measure("placement", "mp", fence, best, placement="same-cta", same_cta=True)
    measure("soundness", "mp", "gpu", none, min_instances=soundness_instances, secs=0.0)
    measure("harness-bug", "mp", "gpu", best, broken=True)
    return {"best_heuristics": best.name, "heuristic_sets": [asdict(h) for h in sets],
            "rows": [row_json(r) for r in rows]}


def main(argv: list[str] | None = None) -> int:
    """Command line; see the module docstring."""
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mode", choices=["campaign", "run"])
    p.add_argument("--cubin", default=str(here / "litmus.cubin"))
    p.add_argument("--seed", type=int, default=62)
    p.add_argument("--seconds", type=float, default=3.0, help="GPU time per configuration")
    p.add_argument("--soundness", type=float, default=5e10, help="instances for the GPU-fence soundness row")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--test", choices=sorted(TESTS), default="mp")
    p.add_argument("--fence", default="none", help="none, cta, gpu, sys, gpu-writer, gpu-reader")
    p.add_argument("--set", default="none", help="a heuristic set name, for `run`")
    p.add_argument("--same-cta", action="store_true")
    p.add_argument("--with", dest="overrides", default="",
                   help="change the set for `run`, e.g. stress_blocks=264,stress_pattern=load-store,barrier=1")
    args = p.parse_args(argv)
    say = lambda s: print(s, flush=True)  # noqa: E731
    runner = Runner(Path(args.cubin), args.seed)
    say(f"device: {runner.gpu} | {runner.sms} SMs | seed {args.seed}")
    start = time.perf_counter()
    if args.mode == "run":
        h = with_overrides(next(h for h in heuristic_sets(runner.sms) if h.name == args.set), args.overrides)
        bins, wall, ran = runner.run(args.test, args.fence, h, args.seconds, same_cta=args.same_cta)
        say(format_row(make_row("run", args.test, args.fence, "same-cta" if args.same_cta else "inter-cta",
                                h.name, bins, wall, ran)))
        return 0
    result = campaign(runner, args.seconds, int(args.soundness), say)
    total = time.perf_counter() - start
    say(f"campaign: {total:.1f} s")
    if args.json:
        meta = {"format": 1, "gpu": runner.gpu, "sms": runner.sms, "seed": args.seed,
                "seconds_per_row": args.seconds, "campaign_s": round(total, 1)}
        Path(args.json).write_text(json.dumps({**meta, **result}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
