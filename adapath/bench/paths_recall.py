"""Yen's paths against the exact hop-bounded search: gold paths of real records planted in a graph
recovered, and ms per query (after an untimed build that compiles the kernels)."""

from __future__ import annotations

from adapath.bench.inputs import DEFAULT_RECORDS, inputs, parser, workdir
from adapath.bench.result import report
from adapath.bench.timing import timed_build
from adapath.datasets.biostrat import load_records, training_queries


def arguments():
    return parser(__doc__, {"records": (200, "single-topic records planted and looked up")},
                  scale=0.1, records_file=DEFAULT_RECORDS)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    import pyarrow.parquet as pq

    from adapath.bank.build import BankConfig

    graph, _ = inputs().graph(args.scale, 0, evidence=[args.records_file])
    records = [r for r in load_records(args.records_file) if len(r["topic_entities"]) == 1][: args.records]
    work, n = workdir(None, "bench_recall_"), len(records)
    result = {}
    for search in ("yen", "hop-bounded"):
        seconds, _ = timed_build(graph, training_queries(records), work / search, BankConfig(search=search))
        rows = pq.read_table(work / search / "paths.parquet").to_pylist()
        by_query = {}
        for row in rows:
            by_query.setdefault(row["query_id"], []).append(row)
        exact = metapath = 0
        for record in records:
            found, relations = by_query.get(str(record["data_id"]), []), [t[1] for t in record["triplets"]]
            exact += any(row["node_ids"] == [int(v) for v in record["path_node_ids"]] for row in found)
            metapath += any(row["relations"] == relations and row["hop"] == len(relations) for row in found)
        result[search] = {"exact_path_recall": exact / n, "metapath_recall": metapath / n,
                          "paths_per_query": len(rows) / n, "ms_per_query": 1000 * seconds / n}
    report(args, result, f"path recall on {n} real records planted at scale {args.scale}")
