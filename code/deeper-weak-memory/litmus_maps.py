"""Where the instances of one launch run and where their locations lie: the placement maps, and their checks.

NumPy builds them on the CPU (tests); CuPy, with the same code, on the GPU (litmus_gpu.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from litmus_plan import Heuristics


@dataclass(frozen=True)
class Maps:
    """Where each instance runs and where its locations are; `words` is the size of `mem`."""

    writer_inst: Any   # thread t plays role 0 of instance writer_inst[t] (NumPy or CuPy array)
    reader_inst: Any   # and role 1 of instance reader_inst[t]
    xloc: Any
    yloc: Any
    words: int
    writer_block: Any = None  # the block of instance i's role 0 (its writer), and of its role 1
    reader_block: Any = None


def _inverse(p: Any, xp: Any) -> Any:
    """The inverse of permutation `p`."""
    inv = xp.empty_like(p)
    inv[p] = xp.arange(p.size, dtype=p.dtype)
    return inv


def role_threads(h: Heuristics, same_cta: bool, rng: Any, xp: Any = np) -> tuple[Any, Any]:
    """The writer thread and the reader thread of each instance.

    Default: the reader runs one CTA before the writer (inter-CTA) or half a CTA on (same
    CTA). Random threads: instances go to random writer threads; the CTAs are put in a random
    cycle and each writer CTA is paired with the next one (inter-CTA), and within each CTA the
    threads are shuffled, so the reader is a random lane of the partner CTA (or, same CTA, the
    next lane of the shuffled order, never the writer itself).
    """
    n, w, blocks = h.instances, h.threads, h.blocks
    k = xp.arange(n, dtype=xp.int64)
    if not h.random_threads:
        if same_cta:
            return k, k - k % w + (k % w + w // 2) % w
        return k, (k - w) % n
    writer = xp.argsort(rng.random(n))
    cta = writer // w
    # Sorting "CTA index + a uniform number in [0, 1)" lists each CTA's threads in a random order.
    order = xp.argsort(xp.repeat(xp.arange(blocks, dtype=xp.float64), w) + rng.random(n))
    pos = _inverse(order, xp)[writer] - cta * w   # the writer's place in its CTA's shuffled order
    if same_cta:
        return writer, order[cta * w + (pos + 1) % w]
    cycle = xp.argsort(rng.random(blocks))
    partner = xp.empty_like(cycle)
    partner[cycle] = xp.roll(cycle, -1)             # a derangement of the CTAs: nobody pairs with itself
    return writer, order[partner[cta] * w + pos]


def make_maps(h: Heuristics, same_cta: bool, rng: Any, broken: bool = False, xp: Any = np) -> Maps:
    """The placement of one launch (xp: numpy, or cupy to draw it on the GPU; rng: that module's Generator).

    Locations are bijective unless `broken`, which makes each instance of the second half share
    y with one of the first half: the harness bug that produces false weak outcomes under any fence.
    """
    n = h.instances
    writer, reader = role_threads(h, same_cta, rng, xp)
    k = xp.arange(n, dtype=xp.int64)
    slots_x = xp.argsort(rng.random(n)) if h.random_locations else k
    slots_y = xp.argsort(rng.random(n)) if h.random_locations else k
    stride = h.stride if h.random_locations else 1
    xloc = slots_x * stride
    yloc = (n + slots_y) * stride
    if broken:
        yloc = yloc[k % (n // 2)]  # instance k + n/2 shares y with instance k
    u32 = xp.uint32
    return Maps(_inverse(writer, xp).astype(u32), _inverse(reader, xp).astype(u32), xloc.astype(u32),
                yloc.astype(u32), int(2 * n * stride), (writer // h.threads).astype(u32),
                (reader // h.threads).astype(u32))


def shared_locations(maps: Maps, xp: Any = np) -> int:
    """How many locations more than one instance uses (0 for a sound map)."""
    counts = xp.bincount(xp.concatenate([maps.xloc, maps.yloc]), minlength=maps.words)
    return int(xp.count_nonzero(counts > 1))


def roles_cover_every_instance(maps: Maps, xp: Any = np) -> bool:
    """Each instance has exactly one thread in each role."""
    n = len(maps.writer_inst)
    return bool((xp.bincount(maps.writer_inst, minlength=n) == 1).all() and
                (xp.bincount(maps.reader_inst, minlength=n) == 1).all())


def cta_offsets(maps: Maps, threads: int) -> np.ndarray:
    """Per instance, (reader CTA - writer CTA) modulo the CTAs: -1 (mod) everywhere for the default map."""
    n = len(maps.writer_inst)
    writer = _inverse(np.asarray(maps.writer_inst, dtype=np.int64), np)
    reader = _inverse(np.asarray(maps.reader_inst, dtype=np.int64), np)
    return (reader // threads - writer // threads) % (n // threads)

