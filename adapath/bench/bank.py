"""Path-Bank build throughput, ours (exact and certified PPR) against a per-query igraph reference:
ms/query by stage, queries/s, speedup (best of ``--rounds`` alternating rounds), corridor Jaccard,
path agreement, peak memory; the GPU builds; ``--threads`` the per-pair stage's thread scaling;
``--executor ray`` Ray workers. Each timed build follows an untimed one (kernels compiled)."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import os
import resource
import shutil
import time
from pathlib import Path

import numpy as np

from adapath.bank.config import BankConfig
from adapath.bench.environment import cupy_devices, proc_field
from adapath.bench.inputs import inputs, parser, workdir
from adapath.bench.result import report
from adapath.bench.timing import Line, Measured, alternate, timed
from adapath.datasets.biostrat import training_queries
from adapath.engine.weights import query_weights
from adapath.executors import LocalExecutor, arrays_nbytes

STAGES = ("text", "weights", "ppr", "corridor", "paths")


def reset_peak_rss() -> None:
    """A new peak-RSS window (5 in clear_refs resets VmHWM); else the peak stays the process's."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def rss_mib(field: str = "VmHWM") -> float:
    """Resident MiB: the peak since ``reset_peak_rss`` (else since the start), or ``VmRSS`` now."""
    value = proc_field("/proc/self/status", field)
    if value is None:  # no /proc: the process's peak, and no current figure
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if field == "VmHWM" else 0.0
    return int(value.split()[0]) / 1024


def reference_pipeline(graph, queries, config):
    """(seconds by stage, rho per query) of a per-query pipeline: materialized weights, igraph."""
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


def graph_text(graph, kg_dir, config):
    from adapath.retrieval.bm25 import GraphText

    return GraphText.for_graph(graph, kg_dir, k1=config.bm25_k1, b=config.bm25_b)


def ours(graph, kg_dir, queries, config, workdir, name, pipeline=None, warm=None):
    """(runner, seconds, stage seconds) of a fresh build after an untimed one of ``warm`` queries
    (default: a batch): kernels compiled, the kept runner's PPR arrays mapped, as in a long build."""
    from adapath.bank.build import build_bank

    for old in (workdir / name, workdir / f"{name}-warmup"):  # always a fresh build
        shutil.rmtree(old, ignore_errors=True)
    text = graph_text(graph, kg_dir, config)
    executor = LocalExecutor(threads=os.cpu_count() or 1, pipeline=pipeline)
    build_bank(graph, queries[:warm or config.batch], workdir / f"{name}-warmup", config, executor, text=text)
    executor.worker.runner.ppr.device_seconds.clear()  # the timed build's own
    clock = time.perf_counter()
    progress = build_bank(graph, queries, workdir / name, config, executor, text=text)
    return executor.worker.runner, time.perf_counter() - clock, dict(progress.seconds)


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
    """rho of our batched PPR for the reference queries; with a ladder, the certified solve."""
    from adapath.bank.build import query_pairs

    level = runner.config.level
    pairs = [query_pairs(runner.graph, q, level, i)[-1] for i, q in enumerate(queries)]
    s_node, s_rel = runner.text.similarity([p.text for p in pairs])
    weights = query_weights(s_node, s_rel, beta=runner.config.beta, eps=runner.config.eps)
    result = runner.ppr.bidirectional(weights, [p.topic for p in pairs], [p.answer for p in pairs],
                                      ladder=ladder, slack=slack)
    return [result.forward[:, j] * result.backward[:, j] for j in range(len(pairs))]


class Recording:
    """An executor wrapper that keeps the seconds in its tasks and the driver's per commit."""

    def __init__(self, inner):
        self.inner, self.start, self.close, self.in_task, self.commit_seconds = inner, inner.start, inner.close, [], []

    def run(self, tasks, on_result):
        def record(index, result):
            self.in_task.append(result.ended - result.started)
            self.commit_seconds.append(timed(on_result, index, result)[0])

        self.inner.run(tasks, record)


def recorded_build(graph, queries, config, executor, out, text):
    """(seconds, Recording) of one fresh build."""
    from adapath.bank.build import build_bank

    shutil.rmtree(out, ignore_errors=True)
    recording = Recording(executor)
    return timed(build_bank, graph, queries, out, config, recording, text=text)[0], recording


def scaling(args, graph, kg_dir, queries, config, work):
    """Queries/s of the local executor and of Ray workers, put time, per-task overhead."""
    import ray

    from adapath.bank.worker import bank_worker_spec
    from adapath.executors.ray import RayExecutor

    counts = [int(v) for v in args.workers.split(",")]
    text = graph_text(graph, kg_dir, config)
    n = len(queries)
    # warm-up: one small batch per worker (worker start-up, kernel loading)
    warm, warm_config = queries[: 2 * max(counts)], dataclasses.replace(config, batch=2)
    result = {"scale": args.scale, "queries": n, "batch": config.batch, "runs": {}}

    def row(name, seconds, in_task, overhead=None):
        qps = n / seconds
        base = next(iter(result["runs"].values()), {}).get("queries_per_s", qps)
        result["runs"][name] = {"queries_per_s": qps, "vs_local_1": qps / base, "in_task_s": in_task,
                                "wall_s": seconds, "overhead_s_per_task": overhead}

    for threads in sorted({1, max(counts)}):
        executor = LocalExecutor(threads=threads)
        recorded_build(graph, warm, warm_config, executor, work / "warm-local", text)
        seconds, rec = recorded_build(graph, queries, config, executor, work / f"local-{threads}", text)
        row(f"local, {threads} thread{'s' * (threads > 1)}", seconds, sum(rec.in_task))

    size = arrays_nbytes(bank_worker_spec(graph, text, config).arrays)
    ray.init(address="local", num_cpus=max(counts), include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=int(size * 1.25) + 128 * 2**20, logging_level=logging.ERROR, log_to_driver=False)
    puts, starts, overheads = [], [], {}
    for workers in counts:
        executor = RayExecutor(workers=workers)
        warm_out = work / f"warm-ray-{workers}"
        starts.append(timed(recorded_build, graph, warm, warm_config, executor, warm_out, text)[0])
        puts.append(executor.put_seconds)
        seconds, rec = recorded_build(graph, queries, config, executor, work / f"ray-{workers}", text)
        puts.append(executor.put_seconds)
        overheads[workers] = (seconds * workers - sum(rec.in_task)) / len(rec.in_task)
        row(f"ray, {workers} worker{'s' * (workers > 1)}", seconds, sum(rec.in_task), overheads[workers])
        commit = float(np.median(rec.commit_seconds))
        executor.close()
    ray.shutdown()

    # Projection: a worker runs a batch in t (in-task, one thread) plus the per-task overhead o;
    # the driver commits one batch every c seconds at most; the payload reaches each node once.
    put, tasks = min(puts), -(-n // config.batch)
    per_worker = config.batch / (result["runs"]["ray, 1 worker"]["in_task_s"] / tasks + overheads[1])
    projection = {}
    for nodes in [int(v) for v in args.project_nodes.split(",")]:
        workers = nodes * args.cores_per_node
        qps = min(workers * per_worker, config.batch / commit)
        total = put + nodes * size / (10e9 / 8) + 10_000 / qps  # the payload over 10 Gbit/s, node by node
        projection[nodes] = {"workers": workers, "queries_per_s": qps, "seconds_10k": total}
    result.update(put_seconds=put, payload_mib=size / 2**20, warmup_seconds=starts, commit_seconds=commit,
                  per_worker_queries_per_s=per_worker, driver_cap_queries_per_s=config.batch / commit,
                  projection=projection)
    report(args, result, f"bench bank --executor ray: scale {args.scale}, {graph.num_nodes:,} nodes; {n} queries, "
                         f"{tasks} tasks per build; projection: {args.cores_per_node} workers per node")


def jaccard_top(rhos_a, rhos_b, k) -> float:
    """The mean over queries of the Jaccard index of two solves' top ``k`` nodes."""
    def top(rho):
        return set(np.argsort(-rho, kind="stable")[:k].tolist())

    return float(np.mean([len(top(a) & top(b)) / len(top(a) | top(b)) for a, b in zip(rhos_a, rhos_b)]))


def pair_stage_scaling(args, graph, kg_dir, queries, config, load_at_start):
    """Pairs/s of ``BatchRunner.paths`` by thread count on the same solved batches."""
    import numba

    from adapath.bank.build import plan_batches
    from adapath.bank.runner import STAGES, BatchRunner, PairStageTime

    counts = sorted({1, *(int(v) for v in args.threads.split(","))})
    text = graph_text(graph, kg_dir, config)
    solver = BatchRunner(graph, text, config, threads=max(counts))
    seconds = dict.fromkeys(STAGES, 0.0)
    solved = [solver.solve(batch.pairs, seconds) for batch in plan_batches(graph, queries, config.level, config.batch)]
    runners = {t: BatchRunner(graph, text, config, threads=t) for t in counts}

    def side(runner):
        def run():
            runner.stage_time, spent = PairStageTime(), dict.fromkeys(STAGES, 0.0)
            for batch in solved:
                runner.paths(batch, spent)
            return Measured(runner.stage_time.wall, (runner.stage_time, spent["corridor"] + spent["paths"]))
        return run

    # warm-up: kernels loaded, scratch mapped; then the thread counts alternate
    done = alternate({t: side(r) for t, r in runners.items()}, args.rounds,
                     warm={t: lambda r=r: r.paths(solved[0], dict.fromkeys(STAGES, 0.0)) for t, r in runners.items()})
    best = {t: done.best_value(t) for t in counts}  # (pair stage time, thread seconds)
    one, pairs = best[1][0], best[1][0].pairs
    runs = {t: {"pairs_per_s": pairs / timing.wall, "ratio": one.wall / timing.wall,
                "wall_s": timing.wall, "thread_ms_per_pair": 1000 * thread / pairs,
                "compiled_s": timing.compiled, "gil_share": timing.gil_share,
                "workers": runners[t].pair_stage().workers} for t, (timing, thread) in best.items()}
    result = {"pairs": pairs, "batches": len(solved), "numba_threads": numba.config.NUMBA_NUM_THREADS,
              "load_average_at_start": load_at_start, "runs": runs}
    return {"pair_stage_scaling": {t: r["ratio"] for t, r in runs.items()}, "pair_stage": result}


def arguments():
    return parser(__doc__, {
        "queries": (256, "generated training queries built by ours"),
        "reference-queries": (12, "of those, run by the reference"),
        "batch": (32, "queries per batch on the CPU"),
        "gpu-batch": ("64", "queries per batch on the GPU (pipelined: the next batch is solved "
                      "while this one's corridors run); auto: from the device's free memory"),
        "threads": ("", "thread counts for the per-pair stage's scaling table, e.g. 1,2"),
        "pair-stage-only": (False, "with --threads: only the per-pair stage's scaling table"),
        "pipeline": (False, "pipeline the CPU builds too (the GPU builds always are)"),
        "tol": (1e-8, "PPR tolerance of the exact solve"),
        "slack": (0.0, "certified solve: --certify-slack"),
        "certified-precision": ("float32", "certified solve: --dense-precision (the exact side "
                                "stays float32)", {"choices": ("float32", "float16")}),
        "curve": ("", "scales for the cost curve, e.g. 0.2,0.5,1.0,2.0"),
        "curve-queries": (64, "queries per scale of the curve"),
        "executor": ("local", "ray: queries/s of Ray workers next to the local executor (no "
                     "reference)", {"choices": ("local", "ray")}),
        "workers": ("1,2", "with --executor ray: worker counts to run"),
        "project-nodes": ("1,2,4,8,16", "with --executor ray: node counts of the projected table"),
        "cores-per-node": (32, "with --executor ray: workers per node in the projection"),
    }, scale=1.0, seed=0, rounds=3, workdir=None)


def solves(config, args) -> dict:
    return {"exact": config, "certified": dataclasses.replace(config, ppr="certified", certify_slack=args.slack,
                                                              dense_precision=args.certified_precision)}


def generated_queries(graph, count: int, seed: int) -> tuple[list, list]:
    """(training queries generated on ``graph``, those with one topic)."""
    queries = training_queries(inputs().questions(graph, count, seed + 1))
    return queries, [q for q in queries if len(q.topic_ids) == 1]


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    load_at_start = round(os.getloadavg()[0], 1)

    from adapath.bank.runner import BatchRunner

    work = workdir(args.workdir, "bench_bank_")
    graph, kg_dir = inputs().graph(args.scale, args.seed)
    queries, single = generated_queries(graph, args.queries, args.seed)
    config = BankConfig(batch=args.batch, tol=args.tol)
    if args.executor == "ray":
        return scaling(args, graph, kg_dir, queries, config, work)
    k_top = config.ladder[0]

    scaling_result = {}
    if args.threads:
        scaling_result = pair_stage_scaling(args, graph, kg_dir, single, config, load_at_start)
        if args.pair_stage_only:
            return report(args, {"scale": args.scale, **scaling_result}, "bench bank: the per-pair stage "
                          "(corridors, paths and rows: one compiled call per batch; gil_share: wall time outside it)")
        gc.collect()

    reference_queries = single[: args.reference_queries]
    n_ours, n_ref = len(single), len(reference_queries)
    both = solves(config, args)
    peak, growth = {}, {}  # per side, the largest over rounds: its peak, and its peak above its start

    def side(name, measure):
        """One round of a side with its peak memory; ours clock their build, the reference its stages."""
        def run():
            reset_peak_rss()
            start = rss_mib("VmRSS")
            seconds, value = measure()
            peak[name] = max(peak.get(name, 0.0), rss_mib())
            growth[name] = max(growth.get(name, 0.0), rss_mib() - start)
            gc.collect()  # the runner and its PPR work arrays go before the next side starts
            return Measured(seconds, value)
        return run

    def build(name, cfg):
        return ours(graph, kg_dir, single, cfg, work, name, args.pipeline or None)[1:]

    def reference():
        seconds, rhos = reference_pipeline(graph, reference_queries, config)
        return sum(seconds.values()), (seconds, rhos)

    sides = {name: side(name, lambda n=name, c=cfg: build(n, c)) for name, cfg in both.items()}
    sides["reference"] = side("reference", reference)
    # ours warm up inside each round (an untimed build of one batch); igraph has no kernel to compile
    rounds = alternate(sides, args.rounds, warm=dict.fromkeys(sides), line=Line("bank"))
    ref_rhos = rounds.values["reference"][-1][1]
    runner = BatchRunner(graph, graph_text(graph, kg_dir, config), config)
    exact_rhos = our_rhos(runner, reference_queries)
    cert_runner = BatchRunner(graph, runner.text, both["certified"])
    cert_rhos = our_rhos(cert_runner, reference_queries, ladder=config.ladder, slack=args.slack)
    jaccard = {k: jaccard_top(cert_rhos, exact_rhos, k) for k in config.ladder}
    # what the build runs: the first rung certified (a pair whose corridor climbs is solved again)
    first_rhos = our_rhos(cert_runner, reference_queries, ladder=config.ladder[:1], slack=args.slack)
    jaccard_first = jaccard_top(first_rhos, exact_rhos, k_top)
    jaccard_ref = {"exact": jaccard_top(exact_rhos, ref_rhos, k_top), "certified": jaccard_top(cert_rhos, ref_rhos, k_top)}

    best = {name: (rounds.best(name), rounds.best_value(name)) for name in both}
    ref_seconds = rounds.best_value("reference")[0]
    ref_qps = n_ref / sum(ref_seconds.values())
    qps = {name: n_ours / best[name][0] for name in both}
    result = {
        "scale": args.scale, "nodes": graph.num_nodes, "edges": graph.num_edges, "load_average_at_start": load_at_start,
        "queries_ours": n_ours, "queries_reference": n_ref, "batch": args.batch, "tol": args.tol,
        "certify_slack": args.slack, "certified_precision": args.certified_precision,
        "reference_queries_per_s": ref_qps,
        "queries_per_s": qps, "speedup": {k: v / ref_qps for k, v in qps.items()},
        "speedup_per_round": {name: [r * n_ours / n_ref for r in rounds.round_ratios("reference", name)]
                              for name in both},
        "jaccard_certified_vs_exact": jaccard,
        "jaccard_vs_reference": jaccard_ref, "jaccard_first_rung_vs_exact": jaccard_first,
        "path_agreement": path_agreement(work / "exact", work / "certified"),
        "peak_rss_mib": peak, "peak_added_mib": growth,
        "stage_ms": {name: {k: 1000 * v / n_ours for k, v in best[name][1].items()} for name in both},
        "reference_stage_ms": {k: 1000 * v / n_ref for k, v in ref_seconds.items()},
        **scaling_result,
    }
    has_gpu = cupy_devices()[0] > 0  # the GPU, when CuPy and a device are present
    if has_gpu:
        from adapath.engine.ppr import device_batch, free_device_bytes

        gpu_batch = (device_batch(graph.num_nodes, graph.num_half_edges, free_device_bytes(), queries=n_ours)
                     if args.gpu_batch == "auto" else int(args.gpu_batch))
        result["gpu"] = {}
        for name, cfg in both.items():
            gpu_cfg = dataclasses.replace(cfg, batch=gpu_batch, device="cuda", dense_precision="float32")
            runner, total, secs = ours(graph, kg_dir, single, gpu_cfg, work, f"gpu-{name}")
            result["gpu"][name] = {
                "queries_per_s": n_ours / total, "speedup": n_ours / total / ref_qps,
                "stage_ms": {k: 1000 * v / n_ours for k, v in secs.items()},
                "device_ms": {k: 1000 * v / n_ours for k, v in runner.ppr.device_seconds.items()},
                "path_agreement_vs_cpu_exact": path_agreement(work / "exact", work / f"gpu-{name}"),
                "batch": gpu_batch}
    if args.curve:
        result["curve"] = scale_curve(args, work)
    report(args, result, f"bench bank: scale {args.scale}, {graph.num_nodes:,} nodes; ours on {n_ours} queries (batch "
                         f"{args.batch}{', pipelined' if args.pipeline else ''}), reference on {n_ref}; ms/query by "
                         f"stage; peak memory in MiB (peak_added: above what each side started at); "
                         f"GPU: {'CuPy' if has_gpu else 'not available (no CuPy or no device)'} (its PPR overlaps "
                         "the corridors; corridor and paths are thread-seconds)")


def scale_curve(args, work):
    """ms/query of the exact and the certified build at each scale (no reference)."""
    rows = {}
    for scale in [float(v) for v in args.curve.split(",")]:
        graph, kg_dir = inputs().graph(scale, args.seed)
        queries = generated_queries(graph, args.curve_queries, args.seed)[1]
        config = BankConfig(batch=args.batch, tol=args.tol)
        got, runners = {}, {}
        for name, cfg in solves(config, args).items():
            runners[name], total, seconds = ours(graph, kg_dir, queries, cfg, work, f"curve-{name}")
            got[name] = (1000 * total / len(queries), 1000 * seconds["ppr"] / len(queries))
        rhos_e = our_rhos(runners["exact"], queries[:32])
        rhos_c = our_rhos(runners["certified"], queries[:32], ladder=config.ladder[:1], slack=args.slack)
        rows[scale] = {"nodes": graph.num_nodes, "half_edges": int(graph.indices.shape[0]),
                       "exact_ms": got["exact"][0], "certified_ms": got["certified"][0],
                       "exact_ppr_ms": got["exact"][1], "certified_ppr_ms": got["certified"][1],
                       "jaccard": jaccard_top(rhos_c, rhos_e, config.ladder[0]),
                       "path_agreement": path_agreement(work / "curve-exact", work / "curve-certified")}
        del graph
    return rows
