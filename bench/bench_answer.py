"""AdaPath inference throughput and cost.

On one generated graph: build a Path-Bank over training questions, then answer test
questions (a) with ``--llm none`` (queries/s), (b) timing Path-Bank matching alone (Eq. 6
retrieval, pooling, filtering, realizability; embedding included), (c) with the scripted
backend, counting LLM calls and prompt tokens per query (tokens estimated from words).

    python bench/bench_answer.py --scale 1.0 --train 300 --test 50 [--encoder minilm] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--train", type=int, default=300)
    parser.add_argument("--test", type=int, default=50)
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.index import BankIndex
    from adapath.datasets.biostrat import query_from_record, training_queries
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph
    from adapath.engine.synthetic import generate
    from adapath.llm import ScriptedBackend
    from adapath.methods.adapath import AdaPath
    from adapath.retrieval.dense import make_encoder

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_answer_"))
    kg = work / f"kg-{args.scale}"
    if not kg.exists():
        generate(scale=args.scale, seed=0).save(kg)
    graph = KnowledgeGraph.load(kg, mmap=False)
    generator = QueryGenerator(graph)
    train = generator.generate(args.train, seed=1)
    test = generator.generate(args.test, seed=2, first_id=10**6)
    bank_dir = work / f"bank-{args.scale}-{args.train}"
    if not (bank_dir / "paths.parquet").exists():
        build_bank(graph, training_queries(train), bank_dir, BankConfig(), graph_dir=kg)
    encoder = make_encoder(args.encoder)
    bank = BankIndex(bank_dir, encoder)
    queries = [query_from_record(r, "explicit") for r in test]

    # (b) Path-Bank matching alone, embedding included
    pipeline = AdaPath(graph, bank, encoder, None, graph_dir=kg)
    clock = time.perf_counter()
    topics = [int(graph.index_of(q.topic_ids[:1])[0]) for q in queries]
    types = [graph.type_name(t) for t in topics]
    embeddings = encoder.encode([q.text for q in queries])
    retrieved = bank.retrieve(embeddings, [q.text for q in queries], types)
    for j, r in enumerate(retrieved):
        answer_type, hops = bank.vote(r)
        control = {"answer_type": answer_type, "hops": hops}
        [mp for mp in bank.pooled_metapaths(r)
         if pipeline._consistent(mp.metapath, types[j], control) and pipeline._realizable(mp.metapath, topics[j])]
    matching_ms = 1000 * (time.perf_counter() - clock) / len(queries)

    # (a) end to end without an LLM (a warm-up batch first: kernel compile, caches)
    pipeline.answer(queries[:2])
    clock = time.perf_counter()
    for lo in range(0, len(queries), args.batch):
        pipeline.answer(queries[lo:lo + args.batch])
    none_qps = len(queries) / (time.perf_counter() - clock)

    # (c) the scripted backend: calls and prompt tokens per query
    backend = ScriptedBackend(rules={"Reply with JSON": '{"answer_type": "drug", "hops": 2}',
                                     "numbers in braces": "{1, 2, 3}"}, default="{answer}")
    scripted = AdaPath(graph, bank, encoder, backend, graph_dir=kg)
    results = []
    for lo in range(0, len(queries), args.batch):
        results += scripted.answer(queries[lo:lo + args.batch])
    calls = sum(r.usage["calls"] for r in results) / len(results)
    tokens = sum(r.usage["prompt_tokens"] for r in results) / len(results)

    print(f"bench_answer: scale {args.scale}, {graph.num_nodes:,} nodes; bank of {args.train} training "
          f"questions; {len(queries)} test questions; encoder {encoder.name}")
    print(f"{'measure':<44}{'ours':>12}{'paper':>12}{'target':>10}")
    print(f"{'queries/s with --llm none':<44}{none_qps:>12.2f}{'':>12}{'':>10}")
    print(f"{'Path-Bank matching ms/query (with embedding)':<44}{matching_ms:>12.2f}{'0.1':>12}{'':>10}")
    print(f"{'LLM calls per query (scripted)':<44}{calls:>12.2f}{'11.2':>12}{'<= 4':>10}")
    print(f"{'prompt tokens per query (scripted)':<44}{tokens:>12.0f}{'7,036':>12}{'<= 3,000':>10}")
    if args.json:
        args.json.write_text(json.dumps({
            "scale": args.scale, "encoder": encoder.name, "queries_per_s_llm_none": none_qps,
            "matching_ms_per_query": matching_ms, "llm_calls_per_query": calls,
            "prompt_tokens_per_query": tokens}, indent=2))


if __name__ == "__main__":
    main()
