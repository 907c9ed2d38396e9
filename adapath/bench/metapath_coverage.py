"""Does a record's own Path-Bank entry hold its gold meta-path? Per hop count, with one
relation per node pair (``--relation-sequences 1``: what the bank did before it registered
every relation sequence of a node path) against the default.

Real BioStrat-QA records are planted in a generated graph (as `adapath kg synth --evidence`
does) and every record is built into a bank; a record counts when any of its rows (chain or
direct pair) has its gold meta-path (its path nodes' types and triplet relations). The build
seconds are timed after an untimed build of four records with each setting, which compiles the
Numba kernels (or loads them from Numba's disk cache), so the first row does not carry the
compilation when the cache is cold.

    adapath bench metapath-coverage [--scale 0.1] [--records-file dev.jsonl] [--sequences 1,8]

The planted graph comes from the bench cache (the one ``bench paths-recall`` plants, at the same scale).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)
from adapath.bench.real_records import DEFAULT_RECORDS  # noqa: E402


def coverage(bank: Path, records: list[dict]) -> dict[int, tuple[int, int]]:
    """hop count -> (records whose gold meta-path the bank holds for them, records)."""
    from adapath.datasets.biostrat import gold_metapath

    rows = pq.read_table(bank / "paths.parquet", columns=["query_id", "metapath"]).to_pydict()
    held = defaultdict(set)
    for qid, metapath in zip(rows["query_id"], rows["metapath"]):
        held[qid].add(metapath)
    counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        cell = counts[int(record["num_hops"])]
        cell[0] += gold_metapath(record) in held[str(record["data_id"])]
        cell[1] += 1
    return {h: tuple(c) for h, c in sorted(counts.items())}


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.1, help="generated graph scale")
    parser.add_argument("--seed", type=int, default=0, help="graph seed")
    parser.add_argument("--records-file", type=Path, default=DEFAULT_RECORDS, help="BioStrat-QA JSONL (dev records)")
    parser.add_argument("--sequences", default="1,8", help="relation sequences per node path to compare")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON here")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bench.inputs import inputs
    from adapath.datasets.biostrat import load_records, training_queries
    from adapath.executors import LocalExecutor

    records = load_records(args.records_file)
    graph, kg = inputs().graph(args.scale, args.seed, evidence=[args.records_file])
    work = Path(tempfile.mkdtemp(prefix="bench_coverage_"))
    queries = training_queries(records)
    executor = LocalExecutor()
    caps = [int(v) for v in args.sequences.split(",")]
    for cap in caps:  # untimed: kernels compiled or loaded, not timed below
        build_bank(graph, queries[:4], work / f"warm-{cap}", BankConfig(relation_sequences=cap), executor,
                   graph_dir=kg)
    result = {}
    for cap in caps:
        clock = time.perf_counter()
        build_bank(graph, queries, work / f"bank-{cap}", BankConfig(relation_sequences=cap), executor,
                   graph_dir=kg)
        seconds = time.perf_counter() - clock
        paths = pq.read_metadata(work / f"bank-{cap}" / "paths.parquet").num_rows
        result[cap] = {"coverage": coverage(work / f"bank-{cap}", records), "seconds": seconds,
                       "paths": paths}
    hops = sorted({h for r in result.values() for h in r["coverage"]})
    print(f"gold meta-path in the record's own bank entry: {len(records)} records planted at scale "
          f"{args.scale} ({graph.num_nodes:,} nodes)")
    print(f"{'relation sequences':<20}" + "".join(f"{f'{h}-hop':>16}" for h in hops)
          + f"{'all':>16}{'paths':>9}{'s':>7}")
    for cap, r in result.items():
        cells = [r["coverage"][h] for h in hops]
        total = (sum(c[0] for c in cells), sum(c[1] for c in cells))
        print(f"{cap:<20}" + "".join(f"{100 * a / b:>8.1f}% {a:>3}/{b:<3}" for a, b in cells + [total])
              + f"{r['paths']:>9}{r['seconds']:>7.1f}")
    if args.json:
        args.json.write_text(json.dumps({str(k): v for k, v in result.items()}, indent=2))

