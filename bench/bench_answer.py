"""AdaPath inference throughput and cost.

On one generated graph: compute the node embeddings once (what ``adapath kg embed`` does,
timed apart as ``node_embedding_seconds``; reused from the work folder on a rerun), build a
Path-Bank over training questions, then answer test questions (a) with ``--llm none``
(``queries_per_s``, embeddings ready, batches of ``--batch`` as ``answer`` does), with the
time per query split by stage, (b) timing Path-Bank matching alone (Eq. 6 retrieval,
pooling, filtering, realizability; question embedding included), (c) with the scripted
backend, counting LLM calls and prompt tokens per query (tokens estimated from words).

    python bench/bench_answer.py --scale 1.0 --train 300 --test 200 [--encoder minilm|hashing]
        [--workdir DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path


class StageClock:
    """Wall seconds spent inside wrapped callables, by stage (inclusive of nested stages)."""

    def __init__(self):
        self.seconds = defaultdict(float)

    def wrap(self, owner, attribute: str, stage: str) -> None:
        inner = getattr(owner, attribute)

        def timed(*args, **kwargs):
            clock = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[stage] += time.perf_counter() - clock

        setattr(owner, attribute, timed)


def embed_once(graph, kg: Path, spec: str, work: Path) -> tuple[float, str]:
    """Node embeddings as ``kg embed`` computes them (CPU, its default backend); the seconds
    are kept beside the work folder so a rerun reports the one-time cost it measured."""
    from adapath.retrieval.cache_dir import GraphCache
    from adapath.retrieval.dense import make_encoder, resolve_backend
    from adapath.retrieval.node_store import (
        DEFAULT_DTYPE,
        HEADER,
        NodeStore,
        embed_all,
        expected_header,
        store_name,
    )

    encoder = make_encoder(spec, backend=resolve_backend("auto", "cpu"), batch_size=128)
    record = work / f"node-embedding-{kg.name}-{encoder.name}.json"
    seconds = json.loads(record.read_text())["seconds"] if record.is_file() else 0.0
    name = store_name(encoder.name)
    places = GraphCache(kg, graph.checksum())
    path = places.find(name, HEADER) or places.writable(name)
    expect = expected_header(graph, encoder.name)
    if not ((path / HEADER).is_file() and NodeStore.open(path, expect).complete):
        clock = time.perf_counter()
        last = [clock]

        def note(progress):
            if time.perf_counter() - last[0] > 30:
                last[0] = time.perf_counter()
                print(f"  node embeddings: {progress.done:,}/{progress.total:,}, {progress.rate:.1f} texts/s",
                      flush=True)
                record.write_text(json.dumps({"seconds": seconds + last[0] - clock}))

        embed_all(graph, encoder, path, expect, DEFAULT_DTYPE, chunk=1024, on_progress=note)
        seconds += time.perf_counter() - clock
        record.write_text(json.dumps({"seconds": seconds}))
    return seconds, f"{getattr(encoder, 'backend', 'numpy')}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="Graph scale (1.0 = PrimeKG's size).")
    parser.add_argument("--train", type=int, default=300, help="Generated training questions in the bank.")
    parser.add_argument("--test", type=int, default=200, help="Generated test questions answered.")
    parser.add_argument("--encoder", default="minilm", help="minilm or hashing (or a sentence-transformers path).")
    parser.add_argument("--batch", type=int, default=16, help="Queries per answer batch, as `answer --batch`.")
    parser.add_argument("--workdir", type=Path, default=None, help="Keep graph, store and bank here between runs.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the measures as JSON here.")
    args = parser.parse_args()

    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.index import BankIndex
    from adapath.datasets.biostrat import query_from_record, training_queries
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine import traverse
    from adapath.engine.graph import KnowledgeGraph
    from adapath.llm import ScriptedBackend
    from adapath.methods import walk_scorer
    from adapath.methods.base import MethodContext
    from adapath.methods.registry import get_method
    from adapath.retrieval.dense import make_encoder
    from adapath.sources.synthetic import generate

    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench_answer_"))
    work.mkdir(parents=True, exist_ok=True)
    kg = work / f"kg-{args.scale}"
    if not kg.exists():
        generate(scale=args.scale, seed=0).save(kg)
    graph = KnowledgeGraph.load(kg, mmap=False)
    embedding_seconds, embed_backend = embed_once(graph, kg, args.encoder, work)
    generator = QueryGenerator(graph)
    train = generator.generate(args.train, seed=1)
    test = generator.generate(args.test, seed=2, first_id=10**6)
    bank_dir = work / f"bank-{args.scale}-{args.train}"
    if not (bank_dir / "paths.parquet").exists():
        build_bank(graph, training_queries(train), bank_dir, BankConfig(), graph_dir=kg)
    encoder = make_encoder(args.encoder)  # as `answer` makes it
    bank = BankIndex(bank_dir, encoder)
    queries = [query_from_record(r, "explicit") for r in test]

    # the method as `adapath answer --method adapath` builds it (its defaults: with --llm none the
    # walk scorer and level-matched retrieval; with an LLM the paper's beam)
    spec = get_method("adapath")

    def build(llm):
        return spec.make(MethodContext(graph, kg, llm, args.encoder, bank_dir, None, spec.resolve_params({})))

    # (b) Path-Bank matching alone, embedding included
    pipeline = build(None)
    assert pipeline.nodes.precomputed, "the node-embedding store should be complete here"
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

    # (a) end to end without an LLM (a warm-up batch first: kernel compile, page cache)
    pipeline.answer(queries[:2])
    clock = time.perf_counter()
    for lo in range(0, len(queries), args.batch):
        pipeline.answer(queries[lo:lo + args.batch])
    none_qps = len(queries) / (time.perf_counter() - clock)

    # the same answers again, with a clock around each stage
    stages = StageClock()
    stages.wrap(pipeline.encoder, "encode", "question embedding")
    stages.wrap(pipeline.index_for("explicit"), "retrieve", "Path-Bank retrieval (Eq. 6)")
    stages.wrap(pipeline, "_realizable", "meta-path realizability")
    stages.wrap(pipeline.text.nodes, "scores", "BM25 prefilter scores")
    stages.wrap(traverse.TraversalState, "groups", "traversal: candidate groups")
    stages.wrap(traverse.TraversalState, "advance", "traversal: advance")
    stages.wrap(pipeline, "_narrow", "narrowing (cosine top-M)")
    stages.wrap(pipeline.nodes, "get", "node-vector lookups")
    stages.wrap(pipeline, "_answers", "answer ranking")
    stages.wrap(pipeline.walks, "score", "walk scorer (all)")
    stages.wrap(walk_scorer, "propagate", "walk scorer: propagation")
    stages.wrap(walk_scorer, "heaviest_walks_through", "walk scorer: heaviest walks")
    stages.wrap(walk_scorer, "through", "walk scorer: explored flow")
    clock = time.perf_counter()
    for lo in range(0, len(queries), args.batch):
        pipeline.answer(queries[lo:lo + args.batch])
    total = time.perf_counter() - clock
    stage_ms = {k: 1000 * v / len(queries) for k, v in stages.seconds.items()}
    stage_ms["total"] = 1000 * total / len(queries)

    # (c) the scripted backend: calls and prompt tokens per query
    backend = ScriptedBackend(rules={"Reply with JSON": '{"answer_type": "drug", "hops": 2}',
                                     "numbers in braces": "{1, 2, 3}"}, default="{answer}")
    scripted = build(backend)
    results = []
    for lo in range(0, len(queries), args.batch):
        results += scripted.answer(queries[lo:lo + args.batch])
    calls = sum(r.usage["calls"] for r in results) / len(results)
    tokens = sum(r.usage["prompt_tokens"] for r in results) / len(results)

    print(f"bench_answer: scale {args.scale}, {graph.num_nodes:,} nodes; bank of {args.train} training "
          f"questions; {len(queries)} test questions; encoder {encoder.name}")
    print(f"{'measure':<46}{'ours':>12}{'paper':>12}{'target':>10}")
    print(f"{'node embedding seconds (once, kg embed, ' + embed_backend + ')':<46}{embedding_seconds:>12.1f}"
          f"{'':>12}{'':>10}")
    print(f"{'queries/s with --llm none (embeddings ready)':<46}{none_qps:>12.2f}{'':>12}{'>= 20':>10}")
    print(f"{'Path-Bank matching ms/query (with embedding)':<46}{matching_ms:>12.2f}{'0.1':>12}{'':>10}")
    print(f"{'LLM calls per query (scripted)':<46}{calls:>12.2f}{'11.2':>12}{'<= 4':>10}")
    print(f"{'prompt tokens per query (scripted)':<46}{tokens:>12.0f}{'7,036':>12}{'<= 3,000':>10}")
    print(f"\n{'stage of answer --llm none (inclusive)':<46}{'ms/query':>12}")
    for stage, ms in sorted(stage_ms.items(), key=lambda kv: -kv[1]):
        print(f"{stage:<46}{ms:>12.2f}")
    if args.json:
        args.json.write_text(json.dumps({
            "scale": args.scale, "encoder": encoder.name, "node_embedding_seconds": embedding_seconds,
            "node_embedding_backend": embed_backend, "queries_per_s": none_qps,
            "matching_ms_per_query": matching_ms, "llm_calls_per_query": calls,
            "prompt_tokens_per_query": tokens, "stage_ms_per_query": stage_ms,
            "test_questions": len(queries), "train_questions": args.train}, indent=2))


if __name__ == "__main__":
    main()
