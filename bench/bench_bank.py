"""Path-Bank construction throughput: ours against a per-query reference pipeline.

On one generated graph and one generated query set:

(a) the reference pipeline, built the way the AdaPath reference does it: per query, BM25
    scores, the full per-edge weight array materialized and copied into igraph, igraph
    ``personalized_pagerank`` (PRPACK) once per seed on the whole graph, the top-K corridor
    with the K ladder, igraph ``get_k_shortest_paths`` in the corridor;
(b) ours on the CPU (batched BM25, decomposed weights, batched Numba PPR, Numba Yen);
(c) ours on the GPU when CuPy and a device are present.

Prints per-stage ms/query, queries/s end to end, the ratio a/b, corridor agreement (mean
Jaccard of our top-K against the reference's exact PRPACK solve) and peak memory.

The machine's memory bandwidth is shared and swings between runs, so (a) and (b) alternate
for ``--rounds`` rounds; the table shows each side's fastest round and the ratio of the two,
and every round's own ratio is printed too.

    python bench/bench_bank.py --scale 1.0 --queries 256 [--reference-queries 12] [--rounds 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

STAGES = ("text", "weights", "ppr", "corridor", "paths")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reference_pipeline(graph, records, config, k_top):
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
    for record in records:
        topic, answer = graph.index_of([int(next(iter(record["topic_entities"]))),
                                        int(record["answer_entity"]["id"])])
        clock = time.perf_counter()
        tokens = bm25s.tokenize([record[f"{config.level}_query"]], stopwords="en",
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


def ours(graph, kg_dir, records, config, workdir, name):
    import shutil

    from adapath.engine.pathbank import PathBankBuilder

    for old in (workdir / name, workdir / f"{name}-warmup"):  # always a fresh build
        shutil.rmtree(old, ignore_errors=True)
    clock = time.perf_counter()
    builder = PathBankBuilder(graph, config, graph_dir=kg_dir, workers=os.cpu_count() or 1)
    builder.build(records[:2], workdir / f"{name}-warmup")  # compile kernels, build BM25 once
    setup = time.perf_counter() - clock
    clock = time.perf_counter()
    progress = builder.build(records, workdir / name)
    total = time.perf_counter() - clock
    seconds = {k: v for k, v in progress.seconds.items()}
    return builder, setup, total, seconds


def our_rhos(builder, records):
    """rho of our batched PPR for the reference queries (same text, topic, answer)."""
    from adapath.engine.pathbank import record_pairs
    from adapath.engine.weights import query_weights

    pairs = [group[-1] for group in record_pairs(builder.graph, records, builder.config.level)]
    s_node, s_rel = builder.text.similarity([p.text for p in pairs])
    weights = query_weights(s_node, s_rel, beta=builder.config.beta, eps=builder.config.eps)
    result = builder.ppr.bidirectional(weights, [p.topic for p in pairs], [p.answer for p in pairs])
    return [result.forward[:, j] * result.backward[:, j] for j in range(len(pairs))]


def jaccard_top(a, b, k):
    ta = set(np.argsort(-a, kind="stable")[:k].tolist())
    tb = set(np.argsort(-b, kind="stable")[:k].tolist())
    return len(ta & tb) / len(ta | tb)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--reference-queries", type=int, default=12)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tol", type=float, default=1e-8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of ours and the reference")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph
    from adapath.engine.pathbank import BankConfig
    from adapath.engine.synthetic import generate

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_bank_"))
    work.mkdir(parents=True, exist_ok=True)
    kg_dir = work / f"kg-{args.scale}-{args.seed}"
    if not kg_dir.exists():
        generate(scale=args.scale, seed=args.seed).save(kg_dir)
    graph = KnowledgeGraph.load(kg_dir, mmap=False)
    records = QueryGenerator(graph).generate(args.queries, seed=args.seed + 1)
    single = [r for r in records if len(r["topic_entities"]) == 1]
    config = BankConfig(batch=args.batch, tol=args.tol)
    k_top = config.ladder[0]

    reference_records = single[: args.reference_queries]
    n_ours, n_ref = len(single), len(reference_records)
    rounds = []  # (ours total, ours stage seconds, reference stage seconds)
    for _ in range(max(1, args.rounds)):
        builder, setup, total, seconds = ours(graph, kg_dir, single, config, work, "cpu")
        rss_ours = peak_rss_mib()
        ref_seconds, ref_rhos = reference_pipeline(graph, reference_records, config, k_top)
        rss_ref = peak_rss_mib()
        rounds.append((total, seconds, ref_seconds))
    mine = our_rhos(builder, reference_records)
    jaccard = float(np.mean([jaccard_top(a, b, k_top) for a, b in zip(mine, ref_rhos)]))

    total, seconds, _ = min(rounds, key=lambda r: r[0])
    ref_seconds = min((r[2] for r in rounds), key=lambda s: sum(s.values()))
    ours_qps = n_ours / total
    ref_total = sum(ref_seconds.values())
    ref_qps = n_ref / ref_total
    round_ratios = [(n_ours / t) / (n_ref / sum(r.values())) for t, _, r in rounds]
    rows = [("stage", "reference ms/q", "ours CPU ms/q")]
    for stage in STAGES:
        rows.append((stage, f"{1000 * ref_seconds[stage] / n_ref:,.1f}", f"{1000 * seconds[stage] / n_ours:,.1f}"))
    rows.append(("end to end", f"{1000 / ref_qps:,.1f}", f"{1000 / ours_qps:,.1f}"))
    print(f"bench_bank: scale {args.scale}, {graph.num_nodes:,} nodes, {graph.num_edges:,} edges; "
          f"ours on {n_ours} queries (batch {args.batch}), reference on {n_ref}")
    for row in rows:
        print(f"{row[0]:<12}{row[1]:>18}{row[2]:>18}")
    gpu = "not available (no CuPy/GPU on this machine)"
    result = {
        "scale": args.scale, "nodes": graph.num_nodes, "edges": graph.num_edges,
        "queries_ours": n_ours, "queries_reference": n_ref, "batch": args.batch, "tol": args.tol,
        "ours_queries_per_s": ours_qps, "reference_queries_per_s": ref_qps,
        "speedup_cpu": ours_qps / ref_qps, "jaccard_mean": jaccard,
        "rounds": len(rounds), "speedup_cpu_per_round": round_ratios,
        "ours_setup_s": setup, "peak_rss_mib_after_ours": rss_ours, "peak_rss_mib_after_reference": rss_ref,
        "ours_stage_ms": {k: 1000 * v / n_ours for k, v in seconds.items()},
        "reference_stage_ms": {k: 1000 * v / n_ref for k, v in ref_seconds.items()},
    }
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            gpu_config = BankConfig(batch=max(args.batch, 256), tol=args.tol, device="cuda")
            _, _, gpu_total, gpu_seconds = ours(graph, kg_dir, single, gpu_config, work, "gpu")
            result["ours_gpu_queries_per_s"] = n_ours / gpu_total
            result["ours_gpu_stage_ms"] = {k: 1000 * v / n_ours for k, v in gpu_seconds.items()}
            gpu = f"{n_ours / gpu_total:,.1f} queries/s"
    except ImportError:
        pass
    print(f"queries/s: reference {ref_qps:,.2f}, ours CPU {ours_qps:,.2f}; speedup a/b "
          f"{ours_qps / ref_qps:,.1f}x (fastest round of each; per round: "
          f"{', '.join(f'{r:.1f}x' for r in round_ratios)}); GPU: {gpu}")
    print(f"corridor agreement: mean Jaccard of top-{k_top} = {jaccard:.4f}; ours set-up (BM25 index, "
          f"kernel compile) {setup:.1f} s; peak RSS {rss_ours:,.0f} MiB after ours, {rss_ref:,.0f} MiB after reference")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
