"""AdaPath inference: queries/s with ``--llm none``, ms per stage, Path-Bank matching, LLM calls
and prompt tokens per query; ``--queries biostrat:FILE``: real records per scorer, ``--compare REV``
beside REV's code. Each timed pass follows an untimed answer of two questions (kernels compiled)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

ROOT = Path(__file__).resolve().parents[2]  # the repository
LEVELS = ("explicit", "implicit", "bare")


def embed_once(graph, kg: Path, spec: str, work: Path) -> tuple[float, str]:
    """Node embeddings as ``kg embed`` computes them (CPU); their seconds kept in ``work`` (a rerun
    reports the one-time cost measured)."""
    from adapath.bench.inputs import inputs
    from adapath.retrieval.dense import make_encoder, resolve_backend

    encoder = make_encoder(spec, backend=resolve_backend("auto", "cpu"), batch_size=128)
    record = work / f"node-embedding-{kg.name}-{encoder.name}.json"
    seconds = json.loads(record.read_text())["seconds"] if record.is_file() else 0.0
    built, clock = inputs().built["node store"], time.perf_counter()

    def note(progress):  # the seconds so far kept, in case the run stops
        record.write_text(json.dumps({"seconds": seconds + time.perf_counter() - clock}))

    inputs().node_store(graph, kg, encoder, chunk=1024, on_progress=note)
    if inputs().built["node store"] > built:
        seconds += time.perf_counter() - clock
        record.write_text(json.dumps({"seconds": seconds}))
    return seconds, f"{getattr(encoder, 'backend', 'numpy')}"


def arguments():
    from adapath.bench.inputs import parser  # not at the top: --compare runs REV's code

    return parser(__doc__, {
        "queries": ("generated", "generated or biostrat:FILE (planted as in real-records)"),
        "scorers": ("walk,beam", "with biostrat: the scorers answered (walk, beam)."),
        "compare": (None, "with biostrat: also answer with git revision REV's code",
                    {"metavar": "REV"}),
        "question-backend": ("torch", "with biostrat: the CPU route encoding the questions",
                             {"choices": ("torch", "openvino")}),
        "train": (300, "Generated training questions in the bank."),
        "test": (200, "Generated test questions answered."),
    }, scale=1.0, encoder="minilm", batch=16, limit=0, work=None)


def main(argv: list[str] | None = None) -> None:
    args = arguments().parse_args(argv)
    if args.queries != "generated":
        return main_real(args)

    from adapath.bank.index import BankIndex
    from adapath.bench.inputs import inputs
    from adapath.bench.result import report
    from adapath.datasets.biostrat import query_from_record
    from adapath.llm import ScriptedBackend
    from adapath.retrieval.dense import make_encoder

    graph, kg = inputs().graph(args.scale, 0)
    embedding_seconds, embed_backend = embed_once(graph, kg, args.encoder, kg.parent)
    train = inputs().questions(graph, args.train, seed=1)
    test = inputs().questions(graph, args.test, seed=2, first_id=10**6)
    bank_dir = inputs().bank(graph, kg, train)
    encoder = make_encoder(args.encoder)  # as `answer` makes it
    bank = BankIndex(bank_dir, encoder)
    queries = [query_from_record(r, "explicit") for r in test]

    # the method as `adapath answer --method adapath` builds it (its defaults: with --llm none the
    # walk scorer and level-matched retrieval; with an LLM the paper's beam)
    pipeline = make_pipeline(graph, kg, bank_dir, args.encoder, {})
    assert pipeline.nodes.precomputed, "the node-embedding store should be complete here"
    pipeline.answer(queries[:2])  # untimed warm-up before (b) and (a): kernels compiled, page cache

    # (b) Path-Bank matching alone, embedding included
    clock = time.perf_counter()
    topics = [int(graph.index_of(q.topic_ids[:1])[0]) for q in queries]
    types = [graph.type_name(t) for t in topics]
    embeddings = encoder.encode([q.text for q in queries])
    retrieved = bank.retrieve(embeddings, [q.text for q in queries], types)
    for j, r in enumerate(retrieved):
        answer_type, hops = bank.vote(r)
        control = {"answer_type": answer_type, "hops": hops}
        [mp for mp in bank.pooled_metapaths(r) if pipeline.planner.consistent(mp.metapath, types[j], control)
         and pipeline.planner.realizable(mp.metapath, topics[j])]
    matching_ms = 1000 * (time.perf_counter() - clock) / len(queries)

    # (a) end to end without an LLM (after the warm-up above)
    clock = time.perf_counter()
    answer_all(pipeline, queries, args.batch)
    none_qps = len(queries) / (time.perf_counter() - clock)
    stage_ms = stages_ms(pipeline, queries, args.batch, ["explicit"])

    # (c) the scripted backend: calls and prompt tokens per query
    backend = ScriptedBackend(rules={"Reply with JSON": '{"answer_type": "drug", "hops": 2}',
                                     "numbers in braces": "{1, 2, 3}"}, default="{answer}")
    scripted = make_pipeline(graph, kg, bank_dir, args.encoder, {}, llm=backend)
    results = answer_all(scripted, queries, args.batch)
    calls = sum(r.usage["calls"] for r in results) / len(results)
    tokens = sum(r.usage["prompt_tokens"] for r in results) / len(results)
    report(args, {"scale": args.scale, "encoder": encoder.name, "node_embedding_seconds": embedding_seconds,
                  "node_embedding_backend": embed_backend, "queries_per_s": none_qps,
                  "matching_ms_per_query": matching_ms, "llm_calls_per_query": calls,
                  "prompt_tokens_per_query": tokens, "stage_ms_per_query": stage_ms,
                  "test_questions": len(queries), "train_questions": args.train},
           f"bench answer: scale {args.scale}, {graph.num_nodes:,} nodes (paper: matching 0.1 ms/query, 11.2 calls "
           "and 7,036 tokens per query; targets: >= 20 queries/s, <= 4 calls, <= 3,000 tokens)")


def clock_stages(pipeline, levels) -> dict[str, float]:
    """Wall seconds inside each stage of ``pipeline.answer`` from now on (nested ones included)."""
    from adapath.engine import traverse
    from adapath.methods import walk_scorer

    seconds, planner = defaultdict(float), pipeline.planner

    def wrap(owner, attribute: str, stage: str, afresh: bool = False) -> None:
        if afresh:  # a class's or module's function (for good): from its original, kept once
            setattr(owner, f"_bench_{attribute}", getattr(owner, f"_bench_{attribute}", getattr(owner, attribute)))
        inner = getattr(owner, f"_bench_{attribute}" if afresh else attribute)

        def timed(*args, **kwargs):
            clock = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                seconds[stage] += time.perf_counter() - clock

        setattr(owner, attribute, timed)

    wrap(pipeline.encoder, "encode", "question embedding (all encoder calls)")
    if planner.banks is not None and pipeline.config.type_model:
        wrap(planner.banks.type_model(), "probabilities", "wh-phrase type model (with its encoding)")
    for index in {id(x): x for x in (planner.index_for(level) for level in levels)}.values():
        wrap(index, "retrieve", "Path-Bank retrieval (Eq. 6)")
    wrap(planner, "realizable", "meta-path realizability")
    wrap(pipeline.text.nodes, "scores", "BM25 scores (prefilter / walk)")
    if pipeline.config.scorer == "beam":
        wrap(traverse.TraversalState, "groups", "traversal: candidate groups", afresh=True)
        wrap(traverse.TraversalState, "advance", "traversal: advance", afresh=True)
        wrap(pipeline.explorer, "_narrow", "narrowing (cosine top-M)")
        wrap(pipeline.explorer, "_found", "answer ranking")
    wrap(pipeline.nodes, "get", "node-vector lookups")
    if pipeline.config.scorer == "walk":
        wrap(pipeline.explorer.scorer, "score", "walk scorer (all)")
        for name, stage in (("propagate", "walk scorer: propagation"),
                            ("heaviest_walks_through", "walk scorer: heaviest walks"),
                            ("through", "walk scorer: explored flow")):
            wrap(walk_scorer, name, stage, afresh=True)
    return seconds


def stages_ms(pipeline, queries, batch: int, levels) -> dict[str, float]:
    """ms/query of each stage (and in all) of answering ``queries``, after an untimed warm-up."""
    pipeline.answer(queries[:2])
    stages = clock_stages(pipeline, levels)
    clock = time.perf_counter()
    answer_all(pipeline, queries, batch)
    total = time.perf_counter() - clock
    return {**{k: 1000 * v / len(queries) for k, v in stages.items()}, "total": 1000 * total / len(queries)}


def answer_all(pipeline, queries, batch: int):  # methods.run's, which a --compare revision may lack
    return [r for lo in range(0, len(queries), batch)
            for r in pipeline.answer(queries[lo:lo + batch])]


def timed_answers(make, queries, batch: int) -> tuple[float, list[dict]]:
    """Queries/s of a fresh pipeline after a warm-up; its results, usage seconds dropped."""
    pipeline = make()
    pipeline.answer(queries[:2])  # warm-up: kernel compile, page cache
    clock = time.perf_counter()
    results = answer_all(pipeline, queries, batch)
    rate = len(queries) / (time.perf_counter() - clock)
    out = [r.to_json() for r in results]
    for obj in out:
        obj["usage"].pop("seconds", None)  # differs run to run
    return rate, out


def real_setup(args):
    """bench real-records' graph, bank and node store; the test half's questions, level by level."""
    from types import SimpleNamespace

    from adapath.bench.inputs import evenly_spaced, inputs
    from adapath.bench.real_records import prepare
    from adapath.datasets.biostrat import query_from_record

    kind, _, path = args.queries.partition(":")
    if kind != "biostrat" or not Path(path).is_file():
        raise SystemExit(f"--queries {args.queries!r}: expected biostrat:FILE with FILE a BioStrat-QA JSONL")
    bank_records, test = inputs().split(path, "test")
    test = evenly_spaced(test, args.limit)
    setup = prepare(SimpleNamespace(work=args.work, scale=args.scale, records=Path(path), split="test",
                                    competitors=0), "planted", bank_records, args.encoder)
    queries = [query_from_record(r, level) for level in LEVELS for r in test]
    return setup, queries, len(bank_records), len(test)


def make_pipeline(graph, kg: Path, bank: Path, encoder_spec: str, params: dict, encoder=None, llm=None):
    """The method as ``adapath answer --method adapath [--param ...]`` builds it."""
    from adapath.methods.base import MethodContext
    from adapath.methods.registry import get_method

    spec = get_method("adapath")
    context = MethodContext(graph, kg, llm, encoder_spec, bank, None, spec.resolve_params(params))
    if encoder is not None:
        context._encoder = encoder
    return spec.make(context)


def answer_child(job: Path) -> None:
    """The --compare side: the job answered by the revision's adapath, through only the API every
    revision has (KnowledgeGraph.load, the registry, Result.to_json, methods.base's Query)."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.base import Query

    spec = json.loads(job.read_text())
    graph = KnowledgeGraph.load(Path(spec["kg"]), mmap=False)
    queries = [Query(q["id"], q["level"], q["text"], tuple(q["topic_ids"])) for q in spec["queries"]]
    out = {}
    for scorer in spec["scorers"]:
        rate, results = timed_answers(lambda s=scorer: make_pipeline(graph, Path(spec["kg"]), Path(spec["bank"]),
                                                                      spec["encoder"], {"scorer": s}), queries, spec["batch"])
        out[scorer] = {"queries_per_s": rate, "results": results}
    tmp = job.with_suffix(".tmp")
    tmp.write_text(json.dumps(out))
    os.replace(tmp, job.with_suffix(".out.json"))


def compare_revision(rev: str, kg: Path, bank: Path, queries, scorers, args) -> dict:
    """Answers by git revision ``rev``'s ``adapath`` (extracted to a temporary folder, run in a child)."""
    with tempfile.TemporaryDirectory(prefix="bench_answer_rev_") as tmp:
        tmp = Path(tmp)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "adapath"], capture_output=True)
        if archive.returncode:
            raise SystemExit(f"--compare {rev!r}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        job = tmp / "job.json"
        job.write_text(json.dumps({"kg": str(kg), "bank": str(bank), "encoder": args.encoder, "scorers": scorers,
                                   "batch": args.batch,
                                   "queries": [{"id": q.id, "level": q.level, "text": q.text,
                                                "topic_ids": list(q.topic_ids)} for q in queries]}))
        env = {**os.environ, "PYTHONPATH": str(tmp), "HF_HUB_OFFLINE": "1"}
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", str(job)], env=env, check=True)
        return json.loads(job.with_suffix(".out.json").read_text())


def same(a, b, rel: float) -> bool:
    """Equal, numbers to a relative ``rel`` (0: exactly), containers element by element."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rel) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        return abs(a - b) <= rel * max(abs(a), abs(b))
    return a == b


def identical(ours: list[dict], theirs: list[dict]) -> dict[str, float]:
    """Shares of (id, level) whose answer, paths and explored, result (to 1e-5) and result equal."""
    by_key = {(r["id"], r["level"]): r for r in theirs}
    pairs = [(r, by_key.get((r["id"], r["level"]), {})) for r in ours]
    return {"answer": sum(r["answer"] == t.get("answer") for r, t in pairs) / len(pairs),
            "paths": sum(r["paths"] == t.get("paths") and r["explored"] == t.get("explored")
                         for r, t in pairs) / len(pairs),
            "result": sum(same(r, t, 1e-5) for r, t in pairs) / len(pairs),
            "exact": sum(r == t for r, t in pairs) / len(pairs)}


def main_real(args) -> None:
    from adapath.bench.inputs import names
    from adapath.bench.result import report
    from adapath.retrieval.dense import make_encoder

    scorers = names("--scorers", args.scorers, ("walk", "beam"))
    setup, queries, bank_size, test_size = real_setup(args)
    work, graph, bank, kg = setup.work, setup.graph, setup.bank, setup.graph_dir
    baseline = compare_revision(args.compare, kg, bank, queries, scorers, args) if args.compare else {}
    # as `answer` makes it (torch), or the OpenVINO route; shared by the scorers' pipelines
    encoder = make_encoder(args.encoder, backend=args.question_backend)
    measures = {}

    def fresh(scorer):  # a pass starts with no question remembered, as a new `answer` run
        if hasattr(encoder, "recent"):
            encoder.recent = type(encoder.recent)(encoder.recent.capacity)
        return make_pipeline(graph, kg, bank, args.encoder, {"scorer": scorer}, encoder)

    for scorer in scorers:
        rate, results = timed_answers(lambda s=scorer: fresh(s), queries, args.batch)
        measures[scorer] = {"queries_per_s": rate,
                            "stage_ms_per_query": stages_ms(fresh(scorer), queries, args.batch, LEVELS)}
        if scorer in baseline:
            measures[scorer].update(baseline_queries_per_s=baseline[scorer]["queries_per_s"],
                                    identical=identical(results, baseline[scorer]["results"]))
            (work / f"bench-answer-{scorer}-{args.compare}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in baseline[scorer]["results"]))
        (work / f"bench-answer-{scorer}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    report(args, {"queries": args.queries, "scale": args.scale, "encoder": encoder.name, "questions": len(queries),
                  "compare": args.compare, "batch": args.batch, "question_backend": args.question_backend,
                  "scorers": measures},
           f"bench answer: real BioStrat-QA questions: {bank_size} records in the bank, {test_size} test x "
           f"{len(LEVELS)} levels; {graph.num_nodes:,} nodes; --llm none (identical: shares of answers, of paths "
           "and explored nodes, of results to 1e-5 and exactly, as the --compare revision's)")


if __name__ == "__main__":  # the --compare side: python answer.py --child JOB
    answer_child(Path(sys.argv[2]))
