"""A CUDA toolkit folder for the refresh (`--toolkit DIR`), and the command that records a set.

Standard library only: the refresh imports this on the GPU machine.

A toolkit folder is laid out as a stock CUDA install or as
scripts/cuda-toolkit.sh makes it: DIR/bin/nvcc, and compute-sanitizer at
DIR/compute-sanitizer/compute-sanitizer or DIR/bin/compute-sanitizer. A refresh with it
puts DIR's tool folders first on the PATH of every command it runs, and refuses to start
when a word of a command (the build line, a run's command) would still reach a CUDA tool
outside DIR: a tool DIR lacks that PATH finds elsewhere, an absolute path to another
toolkit, or a link inside DIR that points out of it.

`--sanitizer-from DIR2` crosses two toolkits, so that a comparison can vary one thing at a
time: the build uses DIR's nvcc and every run DIR2's compute-sanitizer. DIR2's
`compute-sanitizer/` folder (which holds the sanitizer and nothing of nvcc) goes first on
PATH, and a command reaching any other compute-sanitizer is refused like any other leak.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path

# CUDA tools a command may name; every executable in DIR's tool folders counts too.
CUDA_TOOLS = frozenset({
    "nvcc", "compute-sanitizer", "cuda-memcheck", "ptxas", "cuobjdump", "nvdisasm", "nvprune", "fatbinary",
    "cudafe++", "nvlink", "cicc", "ncu", "nsys", "nv-nsight-cu-cli", "cu++filt", "bin2c"})
_WORD_SPLIT_RE = re.compile(r"""[\s;&|()`'"=]+""")
_RELEASE_RE = re.compile(r"""release (\d+\.\d+)""")
_SANITIZER_RE = re.compile(r"""(?:\A|Version )(\d{4}\.\d+)""")


class ToolkitError(Exception):
    """The toolkit folder cannot be used as asked; the message says why and names the paths."""


@dataclass(frozen=True)
class Toolkit:
    """A toolkit folder: `root` as given (absolute), its nvcc and compute-sanitizer (None if it has none)."""

    root: Path
    nvcc: Path
    sanitizer: Path | None
    sanitizer_root: Path | None = None  # DIR2 of --sanitizer-from: the sanitizer is its, not DIR's

    @property
    def folders(self) -> list[Path]:
        """The folders put first on PATH: DIR/bin, then DIR/compute-sanitizer where it exists; with
        --sanitizer-from, DIR2's sanitizer folder first and DIR's own left out."""
        if self.sanitizer_root is not None and self.sanitizer is not None:
            return [self.sanitizer.parent, self.root / "bin"]
        found = [self.root / "bin"]
        if (self.root / "compute-sanitizer").is_dir():
            found.append(self.root / "compute-sanitizer")
        return found

    def path_env(self, base: dict[str, str]) -> dict[str, str]:
        """`base` with DIR's tool folders first on PATH."""
        rest = base.get("PATH", os.defpath)
        return {**base, "PATH": os.pathsep.join([*(str(f) for f in self.folders), rest])}

    def tool_names(self) -> frozenset[str]:
        """The names a command word is checked under: CUDA_TOOLS and the programs in DIR's tool folders."""
        names = set(CUDA_TOOLS)
        for folder in self.folders:
            try:
                names.update(p.name for p in folder.iterdir()
                             if p.is_file() and os.access(p, os.X_OK) and ".so" not in p.name)
            except OSError:
                pass
        return frozenset(names)

    def inside(self, path: str | Path) -> bool:
        """Whether `path`, links followed, lies inside DIR (or DIR2's sanitizer folder; links followed too)."""
        real = os.path.realpath(path)
        roots = [self.root] + ([self.sanitizer.parent] if self.sanitizer_root and self.sanitizer else [])
        return any(os.path.commonpath([os.path.realpath(r), real]) == os.path.realpath(r) for r in roots)

    def allows(self, tool: str, path: str | Path) -> bool:
        """Whether a command may reach `tool` at `path`: inside the toolkit, and with --sanitizer-from,
        compute-sanitizer only as DIR2's own."""
        if tool == "compute-sanitizer" and self.sanitizer_root is not None and self.sanitizer is not None:
            return os.path.realpath(path) == os.path.realpath(self.sanitizer)
        return self.inside(path)

    def own(self, tool: str) -> str:
        """Where DIR has `tool` (for messages), or a note that it has none."""
        if tool == "compute-sanitizer":
            return str(self.sanitizer) if self.sanitizer else f"none in {self.root}"
        for folder in self.folders:
            if (folder / tool).is_file():
                return str(folder / tool)
        return f"none in {self.root}"


def find_toolkit(directory: str, sanitizer_from: str | None = None) -> Toolkit:
    """The toolkit at `directory` (with `sanitizer_from`, DIR2's compute-sanitizer instead of its own);
    ToolkitError naming the paths looked at when one has no nvcc or DIR2 no sanitizer folder."""
    if sanitizer_from is not None:
        own, other = find_toolkit(directory), find_toolkit(sanitizer_from)
        folder = other.root / "compute-sanitizer" / "compute-sanitizer"
        if not (folder.is_file() and os.access(folder, os.X_OK)):
            raise ToolkitError(f"--sanitizer-from {sanitizer_from}: no executable {folder}; the sanitizer must "
                               "sit in the toolkit's compute-sanitizer/ folder, which holds nothing of nvcc")
        return Toolkit(own.root, own.nvcc, folder, other.root)
    root = Path(os.path.abspath(os.path.expanduser(directory)))
    nvcc = root / "bin" / "nvcc"
    if not root.is_dir():
        raise ToolkitError(f"--toolkit {directory}: no such folder ({root})")
    if not (nvcc.is_file() and os.access(nvcc, os.X_OK)):
        raise ToolkitError(f"--toolkit {directory}: no executable {nvcc}; a toolkit folder holds bin/nvcc "
                           "(and compute-sanitizer/compute-sanitizer or bin/compute-sanitizer)")
    sanitizer = None
    for candidate in (root / "compute-sanitizer" / "compute-sanitizer", root / "bin" / "compute-sanitizer"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            sanitizer = candidate
            break
    return Toolkit(root, nvcc, sanitizer)


def leaks(toolkit: Toolkit, commands: list[tuple[str, str]], env: dict[str, str], cwd: Path | None = None) -> list[str]:
    """One line per command word that would reach a CUDA tool outside the toolkit.

    `commands` is (what, command line) pairs, e.g. ('the build line', 'nvcc ...'). Each word,
    and each piece of a quoted word (`sh -c "compute-sanitizer ..."`), whose name is a CUDA
    tool is resolved as the run will resolve it: a bare name on `env`'s PATH, a path as it
    stands (relative to `cwd`). What it resolves to must lie inside DIR once links are followed
    (a tool found nowhere reaches no other toolkit: the run fails on its own).
    """
    names = toolkit.tool_names()
    path = env.get("PATH", os.defpath)
    found: list[str] = []
    for what, command in commands:
        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        pieces = [p for w in words for p in _WORD_SPLIT_RE.split(w) if p]
        seen: set[str] = set()
        for word in pieces:
            name = os.path.basename(word)
            if name not in names or word in seen:
                continue
            seen.add(word)
            if "/" in word:
                resolved = word if os.path.isabs(word) else os.path.join(cwd or os.getcwd(), word)
                if not os.path.exists(resolved):
                    continue  # a file the build makes (./racecheck): nothing of another toolkit
            else:
                resolved = shutil.which(word, path=path)
            if resolved is not None and not toolkit.allows(name, resolved):  # found nowhere: nothing to leak
                real = os.path.realpath(resolved)
                shown = resolved if real == resolved else f"{resolved} (a link to {real})"
                found.append(f"{what} runs {word!r}, which resolves to {shown}, outside the toolkit "
                             f"{toolkit.root}; the toolkit's own is {toolkit.own(name)}")
    return found


def release(nvcc_version: str) -> str | None:
    """'12.4' from `nvcc --version`'s 'release 12.4, V12.4.131', or None."""
    m = _RELEASE_RE.search(nvcc_version)
    return m.group(1) if m else None


def matches_release(version: str, declared: str) -> bool:
    """Whether a recorded version is of release `declared`: nvcc '12.4.131' of '12.4', compute-sanitizer
    '2025.3.1.0' of '2025.3'."""
    return version == declared or version.startswith(declared + ".")


def sanitizer_release(version: str) -> str | None:
    """'2025.3' from compute-sanitizer's '2025.3.1.0' (or its `--version` text), or None."""
    m = _SANITIZER_RE.search(version)
    return m.group(1) if m else None


def default_set_name(lesson: str, cuda_release: str | None, sanitizer: str | None = None) -> str:
    """The set a refresh records by default: the lesson's name, or LESSON-cudaREL with --toolkit, and
    -sanitizerREL after it with --sanitizer-from."""
    name = lesson if cuda_release is None else f"{lesson}-cuda{cuda_release}"
    return name if sanitizer is None else f"{name}-sanitizer{sanitizer}"


def refresh_command(lesson: str, set_name: str, toolkit_dir: str | None = None,
                    cuda_release: str | None = None, sanitizer_dir: str | None = None,
                    sanitizer: str | None = None) -> str:
    """The command that records `set_name`: --toolkit when a toolkit folder is named, --sanitizer-from
    when the sanitizer comes from another, --set when the name is not the default for them."""
    cmd = f".venv/bin/python scripts/refresh.py {lesson}"
    if toolkit_dir is not None:
        cmd += f" --toolkit {shlex.quote(toolkit_dir)}"
    if sanitizer_dir is not None:
        cmd += f" --sanitizer-from {shlex.quote(sanitizer_dir)}"
    default = default_set_name(lesson, cuda_release if toolkit_dir is not None else None,
                               sanitizer if sanitizer_dir is not None else None)
    if set_name != default:
        cmd += f" --set {set_name}"
    return cmd
