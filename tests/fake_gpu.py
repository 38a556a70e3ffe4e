"""Fake GPU tools for the refresh tests: nvcc, compute-sanitizer and nvidia-smi as small scripts.

The fake nvidia-smi answers the refresh's queries: the GPU's name, compute capability and
driver, a session's fields (FAKE_GPU_UUID, FAKE_GPU_TEMPERATURE; FAKE_SMI_UNKNOWN=a,b plays a
driver whose nvidia-smi knows no property a or b) and the compute processes on the GPU (the
lines of the file FAKE_GPU_APPS, while it exists). The fake nvcc writes a fake program that
prints a harness table. Environment variables steer it: FAKE_GATE_FAIL=1 makes the fixed kernel mismatch, FAKE_SLEEP=N makes the
`slow` mode sleep N seconds, FAKE_HAZARDS=N sets the Error report's hazard count. In `slow` mode,
FAKE_PIDS=FILE first starts a grandchild that ignores SIGTERM and writes "PARENT PID GRANDCHILD"
(the program's parent, itself, the grandchild) into FILE; FAKE_WAIT_FOR=FILE waits (at most two
minutes) until FILE exists.
"""

from __future__ import annotations

import os
from pathlib import Path

PROGRAM = r'''#!/usr/bin/env python3
import os, sys, time
mode = sys.argv[1] if len(sys.argv) > 1 else "all"
print("device: Fake GPU | compute capability 9.0 | warp size 32", flush=True)
print(f"mode: {mode}", flush=True)
if mode == "slow":
    if os.environ.get("FAKE_PIDS"):
        import subprocess
        ignores_term = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                        "print('ready', flush=True); time.sleep(300)")
        child = subprocess.Popen([sys.executable, "-c", ignores_term], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
        child.stdout.readline()  # it ignores SIGTERM from here on
        with open(os.environ["FAKE_PIDS"] + ".part", "w") as f:
            f.write(f"{os.getppid()} {os.getpid()} {child.pid}\n")
        os.rename(os.environ["FAKE_PIDS"] + ".part", os.environ["FAKE_PIDS"])
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    gate, ceiling = os.environ.get("FAKE_WAIT_FOR"), time.monotonic() + 120
    while gate and not os.path.exists(gate) and time.monotonic() < ceiling:
        time.sleep(0.05)
print("threads | kernel | mismatches | first bad | gated")
print("     32 | k      |          0 |         - | no")
if mode in ("all", "fixed"):
    if os.environ.get("FAKE_GATE_FAIL"):
        print("    32 | kFixed |          2 |         5 | yes")
        print("GATE FAILED: kFixed at 32 threads: 2 mismatches, first bad index 5 (got 1.0, want 2.0)")
        sys.exit(1)
    print("     32 | kFixed |          0 |         - | yes")
'''

NVCC = r'''#!/usr/bin/env python3
import os, sys
if "--version" in sys.argv:
    print("Cuda compilation tools, release 13.0, V13.0.88"); sys.exit(0)
out = sys.argv[sys.argv.index("-o") + 1]
with open(out, "w") as f:
    f.write(open(os.environ["FAKE_PROGRAM"]).read())
os.chmod(out, 0o755)
'''

SANITIZER = r'''#!/usr/bin/env python3
import os, subprocess, sys
if "--version" in sys.argv:
    print("NVIDIA (R) Compute Sanitizer\nCopyright (c) 2020-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 1) (public-release)")
    sys.exit(0)
args = sys.argv[1:]
tool = args[args.index("--tool") + 1] if "--tool" in args else "memcheck"
prog = next(i for i, a in enumerate(args) if a.startswith("./"))
print("========= COMPUTE-SANITIZER", flush=True)
rc = subprocess.call(args[prog:])
if tool == "racecheck":
    n = os.environ.get("FAKE_HAZARDS", "120")
    print("========= Error: Race reported between Read access at k+0x10 in demo.cu:4")
    print(f"=========     and Write access at k+0x20 in demo.cu:4 [{n} hazards]")
    print("========= ")
    print("========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)")
else:
    print("========= ERROR SUMMARY: 0 errors")
sys.exit(rc)
'''

SMI = r'''#!/usr/bin/env python3
import os, sys
args = " ".join(sys.argv[1:])
if "--query-compute-apps=" in args:
    apps = os.environ.get("FAKE_GPU_APPS")  # a file of lines "PID, NAME, MIB, UUID", while it exists
    if apps and os.path.exists(apps):
        print(open(apps).read(), end="")
    sys.exit(0)
fields = args.split("--query-gpu=", 1)[1].split()[0].split(",") if "--query-gpu=" in args else []
if fields == ["name", "compute_cap", "driver_version"]:
    print("Fake GPU, 9.0, 999.99"); sys.exit(0)
unknown = [f for f in fields if f in os.environ.get("FAKE_SMI_UNKNOWN", "").split(",")]
if unknown:
    print(f'Field "{unknown[0]}" is not a valid field to query.'); sys.exit(2)
temperature = os.environ.get("FAKE_GPU_TEMPERATURE", "31")
values = {"uuid": os.environ.get("FAKE_GPU_UUID", "GPU-00000000-0000-0000-0000-000000000001"),
          "pci.bus_id": "00000000:19:00.0", "driver_version": "999.99", "vbios_version": "96.00.00.00.01",
          "persistence_mode": "Enabled", "compute_mode": "Default", "mig.mode.current": "[N/A]",
          "ecc.mode.current": "Enabled", "pstate": "P0", "clocks.sm": "1980", "clocks.mem": "3201",
          "clocks.applications.graphics": "1980", "clocks.applications.memory": "3201",
          "clocks.max.sm": "1980", "clocks.max.memory": "3201", "power.limit": "700.00",
          "temperature.gpu": temperature, "memory.used": "1"}
print(", ".join(values.get(f, "[N/A]") for f in fields))
'''


def install(bin_dir: Path, tools: tuple[str, ...] = ("nvcc", "compute-sanitizer", "nvidia-smi")) -> dict[str, str]:
    """Write the fake tools into bin_dir; return the environment that puts them first on PATH."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "fake_program.py").write_text(PROGRAM)
    scripts = {"nvcc": NVCC, "compute-sanitizer": SANITIZER, "nvidia-smi": SMI}
    for name in tools:
        path = bin_dir / name
        path.write_text(scripts[name])
        path.chmod(0o755)
    env = dict(os.environ)
    # Keep python3 reachable, but nothing else that could be a real GPU tool.
    env["PATH"] = f"{bin_dir}:{Path(os.sys.executable).parent}:/usr/bin:/bin"
    env["FAKE_PROGRAM"] = str(bin_dir / "fake_program.py")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def install_toolkit(root: Path, release: str = "12.4", patch: str = "131", sanitizer: str = "2024.1.1.0",
                    hazards: str = "215", layout: str = "subfolder") -> Path:
    """Write a fake CUDA toolkit folder at root, as scripts/cuda-toolkit.sh lays one out:
    root/bin/nvcc (release `release`) and compute-sanitizer (version `sanitizer`, whose racecheck
    reports `hazards` hazards unless FAKE_HAZARDS says otherwise) at
    root/compute-sanitizer/compute-sanitizer (layout "subfolder", with a link in bin/ as that
    script makes) or root/bin/compute-sanitizer (layout "bin", a stock install). Returns root."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    nvcc = NVCC.replace("release 13.0, V13.0.88", f"release {release}, V{release}.{patch}")
    tool = SANITIZER.replace("Version 2025.3.1.0", f"Version {sanitizer}").replace(
        '"FAKE_HAZARDS", "120"', f'"FAKE_HAZARDS", "{hazards}"')
    (root / "bin" / "nvcc").write_text(nvcc)
    (root / "bin" / "nvcc").chmod(0o755)
    if layout == "subfolder":
        (root / "compute-sanitizer").mkdir(exist_ok=True)
        (root / "compute-sanitizer" / "compute-sanitizer").write_text(tool)
        (root / "compute-sanitizer" / "compute-sanitizer").chmod(0o755)
        (root / "bin" / "compute-sanitizer").symlink_to("../compute-sanitizer/compute-sanitizer")
    elif layout == "bin":
        (root / "bin" / "compute-sanitizer").write_text(tool)
        (root / "bin" / "compute-sanitizer").chmod(0o755)
    return root


BUILD = "nvcc -lineinfo -arch=sm_90 -o demo demo.cu"
_RUNS = (("bare", "./demo all"), ("race", "compute-sanitizer --tool racecheck ./demo buggy"))
_SLOW = ("slow", "./demo slow")  # sleeps FAKE_SLEEP seconds: for the timeout and interrupt tests


def runs_toml(slow: bool = False) -> str:
    """The fake lesson's runs.toml: a gated bare run and a racecheck run, and with `slow` a third."""
    text = f'lesson = "demo"\ninputs = ["demo.cu"]\n\n[build]\nsm_90 = "{BUILD}"\n'
    for name, command in _RUNS + ((_SLOW,) if slow else ()):
        gate = "gate = true\n" if name == "bare" else ""
        text += f'\n[[run]]\nname = "{name}"\ncommand = "{command}"\n{gate}timeout = 30\n'
    return text


def readme(slow: bool = False) -> str:
    """The fake lesson's README, showing its build line and every command of `runs_toml(slow)`."""
    commands = [command for _, command in _RUNS + ((_SLOW,) if slow else ())]
    return "```console\n" + "\n".join([BUILD, *commands]) + "\n```\n"


def make_lab(tmp_path: Path, slow: bool = False) -> tuple[Path, dict[str, str]]:
    """A repository holding the fake lesson 'demo' (no evidence yet), and an environment whose
    PATH finds the fake CUDA 13.0 tools first and whose TMPDIR lies inside `tmp_path`."""
    from conftest import mkdocs_yml, write_tree

    repo = tmp_path / "repo"
    write_tree(repo, {"code/demo/demo.cu": "// v1\n", "code/demo/runs.toml": runs_toml(slow),
                      "code/demo/README.md": readme(slow), "docs/index.md": "# hi\n", "mkdocs.yml": mkdocs_yml()})
    env = install(tmp_path / "bin")
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    return repo, env
