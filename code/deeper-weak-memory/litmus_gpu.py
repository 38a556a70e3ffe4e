"""The GPU side: litmus.cu's kernels launched with CuPy, one outcome histogram counted per launch.

CuPy is imported when a Runner is made, so that everything else runs without a GPU.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from litmus_maps import make_maps, roles_cover_every_instance, shared_locations
from litmus_plan import (
    KERNELS,
    LAUNCHES_PER_GROUP,
    LINE_BYTES,
    MIN_SLICE_GROUPS,
    OFFSET_WINDOW_WORDS,
    RECORD_WIDTH,
    STRESS_PATTERNS,
    WARM_UP_S,
    WORD_BYTES,
    Config,
    Heuristics,
    LitmusError,
)


class Runner:
    """Launches litmus.cu's kernels with CuPy and counts outcomes on the GPU, one histogram per launch."""

    def __init__(self, cubin: Path, seed: int):
        import cupy as cp

        self.cp = cp
        self.module = cp.RawModule(path=str(cubin))
        self.histogram = self.module.get_function("histogram")
        self.seeds = np.random.SeedSequence(seed)
        self.scratch = cp.zeros(1 << 22, dtype=cp.uint32)
        self.barrier = cp.zeros(1, dtype=cp.uint32)
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"]
        self.gpu = name.decode() if isinstance(name, bytes) else str(name)
        self.sms = int(props["multiProcessorCount"])
        start = time.perf_counter()
        for same_cta in (False, True):   # compile CuPy's kernels for the placement maps before any timing
            self.maps(Config("warm-up", "-", "mp", "none", Heuristics("warm-up", blocks=4, threads=64,
                                                                       random_threads=True, random_locations=True,
                                                                       stride=4), same_cta=same_cta),
                      cp.random.default_rng(0))
        cp.cuda.Device().synchronize()
        self.setup_s = time.perf_counter() - start

    def maps(self, c: Config, rng: Any) -> tuple[Any, ...]:
        """A placement drawn on the GPU and checked there: never a silent harness bug. Returns the
        words of memory it needs, the kernel's map arguments, and each instance's two roles' blocks."""
        cp = self.cp
        maps = make_maps(c.h, c.same_cta, rng, c.broken, xp=cp)
        if not c.broken and (shared_locations(maps, cp) or not roles_cover_every_instance(maps, cp)):
            raise LitmusError(f"{c.key}: placement map is not a bijection")
        return maps.words, (maps.writer_inst, maps.reader_inst, maps.xloc, maps.yloc), (maps.writer_block,
                                                                                         maps.reader_block)

    def warm_up(self, seconds: float = WARM_UP_S) -> None:
        """Run MP with no heuristics for a while, unrecorded: the first recorded row finds the GPU at speed."""
        self.run(Config("warm-up", "-", "mp", "none", Heuristics("none")), seconds)

    def run(self, c: Config, seconds: float, min_instances: int = 0) -> tuple[np.ndarray, float]:
        """One slice: launch groups until `seconds`, `min_instances` and MIN_SLICE_GROUPS are reached.

        Returns the per-launch records and the wall seconds. A launch's record is its outcome
        histogram (five bins) and its placement: for the first launch of each group, the instances
        whose two roles' blocks ran on one multiprocessor (%smid, litmus.cu) and the instances
        compared; for the others, 0 and 0 (not read, so as not to slow the slice).
        """
        cp, h, u = self.cp, c.h, np.uint32
        fn = self.module.get_function(KERNELS[(c.test, c.fence)])
        seed = self.seeds.spawn(1)[0]
        rng, offsets = cp.random.default_rng(seed), np.random.default_rng(seed)
        redraw = h.random_threads or h.random_locations
        words, maps, blocks = self.maps(c, rng)
        pool = cp.zeros(words + OFFSET_WINDOW_WORDS, dtype=cp.uint32)
        line = LINE_BYTES // WORD_BYTES
        r0 = cp.zeros(h.instances, dtype=cp.uint32)
        r1 = cp.zeros(h.instances, dtype=cp.uint32)
        capacity = 512 * LAUNCHES_PER_GROUP
        bins = cp.zeros((capacity, RECORD_WIDTH), dtype=cp.uint64)
        done: list[np.ndarray] = []
        grid = h.blocks + h.stress_blocks
        smids = cp.zeros(grid, dtype=cp.uint32)
        scalars = (u(h.blocks), u(h.instances), u(h.stress_iters), u(STRESS_PATTERNS[h.stress_pattern]),
                   u(h.stress_lines), u(h.stress_stride), u(h.pre_stress_iters),
                   u(h.barrier_spins if h.barrier else 0), u(h.jitter))
        hist_grid = min(4 * self.sms, -(-h.instances // 256))
        launches = filled = 0
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        while True:
            if redraw and launches:
                _, maps, blocks = self.maps(c, rng)   # a fresh random placement for each group
            start_word = int(offsets.integers(0, OFFSET_WINDOW_WORDS // line)) * line
            mem = pool[start_word:start_word + words]
            for k in range(LAUNCHES_PER_GROUP):
                mem.fill(0)
                self.barrier.fill(0)
                fn((grid,), (h.threads,), (smids, mem, r0, r1, *maps, self.barrier, self.scratch, *scalars,
                                           u(launches)))
                self.histogram((hist_grid,), (256,), (r0, r1, u(h.instances), bins[filled]))
                if k == 0:  # where this launch's roles ran, compared on the GPU without waiting for it
                    bins[filled, 5] = cp.count_nonzero(smids[blocks[0]] == smids[blocks[1]])
                    bins[filled, 6] = h.instances
                launches += 1
                filled += 1
            if filled == capacity:
                done.append(cp.asnumpy(bins))
                bins.fill(0)
                filled = 0
            cp.cuda.Device().synchronize()
            wall = time.perf_counter() - start
            if (wall >= seconds and launches * h.instances >= min_instances
                    and launches >= MIN_SLICE_GROUPS * LAUNCHES_PER_GROUP):
                break
        done.append(cp.asnumpy(bins[:filled]))
        return np.concatenate(done), wall


