"""keep_freed_memory: a loop that allocates, fills and frees large arrays faults their pages
in once instead of every round (the kernel's own count of minor page faults, in a fresh
process each, since the setting is process-wide)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOOP = """
import resource, sys
import numpy as np
from adapath.memory import keep_freed_memory
took = keep_freed_memory() if sys.argv[1] == "keep" else False
np.ones(8 << 20).sum()  # warm numpy itself
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(20):  # four arrays of 5 to 100 MiB a round, sizes drifting as a batch's do
    blocks = [np.empty(n) for n in ((5 << 17) + i, (40 << 17) + i, (100 << 17) + i, (12 << 17) + i)]
    for block in blocks:
        block.fill(1.0)
    del blocks
print(int(took), resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> tuple[bool, int]:
    done = subprocess.run([sys.executable, "-c", LOOP, mode], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    took, count = done.stdout.split()
    return bool(int(took)), int(count)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mallopt is glibc's")
def test_freed_blocks_are_reused_instead_of_faulted_in_again():
    took, kept = faults("keep")
    _, fresh = faults("plain")
    assert took  # glibc on Linux
    # measured here: 26,749 faults without the setting, 3,437 with it (the first round's)
    assert kept * 4 < fresh


@pytest.mark.parametrize("given, want", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_importing_adapath_makes_openmp_threads_wait_passively_unless_told_otherwise(given, want):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    done = subprocess.run([sys.executable, "-c", "import os, adapath; print(os.environ['OMP_WAIT_POLICY'])"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert done.stdout.strip() == want, done.stderr
