"""Which path search recovers more ground-truth paths: Yen's pool binned by hop, or the
exact hop-bounded search (best paths of each hop count)?

Real BioStrat-QA records are planted in a generated graph; each record's ground-truth path
(its ``path_node_ids``) and meta-path are looked up among the bank's paths for the
(topic, answer) pair. Before the timed builds, each search builds the bank of four records
untimed: that compiles its Numba kernels (or loads them from Numba's disk cache), so ms/query
is the search's, not the compiler's, even when the cache is cold.

    adapath bench paths-recall [--scale 0.1] [--records 200] [--records-file dev.jsonl]

The planted graph comes from the bench cache.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)
from adapath.bench.real_records import DEFAULT_RECORDS  # noqa: E402


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1, help="generated graph scale")
    parser.add_argument("--records", type=int, default=200, help="single-topic records planted and looked up")
    parser.add_argument("--records-file", type=Path, default=DEFAULT_RECORDS, help="BioStrat-QA JSONL (dev records)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    import pyarrow.parquet as pq

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bench.inputs import inputs
    from adapath.datasets.biostrat import training_queries

    graph, _ = inputs().graph(args.scale, 0, evidence=[args.records_file])
    records = [json.loads(x) for x in open(args.records_file)]
    records = [r for r in records if len(r["topic_entities"]) == 1][: args.records]
    work = Path(tempfile.mkdtemp(prefix="bench_recall_"))
    for search in ("yen", "hop-bounded"):  # untimed: kernels compiled or loaded, not timed below
        build_bank(graph, training_queries(records[:4]), work / f"warm-{search}", BankConfig(search=search))
    result = {}
    print(f"path recall on {len(records)} real records planted at scale {args.scale}")
    print(f"{'search':<14}{'exact path':>12}{'meta-path':>12}{'paths/query':>13}{'ms/query':>10}")
    for search in ("yen", "hop-bounded"):
        clock = time.perf_counter()
        build_bank(graph, training_queries(records), work / search, BankConfig(search=search))
        seconds = time.perf_counter() - clock
        rows = pq.read_table(work / search / "paths.parquet").to_pylist()
        by_query = {}
        for row in rows:
            by_query.setdefault(row["query_id"], []).append(row)
        exact = metapath = 0
        for record in records:
            found = by_query.get(str(record["data_id"]), [])
            truth = [int(v) for v in record["path_node_ids"]]
            relations = [t[1] for t in record["triplets"]]
            exact += any(row["node_ids"] == truth for row in found)
            metapath += any(row["relations"] == relations and row["hop"] == len(relations) for row in found)
        n = len(records)
        result[search] = {"exact_path_recall": exact / n, "metapath_recall": metapath / n,
                          "paths_per_query": len(rows) / n, "ms_per_query": 1000 * seconds / n}
        r = result[search]
        print(f"{search:<14}{r['exact_path_recall']:>12.3f}{r['metapath_recall']:>12.3f}"
              f"{r['paths_per_query']:>13.1f}{r['ms_per_query']:>10.1f}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))

