"""The GPU's fused PPR step (a Numba CUDA kernel) in Numba's CUDA simulator, against dense
materialized computations; runs in a child process because the simulator is chosen when
``numba.cuda`` is first imported."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import numpy as np
    from adapath.kernels.ppr_cuda import weighted_step
    from adapath.kernels.ppr_xp import Operators, power_iteration_xp
    from adapath.kernels.series import Series
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    n, n_rel, batch = 23, 3, 3
    pairs = set()
    for u in range(n):  # a ring keeps every node out-connected, chords add hubs and multi-edges
        pairs.add((u, (u + 1) % n, int(rng.integers(n_rel))))
    for _ in range(30):
        u, v = rng.choice(n, 2, replace=False)
        pairs.add((int(u), int(v), int(rng.integers(n_rel))))
    half = sorted({(u, v, r) for u, v, r in pairs} | {(v, u, r) for u, v, r in pairs})
    src = np.array([h[0] for h in half]); dst = np.array([h[1] for h in half]); rel = np.array([h[2] for h in half])
    indptr = np.zeros(n + 1, np.int64); np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    a = rng.random((n_rel, batch)); b = rng.random((n, batch)); xt = rng.random((n, batch))

    # the step against a dense weight matrix per column
    got = weighted_step(indptr, dst.astype(np.int32), rel.astype(np.int32), a, b, xt, np.empty_like(xt))
    for c in range(batch):
        w = np.zeros((n, n))
        for u, v, r in half:
            w[u, v] += a[r, c] + b[u, c] + b[v, c]
        assert np.allclose(got[:, c], w @ xt[:, c], rtol=1e-12, atol=1e-12), c

    # float32 operands (the terms from the third on) give the float32 result to float32 precision
    got32 = weighted_step(indptr, dst.astype(np.int32), rel.astype(np.int32), a.astype(np.float32),
                          b.astype(np.float32), xt.astype(np.float32), np.empty(xt.shape, np.float32))
    assert got32.dtype == np.float32 and np.allclose(got32, got, rtol=1e-5)

    # the whole series with the fused step against a dense solve of PPR
    eta = 0.15
    ones = np.ones(len(dst))
    adjacency = sp.csr_matrix((ones, (dst, src)), shape=(n, n))
    rel_adj = [sp.csr_matrix((ones[rel == r], (dst[rel == r], src[rel == r])), shape=(n, n)) for r in range(n_rel)]
    counts = np.bincount(src * n_rel + rel, minlength=n * n_rel).reshape(n, n_rel).astype(float)
    degree = np.bincount(src, minlength=n).astype(float)
    seeds = np.array([0, 5, 11])
    step = lambda x, a_t, b_t: weighted_step(indptr, dst.astype(np.int32), rel.astype(np.int32), a_t, b_t, x,
                                             np.empty_like(x))
    pi, _, bound = power_iteration_xp(np, Operators(adjacency, rel_adj, counts, degree), a, b, seeds,
                                      Series(eta=eta, tol=1e-10), step=step)
    for c, seed in enumerate(seeds):
        w = np.zeros((n, n))
        for u, v, r in half:
            w[u, v] += a[r, c] + b[u, c] + b[v, c]
        walk = (w / w.sum(axis=1, keepdims=True)).T  # column u: where u's mass goes
        s = np.zeros(n); s[seed] = 1.0
        dense = eta * np.linalg.solve(np.eye(n) - (1 - eta) * walk, s)
        assert np.abs(pi[:, c] - dense).sum() <= 1e-6, (c, np.abs(pi[:, c] - dense).sum())
    print("ok")
""")


def test_fused_step_and_series_in_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_a_fused_step_that_cannot_compile_is_reported_once_and_not_used(monkeypatch):
    import numpy as np
    import pytest

    import adapath.kernels.ppr_cuda as ppr_cuda
    from adapath.engine.ppr import PPREngine
    from adapath.sources.synthetic import generate

    def broken(*args):
        raise RuntimeError("no CUDA toolchain")

    monkeypatch.setattr(ppr_cuda, "weighted_step", broken)
    # the array-namespace solve as the cupy backend sets it up, on NumPy arrays
    solver = PPREngine(generate(scale=0.002, seed=1), backend="scipy").solver
    assert solver.xp is np
    with pytest.warns(RuntimeWarning, match="did not compile"):
        assert solver.fused_step() is None
    assert solver.fused_step() is None  # remembered: no second warning, no second try
