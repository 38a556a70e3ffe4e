#!/usr/bin/env python3
"""How often does a race show? Launch Day 62's buggy kernels many times, bare, and count.

The kernels are the ones in racecheck.cu, compiled by nvcc to a cubin with -lineinfo
(never a second copy of their text), loaded with CuPy and launched N times per cell:
kernel x block size x input size. Each launch is compared with a NumPy reference on the
device; only per-launch counts come back to the host. The fixed kernels run the same
sweep as a control and must never mismatch.

Inputs: in[i] = i for the small input (as the harness), in[i] = i mod 4096 for the large
one, so that every tile prefix sum stays below 2^24 and float compares are exact.
No randomness is used: the launch order is fixed, so there is no seed.

racecheck.cu is compiled afresh on every run, in a scratch folder, unless --cubin names a
prebuilt cubin: a cubin left over from an earlier edit of the source is never picked up.

One factor at a time: --compilers LABEL=NVCC,LABEL=NVCC builds one cubin with each compiler and
runs every cell with each of them in the same process, in --rounds rounds, each round giving every
cell a share of its launches with each cubin and alternating which cubin goes first. What differs
between the two cubins' cells is then the compiler's doing, not the session's or the moment's:
same GPU, same inputs, same launches, interleaved in time. Each cell names its `compiler`.

CuPy is imported only inside main(): the bookkeeping below runs on NumPy alone.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).resolve().parent / "racecheck.cu"
TILES_PER_BLOCK = 4          # as kTilesPerBlock in racecheck.cu
SMALL = 8 * 1024 + 611
LARGE = 1 << 22
MOD = 4096
BUGGY = ("scanTileRacy", "reverseTilesDivergentBarrier")
CONTROL = ("scanTileFixed", "reverseTilesFixed")
SCANS = ("scanTileRacy", "scanTileFixed")

# Counts mismatches per launch with one atomic per warp; records the smallest bad index.
COMPARE_SOURCE = r"""
extern "C" __global__ void compare(const float* got, const float* want, int n,
                                   unsigned long long* count, int* first, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool bad = i < n && got[i] != want[i];
    unsigned mask = __ballot_sync(0xffffffffu, bad);
    if (bad) atomicMin(first + k, i);
    if ((threadIdx.x & 31) == 0 && mask) atomicAdd(count + k, (unsigned long long)__popc(mask));
}
"""


def make_input(n: int) -> np.ndarray:
    """in[i] = i for the small input, i mod 4096 for larger ones (exact float tile sums)."""
    i = np.arange(n, dtype=np.int64)
    return (i if n <= SMALL else i % MOD).astype(np.float32)


def input_rule(n: int) -> str:
    """How make_input fills an input of n elements, as the table states it."""
    return "i" if n <= SMALL else f"i mod {MOD}"


def scan_reference(x: np.ndarray, threads: int) -> np.ndarray:
    """Inclusive scan restarting at every tile of `threads` elements, in float64."""
    n = len(x)
    padded = np.zeros(-(-n // threads) * threads, dtype=np.float64)
    padded[:n] = x
    return np.cumsum(padded.reshape(-1, threads), axis=1).reshape(-1)[:n]


def reverse_reference(x: np.ndarray, threads: int) -> np.ndarray:
    """Each tile reversed; a source index past the end gives 0."""
    n = len(x)
    padded = np.zeros(-(-n // threads) * threads, dtype=np.float64)
    padded[:n] = x
    return padded.reshape(-1, threads)[:, ::-1].reshape(-1)[:n]


def reference(kernel: str, x: np.ndarray, threads: int) -> np.ndarray:
    """The reference for any of the four kernels."""
    return scan_reference(x, threads) if kernel in SCANS else reverse_reference(x, threads)


def reference_key(kernel: str, threads: int, n: int) -> tuple[str, int, int]:
    """What a reference depends on: a buggy kernel and its fix share one."""
    return ("scan" if kernel in SCANS else "reverse", threads, n)


def grid(kernel: str, n: int, threads: int) -> int:
    """Blocks to launch, as the harness does: one tile a scan block, four a reverse block."""
    tiles = -(-n // threads)
    return tiles if kernel in SCANS else -(-tiles // TILES_PER_BLOCK)


@dataclass(frozen=True)
class Cell:
    """One row of the sweep: a kernel at one block size and input size, launched N times."""

    kernel: str
    role: str
    threads: int
    n: int
    input: str
    launches: int
    wrong_launches: int
    mismatched_elements: int
    worst_launch: int
    first_bad: int | None
    seconds: float
    compiler: str | None = None  # the label of the compiler whose cubin ran (--compilers), else None


def summarize(kernel: str, threads: int, n: int, counts: np.ndarray, firsts: np.ndarray,
              seconds: float, compiler: str | None = None) -> Cell:
    """Fold per-launch mismatch counts and first bad indices into a Cell."""
    counts = np.asarray(counts, dtype=np.int64)
    firsts = np.asarray(firsts, dtype=np.int64)
    wrong = counts > 0
    first = int(firsts[wrong].min()) if wrong.any() else None
    return Cell(kernel, "control" if kernel in CONTROL else "buggy", threads, n, input_rule(n),
                len(counts), int(wrong.sum()), int(counts.sum()), int(counts.max(initial=0)), first,
                round(seconds, 3), compiler)


def compilers(text: str) -> list[tuple[str, str]]:
    """--compilers 'A=nvcc,B=/opt/cuda-12.4/bin/nvcc' as [(label, nvcc)]: two or more, labels unique."""
    pairs = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        label, sep, nvcc = part.partition("=")
        if not sep or not label or not nvcc:
            raise SystemExit(f"sweep.py: --compilers: {part!r} is not LABEL=NVCC")
        pairs.append((label, nvcc))
    if len(pairs) < 2 or len({label for label, _ in pairs}) != len(pairs):
        raise SystemExit("sweep.py: --compilers names two or more compilers, each with its own label")
    return pairs


def round_order(labels: list[str], r: int) -> list[str]:
    """The order the cubins run in round `r` (0-based): rotated by one each round, so each goes first as often."""
    k = r % len(labels)
    return labels[k:] + labels[:k]


def shares(launches: int, rounds: int) -> list[int]:
    """`launches` split over `rounds` rounds as evenly as can be (the first rounds take the remainder)."""
    if not 1 <= rounds <= launches:
        raise SystemExit(f"sweep.py: --rounds {rounds} must be from 1 to the launches of a cell ({launches})")
    base, extra = divmod(launches, rounds)
    return [base + (1 if r < extra else 0) for r in range(rounds)]


def results_json(cells: list[Cell], meta: dict) -> dict:
    """The JSON the evidence records: metadata, then one object per cell."""
    return {**meta, "cells": [asdict(c) for c in cells]}


def table(cells: list[Cell]) -> str:
    """The summary table, as printed."""
    by = any(c.compiler for c in cells)
    head = (f"{'kernel':<30} {'threads':>7} {'n':>8}" + (f"  {'compiler':<8}" if by else "")
            + f"  {'wrong launches':>15}  {'elements':>10}  {'worst':>7}  first bad")
    rows = [head]
    for c in cells:
        first = "-" if c.first_bad is None else str(c.first_bad)
        rows.append(f"{c.kernel:<30} {c.threads:>7} {c.n:>8}" + (f"  {c.compiler or '':<8}" if by else "")
                    + f"  {c.wrong_launches:>6} / {c.launches:<6}  {c.mismatched_elements:>10}  {c.worst_launch:>7}  "
                    f"{first}")
    return "\n".join(rows)


def _ints(text: str) -> list[int]:
    return [int(eval_size(t)) for t in text.split(",") if t.strip()]


def eval_size(text: str) -> int:
    """'8803', '2^22' or '4194304' as an int."""
    text = text.strip()
    if "^" in text:
        base, exp = text.split("^")
        return int(base) ** int(exp)
    return int(text)


def build_cubin(folder: Path, source: Path, arch: str, nvcc: str = "nvcc",
                name: str = "racecheck.cubin") -> tuple[Path, str]:
    """Compile racecheck.cu's kernels to folder/NAME with `nvcc`; returns it and the command."""
    cmd = [nvcc, "-cubin", "-std=c++17", "-O2", "-lineinfo", f"-arch={arch}", "-o", name, str(source)]
    subprocess.run(cmd, check=True, cwd=folder)
    return folder / name, shlex.join(cmd)


def nvcc_release(nvcc: str) -> str:
    """The release line `nvcc --version` prints ('Cuda compilation tools, release 12.4, V12.4.131')."""
    out = subprocess.run([nvcc, "--version"], check=True, capture_output=True, text=True).stdout
    lines = [line.strip() for line in out.splitlines() if "release" in line]
    return lines[0] if lines else out.strip().splitlines()[-1]


def prebuilt_cubin(path: str) -> Path:
    """The cubin --cubin names; a missing file is an error, never a reason to build one there."""
    cubin = Path(path)
    if not cubin.is_file():
        raise SystemExit(f"sweep.py: --cubin {path!r} is not a file; leave --cubin out to build "
                         "racecheck.cu afresh")
    return cubin


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """The sweep's command line."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default=f"{SMALL},2^22", help="input sizes, comma-separated")
    p.add_argument("--threads", default="32,64,128,256,512,1024", help="block sizes, comma-separated")
    p.add_argument("--launches-small", type=int, default=1000, help=f"launches per cell for n <= {SMALL}")
    p.add_argument("--launches-large", type=int, default=100, help="launches per cell for larger inputs")
    p.add_argument("--cubin", default=None, help="a prebuilt cubin of racecheck.cu (default: build it afresh)")
    p.add_argument("--compilers", default=None, metavar="LABEL=NVCC,LABEL=NVCC",
                   help="build one cubin with each nvcc and run every cell with each, alternating (see above)")
    p.add_argument("--rounds", type=int, default=1, help="with --compilers: rounds the launches are split over")
    p.add_argument("--json", default=None, help="write the results here as JSON")
    args = p.parse_args(argv)
    if args.compilers and args.cubin:
        p.error("--cubin and --compilers: give one (--compilers builds its own cubins)")
    return args


class Launcher:
    """The GPU side: racecheck.cu's kernels from one cubin, or one per compiler, and the comparison kernel."""

    def __init__(self, prebuilt: str | None, nvccs: list[tuple[str, str]] | None = None):
        import cupy as cp  # the GPU side only; nothing above needs it

        self.cp = cp
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        self.arch = f"sm_{props['major']}{props['minor']}"
        self._scratch = tempfile.TemporaryDirectory(prefix="sweep-")  # lives as long as the modules
        scratch = Path(self._scratch.name)
        self.modules: dict[str | None, object] = {}
        self.builds: dict[str | None, dict[str, str]] = {}
        if nvccs:
            for label, nvcc in nvccs:  # every cubin built before the first launch
                cubin, build = build_cubin(scratch, SOURCE, self.arch, nvcc, f"racecheck-{len(self.modules)}.cubin")
                self.modules[label] = cp.RawModule(path=str(cubin))
                self.builds[label] = {"compiler": label, "nvcc": nvcc, "release": nvcc_release(nvcc), "build": build}
        elif prebuilt is None:
            cubin, build = build_cubin(scratch, SOURCE, self.arch)
            self.modules[None] = cp.RawModule(path=str(cubin))
            self.builds[None] = {"build": build}
        else:
            self.modules[None] = cp.RawModule(path=str(prebuilt_cubin(prebuilt)))
            self.builds[None] = {"build": f"(prebuilt {prebuilt})"}
        for module in self.modules.values():
            module.get_function(BUGGY[0])  # load each now, while the scratch folder exists
        self.build = "; ".join(b["build"] for b in self.builds.values())
        self._wants: dict[tuple[str, int, int], object] = {}
        self.compare = cp.RawKernel(COMPARE_SOURCE, "compare")
        name = props["name"]
        self.gpu = name.decode() if isinstance(name, bytes) else str(name)
        self.cc = f"{props['major']}.{props['minor']}"

    def cell(self, kernel: str, threads: int, x: np.ndarray, d_in, d_out, launches: int,
             compiler: str | None = None) -> Cell:
        """Launch `kernel` `launches` times, comparing each output on the GPU."""
        counts, firsts, seconds = self.launches(kernel, threads, x, d_in, d_out, launches, compiler)
        return summarize(kernel, threads, len(x), counts, firsts, seconds, compiler)

    def launches(self, kernel: str, threads: int, x: np.ndarray, d_in, d_out, launches: int,
                 compiler: str | None = None) -> tuple[np.ndarray, np.ndarray, float]:
        """Launch `kernel` of `compiler`'s cubin `launches` times: each launch's mismatches and first bad index."""
        cp, n = self.cp, len(x)
        fn = self.modules[compiler].get_function(kernel)
        key = reference_key(kernel, threads, n)
        if key not in self._wants:  # the fix reuses its buggy twin's reference
            self._wants[key] = cp.asarray(reference(kernel, x, threads).astype(np.float32))
        want = self._wants[key]
        counts = cp.zeros(launches, dtype=cp.uint64)
        firsts = cp.full(launches, np.iinfo(np.int32).max, dtype=cp.int32)
        blocks, cmp_blocks = grid(kernel, n, threads), -(-n // 256)
        t0 = time.perf_counter()
        for k in range(launches):
            d_out.fill(np.nan)  # an element nobody writes shows up as a mismatch
            fn((blocks,), (threads,), (d_in, d_out, np.int32(n)))
            self.compare((cmp_blocks,), (256,), (d_out, want, np.int32(n), counts, firsts, np.int32(k)))
        cp.cuda.Device().synchronize()
        return cp.asnumpy(counts), cp.asnumpy(firsts), time.perf_counter() - t0


def _say(cell: Cell) -> None:
    first = "-" if cell.first_bad is None else cell.first_bad
    by = f" [{cell.compiler}]" if cell.compiler else ""
    print(f"cell {cell.kernel} threads={cell.threads} n={cell.n}{by}: {cell.wrong_launches}/{cell.launches} launches "
          f"wrong, {cell.mismatched_elements} elements, worst {cell.worst_launch}, first bad {first} "
          f"({cell.seconds:.2f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the sweep on the GPU; exit 1 if a control kernel ever mismatches."""
    args = parse_args(argv)
    nvccs = compilers(args.compilers) if args.compilers else None
    gpu = Launcher(args.cubin, nvccs)
    print(f"device: {gpu.gpu} | compute capability {gpu.cc}")
    for label, b in gpu.builds.items():
        print(f"cubin: {b['build']}" + (f" ({label}: {b['release']})" if label else ""))
    cells: list[Cell] = []
    start = time.perf_counter()
    for n in _ints(args.sizes):
        launches = args.launches_small if n <= SMALL else args.launches_large
        x = make_input(n)
        d_in, d_out = gpu.cp.asarray(x), gpu.cp.empty(n, dtype=gpu.cp.float32)
        for kernel in BUGGY + CONTROL:
            for threads in _ints(args.threads):
                if nvccs is None:
                    cells.append(gpu.cell(kernel, threads, x, d_in, d_out, launches))
                    _say(cells[-1])
                    continue
                labels = [label for label, _ in nvccs]
                got: dict[str, list] = {label: [[], [], 0.0] for label in labels}
                for r, share in enumerate(shares(launches, args.rounds)):
                    for label in round_order(labels, r):
                        counts, firsts, seconds = gpu.launches(kernel, threads, x, d_in, d_out, share, label)
                        got[label][0].append(counts)
                        got[label][1].append(firsts)
                        got[label][2] += seconds
                for label in labels:
                    counts, firsts, seconds = got[label]
                    cells.append(summarize(kernel, threads, n, np.concatenate(counts), np.concatenate(firsts),
                                           seconds, label))
                    _say(cells[-1])
    return report(cells, time.perf_counter() - start, gpu, args.json, args.rounds if nvccs else None)


def report(cells: list[Cell], wall: float, gpu: Launcher, json_path: str | None, rounds: int | None = None) -> int:
    """Print the table and totals, write the JSON; 1 if a control kernel ever mismatched."""
    launches_total = sum(c.launches for c in cells)
    print()
    print(table(cells))
    rate = launches_total / wall if wall else 0.0
    print(f"\n{launches_total} launches in {wall:.2f} s: {rate:.0f} launches per second")
    bad_controls = [c for c in cells if c.role == "control" and c.wrong_launches]
    meta = {"format": 1, "gpu": gpu.gpu, "arch": gpu.arch, "seed": None, "launches_total": launches_total,
            "wall_s": round(wall, 2), "launches_per_s": round(rate), "controls_clean": not bad_controls}
    if rounds is not None:  # --compilers: which compiler built which cubin, and how their launches alternated
        meta.update(format=2, rounds=rounds, compilers=[b for label, b in gpu.builds.items() if label])
    if json_path:
        Path(json_path).write_text(json.dumps(results_json(cells, meta), indent=2) + "\n")
    for c in bad_controls:
        by = f" ({c.compiler}'s cubin)" if c.compiler else ""
        print(f"CONTROL FAILED: {c.kernel} at {c.threads} threads, n={c.n}{by}: {c.wrong_launches} of "
              f"{c.launches} launches wrong, first bad index {c.first_bad}")
    if bad_controls:
        return 1
    print("controls: the fixed kernels never mismatched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
