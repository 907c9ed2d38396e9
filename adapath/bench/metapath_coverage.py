"""Gold meta-paths in each real record's own bank entry by hop count, per number of relation
sequences registered per node path (after an untimed build that compiles the kernels)."""

from __future__ import annotations

from collections import defaultdict

from adapath.bench.inputs import DEFAULT_RECORDS, inputs, parser, workdir
from adapath.bench.result import report
from adapath.bench.timing import timed_build
from adapath.datasets.biostrat import gold_metapath, load_records, training_queries
from adapath.executors import LocalExecutor


def coverage(bank, records: list[dict]) -> dict[int, list[int]]:
    """hop count -> [records whose gold meta-path the bank holds for them, records]."""
    import pyarrow.parquet as pq

    rows = pq.read_table(bank / "paths.parquet", columns=["query_id", "metapath"]).to_pydict()
    held = defaultdict(set)
    for qid, metapath in zip(rows["query_id"], rows["metapath"]):
        held[qid].add(metapath)
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        cell = counts[int(record["num_hops"])]
        cell[0] += gold_metapath(record) in held[str(record["data_id"])]
        cell[1] += 1
    return dict(sorted(counts.items()))


def arguments():
    return parser(__doc__, {"sequences": ("1,8", "relation sequences per node path to compare")},
                  scale=0.1, seed=0, records_file=DEFAULT_RECORDS)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    import pyarrow.parquet as pq

    from adapath.bank.build import BankConfig

    records = load_records(args.records_file)
    graph, kg = inputs().graph(args.scale, args.seed, evidence=[args.records_file])
    work, queries, executor = workdir(None, "bench_coverage_"), training_queries(records), LocalExecutor()
    caps = [int(v) for v in args.sequences.split(",")]
    result = {}
    for cap in caps:
        seconds, _ = timed_build(graph, queries, work / f"bank-{cap}", BankConfig(relation_sequences=cap),
                                 executor=executor, graph_dir=kg)
        result[str(cap)] = {"coverage": coverage(work / f"bank-{cap}", records), "seconds": seconds,
                            "paths": pq.read_metadata(work / f"bank-{cap}" / "paths.parquet").num_rows}
    report(args, result, f"gold meta-path in the record's own bank entry: {len(records)} records planted at "
                         f"scale {args.scale} ({graph.num_nodes:,} nodes); coverage: hops -> [held, records]")
