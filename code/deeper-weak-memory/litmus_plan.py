"""The litmus campaign's plan: the tests and their kernels, the heuristic sets, and the configurations measured.

No GPU and no statistics here: litmus.py runs the plan, litmus_gpu.py launches the kernels,
litmus_rows.py turns what they count into rows.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

# Per test: the outcome (r0, r1) that sequential consistency forbids ("weak"), and the one that
# only an interleaving of the two roles' steps gives ("interleaved"); bins are r0 * 2 + r1. The
# other two outcomes come from one role running wholly before the other (MP: 00 reader first,
# 11 writer first), so only the interleaved bin shows that the roles ran at the same time.
TESTS = {
    "mp": {"weak": (1, 0), "interleaved": (0, 1), "what": "r0 = y = 1 but r1 = x = 0"},
    "sb": {"weak": (0, 0), "interleaved": (1, 1), "what": "both loads miss the other thread's store"},
    "lb": {"weak": (1, 1), "interleaved": (0, 0),
           "what": "both loads see the store that comes after the other load"},
    "corr": {"weak": (1, 0), "interleaved": (0, 1), "what": "a newer value, then an older one, from one location"},
}
# Kernel names in litmus.cu, per test and fence variant. gpu-plain and gpu-volatile are MP as
# CUDA C++ with __threadfence() on both sides: every access plain, or the flag volatile.
KERNELS = {
    ("mp", "none"): "mp_none", ("mp", "cta"): "mp_cta", ("mp", "gpu"): "mp_gpu", ("mp", "sys"): "mp_sys",
    ("mp", "gpu-writer"): "mp_gpu_writer", ("mp", "gpu-reader"): "mp_gpu_reader",
    ("mp", "rel-acq"): "mp_rel_acq", ("mp", "gpu-plain"): "mp_gpu_plain", ("mp", "gpu-volatile"): "mp_gpu_volatile",
    ("sb", "none"): "sb_none", ("sb", "gpu"): "sb_gpu", ("lb", "none"): "lb_none", ("lb", "gpu"): "lb_gpu",
    ("corr", "none"): "corr_none",
}
# Both sides ordered at GPU scope or wider, by the PTX model: a weak outcome here would be a
# finding. gpu-plain is not among them: its flag is a weak access, so the fences form no
# release and acquire patterns and the program has a data race (the model promises nothing).
ORDERED = ("gpu", "sys", "rel-acq", "gpu-volatile")
STRESS_PATTERNS = {"store-store": 0, "store-load": 1, "load-store": 2, "load-load": 3}

# CONFIDENCE and MIN_WEAK_GROUPS (the statistics' settings) come from litmus_stats.py.
LAUNCHES_PER_GROUP = 8   # one synchronisation step; random placements are redrawn per group
# A launch's record: its five outcome bins (r0 * 2 + r1, then results other than 0 or 1), then its
# placement: instances whose two roles ran on one multiprocessor, and instances compared (0, 0 for
# a launch whose placement was not read).
RECORD_WIDTH = 7
SLICES = 8               # slices per repeat, spread over the campaign: the independent units of a row
MIN_SLICE_GROUPS = 3     # a slice runs at least this many groups of launches, whatever its time
LINE_BYTES = 128
WORD_BYTES = 4
JITTER_CYCLES = 16384    # "jitter": each warp waits up to this many clock cycles before the test
# Each group of launches places the test's memory at a random line-aligned offset in a window
# this large: a row then samples many physical placements (L2 slices, pages), as the rows of
# different repeats do, instead of keeping the one its allocation happened to get.
OFFSET_WINDOW_WORDS = 8 << 20   # 32 MiB
WARM_UP_S = 2.0                 # MP with no heuristics, unrecorded, before the first row


class LitmusError(Exception):
    """A measurement that cannot be right (a histogram that does not add up, a bad placement map)."""


# ----------------------------------------------------------------------------------- heuristics

@dataclass(frozen=True)
class Heuristics:
    """One heuristic set: each switch on or off, with its sizes."""

    name: str
    blocks: int = 16384            # testing blocks
    threads: int = 256             # threads per testing block
    random_threads: bool = False   # writer and reader CTAs paired by a random permutation, lanes shuffled
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
    jitter: int = 0                # each warp waits a pseudo-random 0..jitter-1 clock cycles first

    @property
    def instances(self) -> int:
        """Test instances per launch: one per testing thread."""
        return self.blocks * self.threads

    @property
    def cluster_instances(self) -> int:
        """Instances whose locations share one 128-byte line: the clusters that go weak together."""
        stride = self.stride if self.random_locations else 1
        return max(1, LINE_BYTES // (WORD_BYTES * stride))


def heuristic_sets(sms: int) -> list[Heuristics]:
    """The sets the campaign compares for MP. Barrier and stress sets use a grid that fits on the GPU at once."""
    resident = sms * 4  # 256-thread blocks: four per SM leaves room for stress blocks
    big = Heuristics("none")
    small = replace(big, blocks=resident)
    stress = {"stress_blocks": sms * 2, "stress_iters": 1024, "stress_pattern": "store-load"}
    return [
        big,
        replace(big, name="random threads", random_threads=True),
        replace(big, name="random locations", random_locations=True, stride=4),
        replace(small, name="stress", **stress),
        replace(small, name="stress + random threads", random_threads=True, **stress),
        replace(small, name="barrier", barrier=True),
        replace(small, name="barrier + random threads", barrier=True, random_threads=True),
        replace(small, name="barrier + random locations", barrier=True, random_locations=True, stride=4),
        replace(small, name="barrier + stress", barrier=True, **stress),
        replace(small, name="barrier + light stress", barrier=True, stress_blocks=sms, stress_iters=256),
        replace(small, name="barrier + pre-stress", barrier=True, pre_stress_iters=64),
        replace(small, name="barrier + jitter", barrier=True, jitter=JITTER_CYCLES),
    ]


def with_overrides(h: Heuristics, text: str) -> Heuristics:
    """`h` with fields changed by 'key=value,...' (booleans as 0/1, patterns by name)."""
    changes: dict[str, Any] = {}
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


@dataclass(frozen=True)
class Config:
    """One configuration the campaign measures, `repeats` times."""

    key: str
    table: str
    test: str
    fence: str
    h: Heuristics
    same_cta: bool = False
    broken: bool = False
    min_instances: int = 0
    seconds: float | None = None   # None: the campaign's seconds per row

    @property
    def placement(self) -> str:
        """inter-cta or same-cta."""
        return "same-cta" if self.same_cta else "inter-cta"


def config_key(test: str, fence: str, heuristics: str, same_cta: bool = False, suffix: str = "") -> str:
    """'mp-none', 'mp-gpu-barrier-jitter', 'mp-none-same-cta': test, fence, heuristics unless none, extras."""
    parts = [test, fence]
    if heuristics != "none":
        parts.append(heuristics.replace(" + ", "-").replace(" ", "-"))
    if same_cta:
        parts.append("same-cta")
    if suffix:
        parts.append(suffix)
    return "-".join(parts)


def campaign_configs(sets: list[Heuristics], best: Heuristics | None, soundness: int) -> list[Config]:
    """The heuristics table (best None), or every other table under the best heuristic set."""
    if best is None:
        return [Config(config_key("mp", "none", h.name), "heuristics", "mp", "none", h) for h in sets]
    none = sets[0]
    # A fenced zero means something where the roles interleaved: the `interleaved` share of each row says so.
    out = [Config(config_key("mp", f, best.name), "fences", "mp", f, best)
           for f in ("none", "cta", "gpu", "sys", "gpu-writer", "gpu-reader", "rel-acq", "gpu-plain",
                     "gpu-volatile")]
    out += [Config(config_key(t, f, best.name), "tests", t, f, best)
            for t, f in (("sb", "none"), ("sb", "gpu"), ("lb", "none"), ("lb", "gpu"), ("corr", "none"))]
    out += [Config(config_key("mp", f, best.name, same_cta=True), "placement", "mp", f, best, same_cta=True)
            for f in ("none", "cta")]
    out.append(Config(config_key("mp", "gpu", none.name, suffix="soundness"), "soundness", "mp", "gpu", none,
                      min_instances=soundness, seconds=0.0))
    out.append(Config(config_key("mp", "gpu", best.name, suffix="broken-map"), "harness-bug", "mp", "gpu", best,
                      broken=True))
    return out

