"""Reports on a hand-built graph and hand-written records: every number worked out by hand.

The graph (external ids 100 + index):

    Aspirin(100, drug) -target- PTGS2(101) -associated with- Asthma(102)
    Aspirin -indication- Asthma;  Aspirin -target- ALB(103) -associated with- Gout(104)
    Aspirin -contraindication- Gout;  Ibuprofen(105) -target- PTGS2;  Ibuprofen -indication- Lupus(106)
    PTGS2 -associated with- Lupus
"""

import json

import numpy as np
import pytest

from adapath.contract import Result
from adapath.datasets.biostrat import records_query_set
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError
from adapath.eval.report import build_report, render, write_reports
from tests.conftest import run_cli

TYPES = ("drug", "gene/protein", "disease")
RELS = ("target", "associated with", "indication", "contraindication")
NAMES = ["Aspirin", "PTGS2", "Asthma", "ALB", "Gout", "Ibuprofen", "Lupus"]
NODE_TYPES = [0, 1, 2, 1, 2, 0, 2]
EDGES = [(0, 0, 1), (1, 1, 2), (0, 2, 2), (0, 0, 3), (3, 1, 4), (0, 3, 4), (5, 0, 1), (5, 2, 6), (1, 1, 6)]

TWO_HOP = "drug -[target]- gene/protein -[associated with]- disease"
INDICATION = "drug -[indication]- disease"
CONTRA = "drug -[contraindication]- disease"
TARGET = "drug -[target]- gene/protein"


@pytest.fixture(scope="module")
def graph():
    head, rel, tail = (np.array(x) for x in zip(*EDGES))
    return KnowledgeGraph.from_edges(
        head, tail, rel, node_type=np.array(NODE_TYPES, dtype=np.int8), node_id=np.arange(100, 107),
        names=NAMES, descriptions=[f"about {n}" for n in NAMES], type_names=TYPES, relation_names=RELS,
        relation_descriptions=RELS)


def record(data_id, path, relations, valid=None):
    nodes = [{"id": 100 + i, "name": NAMES[i], "type": TYPES[NODE_TYPES[i]], "description": ""} for i in range(7)]
    ids = [100 + i for i in path]
    valid = valid or [ids[-1]]
    return {"template_id": f"{len(relations)}h-x", "num_hops": len(relations), "path_node_ids": ids,
            "triplets": [[NAMES[a], r, NAMES[b]] for a, r, b in zip(path, relations, path[1:])],
            "topic_entities": {str(ids[0]): NAMES[path[0]]},
            "answer_entity": {"id": ids[-1], "name": NAMES[path[-1]], "type": TYPES[NODE_TYPES[path[-1]]]},
            "node_metadata": nodes, "explicit_query": f"q{data_id} explicit", "implicit_query": f"q{data_id} implicit",
            "bare_query": f"q{data_id} bare", "valid_answer_ids": valid,
            "valid_answer_names": [NAMES[v - 100] for v in valid], "data_id": data_id}


RECORDS = [record(1, [0, 1, 2], ["target", "associated with"]),  # Aspirin -> PTGS2 -> Asthma
           record(2, [5, 6], ["indication"]),  # Ibuprofen -> Lupus
           record(3, [0, 4], ["contraindication"])]  # Aspirin -> Gout


def mp(*names):
    return [{"metapath": n, "score": 1.0 / (i + 1)} for i, n in enumerate(names)]


def alpha_lines():
    """A path-finding method. Ranks of the gold meta-path: 3 (ranked list), 1 (surviving list,
    no ranked one), none; implicit: 1."""
    return [
        {"id": "1", "level": "explicit", "method": "adapath", "answer": "asthma",
         "paths": [[[100, "target", 101], [101, "associated with", 102]]],
         "explored": {"1": [101, 103], "2": [102]}, "explored_edges": {"2": [[101, "associated with", 106]]},
         "metapaths": mp(TWO_HOP), "ranked_metapaths": mp(INDICATION, CONTRA, TWO_HOP, TARGET),
         "answer_source": "braces", "usage": {"calls": 3, "prompt_tokens": 300, "completion_tokens": 30, "seconds": 0.3}},
        {"id": "2", "level": "explicit", "method": "adapath", "answer": "Lupus erythematosus",
         "paths": [[[105, "target", 101]]], "explored": {"1": [101, 106]},
         "explored_edges": {"1": [[105, "indication", 106]]}, "metapaths": mp(INDICATION),
         "answer_source": "mentioned", "usage": {"calls": 3, "prompt_tokens": 200, "completion_tokens": 20, "seconds": 0.2}},
        {"id": "3", "level": "explicit", "method": "adapath", "answer": "",
         "paths": [[[104, "indication", 100]]], "explored": {"1": [103]},
         "metapaths": [], "ranked_metapaths": mp(TWO_HOP, INDICATION),
         "answer_source": "none", "usage": {"calls": 3, "prompt_tokens": 100, "completion_tokens": 10, "seconds": 0.1}},
        {"id": "1", "level": "implicit", "method": "adapath", "answer": "Gout",
         "paths": [[[100, "target", 103], [103, "associated with", 104]]], "explored": {"1": [103], "2": [104]},
         "metapaths": mp(TWO_HOP), "ranked_metapaths": mp(TWO_HOP, INDICATION),
         "answer_source": "braces", "usage": {"calls": 3, "prompt_tokens": 400, "completion_tokens": 40, "seconds": 0.4}},
    ]


def beta_lines():
    """An LLM-only method: every explicit answer right, no paths."""
    return [{"id": str(i), "level": "explicit", "method": "beta-llm", "answer": a, "answer_source": "braces",
             "usage": {"calls": 1, "prompt_tokens": 50, "completion_tokens": 5, "seconds": 0.05}}
            for i, a in ((1, "Asthma"), (2, "lupus"), (3, "GOUT"))]


def results(lines):
    return [Result.from_json(x) for x in lines]


def test_metrics_worked_by_hand(graph):
    report = build_report({"alpha": results(alpha_lines()), "beta": results(beta_lines())},
                          records_query_set(RECORDS), graph, resamples=500)
    a, b = report["methods"]["alpha"], report["methods"]["beta"]
    # meta-paths, explicit: ranks 3, 1, none
    block = a["metapath_by_level"]["explicit"]["all"]
    assert (block["r1"], block["r3"], block["r5"]) == (33.33, 66.67, 66.67)
    assert block["mrr"] == pytest.approx((1 / 3 + 1 + 0) / 3, abs=1e-4)
    # traversability, explicit: record 1's alternatives indication (reaches Asthma), contraindication
    # (Gout only), target (genes): T F F; record 3's (gold contraindication not listed): the 2-hop
    # walk reaches Gout through ALB, indication reaches Asthma only: T F  -> 2 of 5
    assert (block["traversability"], block["traversability_n"]) == (40.0, 5)
    # per hop: 1-hop records 2 and 3 (ranks 1, none), 2-hop record 1 (rank 3)
    assert a["metapath_by_level"]["explicit"]["1"]["r1"] == 50.0
    assert a["metapath_by_level"]["explicit"]["2"]["r3"] == 100.0 and a["metapath_by_level"]["explicit"]["2"]["r1"] == 0.0
    # implicit apart: rank 1, its one alternative (indication from Aspirin) reaches Asthma
    assert a["metapath_by_level"]["implicit"]["all"]["r1"] == 100.0
    assert a["metapath_by_level"]["implicit"]["all"]["traversability"] == 100.0
    # over both levels: ranks 3, 1, none, 1
    assert (a["metapath_r1"], a["metapath_r3"], a["metapath_r5"]) == (50.0, 75.0, 75.0)
    assert a["metapath_mrr"] == pytest.approx((1 / 3 + 1 + 0 + 1) / 4, abs=1e-4)
    assert a["traversability"] == 50.0  # 3 of 6
    assert a["metapath_list"] == {"ranked_metapaths": 3, "metapaths": 1}
    assert b["metapath_by_level"] == {} and b["metapath_r1"] is None  # lists no meta-path at all
    # triplet recall, explicit: record 1 both steps (depth 2's extra explored edge changes nothing);
    # record 2 through its explored edge (its path has the wrong relation); record 3's path is the
    # gold edge walked backwards but with relation indication, not contraindication -> 3 of 4
    assert a["recall_by_level"]["explicit"] == {"value": 75.0, "n": 3}
    assert a["recall_by_level_depth"]["explicit"] == {"1": 66.67, "2": 100.0}
    assert a["recall_by_level_hop"]["explicit"] == {"1": {"value": 50.0, "n": 2}, "2": {"value": 100.0, "n": 1}}
    # implicit: PTGS2 is the gold node at depth 1, the path went through ALB -> 0 of 2
    assert a["recall_by_level"]["implicit"] == {"value": 0.0, "n": 1}
    # hit rate, explicit: 101 in {101,103}, 102 in {102}, 106 in {101,106}, 104 not in {103}
    assert a["hit_rate_by_level_depth"]["explicit"] == {"1": 66.67, "2": 100.0}
    # exact match: alpha explicit 1-hop 0/2 strict, 1/2 lenient ("lupus" inside the prediction)
    cell = a["cells"]["explicit"]
    assert (cell["hop1_strict"], cell["hop1_lenient"], cell["hop1_n"]) == (0.0, 50.0, 2)
    assert (cell["hop2_strict"], cell["avg_strict"], cell["avg_lenient"]) == (100.0, 50.0, 75.0)
    assert (cell["overall_strict"], cell["overall_n"]) == (33.33, 3)
    assert a["overall"]["n"] == 4 and a["overall"]["strict"] == 25.0  # with the implicit miss
    # the interval: the records' strict scores 1, 0, 0 resampled 500 times from seed 42
    draw = np.random.default_rng(42).integers(0, 3, size=(500, 3))
    means = np.array([1.0, 0.0, 0.0])[draw].mean(axis=1)
    assert cell["overall_strict_ci"] == [round(100 * np.percentile(means, 2.5), 2),
                                         round(100 * np.percentile(means, 97.5), 2)]
    assert b["cells"]["explicit"]["overall_strict"] == 100.0
    # efficiency: per-query means of usage
    assert a["usage"] == {"n": 4, "calls": 3.0, "prompt_tokens": 250.0, "completion_tokens": 25.0, "seconds": 0.25}
    assert a["answer_sources"] == {"braces": 2, "mentioned": 1, "none": 1}
    # alpha is path-finding (registered adapath); beta is unknown and has no paths
    assert report["path_finding"] == ["alpha"]
    assert report["gold_set"].startswith("gold set: answer names from the records only")


def test_tables_bold_the_best_and_show_lenient_only_where_it_differs(graph):
    report = build_report({"alpha": results(alpha_lines()), "beta": results(beta_lines())},
                          records_query_set(RECORDS), graph, resamples=200)
    docs = render(report)
    table2 = docs["table2.md"]
    lines = table2.splitlines()
    header = next(x for x in lines if x.startswith("| Method |"))
    assert header.startswith("| Method | Explicit 1-hop | Explicit 2-hop | Explicit Avg | Implicit 2-hop |")
    assert header.endswith("| Overall |")
    alpha = next(x for x in lines if x.startswith("| alpha |"))
    beta = next(x for x in lines if x.startswith("| beta |"))
    # explicit 1-hop: beta 100 is best; 2-hop: a tie, both bold; implicit: alpha alone, no bold
    assert alpha.startswith("| alpha | 0.00 | **100.00** | 50.00 | 0.00 |")
    assert beta.startswith("| beta | **100.00** | **100.00** | **100.00** | - |")
    detail = lines[lines.index(alpha) + 1]
    assert detail.startswith("| (95% CI, n) |") and "n=2 |" in detail and "n=3 |" not in detail.split("|")[2]
    # lenient differs for alpha only: its own table, beta named as equal
    lenient = table2[table2.index("lenient"):]
    assert "| alpha | 50.00 |" in lenient and "| beta |" not in lenient
    assert "Lenient EM equals strict EM in every cell for: beta." in table2
    # Table 4 lists the path-finding method only; Table 11 the method listing meta-paths
    assert "| alpha | **" not in docs["table4.md"] and "| beta" not in docs["table4.md"]
    assert "| explicit | all | alpha | 3 | 33.33 | 66.67 | 66.67 | 0.4444 | 40.00 n=5 |" in docs["table11.md"]
    assert "alpha: lists read: ranked_metapaths for 3, metapaths for 1" in docs["table11.md"]
    # efficiency: the lower cost is bold
    assert "| beta | 3 | **1.00** | **50.0** | **5.0** | **0.050** |" in docs["efficiency.md"]
    assert "| alpha | 4 | 3.00 | 250.0 | 25.0 | 0.250 |" in docs["efficiency.md"]
    assert "| Method | braces | mentioned | stated | best-path | extractive | none |" in docs["answer_sources.md"]
    assert "| alpha | 2 | 1 | 0 | 0 | 0 | 1 |" in docs["answer_sources.md"]
    assert "table3.md" not in docs  # no STaRK-Prime or MedDDx questions


def test_a_table_of_one_method_bolds_nothing_and_says_nothing_of_bold(graph):
    report = build_report({"alpha": results(alpha_lines())}, records_query_set(RECORDS), graph, resamples=50)
    docs = render(report)
    for name in ("table2.md", "table4.md", "efficiency.md"):
        assert "**" not in docs[name] and "bold" not in docs[name].lower(), name
    assert "Cells: EM %; below each method its 95% bootstrap interval and n (questions)." in docs["table2.md"]
    # two methods: the legend names bold again (and the best cells are bold, as above)
    both = render(build_report({"alpha": results(alpha_lines()), "beta": results(beta_lines())},
                               records_query_set(RECORDS), graph, resamples=50))
    assert "Cells: EM %, best per column in bold;" in both["table2.md"]
    assert "bold" not in both["table4.md"]  # Table 4 holds alpha alone (beta finds no paths)
    assert "Lowest per column in bold." in both["efficiency.md"]


def test_report_folder_and_plots(graph, tmp_path):
    import matplotlib.image as mpimg

    out = tmp_path / "rep"
    report = write_reports({"alpha": results(alpha_lines()), "beta": results(beta_lines())},
                           records_query_set(RECORDS), graph, out, ablations={"w/o x": results(beta_lines())},
                           resamples=100)
    names = sorted(p.name for p in out.iterdir())
    assert names == ["ablations.md", "ablations.png", "answer_sources.md", "efficiency.md", "hit_rate_by_depth.png",
                     "metrics.json", "recall_by_depth.png", "report.md", "table11.md", "table2.md", "table4.md"]
    for png in ("ablations.png", "hit_rate_by_depth.png", "recall_by_depth.png"):
        height, width = mpimg.imread(out / png).shape[:2]
        assert width > 400 and height > 300
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["methods"]["alpha"]["metapath_r1"] == report["methods"]["alpha"]["metapath_r1"] == 50.0
    assert list(saved["ablations"]) == ["alpha", "w/o x"]
    ablations = (out / "ablations.md").read_text()
    assert "| alpha | 33.33 | 0.00 | 25.00 |" in ablations  # explicit, implicit, overall
    assert "| w/o x | **100.00** | - | **100.00** |" in ablations
    assert "gold set: answer names from the records only" in (out / "report.md").read_text()


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_cli_names_pools_and_compares(graph, tmp_path, capsys):
    kg = tmp_path / "kg"
    graph.save(kg)
    queries = write_jsonl(tmp_path / "q.jsonl", RECORDS)
    spec = f"biostrat:{queries}"
    alpha = write_jsonl(tmp_path / "alpha.jsonl", alpha_lines())
    (tmp_path / "alpha.jsonl.settings.json").write_text(json.dumps(
        {"method": "adapath", "params": {"metapath": False, "beam": 3}, "queries": spec}))
    beta = write_jsonl(tmp_path / "beta.jsonl", beta_lines())
    code, out, err = run_cli(["eval", "--results", alpha, "--results", beta, "--queries", spec, "--kg", kg,
                              "--out", tmp_path / "rep", "--resamples", "50"], capsys)
    assert code == 0, err
    # bare files: named by their method field, with the non-default parameters the settings record
    methods = json.loads((tmp_path / "rep" / "metrics.json").read_text())["methods"]
    assert list(methods) == ["adapath (metapath=False)", "beta-llm"]
    assert "gold set: answer names from the records only" in err
    assert "adapath (metapath=False): 4 results; answers read from: braces 2, mentioned 1, none 1" in err
    assert "Table 2: exact match (strict)" in out
    # two bare files with the same method name take their file stems
    other = write_jsonl(tmp_path / "other.jsonl", beta_lines())
    code, _, err = run_cli(["eval", "--results", beta, "--results", other, "--queries", spec,
                            "--out", tmp_path / "rep2", "--resamples", "10"], capsys)
    assert code == 0, err
    assert list(json.loads((tmp_path / "rep2" / "metrics.json").read_text())["methods"]) == ["beta", "other"]
    # the same file twice under one name: answered twice
    code, _, err = run_cli(["eval", "--results", f"x={beta}", "--results", f"x={beta}", "--queries", spec,
                            "--out", tmp_path / "rep3"], capsys)
    assert code == 2 and "answered twice" in err and not (tmp_path / "rep3").exists()
    # compare: per level x hop, lenient too since alpha's lenient differs
    code, out, err = run_cli(["eval", "compare", f"A={alpha}", f"B={beta}", "--queries", spec, "--kg", kg,
                              "--resamples", "300"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert any(x.startswith("| explicit | 1-hop | 2 | 0.00 | 100.00 | -100.00 [-100.00, -100.00] | 50.00 | 100.00 |")
               for x in lines), out
    assert any(x.startswith("| explicit | 2-hop | 1 | 100.00 | 100.00 | +0.00 [+0.00, +0.00] |") for x in lines)
    row = next(x for x in lines if x.startswith("| explicit | all | 3 |"))
    diffs = np.array([0.0, -1.0, -1.0])  # A - B per explicit record, strict
    means = diffs[np.random.default_rng(42).integers(0, 3, size=(300, 3))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5]) * 100
    assert f"| -66.67 [{low:+.2f}, {high:+.2f}] |" in row
    assert not any(x.startswith("| implicit") for x in lines)  # beta has no implicit answers


def stark_folder(tmp_path):
    folder = tmp_path / "stark"
    folder.mkdir()
    (folder / "stark_qa.csv").write_text('id,query,answer_ids\n0,which disease?,[102]\n1,which gene?,"[101, 103]"\n'
                                         '2,unused,[100]\n')
    (folder / "test.index").write_text("0\n1\n")
    (folder / "stark_qa_human_generated_eval.csv").write_text("id,query,answer_ids\n0,what treats lupus?,[105]\n"
                                                              "1,what does aspirin treat?,[102]\n")
    return folder


def test_table3_pools_benchmarks_whose_ids_collide(graph, tmp_path, capsys):
    kg = tmp_path / "kg"
    graph.save(kg)
    folder = stark_folder(tmp_path)
    medddx = write_jsonl(tmp_path / "m.jsonl", [
        {"id": f"m{i}", "question": f"case {i}", "options": ["Asthma", "Gout", "Lupus", "Acne"], "answer": a,
         "tier": t} for i, (a, t) in enumerate([("A", "Basic"), ("B", "Basic"), ("C", "Intermediate"),
                                                 ("D", "Expert")])])
    syn_spec, human_spec, med_spec = f"stark:{folder}#test", f"stark:{folder}#human", f"medddx:{medddx}"
    syn = write_jsonl(tmp_path / "syn.jsonl", [{"id": "0", "level": "question", "answer": "asthma"},
                                               {"id": "1", "level": "question", "answer": "TP53"}])
    (tmp_path / "syn.jsonl.settings.json").write_text(json.dumps({"queries": syn_spec}))
    human = write_jsonl(tmp_path / "human.jsonl", [{"id": "0", "level": "question", "answer": "Ibuprofen"},
                                                   {"id": "1", "level": "question", "answer": "Asthma"}])
    (tmp_path / "human.jsonl.settings.json").write_text(json.dumps({"queries": human_spec}))
    med = write_jsonl(tmp_path / "med.jsonl", [{"id": "m0", "level": "question", "answer": "A"},
                                               {"id": "m1", "level": "question", "answer": "A"},
                                               {"id": "m2", "level": "question", "answer": "(C) Lupus"},
                                               {"id": "m3", "level": "question", "answer": "Acne"}])
    args = ["eval", "--results", f"llm={syn}", "--results", f"llm={human}", "--results", f"llm={med}",
            "--queries", syn_spec, "--queries", human_spec, "--queries", med_spec, "--kg", kg,
            "--out", tmp_path / "rep", "--resamples", "50"]
    code, out, err = run_cli(args, capsys)
    assert code == 0, err
    groups = json.loads((tmp_path / "rep" / "metrics.json").read_text())["methods"]["llm"]["groups"]
    # synthesized: 1 of 2 (TP53 is not PTGS2 or ALB); human: 2 of 2; MedDDx: Basic 1 of 2, Intermediate
    # and Expert right, all 3 of 4
    assert {k: (v["strict"], v["n"]) for k, v in groups.items()} == {
        "STaRK-Prime synthesized": (50.0, 2), "STaRK-Prime human": (100.0, 2), "MedDDx Basic": (50.0, 2),
        "MedDDx Intermediate": (100.0, 1), "MedDDx Expert": (100.0, 1), "MedDDx All": (75.0, 4)}
    table3 = (tmp_path / "rep" / "table3.md").read_text()
    assert "| llm | 50.00 | 100.00 | 50.00 | 100.00 | 100.00 | 75.00 |" in table3
    assert "(95% CI, n) | 0.0-100.0, n=2 |" in table3
    assert "table2.md" not in {p.name for p in (tmp_path / "rep").iterdir()}
    assert "1 of 2 questions" not in err and "records and the graph (--kg): 4 of 4 questions" in err
    # without the settings files the STaRK-Prime files could be either set: a clear error
    (tmp_path / "syn.jsonl.settings.json").unlink()
    code, _, err = run_cli(args[:-4] + ["--out", tmp_path / "rep2"], capsys)
    assert code == 2 and "are in stark:" in err and "settings file" in err
    # without --kg the STaRK-Prime answers have no names
    code, _, err = run_cli(["eval", "--results", human, "--queries", human_spec, "--out", tmp_path / "rep3"], capsys)
    assert code == 2 and "pass --kg" in err


def test_bad_inputs_are_one_line_errors(graph, tmp_path, capsys):
    queries = write_jsonl(tmp_path / "q.jsonl", RECORDS)
    stray = write_jsonl(tmp_path / "stray.jsonl", [{"id": "99", "level": "explicit", "answer": "x"}])
    code, _, err = run_cli(["eval", "--results", stray, "--queries", f"biostrat:{queries}", "--out",
                            tmp_path / "r"], capsys)
    assert code == 2 and "result '99' has no question in biostrat:" in err and "Traceback" not in err
    code, _, err = run_cli(["eval", "--results", tmp_path / "missing.jsonl", "--queries", f"biostrat:{queries}",
                            "--out", tmp_path / "r"], capsys)
    assert code == 2 and "no such result file" in err
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "1", "level": "explicit", "answer": "x",
                                                "explored_edges": {"1": [[1, 2]]}}])
    with pytest.raises(ValueError, match="explored_edges"):  # checked when read
        build_report({"bad": results(json.loads(x) for x in bad.read_text().splitlines())},
                     records_query_set(RECORDS), None)
    code, _, err = run_cli(["eval", "--results", stray], capsys)
    assert code == 2 and "needs --results, --queries and --out" in err


def test_context_relevance_is_judged_per_level_for_path_finding_methods(graph):
    from adapath.llm import ScriptedBackend

    # explicit: q1 -> 2, q2 -> 1, q3 -> unparsable three times (left out); implicit: q1 -> 0
    judge = ScriptedBackend({"q1 explicit": "{2}", "q2 explicit": "score {1}", "q3 explicit": "no idea",
                             "q1 implicit": "{0}"})
    report = build_report({"alpha": results(alpha_lines()), "beta": results(beta_lines())},
                          records_query_set(RECORDS), graph, judge=judge, resamples=10)
    assert report["methods"]["alpha"]["context_relevance"] == {
        "explicit": {"value": 75.0, "n": 2, "unparsed": 1}, "implicit": {"value": 0.0, "n": 1, "unparsed": 0}}
    assert "context_relevance" not in report["methods"]["beta"]  # not a path-finding method
    # the judge saw record 1's path as named triplets
    assert any("(Aspirin, target, PTGS2)" in p and "q1 explicit" in p for p in judge.seen)
    assert "| alpha | 75.00 n=3 | 75.00 n=2 | 0.00 n=1 | 0.00 n=1 |" in render(report)["table4.md"]
    with pytest.raises(InputError, match="needs --kg"):
        build_report({"alpha": results(alpha_lines())}, records_query_set(RECORDS), None, judge=judge)


def test_report_md_links_every_plot_written_beside_it(graph, tmp_path):
    """report.md shows each PNG of its folder (a Markdown image whose target is the file),
    and links nothing that is not there: with and without an ablation plot."""
    import re

    for name, ablations in (("with", {"w/o x": results(beta_lines())}), ("without", None)):
        out = tmp_path / name
        write_reports({"alpha": results(alpha_lines()), "beta": results(beta_lines())},
                      records_query_set(RECORDS), graph, out, ablations=ablations, resamples=20)
        text = (out / "report.md").read_text()
        linked = re.findall(r"!\[([^\]]+)\]\(([^)\s]+)\)", text)
        pngs = sorted(p.name for p in out.glob("*.png"))
        assert pngs and sorted(target for _, target in linked) == pngs
        assert all(alt.strip() for alt, _ in linked)
        assert ("ablations.png" in pngs) == (ablations is not None)
