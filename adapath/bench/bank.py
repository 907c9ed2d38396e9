"""Path-Bank construction throughput: ours against a per-query reference pipeline.

On one generated graph and one generated query set:

(a) the reference pipeline, built the way the AdaPath reference does it: per query, BM25
    scores, the full per-edge weight array materialized and copied into igraph, igraph
    ``personalized_pagerank`` (PRPACK) once per seed on the whole graph, the top-K corridor
    with the K ladder, igraph ``get_k_shortest_paths`` in the corridor;
(b) ours on the CPU with the exact PPR solve (``--ppr exact``: batched BM25, decomposed
    weights, batched Numba power iteration to --tol, Numba Yen);
(c) ours with the certified solve (``--ppr certified``: each query stops once its
    corridor's top K is proven final at every rung of the K ladder).

Prints per-stage ms/query of all three side by side, queries/s, the ratio to the
reference, corridor Jaccard of the certified solve against the exact one (every rung) and
of both against the reference's PRPACK solve (top 150), path-set agreement (the share of
the exact build's bank paths that the certified build registered identically) and peak
memory. ``--curve 0.2,0.5,1.0,2.0`` adds the cost per query of both solves at each scale.

The machine's memory bandwidth is shared and swings between runs, so (a) and (b) alternate
for ``--rounds`` rounds; the table shows each side's fastest round and the ratio of the two,
and every round's own ratio is printed too. Every timed build of ours (each round, the GPU
builds, the scale curve, the Ray runs) and the per-pair stage table come after an untimed
build of one batch (or the stage run once) with the same settings, which compiles the Numba
kernels or loads them from Numba's disk cache: no timed round carries the compilation, even
with a cold cache.

    adapath bench bank --scale 1.0 --queries 256 [--reference-queries 12] [--rounds 3]
        [--slack 0] [--curve 0.2,0.5,1.0,2.0 --curve-queries 64] [--threads 1,2]

``--threads 1,2[,...]`` first times the per-pair stage alone (corridors, paths and rows: one
compiled call per batch) on the same solved batches at each thread count, alternating the
counts for ``--rounds`` rounds, and prints pairs/s, the ratio to one thread
(``pair_stage_scaling`` in the result) and the share of the stage's wall time spent outside
the compiled call, holding the GIL. ``--pair-stage-only`` stops after that table.
``--gpu-batch auto`` sizes the GPU batch from the device's free memory.

With ``--executor ray --workers 1,2`` it measures scaling out instead (no reference): the
local executor with 1 thread and with the most workers' threads, then a local Ray cluster
with each worker count, all on the same queries after a warm-up build (worker start-up,
kernel loading), and prints queries/s, the object-store put time of the graph and its BM25
index, the overhead per task (driver-seen task time minus in-task time, one worker), the
driver's commit time, and a projected queries/s against nodes from these numbers.

    adapath bench bank --scale 1.0 --queries 256 --executor ray --workers 1,2
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

STAGES = ("text", "weights", "ppr", "corridor", "paths")


def reset_peak_rss() -> bool:
    """Start a new peak-RSS window (Linux: writing 5 to clear_refs resets VmHWM to the
    current RSS); False where the kernel does not allow it (the peak is then the process's)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _status_mib(field: str) -> float | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mib() -> float:
    """Peak resident memory since the last ``reset_peak_rss`` (else since the start), MiB."""
    peak = _status_mib("VmHWM")
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if peak is None else peak


def rss_mib() -> float:
    """Resident memory now, MiB (0 where /proc is missing)."""
    return _status_mib("VmRSS") or 0.0


def reference_pipeline(graph, queries, config, k_top):
    """Per-query pipeline with materialized weights and igraph; returns (seconds, rho list)."""
    import bm25s
    import igraph

    from adapath.retrieval.bm25 import node_texts, relation_texts

    seconds = dict.fromkeys(STAGES, 0.0)
    heads, rels, tails = graph.edges()
    g = igraph.Graph(n=graph.num_nodes, edges=np.column_stack([heads, tails]).astype(np.int64),
                     directed=False)

    def index(corpus):
        retriever = bm25s.BM25(k1=config.bm25_k1, b=config.bm25_b)
        retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        return retriever

    node_index, rel_index = index(node_texts(graph)), index(relation_texts(graph))
    rhos = []
    for query in queries:
        topic, answer = graph.index_of([query.topic_ids[0], query.answer_id])
        clock = time.perf_counter()
        tokens = bm25s.tokenize([query.text(config.level)], stopwords="en",
                                return_ids=False, show_progress=False)[0]
        sims = []
        for retriever, size in ((node_index, graph.num_nodes), (rel_index, graph.num_relations)):
            known = [t for t in tokens if t in retriever.vocab_dict]
            s = retriever.get_scores(known) if known else np.zeros(size)
            span = s.max() - s.min()
            sims.append((s - s.min()) / span if span > 0 else np.zeros(size))
        s_node, s_rel = sims
        seconds["text"] += time.perf_counter() - clock

        clock = time.perf_counter()
        w = config.beta * s_rel[rels] + (1 - config.beta) / 2 * (s_node[heads] + s_node[tails]) + config.eps
        g.es["weight"] = w.tolist()
        seconds["weights"] += time.perf_counter() - clock

        clock = time.perf_counter()
        pi_f = np.array(g.personalized_pagerank(reset_vertices=[int(topic)], damping=1 - config.eta, weights="weight"))
        pi_b = np.array(g.personalized_pagerank(reset_vertices=[int(answer)], damping=1 - config.eta, weights="weight"))
        seconds["ppr"] += time.perf_counter() - clock

        clock = time.perf_counter()
        rho = pi_f * pi_b
        rhos.append(rho)
        order = np.argsort(-rho, kind="stable")
        sub = None
        for k in config.ladder:
            nodes = sorted(set(order[:k].tolist()) | {int(topic), int(answer)})
            sub = g.induced_subgraph(nodes)
            local = {v: i for i, v in enumerate(nodes)}
            if sub.distances(local[int(topic)], local[int(answer)])[0][0] != float("inf"):
                break
        seconds["corridor"] += time.perf_counter() - clock

        clock = time.perf_counter()
        ends = np.array(nodes)[np.array([e.tuple for e in sub.es]).reshape(-1, 2)] if sub.ecount() else np.zeros((0, 2), int)
        top = rho[nodes].max()
        rho_bar = 0.5 * (rho[ends[:, 0]] + rho[ends[:, 1]]) / top
        sub_w = np.array(sub.es["weight"]) if sub.ecount() else np.zeros(0)
        cost = 1.0 / (config.alpha * sub_w + (1 - config.alpha) * rho_bar)
        paths = sub.get_k_shortest_paths(local[int(topic)], to=local[int(answer)], k=config.k_paths,
                                         weights=cost.tolist(), output="vpath")
        by_hop = {}
        for p in paths:
            by_hop.setdefault(len(p) - 1, []).append(p)
        seconds["paths"] += time.perf_counter() - clock
    return seconds, rhos


def ours(graph, kg_dir, queries, config, workdir, name, pipeline=None):
    """(runner, set-up s, build s, stage seconds) of one fresh build, after an untimed build of
    one batch; ``pipeline`` as ``LocalExecutor`` takes it (None: on the GPU only)."""
    import shutil

    from adapath.bank.build import build_bank
    from adapath.executors import LocalExecutor
    from adapath.retrieval.bm25 import GraphText

    for old in (workdir / name, workdir / f"{name}-warmup"):  # always a fresh build
        shutil.rmtree(old, ignore_errors=True)
    clock = time.perf_counter()
    text = GraphText.for_graph(graph, kg_dir, k1=config.bm25_k1, b=config.bm25_b)
    executor = LocalExecutor(threads=os.cpu_count() or 1, pipeline=pipeline)
    setup = time.perf_counter() - clock
    # one batch first, untimed: kernels compile (or load from Numba's disk cache), and the
    # executor keeps this runner, whose PPR work arrays then start the timed build mapped, as
    # in a long build (fresh pages fault slowly)
    build_bank(graph, queries[:config.batch], workdir / f"{name}-warmup", config, executor, text=text)
    executor.worker.runner.ppr.device_seconds.clear()  # the timed build's own
    clock = time.perf_counter()
    progress = build_bank(graph, queries, workdir / name, config, executor, text=text)
    total = time.perf_counter() - clock
    seconds = {k: v for k, v in progress.seconds.items()}
    return executor.worker.runner, setup, total, seconds


def path_keys(bank: Path) -> list[tuple]:
    """One hashable key per bank path: query, pair, hop, rank, nodes and relations."""
    from adapath.bank.store import BankStore

    table = BankStore(bank).read_paths(["query_id", "pair", "hop", "rank", "node_ids", "relations"]).to_pylist()
    return [(r["query_id"], r["pair"], r["hop"], r["rank"], tuple(r["node_ids"]), tuple(r["relations"]))
            for r in table]


def path_agreement(exact: Path, other: Path) -> float:
    """Share of the exact build's paths that the other build registered identically."""
    a, b = path_keys(exact), set(path_keys(other))
    return sum(k in b for k in a) / max(1, len(a))


def our_rhos(runner, queries, ladder=None, slack=0.0):
    """rho of our batched PPR for the reference queries (same text, topic, answer); with a
    ladder, the certified solve."""
    from adapath.bank.build import query_pairs
    from adapath.engine.weights import query_weights

    level = runner.config.level
    pairs = [query_pairs(runner.graph, q, level, i)[-1] for i, q in enumerate(queries)]
    s_node, s_rel = runner.text.similarity([p.text for p in pairs])
    weights = query_weights(s_node, s_rel, beta=runner.config.beta, eps=runner.config.eps)
    result = runner.ppr.bidirectional(weights, [p.topic for p in pairs], [p.answer for p in pairs],
                                      ladder=ladder, slack=slack)
    return [result.forward[:, j] * result.backward[:, j] for j in range(len(pairs))]


class Recording:
    """An executor wrapper that keeps every BatchResult and the driver's time per commit."""

    def __init__(self, inner):
        self.inner, self.results, self.commit_seconds = inner, [], []

    def start(self, spec):
        self.inner.start(spec)

    def run(self, tasks, on_result):
        def record(index, result):
            self.results.append((time.time(), result))
            clock = time.perf_counter()
            on_result(index, result)
            self.commit_seconds.append(time.perf_counter() - clock)

        self.inner.run(tasks, record)

    def close(self):
        self.inner.close()


def timed_build(graph, queries, config, executor, out, text):
    """(seconds, Recording) of one fresh build."""
    import shutil

    from adapath.bank.build import build_bank

    shutil.rmtree(out, ignore_errors=True)
    recording = Recording(executor)
    clock = time.perf_counter()
    build_bank(graph, queries, out, config, recording, text=text)
    return time.perf_counter() - clock, recording


def scaling(args, graph, kg_dir, queries, config, work):
    """Queries/s of the local executor and of Ray workers, put time, per-task overhead."""
    import dataclasses
    import logging

    import ray

    from adapath.bank.worker import bank_worker_spec
    from adapath.executors import LocalExecutor, arrays_nbytes
    from adapath.executors.ray import RayExecutor
    from adapath.retrieval.bm25 import GraphText

    counts = [int(v) for v in args.workers.split(",")]
    text = GraphText.for_graph(graph, kg_dir, k1=config.bm25_k1, b=config.bm25_b)
    n = len(queries)
    # warm-up: one small batch per worker (worker start-up, kernel loading)
    warm, warm_config = queries[: 2 * max(counts)], dataclasses.replace(config, batch=2)
    rows, result = [], {"scale": args.scale, "queries": n, "batch": config.batch, "runs": {}}

    for threads in sorted({1, max(counts)}):
        executor = LocalExecutor(threads=threads)
        timed_build(graph, warm, warm_config, executor, work / "warm-local", text)
        seconds, rec = timed_build(graph, queries, config, executor, work / f"local-{threads}", text)
        in_task = sum(r.ended - r.started for _, r in rec.results)
        rows.append((f"local, {threads} thread{'s' * (threads > 1)}", threads, n / seconds, in_task, seconds, None))

    size = arrays_nbytes(bank_worker_spec(graph, text, config).arrays)
    ray.init(address="local", num_cpus=max(counts), include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=int(size * 1.25) + 128 * 2**20, logging_level=logging.ERROR, log_to_driver=False)
    puts, starts, overheads = [], [], {}
    for workers in counts:
        executor = RayExecutor(workers=workers)
        clock = time.perf_counter()
        timed_build(graph, warm, warm_config, executor, work / f"warm-ray-{workers}", text)
        starts.append(time.perf_counter() - clock)
        puts.append(executor.put_seconds)
        seconds, rec = timed_build(graph, queries, config, executor, work / f"ray-{workers}", text)
        puts.append(executor.put_seconds)
        in_task = sum(r.ended - r.started for _, r in rec.results)
        overheads[workers] = (seconds * workers - in_task) / len(rec.results)
        rows.append((f"ray, {workers} worker{'s' * (workers > 1)}", workers, n / seconds, in_task, seconds,
                     overheads[workers]))
        commit = float(np.median(rec.commit_seconds))
        executor.close()
    ray.shutdown()

    base = rows[0][2]
    print(f"bench_bank --executor ray: scale {args.scale}, {graph.num_nodes:,} nodes, {graph.num_edges:,} edges; "
          f"{n} queries, batch {config.batch}, {-(-n // config.batch)} tasks per build (machine shared: noisy)")
    print(f"{'executor':<20}{'queries/s':>11}{'vs local 1':>12}{'in-task s':>11}{'wall s':>9}{'overhead ms/task':>18}")
    for name, _, qps, in_task, wall, over in rows:
        print(f"{name:<20}{qps:>11.2f}{qps / base:>11.2f}x{in_task:>11.1f}{wall:>9.1f}"
              f"{'' if over is None else f'{1000 * over:,.0f}':>18}")
        result["runs"][name] = {"queries_per_s": qps, "in_task_s": in_task, "wall_s": wall,
                                "overhead_s_per_task": over}
    put = min(puts)
    print(f"object-store put of the graph and its BM25 index: {size / 2**20:,.0f} MiB in {put:.2f} s "
          f"({size / 2**30 / put:.2f} GiB/s); Ray warm-up build (cluster join, worker start, kernel load): "
          f"{', '.join(f'{s:.1f} s' for s in starts)}; driver commit per batch {1000 * commit:.1f} ms")

    # Projection: a worker runs a batch in t (in-task, one thread) plus the per-task overhead o;
    # the driver commits one batch every c seconds at most; the payload reaches each node once.
    one = next(r for r in rows if r[0].startswith("ray, 1 "))
    tasks = -(-n // config.batch)
    t, o, c = one[3] / tasks, overheads[1], commit
    per_worker = config.batch / (t + o)
    driver_cap = config.batch / c
    print(f"projected (per worker {per_worker:.2f} q/s = batch {config.batch} / ({t:.2f} s in task + "
          f"{o:.2f} s overhead); driver cap {driver_cap:,.0f} q/s; {args.cores_per_node} workers per node):")
    print(f"{'nodes':>6}{'workers':>9}{'queries/s':>11}{'10k queries':>13}")
    projection = {}
    for nodes in [int(v) for v in args.project_nodes.split(",")]:
        workers = nodes * args.cores_per_node
        qps = min(workers * per_worker, driver_cap)
        start = put + nodes * size / (10e9 / 8)  # the payload over 10 Gbit/s, node by node
        total = start + 10_000 / qps
        projection[nodes] = {"workers": workers, "queries_per_s": qps, "seconds_10k": total}
        print(f"{nodes:>6}{workers:>9}{qps:>11,.0f}{total / 60:>11.1f} min")
    result.update(put_seconds=put, payload_mib=size / 2**20, warmup_seconds=starts,
                  commit_seconds=commit, projection=projection)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def jaccard_top(a, b, k):
    ta = set(np.argsort(-a, kind="stable")[:k].tolist())
    tb = set(np.argsort(-b, kind="stable")[:k].tolist())
    return len(ta & tb) / len(ta | tb)


def pair_stage_scaling(args, graph, kg_dir, queries, config, load_at_start):
    """Pairs/s of the per-pair stage (``BatchRunner.paths``: corridors, paths, rows) at each
    thread count, on the same batches solved once (exact solve); the best of ``--rounds``
    rounds, the thread counts alternating. Returns the JSON part."""
    import numba

    from adapath.bank.build import plan_batches
    from adapath.bank.runner import STAGES, BatchRunner, PairStageTime
    from adapath.retrieval.bm25 import GraphText

    counts = sorted({1, *(int(v) for v in args.threads.split(","))})
    text = GraphText.for_graph(graph, kg_dir, k1=config.bm25_k1, b=config.bm25_b)
    solver = BatchRunner(graph, text, config, threads=max(counts))
    seconds = dict.fromkeys(STAGES, 0.0)
    solved = [solver.solve(batch.pairs, seconds) for batch in plan_batches(graph, queries, config.level, config.batch)]
    runners = {t: BatchRunner(graph, text, config, threads=t) for t in counts}
    for runner in runners.values():  # kernels loaded, scratch mapped
        runner.paths(solved[0], dict.fromkeys(STAGES, 0.0))
    best: dict[int, PairStageTime] = {}
    thread_seconds = {}
    for round_ in range(max(1, args.rounds)):
        for t in counts if round_ % 2 == 0 else counts[::-1]:
            runner = runners[t]
            runner.stage_time = PairStageTime()
            spent = dict.fromkeys(STAGES, 0.0)
            for batch in solved:
                runner.paths(batch, spent)
            if t not in best or runner.stage_time.wall < best[t].wall:
                best[t], thread_seconds[t] = runner.stage_time, spent["corridor"] + spent["paths"]
    pairs = best[1].pairs
    base = pairs / best[1].wall
    print(f"per-pair stage (corridors, paths and rows; one compiled call per batch) on {len(solved)} solved "
          f"batches of batch {config.batch}, {pairs} pairs, exact solve; best of {max(1, args.rounds)} rounds; "
          f"Numba's pool {numba.config.NUMBA_NUM_THREADS} threads, {os.cpu_count()} cores; "
          f"load average at start {load_at_start}")
    print(f"{'threads':>8}{'pairs/s':>10}{'vs 1 thread':>13}{'wall ms/pair':>14}{'thread ms/pair':>16}"
          f"{'GIL-held share':>16}")
    result = {"pairs": pairs, "batches": len(solved), "runs": {}}
    for t in counts:
        timing = best[t]
        rate = pairs / timing.wall
        workers = runners[t].pair_stage().workers
        print(f"{t:>8}{rate:>10,.0f}{rate / base:>12.2f}x{1000 * timing.wall / pairs:>14.3f}"
              f"{1000 * thread_seconds[t] / pairs:>16.3f}{timing.gil_share:>15.1%}"
              + (f"  ({workers} workers: Numba's pool)" if workers != t else ""))
        result["runs"][t] = {"pairs_per_s": rate, "ratio": rate / base, "wall_s": timing.wall,
                             "compiled_s": timing.compiled, "gil_share": timing.gil_share, "workers": workers}
    print("(GIL-held share: the stage's wall time outside the compiled call, which releases the GIL: "
          "the batch's inputs and its rows)")
    return {"pair_stage_scaling": {t: run["ratio"] for t, run in result["runs"].items()}, "pair_stage": result}


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="generated graph scale (1.0 = PrimeKG's size)")
    parser.add_argument("--queries", type=int, default=256, help="generated training queries built by ours")
    parser.add_argument("--reference-queries", type=int, default=12, help="of those, run by the reference")
    parser.add_argument("--batch", type=int, default=32, help="queries per batch on the CPU")
    parser.add_argument("--gpu-batch", default="64",
                        help="queries per batch on the GPU (pipelined: the next batch is solved while "
                             "this one's corridors run); auto: from the device's free memory")
    parser.add_argument("--threads", default="",
                        help="thread counts for the per-pair stage's scaling table, e.g. 1,2")
    parser.add_argument("--pair-stage-only", action="store_true",
                        help="with --threads: only the per-pair stage's scaling table")
    parser.add_argument("--pipeline", action="store_true",
                        help="pipeline the CPU builds too (the GPU builds always are)")
    parser.add_argument("--tol", type=float, default=1e-8, help="PPR tolerance of the exact solve")
    parser.add_argument("--seed", type=int, default=0, help="graph seed (the queries' is seed + 1)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and the reference")
    parser.add_argument("--slack", type=float, default=0.0, help="certified solve: --certify-slack")
    parser.add_argument("--certified-precision", choices=("float32", "float16"), default="float32",
                        help="certified solve: --dense-precision (the exact side stays float32)")
    parser.add_argument("--curve", default="", help="scales for the cost curve, e.g. 0.2,0.5,1.0,2.0")
    parser.add_argument("--curve-queries", type=int, default=64, help="queries per scale of the curve")
    parser.add_argument("--workdir", type=Path, default=None, help="where the timed banks are built (default: a "
                        "temporary folder; graphs and queries come from the bench cache)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="ray: queries/s of Ray workers next to the local executor (no reference)")
    parser.add_argument("--workers", default="1,2", help="with --executor ray: worker counts to run")
    parser.add_argument("--project-nodes", default="1,2,4,8,16",
                        help="with --executor ray: node counts of the projected table")
    parser.add_argument("--cores-per-node", type=int, default=32,
                        help="with --executor ray: workers per node in the projected table")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    load_at_start = round(os.getloadavg()[0], 1)

    from adapath.bank.build import BankConfig
    from adapath.bank.runner import BatchRunner
    from adapath.bench.inputs import inputs
    from adapath.bench.timing import Line, Measured, alternate
    from adapath.datasets.biostrat import training_queries
    from adapath.retrieval.bm25 import GraphText

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_bank_"))
    work.mkdir(parents=True, exist_ok=True)
    graph, kg_dir = inputs().graph(args.scale, args.seed)
    queries = training_queries(inputs().questions(graph, args.queries, args.seed + 1))
    single = [q for q in queries if len(q.topic_ids) == 1]
    config = BankConfig(batch=args.batch, tol=args.tol)
    if args.executor == "ray":
        scaling(args, graph, kg_dir, queries, config, work)
        return
    k_top = config.ladder[0]

    scaling_result = {}
    if args.threads:
        scaling_result = pair_stage_scaling(args, graph, kg_dir, single, config, load_at_start)
        if args.pair_stage_only:
            if args.json:
                args.json.write_text(json.dumps({"scale": args.scale, **scaling_result}, indent=2))
            return
        gc.collect()

    reference_queries = single[: args.reference_queries]
    n_ours, n_ref = len(single), len(reference_queries)
    certified = dataclasses.replace(config, ppr="certified", certify_slack=args.slack,
                                    dense_precision=args.certified_precision)
    solves = {"exact": config, "certified": certified}
    peak = {}  # per side, the largest over rounds of its own peak window
    per_side = reset_peak_rss()
    growth = {}  # per side, the largest over rounds of its peak above the RSS it started at

    def side(name, measure):
        """One round of a side, with its peak memory; ours clock their own build (after an
        untimed build of one batch), the reference its stages."""
        def run():
            reset_peak_rss()
            start = rss_mib()
            seconds, value = measure()
            peak[name] = max(peak.get(name, 0.0), peak_rss_mib())
            growth[name] = max(growth.get(name, 0.0), peak_rss_mib() - start)
            gc.collect()  # the runner and its PPR work arrays go before the next side starts
            return Measured(seconds, value)
        return run

    def build(name, cfg):
        _, _, total, seconds = ours(graph, kg_dir, single, cfg, work, name, args.pipeline or None)
        return total, seconds

    def reference():
        seconds, rhos = reference_pipeline(graph, reference_queries, config, k_top)
        return sum(seconds.values()), (seconds, rhos)

    sides = {name: side(name, lambda n=name, c=cfg: build(n, c)) for name, cfg in solves.items()}
    sides["reference"] = side("reference", reference)
    # ours warm up inside each round (an untimed build of one batch); igraph has no kernel to compile
    rounds = alternate(sides, args.rounds, warm=dict.fromkeys(sides), line=Line("bank"))
    ref_rhos = rounds.values["reference"][-1][1]
    runner = BatchRunner(graph, GraphText.for_graph(graph, kg_dir, k1=config.bm25_k1, b=config.bm25_b), config)
    exact_rhos = our_rhos(runner, reference_queries)
    cert_runner = BatchRunner(graph, runner.text, certified)
    cert_rhos = our_rhos(cert_runner, reference_queries, ladder=config.ladder, slack=args.slack)
    jaccard = {k: float(np.mean([jaccard_top(a, b, k) for a, b in zip(cert_rhos, exact_rhos)]))
               for k in config.ladder}
    # what the build runs: the first rung certified (a pair whose corridor climbs is solved again)
    first_rhos = our_rhos(cert_runner, reference_queries, ladder=config.ladder[:1], slack=args.slack)
    jaccard_first = float(np.mean([jaccard_top(a, b, k_top) for a, b in zip(first_rhos, exact_rhos)]))
    jaccard_ref = {name: float(np.mean([jaccard_top(a, b, k_top) for a, b in zip(rhos, ref_rhos)]))
                   for name, rhos in (("exact", exact_rhos), ("certified", cert_rhos))}
    agreement = path_agreement(work / "exact", work / "certified")

    best = {name: (rounds.best(name), rounds.best_value(name)) for name in solves}
    ref_seconds = rounds.best_value("reference")[0]
    ref_qps = n_ref / sum(ref_seconds.values())
    qps = {name: n_ours / best[name][0] for name in solves}
    round_ratios = {name: [r * n_ours / n_ref for r in rounds.round_ratios("reference", name)] for name in solves}
    print(f"bench_bank: scale {args.scale}, {graph.num_nodes:,} nodes, {graph.num_edges:,} edges; ours on "
          f"{n_ours} queries (batch {args.batch}{', pipelined' if args.pipeline else ''}), reference on {n_ref}; "
          f"certify slack {args.slack}, certified dense precision {args.certified_precision}; "
          f"load average at start {load_at_start} (machine shared: noisy)")
    print(f"{'stage':<12}{'reference ms/q':>16}{'exact ms/q':>14}{'certified ms/q':>16}")
    for stage in STAGES:
        print(f"{stage:<12}{1000 * ref_seconds[stage] / n_ref:>16,.1f}{1000 * best['exact'][1][stage] / n_ours:>14,.1f}"
              f"{1000 * best['certified'][1][stage] / n_ours:>16,.1f}")
    print(f"{'end to end':<12}{1000 / ref_qps:>16,.1f}{1000 / qps['exact']:>14,.1f}{1000 / qps['certified']:>16,.1f}")
    print(f"{'queries/s':<12}{ref_qps:>16,.2f}{qps['exact']:>14,.2f}{qps['certified']:>16,.2f}")
    print(f"{'vs reference':<12}{1.0:>15.1f}x{qps['exact'] / ref_qps:>13.1f}x{qps['certified'] / ref_qps:>15.1f}x")
    print(f"{'peak RSS MiB':<12}{peak['reference']:>16,.0f}{peak['exact']:>14,.0f}{peak['certified']:>16,.0f}"
          + ("  (the process's peak while each side ran: the graph, what earlier sides left "
             "resident, and the side's build)" if per_side else "  (process peak after each side)"))
    if per_side:
        print(f"{'peak added':<12}{growth['reference']:>16,.0f}{growth['exact']:>14,.0f}"
              f"{growth['certified']:>16,.0f}  (MiB above the resident memory each side started at)")
    print("per round vs reference: " + "; ".join(f"{name} {', '.join(f'{r:.1f}x' for r in rs)}"
                                                   for name, rs in round_ratios.items()))
    print("corridor Jaccard, certified vs exact: " + ", ".join(f"top-{k} {v:.4f}" for k, v in jaccard.items())
          + f"; top-{k_top} vs the reference's PRPACK: exact {jaccard_ref['exact']:.4f}, "
          f"certified {jaccard_ref['certified']:.4f}")
    print(f"corridor Jaccard, first rung certified (as the build runs it) vs exact: top-{k_top} {jaccard_first:.4f}")
    print(f"path-set agreement: {agreement:.4f} of the exact build's bank paths identical in the certified build")
    result = {
        "scale": args.scale, "nodes": graph.num_nodes, "edges": graph.num_edges, "load_average_at_start": load_at_start,
        "queries_ours": n_ours, "queries_reference": n_ref, "batch": args.batch, "tol": args.tol,
        "certify_slack": args.slack, "certified_precision": args.certified_precision,
        "reference_queries_per_s": ref_qps,
        "queries_per_s": qps, "speedup": {k: v / ref_qps for k, v in qps.items()},
        "speedup_per_round": round_ratios, "jaccard_certified_vs_exact": jaccard,
        "jaccard_vs_reference": jaccard_ref, "jaccard_first_rung_vs_exact": jaccard_first,
        "path_agreement": agreement, "peak_rss_mib": peak, "peak_added_mib": growth,
        "stage_ms": {name: {k: 1000 * v / n_ours for k, v in best[name][1].items()} for name in solves},
        "reference_stage_ms": {k: 1000 * v / n_ref for k, v in ref_seconds.items()},
        **scaling_result,
    }
    try:  # the GPU, when CuPy and a device are present
        import cupy

        has_gpu = cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001 - no CuPy, no driver or no device: the same answer
        has_gpu = False
    if has_gpu:
        from adapath.engine.ppr import device_batch, free_device_bytes

        free = free_device_bytes()
        gpu_batch = (device_batch(graph.num_nodes, graph.num_half_edges, free, queries=n_ours)
                     if args.gpu_batch == "auto" else int(args.gpu_batch))
        gpu, device_ms = {}, {}
        for name, cfg in solves.items():
            gpu_cfg = dataclasses.replace(cfg, batch=gpu_batch, device="cuda", dense_precision="float32")
            runner, _, gpu_total, gpu_seconds = ours(graph, kg_dir, single, gpu_cfg, work, f"gpu-{name}")
            gpu[name] = (gpu_total, gpu_seconds, path_agreement(work / "exact", work / f"gpu-{name}"))
            device_ms[name] = {k: 1000 * v / n_ours for k, v in runner.ppr.device_seconds.items()}
        print(f"GPU (CuPy, batch {gpu_batch}{' (auto, ' + f'{free / 2**30:,.0f} GiB free)' if args.gpu_batch == 'auto' else ''}, "
              f"the next batch solved while this one's corridors run on {os.cpu_count()} CPU threads), "
              "against the same reference:")
        print(f"{'stage':<12}{'GPU exact ms/q':>16}{'GPU certified ms/q':>20}")
        for stage in STAGES:
            print(f"{stage:<12}" + "".join(f"{1000 * gpu[n][1][stage] / n_ours:>{w},.1f}"
                                           for n, w in (("exact", 16), ("certified", 20))))
        print(f"{'end to end':<12}{1000 * gpu['exact'][0] / n_ours:>16,.1f}{1000 * gpu['certified'][0] / n_ours:>20,.1f}")
        print(f"{'queries/s':<12}{n_ours / gpu['exact'][0]:>16,.2f}{n_ours / gpu['certified'][0]:>20,.2f}")
        print(f"{'vs reference':<12}{n_ours / gpu['exact'][0] / ref_qps:>15.1f}x"
              f"{n_ours / gpu['certified'][0] / ref_qps:>19.1f}x")
        print(f"{'paths same':<12}{gpu['exact'][2]:>16.4f}{gpu['certified'][2]:>20.4f}"
              "  (share of the CPU exact build's bank paths identical)")
        print("(PPR overlaps the corridors, so the stages add up to more than end to end; "
              "corridor and paths are thread-seconds)")
        for name, parts in device_ms.items():
            print(f"GPU {name} PPR stage, ms/query on the device (synchronized): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()))
        result["gpu"] = {name: {"queries_per_s": n_ours / total, "speedup": n_ours / total / ref_qps,
                                "stage_ms": {k: 1000 * v / n_ours for k, v in secs.items()},
                                "device_ms": device_ms[name],
                                "path_agreement_vs_cpu_exact": same, "batch": gpu_batch}
                         for name, (total, secs, same) in gpu.items()}
    else:
        print("GPU: not available (no CuPy or no device on this machine)")
    if args.curve:
        result["curve"] = scale_curve(args, work)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def scale_curve(args, work):
    """ms/query of the exact and the certified build at each scale (no reference)."""
    from adapath.bank.build import BankConfig
    from adapath.bench.inputs import inputs
    from adapath.datasets.biostrat import training_queries

    rows = {}
    print(f"scale curve: {args.curve_queries} generated queries per scale, batch {args.batch}, "
          f"certify slack {args.slack}, certified dense precision {args.certified_precision}")
    print(f"{'scale':>6}{'nodes':>10}{'half-edges':>13}{'exact ms/q':>12}{'certified ms/q':>16}"
          f"{'ppr exact':>11}{'ppr cert.':>11}{'Jaccard':>9}{'paths same':>12}")
    for scale in [float(v) for v in args.curve.split(",")]:
        graph, kg_dir = inputs().graph(scale, args.seed)
        queries = [q for q in training_queries(inputs().questions(graph, args.curve_queries, args.seed + 1))
                   if len(q.topic_ids) == 1]
        config = BankConfig(batch=args.batch, tol=args.tol)
        got, runners = {}, {}
        for name, cfg in (("exact", config),
                          ("certified", dataclasses.replace(config, ppr="certified", certify_slack=args.slack,
                                                            dense_precision=args.certified_precision))):
            runners[name], _, total, seconds = ours(graph, kg_dir, queries, cfg, work, f"curve-{name}")
            got[name] = (1000 * total / len(queries), 1000 * seconds["ppr"] / len(queries))
        rhos_e = our_rhos(runners["exact"], queries[:32])
        rhos_c = our_rhos(runners["certified"], queries[:32], ladder=config.ladder[:1], slack=args.slack)
        jac = float(np.mean([jaccard_top(a, b, config.ladder[0]) for a, b in zip(rhos_c, rhos_e)]))
        same = path_agreement(work / "curve-exact", work / "curve-certified")
        rows[scale] = {"nodes": graph.num_nodes, "half_edges": int(graph.indices.shape[0]),
                       "exact_ms": got["exact"][0], "certified_ms": got["certified"][0],
                       "exact_ppr_ms": got["exact"][1], "certified_ppr_ms": got["certified"][1],
                       "jaccard": jac, "path_agreement": same}
        print(f"{scale:>6}{graph.num_nodes:>10,}{graph.indices.shape[0]:>13,}{got['exact'][0]:>12,.1f}"
              f"{got['certified'][0]:>16,.1f}{got['exact'][1]:>11,.1f}{got['certified'][1]:>11,.1f}"
              f"{jac:>9.4f}{same:>12.4f}", flush=True)
        del graph
    return rows

