"""What a refresh knows of the GPU machine it ran on: the session's provenance, read with nvidia-smi.

A session is one refresh on one start of a GPU machine. Its provenance names the physical GPU
(UUID, PCI bus id), its state (SM and memory clocks: current, application and maximum; power
limit; temperature at the start and at the end; ECC, MIG, persistence and compute modes), the
machine as hashes (its boot and its host: never a host name), and, around every exclusive run,
the other compute processes on the GPU. `nvidia-smi --query-gpu` and `--query-compute-apps`
are the readers: they come with the driver, so the refresh stays standard library only (NVML
through a Python package would need a wheel carried to a machine without a package index). A
field the driver cannot report on a machine ("[N/A]", "[Not Supported]") is recorded as it says.

The boot is read from /proc/sys/kernel/random/boot_id, a random id the kernel makes at each
boot: two refreshes on one start of a machine share it, two starts do not. LESSONKIT_BOOT_ID_FILE
names another file to read it from, for tests that play several machine starts on one machine.

Standard library only, as the refresh.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

BOOT_ID = "/proc/sys/kernel/random/boot_id"
BOOT_ID_ENV = "LESSONKIT_BOOT_ID_FILE"
MACHINE_ID = "/etc/machine-id"

# Session provenance field -> nvidia-smi --query-gpu property. Read in one call when the driver
# knows them all, else one by one (a driver that knows no property refuses the whole query).
GPU_FIELDS = (
    ("gpu_uuid", "uuid"), ("pci_bus_id", "pci.bus_id"), ("driver", "driver_version"),
    ("vbios", "vbios_version"), ("persistence_mode", "persistence_mode"), ("compute_mode", "compute_mode"),
    ("mig_mode", "mig.mode.current"), ("ecc_mode", "ecc.mode.current"), ("pstate", "pstate"),
    ("sm_clock_mhz", "clocks.sm"), ("memory_clock_mhz", "clocks.mem"),
    ("app_sm_clock_mhz", "clocks.applications.graphics"), ("app_memory_clock_mhz", "clocks.applications.memory"),
    ("max_sm_clock_mhz", "clocks.max.sm"), ("max_memory_clock_mhz", "clocks.max.memory"),
    ("power_limit_w", "power.limit"), ("temperature_c", "temperature.gpu"), ("memory_used_mib", "memory.used"),
)
# Read again as each session ends: what the runs may have changed.
END_FIELDS = ("temperature_c", "sm_clock_mhz", "memory_clock_mhz", "pstate", "memory_used_mib")
NUMERIC = frozenset(k for k, _ in GPU_FIELDS if k.endswith(("_mhz", "_w", "_c", "_mib")))
APP_FIELDS = "pid,process_name,used_memory,gpu_uuid"


class GpuInfoError(Exception):
    """nvidia-smi could not be asked; the message says what it printed."""


Runner = Callable[[list[str]], str]


def run_smi(argv: list[str]) -> str:
    """nvidia-smi's standard output for `argv` (its first word is nvidia-smi); GpuInfoError when it fails."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GpuInfoError(f"{argv[0]}: {exc}") from None
    if done.returncode != 0:
        raise GpuInfoError(f"{' '.join(argv)} failed (exit {done.returncode}): "
                           f"{(done.stdout + done.stderr).strip()[-300:]}")
    return done.stdout


def _value(text: str) -> str | int | float:
    """A field as nvidia-smi printed it (csv, noheader, nounits): a number where it is one."""
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _split(line: str, n: int) -> list[str]:
    """One csv line of nvidia-smi into `n` fields (a GPU name holds no comma; a process name may: the
    last field that can hold one takes the rest)."""
    parts = [p.strip() for p in line.split(",")]
    return parts if len(parts) == n else parts[:n - 1] + [",".join(parts[n - 1:])]


def read_gpu(uuid: str | None = None, run: Runner = run_smi,
             fields: tuple[tuple[str, str], ...] = GPU_FIELDS) -> dict[str, str | int | float]:
    """The GPU's fields (GPU_FIELDS), of the GPU with `uuid`, else of the first one nvidia-smi lists."""
    target = ["-i", uuid] if uuid else []
    props = ",".join(p for _, p in fields)
    try:
        lines = run(["nvidia-smi", *target, f"--query-gpu={props}", "--format=csv,noheader,nounits"])
        rows = [line for line in lines.splitlines() if line.strip()]
        if not rows:
            raise GpuInfoError("nvidia-smi listed no GPU")
        values = _split(rows[0], len(fields))
        return {key: _value(v) if key in NUMERIC else v.strip() for (key, _), v in zip(fields, values)}
    except GpuInfoError:
        if len(fields) == 1:
            raise
    found: dict[str, str | int | float] = {}
    for key, prop in fields:  # one by one: a property this driver does not know is recorded as such
        try:
            found.update(read_gpu(uuid, run, ((key, prop),)))
        except GpuInfoError:
            found[key] = "[not a field of this driver's nvidia-smi]"
    return found


@dataclass(frozen=True)
class GpuProcess:
    """A compute process nvidia-smi lists on the GPU."""

    pid: int
    name: str
    memory_mib: int | str

    def to_json(self) -> dict[str, int | str]:
        """As the session's provenance records it."""
        return {"pid": self.pid, "name": self.name, "memory_mib": self.memory_mib}

    def shown(self) -> str:
        """'PID 4242 (python3, 1024 MiB)'."""
        memory = f", {self.memory_mib} MiB" if isinstance(self.memory_mib, int) else ""
        return f"PID {self.pid} ({self.name}{memory})"


def compute_processes(uuid: str | None, run: Runner = run_smi, ignore: frozenset[int] = frozenset()) -> list[GpuProcess]:
    """The compute processes on the GPU `uuid` (every GPU when None), less the PIDs in `ignore`."""
    out = run(["nvidia-smi", f"--query-compute-apps={APP_FIELDS}", "--format=csv,noheader,nounits"])
    found = []
    for line in out.splitlines():
        if not line.strip() or line.strip().lower().startswith("no running"):
            continue
        pid, name, memory, gpu = _split(line, 4)
        if uuid and gpu and gpu != uuid:
            continue
        try:
            number = int(pid)
        except ValueError:
            continue  # a line that names no process
        if number in ignore:
            continue
        used = _value(memory)
        found.append(GpuProcess(number, name.rsplit("/", 1)[-1] or name, used if isinstance(used, int) else str(used)))
    return found


def _hash(label: str, text: str) -> str:
    return hashlib.sha256(f"{label}:{text}".encode()).hexdigest()[:16]


def machine_start() -> str:
    """A hash of this boot of the machine (the kernel's boot id); 'unknown' where there is none."""
    path = os.environ.get(BOOT_ID_ENV) or BOOT_ID
    try:
        with open(path, encoding="ascii") as f:
            return _hash("boot", f.read().strip())
    except OSError:
        return "unknown"


def host_id() -> str:
    """A hash of the host (its machine id, or where there is none its name): never the name itself."""
    try:
        with open(MACHINE_ID, encoding="ascii") as f:
            ident = f.read().strip()
    except OSError:
        ident = ""
    return _hash("host", ident or socket.gethostname())


def session_start(run: Runner = run_smi) -> dict[str, object]:
    """What a session records as it starts: the GPU and its state, the machine's hashes, the time."""
    gpu = read_gpu(None, run)
    info: dict[str, object] = {
        "boot": machine_start(), "host": host_id(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    for key, value in gpu.items():
        info[f"{key}_start" if key in END_FIELDS else key] = value
    return info


def session_end(info: dict[str, object], run: Runner = run_smi) -> dict[str, object]:
    """`info` with what a session records as it ends: the fields that may have moved, and the time."""
    uuid = info.get("gpu_uuid")
    fields = tuple((k, p) for k, p in GPU_FIELDS if k in END_FIELDS)
    try:
        end = read_gpu(str(uuid) if isinstance(uuid, str) and uuid.startswith("GPU-") else None, run, fields)
    except GpuInfoError as exc:
        end = {k: f"[not read: {exc}]" for k, _ in fields}
    done = dict(info)
    for key, value in end.items():
        done[f"{key}_end"] = value
    done["ended"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return done
