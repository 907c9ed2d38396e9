"""The kernels' signatures: no function in ``adapath/kernels/`` takes more than 12
parameters (related arrays travel as NamedTuples, which Numba takes as typed tuples), and
the compiled kernels that take NamedTuples are still loaded from Numba's on-disk cache."""

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ROOT / "adapath" / "kernels"
LIMIT = 12


def long_signatures(source: str, limit: int = LIMIT) -> list[tuple[str, int]]:
    """(name, parameter count) of every function or lambda in ``source`` with more than
    ``limit`` parameters (self, *args and **kwargs included)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            count = (len(args.posonlyargs) + len(args.args) + len(args.kwonlyargs)
                     + (args.vararg is not None) + (args.kwarg is not None))
            if count > limit:
                found.append((getattr(node, "name", "<lambda>"), count))
    return found


def test_the_count_sees_every_kind_of_parameter():
    """Thirteen parameters of every kind, in a method, a nested function and a lambda, are
    caught; twelve are not."""
    source = textwrap.dedent("""
        class Solve:
            def method(self, a, b, c, d, e, f, g, h, i, j, k, l):
                def nested(a, /, b, c, d, e, f, g, h, i, j, *args, key=1, **kwargs):
                    return 0
                return nested
        twelve = lambda a, b, c, d, e, f, g, h, i, j, k, l: 0
        thirteen = lambda a, b, c, d, e, f, g, h, i, j, k, l, m: 0
    """)
    assert sorted(long_signatures(source)) == [("<lambda>", 13), ("method", 13), ("nested", 13)]


def test_no_kernel_takes_more_than_twelve_parameters():
    offenders = [f"{path.name}: {name} takes {count}"
                 for path in sorted(KERNELS.glob("**/*.py"))
                 for name, count in long_signatures(path.read_text())]
    assert not offenders, offenders


CACHED = textwrap.dedent("""
    import numpy as np
    from adapath.engine.batch_paths import PairStage, PathSearch
    from adapath.engine.ppr import PPREngine
    from adapath.engine.weights import query_weights
    import torch
    from adapath.kernels import certify, pair_stage, ppr_numba, relational
    from adapath.methods.pathmind.propagate import Places, RelationalGraph, relational_gather, walk_sum
    from tests.helpers import random_graph

    graph = random_graph(3, n=300, m=6000)
    rng = np.random.default_rng(3)
    weights = query_weights(rng.random((graph.num_nodes, 4)), rng.random((graph.num_relations, 4)))
    topics, answers = rng.integers(0, 300, 4), rng.integers(0, 300, 4)
    engine = PPREngine(graph, tol=1e-12, certify_from=3)
    ranking = engine.ranked(weights, topics, answers, ladder=(10, 20), top=40)
    PairStage(graph, PathSearch(ladder=(10, 20))).run(weights.a, weights.b, np.arange(4), topics, answers,
                                                      ranking.rho.T, ranking.order)
    relational_graph = RelationalGraph(graph)
    places, every = Places(np.arange(300), 300), np.ones(300, np.bool_)
    x = torch.ones(300, 2, requires_grad=True)
    rho = torch.ones(relational_graph.num_codes, 2, requires_grad=True)
    relational_gather(x, rho, relational_graph, places, every, every).sum().backward()
    total, count = torch.ones(300, 1, 2, requires_grad=True), torch.ones(300, 1, requires_grad=True)
    out = walk_sum(total, count, torch.ones(300, 1, 2), rho.view(-1, 1, 2), relational_graph, places, every, every)
    (out[0].sum() + out[1].sum()).backward()
    for kernel in (ppr_numba._inverse_out_weights, ppr_numba._push, ppr_numba._step, certify.last_term_peaks,
                   certify._list_rows, certify._merge_lists, certify._certify_listed, pair_stage.pair_stage,
                   relational.gather, relational.scatter_backward, relational.walk_sum_step,
                   relational.walk_sum_sources_backward):
        assert kernel.signatures, kernel  # it ran
        print(kernel.__name__, sum(kernel.stats.cache_hits.values()), sum(kernel.stats.cache_misses.values()))
""")


def test_kernels_taking_named_tuples_load_from_the_cache():
    """A second process finds every such kernel compiled on disk (the first may compile)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", CACHED], env=env, cwd=ROOT, capture_output=True, text=True,
                              timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    counts = {name: (int(hits), int(misses)) for name, hits, misses in map(str.split, done.stdout.splitlines())}
    assert len(counts) == 12
    assert all(hits > 0 and misses == 0 for hits, misses in counts.values()), counts
