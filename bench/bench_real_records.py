"""End to end on real BioStrat-QA records: plant them in a generated graph, build a Path-Bank
on a training share, answer the rest at all three levels, and print the evaluation tables
(Tables 2, 4, 11 and the control-signal accuracy of Table 24).

    python bench/bench_real_records.py [--scale 0.1] [--train-share 0.67] [--encoder hashing]
        [--llm none] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

DEFAULT_RECORDS = Path(__file__).resolve().parents[2] / "shared" / "data" / "biostrat_qa" / "dev.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--train-share", type=float, default=0.67)
    parser.add_argument("--encoder", default="hashing")
    parser.add_argument("--llm", default="none")
    parser.add_argument("--limit", type=int, default=0, help="test questions per level (0 = all)")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.index import BankIndex
    from adapath.datasets.biostrat import query_from_record, records_query_set, training_queries
    from adapath.engine.synthetic import generate
    from adapath.eval.report import table2, table4, table11, table24, write_report
    from adapath.llm import make_backend
    from adapath.methods.adapath import AdaPath
    from adapath.retrieval.dense import make_encoder

    work = args.out or Path(tempfile.mkdtemp(prefix="bench_real_"))
    records = [json.loads(x) for x in open(args.records)]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(records))
    cut = int(len(records) * args.train_share)
    train = [records[i] for i in sorted(order[:cut])]
    test = [records[i] for i in sorted(order[cut:])]
    if args.limit:
        test = test[: args.limit]
    clock = time.perf_counter()
    graph = generate(scale=args.scale, seed=0, evidence=[args.records])
    graph.save(work / "kg", overwrite=True)
    build_bank(graph, training_queries(train), work / "bank", BankConfig(), graph_dir=work / "kg")
    bank_seconds = time.perf_counter() - clock
    encoder = make_encoder(args.encoder)
    pipeline = AdaPath(graph, BankIndex(work / "bank", encoder), encoder, make_backend(args.llm),
                       graph_dir=work / "kg")
    results = []
    clock = time.perf_counter()
    for level in ("explicit", "implicit", "bare"):
        queries = [query_from_record(r, level) for r in test]
        for lo in range(0, len(queries), 16):
            results += pipeline.answer(queries[lo:lo + 16])
    answer_seconds = time.perf_counter() - clock
    with open(work / "answers.jsonl", "w") as handle:
        handle.write("".join(json.dumps(r.to_json()) + "\n" for r in results))
    metrics = write_report(results, records_query_set(test), graph, work / "report")
    print(f"real BioStrat-QA records: {len(train)} in the bank, {len(test)} test x 3 levels; graph scale "
          f"{args.scale} ({graph.num_nodes:,} nodes); encoder {encoder.name}; LLM {args.llm}")
    print(f"bank {bank_seconds:.1f} s; answering {1000 * answer_seconds / len(results):.1f} ms/query; "
          f"report in {work / 'report'}\n")
    print(table2(metrics, "strict"))
    print(table2(metrics, "lenient"))
    print(table4(metrics))
    print(table11(metrics))
    print(table24(metrics))


if __name__ == "__main__":
    main()
