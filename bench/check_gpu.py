"""GPU check, prepared for a session that is lent a GPU machine: the CuPy PPR kernel against
the CPU kernel (L1 per column, target 1e-5), then Path-Bank throughput on the GPU.

    python bench/check_gpu.py [--scale 1.0] [--queries 2048] [--batch 256] [--json FILE]

Needs CuPy (``pip install -e ".[gpu]"``); exits with a one-line message without it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--queries", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    try:
        import cupy

        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - any CuPy/driver failure means no GPU check
        sys.exit(f"check_gpu: no usable CuPy/GPU ({type(exc).__name__}: {exc})")
    if devices == 0:
        sys.exit("check_gpu: CuPy sees no GPU")

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.executors.local import LocalExecutor
    from adapath.datasets.biostrat import training_queries
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.ppr import PPREngine
    from adapath.engine.synthetic import generate
    from adapath.engine.weights import query_weights

    clock = time.perf_counter()
    graph = generate(scale=args.scale, seed=0)
    work = Path(tempfile.mkdtemp(prefix="check_gpu_"))
    graph.save(work / "kg")
    result = {"scale": args.scale, "nodes": graph.num_nodes, "edges": graph.num_edges,
              "generate_s": time.perf_counter() - clock}

    rng = np.random.default_rng(0)
    n = 16
    weights = query_weights(rng.random((graph.num_nodes, n)), rng.random((graph.num_relations, n)))
    seeds = rng.integers(0, graph.num_nodes, n)
    cpu, _, _ = PPREngine(graph, device="cpu").personalized(weights, seeds)
    gpu_engine = PPREngine(graph, device="cuda")
    gpu, _, _ = gpu_engine.personalized(weights, seeds)
    result["ppr_l1_max"] = float(np.abs(cpu - gpu).sum(axis=0).max())
    result["ppr_agrees_1e-5"] = result["ppr_l1_max"] <= 1e-5

    records = training_queries(QueryGenerator(graph).generate(args.queries, seed=1))
    for device in ("cuda", "cpu"):
        subset = records if device == "cuda" else records[: min(128, len(records))]
        config = BankConfig(batch=args.batch if device == "cuda" else 32, device=device)
        executor = LocalExecutor()
        build_bank(graph, subset[:4], work / f"warm-{device}", config, executor, graph_dir=work / "kg")
        clock = time.perf_counter()
        progress = build_bank(graph, subset, work / f"bank-{device}", config, executor, graph_dir=work / "kg")
        seconds = time.perf_counter() - clock
        result[f"{device}_queries_per_s"] = len(subset) / seconds
        result[f"{device}_stage_ms"] = {k: 1000 * v / len(subset) for k, v in progress.seconds.items()}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
