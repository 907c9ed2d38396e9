"""The HTML viewer: the data it embeds, the page's self-containment, and the page itself in
headless Chromium (names on the drawn paths, filters, side-by-side comparison, no network,
a screenshot). Expected values come from a hand-built world and from counting the inputs
directly (pyarrow for names, collections.Counter for bank counts), never from the viewer.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import struct
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapath.contract import Result
from adapath.datasets.biostrat import records_query_set
from adapath.engine.graph import KnowledgeGraph
from tests.conftest import run_cli

WIDTH, HEIGHT = 1280, 800

# ------------------------------------------------------------------ a hand-built world
TYPES = ("drug", "disease", "gene/protein")
RELS = ("indication", "target", "associated with")
EVIL = "</script><b>Evil</b> & 'quoted' \"drug\""
NAMES = ["Aspirin", "Ibuprofen", EVIL, "Headache", "Fever", "α-synuclein {{SCRIPT}}", "PTGS2",
         "Migraine", "Unused disease"]
NODE_TYPE = [0, 0, 0, 1, 1, 2, 2, 1, 1]
EDGES = [(0, 3, 0), (1, 3, 0), (0, 6, 1), (1, 6, 1), (6, 4, 2), (6, 7, 2), (2, 5, 1), (5, 7, 2),
         (1, 4, 0), (8, 6, 2)]


def ext(i: int) -> int:
    """External id of internal node i (deliberately not equal to i)."""
    return 500 + 7 * i


def meta(i: int) -> dict:
    return {"id": ext(i), "name": NAMES[i], "type": TYPES[NODE_TYPE[i]], "description": ""}


def record(rid, path, rels, answer, valid, template, texts):
    return {
        "template_id": template, "num_hops": len(rels), "path_node_ids": [ext(i) for i in path],
        "triplets": [[NAMES[path[k]], rels[k], NAMES[path[k + 1]]] for k in range(len(rels))],
        "topic_entities": {str(ext(path[0])): NAMES[path[0]]},
        "answer_entity": {"id": ext(answer), "name": NAMES[answer], "type": TYPES[NODE_TYPE[answer]]},
        "node_metadata": [meta(i) for i in path],
        "explicit_query": texts[0], "implicit_query": texts[1], "bare_query": texts[2],
        "valid_answer_ids": [ext(i) for i in valid], "data_id": rid,
    }


RECORDS = [
    record(1, [3, 0], ["indication"], 0, [0, 1], "1h-1",
           ["Which drug is indicated for Headache?", "Which drug treats a pain in the head?",
            "Which drug is related to Headache?"]),
    record(2, [0, 6, 7], ["target", "associated with"], 7, [7, 4], "2h-1",
           ["Aspirin targets PTGS2; which disease is associated with it?",
            "Aspirin targets a gene (PTGS2 family); which disease follows?",
            "Which disease is related to Aspirin?"]),
    record(3, [2, 5, 7], ["target", "associated with"], 7, [7], "2h-2",
           ["The evil drug targets a protein; which disease is associated with it?",
            "The evil drug targets something; which disease?", "Which disease relates to the evil drug?"]),
]


def step(a, rel, b):
    return [ext(a), rel, ext(b)]


# (id, level) -> answer, paths, extra fields; correctness worked out by hand in CORRECT.
ALPHA = [
    {"id": "1", "level": "explicit", "answer": "Aspirin",
     "paths": [[step(3, "indication", 0)], [step(3, "indication", 1)]], "explored": {"1": [ext(0), ext(1)]}},
    {"id": "1", "level": "implicit", "answer": "Ibuprofen",  # a valid answer known only by id
     "paths": [[step(3, "indication", 1)]], "explored": {"1": [ext(1)]}},
    {"id": "2", "level": "explicit", "answer": "Fever",
     "paths": [[step(0, "target", 6), step(6, "associated with", 4)],
               [step(0, "target", 6), step(6, "associated with", 7)]],
     "explored": {"1": [ext(6), ext(1)], "2": [ext(4), ext(7)]}, "prioritized": [ext(6)],
     "metapaths": [{"metapath": "drug -[target]- gene/protein -[associated with]- disease", "score": 2.5}]},
    {"id": "2", "level": "implicit", "answer": "Headache",
     "paths": [[step(0, "indication", 3)]], "explored": {"1": [ext(3)]}, "note": "a field of a new method"},
    {"id": "3", "level": "explicit", "answer": " migraine ",  # case and spaces normalized
     "paths": [[step(2, "target", 5), step(5, "associated with", 7)]], "explored": {"1": [ext(5)], "2": [ext(7)]}},
    {"id": "3", "level": "implicit", "answer": "",
     "paths": [[step(2, "target", 5), step(7, "associated with", 5)]],  # 2nd step given tail-first
     "explored": {"1": [ext(5)]}},
]
BETA = [
    {"id": "1", "level": "explicit", "answer": "Headache", "paths": [[step(3, "indication", 0)]], "explored": {}},
    {"id": "2", "level": "explicit", "answer": "Migraine",
     "paths": [[step(0, "target", 6), step(6, "associated with", 7)]], "explored": {"1": [ext(6)]}},
    {"id": "3", "level": "explicit", "answer": "PTGS2", "paths": [], "explored": {}},
    {"id": "3", "level": "bare", "answer": "Migraine",
     "paths": [[step(2, "target", 5), step(5, "associated with", 7)]], "explored": {}},
]
for line in ALPHA + BETA:
    line.setdefault("raw", "")
    line.setdefault("metapaths", [])
    line["usage"] = {"calls": 1, "prompt_tokens": 120, "completion_tokens": 7, "seconds": 0.25}
CORRECT = {
    "alpha": {("1", "explicit"): True, ("1", "implicit"): True, ("2", "explicit"): True,
              ("2", "implicit"): False, ("3", "explicit"): True, ("3", "implicit"): False},
    "beta": {("1", "explicit"): False, ("2", "explicit"): True, ("3", "explicit"): False,
             ("3", "bare"): True},
}


def as_results(lines) -> list[Result]:
    return [Result.from_json(dict(line)) for line in lines]


def as_items(records=RECORDS) -> list:
    return records_query_set(records).items


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("view")
    head, tail, rel = (np.array(c) for c in zip(*EDGES))
    graph = KnowledgeGraph.from_edges(
        head, tail, rel, node_type=np.array(NODE_TYPE, dtype=np.int8),
        node_id=np.array([ext(i) for i in range(len(NAMES))]), names=NAMES,
        descriptions=[""] * len(NAMES), type_names=TYPES, relation_names=RELS,
        relation_descriptions=RELS)
    graph.save(root / "kg")
    return {
        "root": root, "kg": root / "kg",
        "queries": write_jsonl(root / "queries.jsonl", RECORDS),
        "alpha": write_jsonl(root / "alpha.jsonl", ALPHA),
        "settings": (root / "alpha.jsonl.settings.json").write_text(json.dumps({"method": "alpha", "llm": "none"})),
        "beta": write_jsonl(root / "beta.jsonl", BETA),
    }


def names_from_parquet(kg: Path) -> dict[int, tuple[str, str]]:
    """id -> (name, type) straight from the graph's files (the reference for names)."""
    nodes = pq.read_table(kg / "nodes.parquet").to_pylist()
    return {int(n["node_id"]): (n["name"], n["type"]) for n in nodes}


def embedded_data(html_text: str) -> dict:
    match = re.search(r'<script type="application/json" id="view-data">(.*?)</script>', html_text, re.S)
    return json.loads(match.group(1))


# ------------------------------------------------------------------ data and page, no browser
def test_page_data_against_the_hand_built_world(world, tmp_path, capsys):
    out = tmp_path / "page.html"
    code, _, err = run_cli(["view", "--results", f"alpha={world['alpha']}", "--results", f"beta={world['beta']}",
                            "--queries", f"biostrat:{world['queries']}", "--kg", world["kg"], "--out", out], capsys)
    assert code == 0, err
    data = embedded_data(out.read_text(encoding="utf-8"))
    reference = names_from_parquet(world["kg"])
    # Exactly the nodes the page mentions (all but the unused one), with the graph's names.
    assert set(data["nodes"]) == {str(ext(i)) for i in range(8)}
    for node_id, (name, type_index) in data["nodes"].items():
        assert (name, data["types"][type_index]) == reference[int(node_id)]
    for method, lines in (("alpha", ALPHA), ("beta", BETA)):
        for line in lines:
            q = next(i for i, qq in enumerate(data["questions"]) if qq["id"] == line["id"])
            row = next(r for r in data["rows"] if r[0] == q and r[1] == line["level"])
            result = data["results"][method][row[2][method]]
            assert result["correct"] is CORRECT[method][(line["id"], line["level"])]
            assert result["answer"] == line["answer"]
            assert result["pathCount"] == len(line["paths"])
    # the tail-first step is turned round: 2 -target- 5 -associated with- 7
    alpha = data["results"]["alpha"]
    turned = alpha[next(r for r in data["rows"] if r[1] == "implicit" and data["questions"][r[0]]["id"] == "3")[2]["alpha"]]
    assert turned["paths"] == [{"n": [ext(2), ext(5), ext(7)], "r": ["target", "associated with"]}]
    assert any(r.get("extra") == {"note": "a field of a new method"} for r in alpha)
    assert any(r.get("prioritized") == [ext(6)] for r in alpha)
    gold = data["questions"][1]["gold"]
    assert gold == {"n": [ext(0), ext(6), ext(7)], "r": ["target", "associated with"]}
    assert data["questions"][1]["goldMetapath"] == "drug -[target]- gene/protein -[associated with]- disease"
    assert sorted(data["questions"][0]["valid"]) == ["Aspirin", "Ibuprofen"]
    assert data["settings"] == {"alpha": {"method": "alpha", "llm": "none"}}  # beta has no settings file


def test_explored_entities_are_capped_with_their_total(world, monkeypatch):
    from adapath.view import extract

    monkeypatch.setattr(extract, "EXPLORED_CAP", 1)
    graph = KnowledgeGraph.load(world["kg"])
    data = extract.question_page_data({"alpha": as_results(ALPHA)}, as_items(), graph)
    two = [r for r in data["results"]["alpha"] if r["explored"] and r["explored"][0][2] == 2]
    assert two and all(len(r["explored"][0][1]) == 1 for r in two)


def test_other_methods_and_other_question_kinds_show_what_they_have(world):
    """A baseline's line with only the shared fields and odd extras, a question without gold
    (``questions:``) and a multiple-choice one: the page keeps what is there, marks what can
    be marked, and its JSON stays browser-readable."""
    from adapath.datasets.specs import Gold, Item
    from adapath.view import question_page_data, render_page

    bare = Item("q-free", {"question": "Which disease is linked to PTGS2?"}, (ext(6),))
    choice = Item("q-mc", {"question": "Which one treats headache?"}, (ext(3),),
                  options=("Fever", "Aspirin", "PTGS2", "Migraine"), gold=Gold(correct_option=1))
    lines = [
        {"id": "q-free", "level": "question", "answer": "Migraine", "paths": [], "explored": {},
         "usage": {"calls": 3, "seconds": float("nan")}, "metapaths": ["drug -[target]- gene/protein"],
         "votes": [float("inf"), 2]},
        {"id": "q-mc", "level": "question", "answer": "(B)", "paths": [[step(3, "indication", 0)]]},
        {"id": "q-mc", "level": "other", "answer": "C"},
    ]
    data = question_page_data({"cot": as_results(lines)}, [bare, choice], KnowledgeGraph.load(world["kg"]))
    free, mc_right, mc_wrong = data["results"]["cot"]
    assert free["correct"] is None and mc_right["correct"] is True and mc_wrong["correct"] is False
    assert free["metapaths"] == [["drug -[target]- gene/protein", None]]
    assert free["usage"] == {"calls": 3, "seconds": None}
    assert free["extra"] == {"votes": [None, 2]}
    assert data["questions"][0]["texts"] == {"question": "Which disease is linked to PTGS2?"}
    assert data["questions"][0]["answer"] is None and data["questions"][1]["correctOption"] == 1
    payload = re.search(r'id="view-data">(.*?)</script>', render_page(data, "t"), re.S).group(1)

    def strict(constant):  # what JSON.parse in a browser refuses
        raise AssertionError(f"{constant} in the page's JSON")

    json.loads(payload, parse_constant=strict)


def test_bad_explored_and_empty_files_are_input_errors(world, tmp_path, capsys):
    out = tmp_path / "page.html"
    base = ["view", "--queries", f"biostrat:{world['queries']}", "--kg", world["kg"], "--out", out]
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "1", "answer": "x", "explored": {"one": [ext(0)]}}])
    code, _, err = run_cli(base + ["--results", bad], capsys)
    assert code == 2 and "integer depths" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, _, err = run_cli(base + ["--results", empty], capsys)
    assert code == 2 and "no result lines" in err
    assert not out.exists()


class _PageParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.policy, self.inline, self._open = [], None, {"script": [], "style": []}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy":
            self.policy = attrs["content"]
        self._open = (tag, attrs) if tag in ("script", "style") else None

    def handle_data(self, data):
        if self._open and not (self._open[0] == "script" and self._open[1].get("type")):
            self.inline[self._open[0]].append(data)

    def handle_endtag(self, tag):
        self._open = None


def sha256_source(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_page_is_self_contained(world, tmp_path):
    from adapath.view import write_question_page

    out = tmp_path / "page.html"
    graph = KnowledgeGraph.load(world["kg"])
    data = write_question_page({"alpha": as_results(ALPHA)}, as_items(), graph, out)
    text = out.read_text(encoding="utf-8")
    parser = _PageParser()
    parser.feed(text)
    # nothing to load: no src or href anywhere, and the tricky name did not open any tag
    assert [t for t, a in parser.tags if "src" in a or "href" in a] == []
    assert [t for t, _ in parser.tags if t == "script"] == ["script", "script"]
    assert "b" not in [t for t, _ in parser.tags]
    # the policy allows our one script and one style by hash and nothing else
    directives = dict(d.strip().split(" ", 1) for d in parser.policy.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == sha256_source(parser.inline["script"][0])
    assert directives["style-src"] == sha256_source(parser.inline["style"][0])
    assert embedded_data(text) == json.loads(json.dumps(data))
    from adapath.fsutil import current_umask

    assert out.stat().st_mode & 0o777 == 0o666 & ~current_umask()  # readable like any document


def test_bad_inputs_are_one_line_errors_without_output(world, tmp_path, capsys):
    out = tmp_path / "page.html"
    base = ["view", "--queries", f"biostrat:{world['queries']}", "--kg", world["kg"], "--out", out]
    code, _, err = run_cli(base + ["--results", f"a={world['alpha']}", "--results", f"a={world['beta']}"], capsys)
    assert code == 2 and "two result files named 'a'" in err
    stray = write_jsonl(tmp_path / "stray.jsonl", [{"id": "99", "level": "explicit", "answer": "x"}])
    code, _, err = run_cli(base + ["--results", stray], capsys)
    assert code == 2 and "'99' has no question" in err
    bent = write_jsonl(tmp_path / "bent.jsonl", [{"id": "1", "answer": "x", "paths": [[[ext(3), "indication"]]]}])
    code, _, err = run_cli(base + ["--results", bent], capsys)
    assert code == 2 and "bent.jsonl:1: field 'paths'" in err and "is not [head_id, relation, tail_id]" in err
    code, _, err = run_cli(["bank", "view", tmp_path, "--out", out], capsys)
    assert code == 2 and "not a Path-Bank" in err
    assert not out.exists() and "Traceback" not in err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".page")] == []


# ------------------------------------------------------------------ a hand-made bank
BANK_PATHS = [  # query, pair, hop, rank, internal nodes, relations
    ("q1", "direct", 1, 0, [3, 0], ["indication"]),
    ("q1", "direct", 3, 0, [3, 1, 6, 0], ["indication", "target", "target"]),
    ("q2", "direct", 2, 0, [0, 6, 7], ["target", "associated with"]),
    ("q2", "direct", 2, 1, [0, 6, 4], ["target", "associated with"]),
    ("q2", "direct", 3, 0, [0, 1, 6, 7], ["target", "target", "associated with"]),
    ("q3", "chain", 2, 0, [2, 5, 7], ["target", "associated with"]),
    ("q3", "direct", 2, 0, [2, 5, 7], ["target", "associated with"]),
    ("q4", "direct", 1, 0, [6, 4], ["associated with"]),
]


def metapath_of(nodes, rels) -> str:
    types = [TYPES[NODE_TYPE[i]] for i in nodes]
    return types[0] + "".join(f" -[{r}]- {t}" for r, t in zip(rels, types[1:]))


@pytest.fixture(scope="module")
def bank(world) -> Path:
    root = world["root"] / "bank"
    (root / "parts").mkdir(parents=True)
    rows = [{"query_id": q, "pair": pair, "topic_id": ext(n[0]), "answer_id": ext(n[-1]), "hop": hop,
             "rank": rank, "cost": 1.5 + rank, "node_ids": [ext(i) for i in n], "relations": r,
             "node_types": [TYPES[NODE_TYPE[i]] for i in n], "metapath": metapath_of(n, r),
             "corridor_k": 150, "fallback": ""} for q, pair, hop, rank, n, r in BANK_PATHS]
    schema = pa.schema([("query_id", pa.string()), ("pair", pa.string()), ("topic_id", pa.int64()),
                        ("answer_id", pa.int64()), ("hop", pa.int32()), ("rank", pa.int32()),
                        ("cost", pa.float64()), ("node_ids", pa.list_(pa.int64())),
                        ("relations", pa.list_(pa.string())), ("node_types", pa.list_(pa.string())),
                        ("metapath", pa.string()), ("corridor_k", pa.int32()), ("fallback", pa.string())])
    pq.write_table(pa.Table.from_pylist(rows, schema), root / "paths.parquet")
    queries = [{"id": q, "explicit": f"Question {q} about {NAMES[n[0]]}", "implicit": "", "bare": "",
                "topic_id": ext(n[0]), "topic_type": TYPES[NODE_TYPE[n[0]]], "answer_id": ext(n[-1]),
                "answer_type": TYPES[NODE_TYPE[n[-1]]], "hops": len(r), "template_id": "t"}
               for q, _, _, rank, n, r in BANK_PATHS if rank == 0]
    pq.write_table(pa.Table.from_pylist(list({q["id"]: q for q in queries}.values())), root / "queries.parquet")
    (root / "manifest.json").write_text(json.dumps({"queries_total": 5, "queries_done": 4, "complete": False,
                                                    "parameters": {"beta": 0.3}, "stage_seconds": {}}))
    return root


def test_bank_counts_against_counter(world, bank):
    from adapath.view import bank_page_data

    data = bank_page_data(bank, KnowledgeGraph.load(world["kg"]), sample=3, seed=7)
    by_metapath = Counter((metapath_of(n, r), hop, TYPES[NODE_TYPE[n[0]]]) for _, _, hop, _, n, r in BANK_PATHS)
    queries_of = {key: {q for q, _, hop, _, n, r in BANK_PATHS if (metapath_of(n, r), hop, TYPES[NODE_TYPE[n[0]]]) == key}
                  for key in by_metapath}
    assert {tuple(row[:3]): tuple(row[3:]) for row in data["byMetapath"]} == {
        key: (count, len(queries_of[key])) for key, count in by_metapath.items()}
    assert {row[0]: row[1] for row in data["byHop"]} == dict(Counter(hop for _, _, hop, _, _, _ in BANK_PATHS))
    assert {(row[0], row[1]): row[2] for row in data["byTopicHop"]} == dict(
        Counter((TYPES[NODE_TYPE[n[0]]], hop) for _, _, hop, _, n, _ in BANK_PATHS))
    assert data["totals"] == {"paths": len(BANK_PATHS), "queries": 4, "metapaths": len({k[0] for k in by_metapath})}
    assert len(data["samples"]) == 3
    again = bank_page_data(bank, None, sample=3, seed=7)
    assert [s["id"] for s in again["samples"]] == [s["id"] for s in data["samples"]]
    for sample in data["samples"]:
        expected = [(pair, hop, rank) for q, pair, hop, rank, _, _ in sorted(BANK_PATHS) if q == sample["id"]]
        assert [(p["pair"], p["hop"], p["rank"]) for p in sample["paths"]] == expected
    assert again["nodes"][str(ext(0))][0] == f"#{ext(0)}"  # without the graph: ids only


def test_bank_view_reads_the_parts_of_an_unfinished_bank(bank, tmp_path):
    import shutil

    from adapath.view import bank_page_data

    partial = tmp_path / "partial"
    shutil.copytree(bank, partial)
    table = pq.read_table(partial / "paths.parquet")
    (partial / "paths.parquet").unlink()
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half).append_column("order", pa.array(range(half))), partial / "parts" / "part-000000.parquet")
    pq.write_table(table.slice(half), partial / "parts" / "part-000001.parquet")
    assert bank_page_data(partial, None, sample=1)["totals"]["paths"] == len(BANK_PATHS)


# ------------------------------------------------------------------ in headless Chromium
@pytest.fixture(scope="module")
def browser():
    from adapath.view.headless import Browser, find_chromium

    missing = None
    try:
        import websocket  # noqa: F401
    except ImportError:
        missing = "the websocket-client package is not installed (pip install -e '.[dev]')"
    if find_chromium() is None:
        missing = "Chromium is not installed (Debian: apt-get install chromium)"
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(missing)
        pytest.skip(missing)
    with Browser(width=WIDTH, height=HEIGHT) as b:
        yield b


@pytest.fixture(scope="module")
def page(world, tmp_path_factory) -> Path:
    from adapath.view import write_question_page

    out = tmp_path_factory.mktemp("page") / "view.html"
    graph = KnowledgeGraph.load(world["kg"])
    write_question_page({"alpha": as_results(ALPHA), "beta": as_results(BETA)}, as_items(), graph, out,
                        title="test page")
    return out


def set_filter(browser, name: str, value: str, count: str = "count") -> int:
    """Choose a filter value as a user would and return the count the page shows."""
    browser.evaluate(f"""(() => {{ const s = document.getElementById('f-{name}');
        s.value = {json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()""")
    return int(browser.evaluate(f"document.getElementById('{count}').dataset.count"))


def choose_row(browser, key: str) -> None:
    browser.evaluate(f"document.querySelector('.row[data-key={json.dumps(key)}]').click()")


def shown_node_titles(browser, method: str) -> list[str]:
    return browser.evaluate(f"""[...document.querySelectorAll('[data-method={json.dumps(method)}] svg g.node > title')]
        .map(t => t.textContent.split('\\n')[0])""")


def test_browser_draws_every_name_on_the_paths(browser, page, world):
    browser.open(page.as_uri())
    assert browser.errors() == []
    names = names_from_parquet(world["kg"])
    gold_of = {str(r["data_id"]): r["path_node_ids"][: r["num_hops"] + 1] for r in RECORDS}
    for line in ALPHA:
        choose_row(browser, f"{line['id']}|{line['level']}")
        drawn = shown_node_titles(browser, "alpha")
        on_paths = {int(s[0]) for p in line["paths"] for s in p} | {int(s[2]) for p in line["paths"] for s in p}
        # the drawing holds the returned paths' nodes and the gold path's, each once
        assert sorted(drawn) == sorted(names[i][0] for i in on_paths | set(gold_of[line["id"]]))
        listed = browser.evaluate("document.querySelector('[data-method=\"alpha\"] .pathlist').textContent")
        for node_id in on_paths:
            assert names[node_id][0] in listed
        gold_edges = browser.evaluate("document.querySelectorAll('[data-method=\"alpha\"] path.gold-edge').length")
        assert gold_edges == len(gold_of[line["id"]]) - 1
        answer = browser.evaluate("document.querySelector('[data-method=\"alpha\"] .answertext').textContent")
        assert answer == (line["answer"] or "(empty)")
        badge = browser.evaluate("document.querySelector('[data-method=\"alpha\"] .badge').className")
        assert badge == "badge " + ("yes" if CORRECT["alpha"][(line["id"], line["level"])] else "no")
    # the tricky name is text, not markup
    choose_row(browser, "3|explicit")
    assert EVIL in shown_node_titles(browser, "alpha")
    assert browser.evaluate("[...document.querySelectorAll('#detail b')].some(b => b.textContent === 'Evil')") is False
    assert browser.evaluate("document.querySelectorAll('#detail script').length") == 0
    assert browser.evaluate("document.title") == "test page"


def test_browser_filters(browser, page):
    browser.open(page.as_uri())
    rows_of = {m: [(x["id"], x["level"]) for x in lines] for m, lines in (("alpha", ALPHA), ("beta", BETA))}
    hops = {str(r["data_id"]): str(r["num_hops"]) for r in RECORDS}
    template = {str(r["data_id"]): r["template_id"] for r in RECORDS}
    assert int(browser.evaluate("document.getElementById('count').dataset.count")) == len(ALPHA)
    assert set_filter(browser, "level", "implicit") == sum(lv == "implicit" for _, lv in rows_of["alpha"])
    assert set_filter(browser, "level", "") == len(ALPHA)
    assert set_filter(browser, "hops", "2") == sum(hops[i] == "2" for i, _ in rows_of["alpha"])
    assert set_filter(browser, "hops", "") == len(ALPHA)
    assert set_filter(browser, "tpl", "2h-2") == sum(template[i] == "2h-2" for i, _ in rows_of["alpha"])
    assert set_filter(browser, "tpl", "") == len(ALPHA)
    assert set_filter(browser, "ok", "correct") == sum(CORRECT["alpha"].values())
    assert set_filter(browser, "ok", "incorrect") == sum(not v for v in CORRECT["alpha"].values())
    differs = sum(k in CORRECT["beta"] and CORRECT["beta"][k] != v for k, v in CORRECT["alpha"].items())
    assert set_filter(browser, "ok", "differs") == differs
    shown = browser.evaluate("[...document.querySelectorAll('.row')].map(r => r.dataset.key)")
    assert sorted(shown) == sorted(f"{i}|{lv}" for (i, lv), v in CORRECT["alpha"].items()
                                   if (i, lv) in CORRECT["beta"] and CORRECT["beta"][(i, lv)] != v)
    set_filter(browser, "ok", "")
    assert set_filter(browser, "m", "beta") == len(BETA)
    set_filter(browser, "m", "alpha")
    browser.evaluate("""(() => { const q = document.getElementById('f-q'); q.value = 'ptgs2';
        q.dispatchEvent(new Event('input')); })()""")
    count = int(browser.evaluate("document.getElementById('count').dataset.count"))
    text_of = {(str(r["data_id"]), lv): r[f"{lv}_query"] for r in RECORDS for lv in ("explicit", "implicit", "bare")}
    assert count == sum("ptgs2" in text_of[k].lower() for k in rows_of["alpha"])
    assert browser.errors() == []


def test_browser_side_by_side(browser, page):
    browser.open(page.as_uri() + "#m=alpha&vs=beta&sel=2%7Cexplicit")
    columns = browser.evaluate("[...document.querySelectorAll('#methods > .method')].map(c => c.dataset.method)")
    assert columns == ["alpha", "beta"]
    answers = browser.evaluate("[...document.querySelectorAll('#methods .answertext')].map(a => a.textContent)")
    assert answers == ["Fever", "Migraine"]
    assert browser.evaluate("document.querySelector('.qhead h2').textContent") == "Question 2"
    marks = browser.evaluate("[...document.querySelector('.row.selected').querySelectorAll('.mark')].map(m => m.className)")
    assert marks == ["mark yes", "mark yes"]
    # a question beta did not answer at this level says so
    choose_row(browser, "2|implicit")
    assert "No result" in browser.evaluate("document.querySelector('#methods [data-method=\"beta\"]').textContent")


def test_browser_fetches_nothing_and_takes_a_screenshot(browser, page, tmp_path):
    browser.open(page.as_uri() + "#sel=2%7Cexplicit")
    assert browser.requests() == [page.as_uri()]
    assert browser.errors() == []
    assert browser.evaluate("window.__cspViolations") == []
    shot = browser.screenshot(tmp_path / "view.png")
    head = shot.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    assert struct.unpack(">II", head[16:24]) == (WIDTH, HEIGHT)
    assert shot.stat().st_size > 10_000
    # and the policy is live: a script that tries the network is refused
    blocked = browser.evaluate("fetch('https://example.org/x').then(() => 'fetched', () => 'refused')")
    assert blocked == "refused"
    assert any(v.startswith("connect-src") for v in browser.evaluate("window.__cspViolations"))


def test_browser_bank_page(browser, bank, world, tmp_path):
    from adapath.view import write_bank_page

    out = tmp_path / "bank.html"
    write_bank_page(bank, out, KnowledgeGraph.load(world["kg"]), sample=4, seed=0)
    browser.open(out.as_uri())
    assert browser.errors() == [] and browser.requests() == [out.as_uri()]
    hop_rows = browser.evaluate("""[...document.querySelectorAll('#by-hop tr')].slice(1)
        .map(r => [...r.children].map(c => c.textContent))""")
    assert {int(r[0]): int(r[1]) for r in hop_rows} == dict(Counter(h for _, _, h, _, _, _ in BANK_PATHS))
    assert set_filter(browser, "mphop", "2", "mp-count") == len({metapath_of(n, r) for _, _, h, _, n, r in BANK_PATHS if h == 2})
    names = names_from_parquet(world["kg"])
    keys = browser.evaluate("[...document.querySelectorAll('#samples .row')].map(r => r.dataset.key)")
    assert sorted(keys) == ["q1", "q2", "q3", "q4"]
    for key in keys:
        browser.evaluate(f"document.querySelector('#samples .row[data-key={json.dumps(key)}]').click()")
        drawn = browser.evaluate("[...document.querySelectorAll('#sample-detail svg g.node > title')].map(t => t.textContent.split('\\n')[0])")
        expected = {names[ext(i)][0] for q, _, _, _, n, _ in BANK_PATHS if q == key for i in n}
        assert set(drawn) == expected


def test_browser_real_biostrat_records(browser, dev_jsonl, tmp_path):
    """Real BioStrat-QA names (evidence graph of the dev set); each result returns the gold path."""
    from adapath.datasets.biostrat import load_records
    from adapath.sources.biostrat import load_biostrat
    from adapath.view import write_question_page

    records = load_records(dev_jsonl)[:40]
    graph = load_biostrat([dev_jsonl])
    results = []
    for r in records:
        ids = r["path_node_ids"][: r["num_hops"] + 1]
        steps = [[ids[k], r["triplets"][k][1], ids[k + 1]] for k in range(r["num_hops"])]
        results.append({"id": str(r["data_id"]), "level": "explicit", "answer": r["answer_entity"]["name"],
                        "paths": [steps], "explored": {}})
    out = tmp_path / "real.html"
    write_question_page({"gold": as_results(results)}, as_items(records), graph, out)
    browser.open(out.as_uri())
    assert browser.errors() == []
    for r in records[:: 8]:
        choose_row_visible(browser, f"{r['data_id']}|explicit")
        drawn = set(shown_node_titles(browser, "gold"))
        metadata = {m["id"]: m["name"] for m in r["node_metadata"]}
        assert {metadata[i] for i in r["path_node_ids"][: r["num_hops"] + 1]} <= drawn
        assert browser.evaluate("document.querySelector('.badge').className") == "badge yes"


def choose_row_visible(browser, key: str) -> None:
    """Search the list down to one row, then click it (works however long the list is)."""
    browser.evaluate(f"""(() => {{ const q = document.getElementById('f-q'); q.value = {json.dumps(key.split('|')[0])};
        q.dispatchEvent(new Event('input')); }})()""")
    choose_row(browser, key)


def test_browser_three_thousand_questions(browser, world, tmp_path):
    from adapath.view import write_question_page

    graph = KnowledgeGraph.load(world["kg"])
    records, results = [], []
    rng = np.random.default_rng(3)
    for k in range(3000):
        base = RECORDS[k % 3]
        rec = dict(base, data_id=10_000 + k, template_id=f"{base['num_hops']}h-{k % 7}")
        records.append(rec)
        line = dict(ALPHA[2 * (k % 3)], id=str(rec["data_id"]), level="explicit")
        line["answer"] = NAMES[int(rng.integers(0, 8))]
        results.append(line)
    out = tmp_path / "big.html"
    write_question_page({"alpha": as_results(results)}, as_items(records), graph, out)
    browser.open(out.as_uri())
    assert int(browser.evaluate("document.getElementById('count').dataset.count")) == 3000
    # the list keeps only visible rows in the DOM
    assert browser.evaluate("document.querySelectorAll('.row').length") < 100
    assert set_filter(browser, "hops", "1") == sum(r["num_hops"] == 1 for r in records)
    set_filter(browser, "hops", "")
    browser.evaluate("(() => { const l = document.getElementById('list'); l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll')); })()")
    last = f"{records[-1]['data_id']}|explicit"
    choose_row(browser, last)
    assert browser.evaluate("document.querySelector('.qhead h2').textContent") == f"Question {records[-1]['data_id']}"
    expected_names = {NAMES[i] for i in (2, 5, 7)}  # record 2999 is a copy of the third record
    assert expected_names <= set(shown_node_titles(browser, "alpha"))
    assert browser.errors() == []


# ------------------------------------------------------------------ demo-like pages, read as a person does
# Result fields the page draws in places of their own (the contract's fields, as the viewer guide
# lists them); every other field of a result line belongs under "Other fields".
OWN_PLACES = {"id", "level", "method", "answer", "raw", "answer_source", "paths", "explored", "metapaths",
              "control", "fallback", "usage", "retrieved", "prioritized"}

# Opens every <details>, then reports what a reader would see as broken: JavaScript objects
# printed as text, and a section or a <details> with nothing under its heading.
READ_PAGE = """(() => {
  document.querySelectorAll('details').forEach((d) => { d.open = true; });
  const problems = [];
  const text = document.body.innerText;
  for (const m of text.matchAll(/.{0,40}\\[object [^\\]]*\\].{0,40}/g)) problems.push('object text: ' + m[0]);
  const shows = (nodes) => nodes.some((n) => n.nodeType === Node.TEXT_NODE ? n.textContent.trim() !== ''
      : n.nodeType === Node.ELEMENT_NODE && ((n.innerText || '').trim() !== '' || n.querySelector('svg') !== null));
  for (const d of document.querySelectorAll('details')) {
    if (!shows([...d.childNodes].filter((n) => n.nodeName !== 'SUMMARY'))) {
      problems.push('empty details: ' + d.querySelector('summary').textContent);
    }
  }
  for (const s of document.querySelectorAll('section')) {
    if (!shows([...s.childNodes].filter((n) => n.nodeName !== 'H3'))) {
      problems.push('empty section: ' + (s.querySelector('h3') || s).textContent);
    }
  }
  return problems;
})()"""


def read_page(browser) -> list[str]:
    """What a reader of the page now shown would find broken (empty: nothing)."""
    return browser.evaluate(READ_PAGE)


def details_rows(browser, scope: str, summary_start: str) -> list[list[str]] | None:
    """The dt/dd pairs (or table rows) under the <details> whose summary starts with
    ``summary_start`` within ``scope``; None when there is no such <details>."""
    return browser.evaluate(f"""(() => {{
      const d = [...document.querySelectorAll({json.dumps(scope + ' details')})]
        .find((x) => x.querySelector('summary').textContent.startsWith({json.dumps(summary_start)}));
      if (!d) return null;
      d.open = true;
      const dts = [...d.querySelectorAll('dt')];
      if (dts.length) return dts.map((t) => [t.innerText, t.nextElementSibling.innerText]);
      return [...d.querySelectorAll('tr')].slice(1).map((r) => [...r.children].map((c) => c.innerText));
    }})()""")


def cli_ok(*args) -> None:
    """Run the CLI in this process and require success (module fixtures cannot use capsys)."""
    from adapath.cli import main

    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        assert exc.code in (0, None), f"adapath {' '.join(map(str, args))}: exit {exc.code}"


@pytest.fixture(scope="module")
def demo(small_world) -> dict:
    """The README's demo in small: a generated graph, its generated questions and their
    Path-Bank (conftest's small world), every question answered at all three levels by
    `adapath answer`, and both pages written by the commands, into report/."""
    root = small_world
    answers = root / "answers.jsonl"
    report = root / "report"
    cli_ok("answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", f"biostrat:{root / 'q.jsonl'}",
           "--level", "all", "--encoder", "hashing", "--out", answers, "--force")
    cli_ok("view", "--results", f"adapath={answers}", "--results", f"again={answers}",
           "--queries", f"biostrat:{root / 'q.jsonl'}", "--kg", root / "kg", "--out", report / "view.html")
    cli_ok("bank", "view", root / "bank", "--kg", root / "kg", "--out", report / "bank.html")
    lines = [json.loads(x) for x in answers.read_text().splitlines()]
    return {"root": root, "answers": answers, "lines": lines, "view": report / "view.html",
            "bank_page": report / "bank.html", "bank": root / "bank",
            "settings": json.loads((root / "answers.jsonl.settings.json").read_text())}


def setting_words(value) -> str:
    """A run setting as the page should write it (worked out here, not read from the page)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(setting_words, value)) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {setting_words(v)}" for k, v in value.items() if v is not None) or "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # a number as JavaScript writes it
    return str(value)


def test_browser_demo_view_page_reads_as_a_person_does(browser, demo):
    """Every question at every level, alone and beside another method: no object printed as
    text, no empty section, the sections the result lines have data for all there, no
    console error."""
    browser.open(demo["view"].as_uri())
    assert browser.errors() == []
    for line in demo["lines"]:
        key = f"{line['id']}|{line['level']}"
        choose_row_visible(browser, key)
        assert read_page(browser) == [], key
        card = '[data-method="adapath"]'
        retrieved = details_rows(browser, card, "Retrieved training queries")
        if line.get("retrieved"):
            assert retrieved is not None and len(retrieved) == len(line["retrieved"]), key
            assert [row[0] for row in retrieved] == [str(x["id"]) for x in line["retrieved"]]
        other = details_rows(browser, card, "Other fields")
        extra = [k for k in line if k not in OWN_PLACES]
        assert (other is None) == (not extra), key
        if extra:
            assert [row[0] for row in other] == extra
            assert all(row[1].strip() for row in other)
        settings = details_rows(browser, card, "Run settings")
        given = {k: v for k, v in demo["settings"].items() if v is not None}  # an unset one is left out
        assert settings is not None and [row[0] for row in settings] == list(given)
        for (name, shown), value in zip(settings, given.values()):
            assert "null" not in shown and "{" not in shown and "[" not in shown, (name, shown)  # words, not JSON
            if name not in ("bank", "model", "topics", "queries", "queries_path"):  # paths: relative to the page
                assert shown == setting_words(value), (name, shown)
    # side by side: both columns' further parts
    browser.open(demo["view"].as_uri() + "#m=adapath&vs=again")
    for line in demo["lines"][:6]:
        choose_row_visible(browser, f"{line['id']}|{line['level']}")
        assert read_page(browser) == []
        for method in ("adapath", "again"):
            scope = f'.mcell[data-method="{method}"]'
            if line.get("retrieved"):
                assert len(details_rows(browser, scope, "Retrieved training queries")) == len(line["retrieved"])
            if any(k not in OWN_PLACES for k in line):
                assert details_rows(browser, scope, "Other fields") is not None
    assert browser.errors() == []


def test_browser_demo_bank_page_reads_as_a_person_does(browser, demo):
    """The bank page of the demo: every sampled query shown in turn, no object printed as
    text, no empty section, each build parameter with its value, no console error."""
    browser.open(demo["bank_page"].as_uri())
    assert browser.errors() == []
    assert read_page(browser) == []
    manifest = json.loads((demo["bank"] / "manifest.json").read_text())
    shown = details_rows(browser, "", "Build parameters")
    assert shown is not None
    assert [name for name, _ in shown] == list(manifest["parameters"])
    assert [json.loads(value) for _, value in shown] == list(manifest["parameters"].values())
    keys = browser.evaluate("[...document.querySelectorAll('#samples .row')].map(r => r.dataset.key)")
    assert keys
    for key in keys:
        browser.evaluate(f"document.querySelector('#samples .row[data-key={json.dumps(key)}]').click()")
        assert read_page(browser) == [], key
    assert browser.errors() == []


def test_reading_finds_object_text_empty_sections_and_console_errors(browser, tmp_path):
    """The reader's checks themselves: a page with an object printed as text, an empty
    <details> and a console error is caught on each count."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><p>[object HTMLElement]</p>"
                    "<details><summary>Nothing</summary></details><section><h3>Empty</h3></section>"
                    "<script>console.error('broken'); document.body.dataset.ready = '1';</script></body></html>")
    browser.open(page.as_uri())
    problems = read_page(browser)
    assert any(p.startswith("object text: ") for p in problems)
    assert "empty details: Nothing" in problems and "empty section: Empty" in problems
    assert browser.errors() == ["broken"]


def test_view_page_shows_paths_relative_to_the_page(demo):
    """The answers' settings file holds the bank's absolute path (and the fixture gave the
    questions by an absolute path): the page shows both relative to itself and carries no
    absolute path of the machine's folders."""
    html_text = demo["view"].read_text(encoding="utf-8")
    folder = demo["view"].parent.resolve()
    shown = embedded_data(html_text)["settings"]["adapath"]
    assert demo["settings"]["bank"] == str(demo["bank"].resolve())  # what the page starts from
    assert shown["bank"] == os.path.relpath(demo["bank"].resolve(), folder)
    assert (folder / shown["bank"]).resolve() == demo["bank"].resolve()
    kind, _, path = demo["settings"]["queries"].partition(":")
    assert Path(path).is_absolute() and shown["queries"] == f"{kind}:{os.path.relpath(path, folder)}"
    assert str(demo["root"].resolve()) not in html_text
    assert shown["queries_path"] == os.path.relpath(demo["settings"]["queries_path"], folder)
    assert {k: v for k, v in shown.items() if k not in ("bank", "queries", "queries_path")} == {
        k: v for k, v in demo["settings"].items() if k not in ("bank", "queries", "queries_path")}


def test_browser_demo_run_settings_show_the_bank_relative_to_the_page(browser, demo):
    browser.open(demo["view"].as_uri())
    rows = dict(details_rows(browser, '[data-method="adapath"]', "Run settings"))
    assert rows["bank"] == os.path.relpath(demo["bank"].resolve(), demo["view"].parent.resolve())
    assert str(demo["root"].resolve()) not in browser.evaluate("document.body.innerText")


def test_bank_page_title_names_the_bank_by_its_folders(bank, tmp_path, capsys):
    """`bank view`'s title reads 'Path-Bank: PARENT/BANK' (was 'Path-Bank bank': the folder's
    name after the word it repeats); --title replaces it."""
    page_title = re.compile(r"<title>(.*?)</title>", re.S)
    code, _, err = run_cli(["bank", "view", bank, "--out", tmp_path / "b.html"], capsys)
    assert code == 0, err
    title = html.unescape(page_title.search((tmp_path / "b.html").read_text()).group(1))
    assert title == f"Path-Bank: {bank.resolve().parent.name}/{bank.name}"
    code, _, err = run_cli(["bank", "view", bank, "--out", tmp_path / "c.html", "--title", "Run 3's bank"], capsys)
    assert code == 0, err
    assert html.unescape(page_title.search((tmp_path / "c.html").read_text()).group(1)) == "Run 3's bank"


LONG_NAMES = ["Wolff-Parkinson-White syndrome with paroxysmal supraventricular tachycardia (WWW MMM)",
              "MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM",
              "short", "Headache attributed to a disorder of homoeostasis, chronic, WWWWWWWW",
              "Fever", "alpha-synuclein-interacting protein family member WMWMWMWMWMWMWMWM", "PTGS2",
              "Migraine without aura, menstrually related, refractory to treatment MMMM", "x"]
LONG_RELS = ["associated with through a very long relation name indeed WWWW", "ppi", "indication"]


def test_browser_long_names_stay_inside_their_boxes_and_labels_clear_of_them(browser, tmp_path):
    """Long node names, long relations, an edge within one column and an edge spanning two
    gaps: every node's text inside its box, every edge label clear of every box."""
    from adapath.view import write_question_page

    head, tail, rel = (np.array(c) for c in zip(*EDGES))
    graph = KnowledgeGraph.from_edges(
        head, tail, rel, node_type=np.array(NODE_TYPE, dtype=np.int8),
        node_id=np.array([ext(i) for i in range(len(NAMES))]), names=LONG_NAMES,
        descriptions=[""] * len(NAMES), type_names=("drug with a long type name WWWWWWWWWWWW", *TYPES[1:]),
        relation_names=tuple(LONG_RELS), relation_descriptions=tuple(LONG_RELS))
    long_rel, short = LONG_RELS[0], LONG_RELS[1]
    line = {"id": "1", "level": "explicit", "answer": LONG_NAMES[7], "raw": "", "metapaths": [],
            "paths": [[step(3, long_rel, 6)],  # 6 in the second column
                      [step(3, long_rel, 0), step(0, long_rel, 6), step(6, long_rel, 7)],  # 0-6: one column
                      [step(3, short, 1), step(1, long_rel, 4), step(4, long_rel, 5)]],  # 6-7 spans two gaps
            "explored": {}}
    out = tmp_path / "long.html"
    write_question_page({"alpha": as_results([line])}, as_items(), graph, out, title="long names")
    browser.open(out.as_uri())
    choose_row(browser, "1|explicit")
    assert browser.errors() == []
    found = browser.evaluate("""(() => {
      const box = (e) => e.getBoundingClientRect();
      const svg = document.querySelector('[data-method="alpha"] svg.paths');
      const nodes = [...svg.querySelectorAll('g.node')].map((g) => ({rect: box(g.querySelector('rect.box')),
        texts: [...g.querySelectorAll('text')].map((t) => [t.textContent, box(t)])}));
      const labels = [...svg.querySelectorAll('text.edge-label')].map((t) => [t.textContent, box(t)]);
      const out = [];
      for (const n of nodes) for (const [text, r] of n.texts)
        if (r.left < n.rect.left || r.right > n.rect.right || r.top < n.rect.top || r.bottom > n.rect.bottom)
          out.push('outside its box: ' + text);
      for (const [text, r] of labels) for (const n of nodes) {
        const q = n.rect;
        if (r.left < q.right + 1 && r.right > q.left - 1 && r.top < q.bottom + 1 && r.bottom > q.top - 1)
          out.push('label touches a box: ' + text);
      }
      return {problems: out, nodes: nodes.length, labels: labels.length,
              cut: nodes.filter((n) => n.texts[0][0].endsWith('…')).length};
    })()""")
    assert found["problems"] == []
    assert found["nodes"] == 7 and found["labels"] == 8 and found["cut"] >= 4  # the long names were cut
    # a result without meta-paths (PathMind's) has no "Meta-paths (0)" section saying "None."
    heads = browser.evaluate("[...document.querySelectorAll('[data-method=\"alpha\"] section h3')].map(h => h.textContent)")
    assert heads and not any(h.startswith("Meta-paths") for h in heads), heads
