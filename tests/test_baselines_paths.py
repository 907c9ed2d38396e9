"""The path-finding baselines (StructGPT, ToG, ToG-2, PoG) against scripted LLMs on hand-built
graphs with hand-worked expectations; batching, usage, bad replies, no gold, the CLI."""

import json
import re

import numpy as np
import pytest

from adapath.contract import Query, Result
from adapath.datasets.biostrat import query_from_record
from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import ScriptedBackend, prompts
from adapath.methods import _search as s
from adapath.methods.base import MethodContext
from adapath.methods.registry import get_method
from adapath.retrieval.dense import HashingEncoder
from adapath.sources.synthetic import generate
from tests.conftest import run_cli

METHODS = ("structgpt", "tog", "tog2", "pog")
GOLD_FIELDS = ("triplets", "path_node_ids", "answer_entity", "valid_answer_ids", "node_metadata",
               "template_id", "num_hops", "pathway_summary", "answer_ambiguity")


def tokens(text: str) -> int:
    """ScriptedBackend's counting rule, written out: round(words * 4 / 3)."""
    return round(len(text.split()) * 4 / 3)


def hand_graph(names, edges, descriptions=None):
    """A graph from (head name, relation, tail name) edges; node ids are 100 + position."""
    relations = tuple(sorted({r for _, r, _ in edges}))
    index = {n: i for i, n in enumerate(names)}
    head = [index[h] for h, _, _ in edges]
    tail = [index[t] for _, _, t in edges]
    rel = [relations.index(r) for _, r, _ in edges]
    return KnowledgeGraph.from_edges(
        np.array(head), np.array(tail), np.array(rel), node_type=np.zeros(len(names), dtype=np.int8),
        node_id=np.arange(100, 100 + len(names)), names=list(names),
        descriptions=descriptions or [f"{n} is an entity." for n in names], type_names=("thing",),
        relation_names=relations, relation_descriptions=tuple(f"about {r}" for r in relations))


def build(name, graph, backend, **params):
    spec = get_method(name)
    context = MethodContext(graph, None, backend, "hashing", params=spec.resolve_params(params))
    context._encoder = HashingEncoder()
    return spec.make(context)


def ids(graph, *names):
    return [int(graph.node_id[graph.names.to_pylist().index(n)]) for n in names]


def comparable(results):
    """Result lines without wall time (the one field two identical runs may differ in)."""
    out = []
    for result in results:
        line = result.to_json()
        line["usage"] = {k: v for k, v in line["usage"].items() if k != "seconds"}
        out.append(line)
    return out


def assert_real_walks(graph, query, result):
    """Every path starts at a topic entity, chains head to tail, and every step is an edge."""
    for path in result.paths:
        assert path[0][0] in query.topic_ids
        for (_, _, tail), (head, _, _) in zip(path, path[1:]):
            assert tail == head
        for head, relation, tail in path:
            h, t = graph.index_of([head, tail])
            nodes, _ = graph.neighbors(int(h), relation=relation)
            assert int(t) in nodes.tolist(), (head, relation, tail)


# ---------------------------------------------------------------- a cooperative scripted LLM
def _list_after(prompt, label):
    """The items of the last line starting with ``label`` (the case follows the examples)."""
    line = [x for x in prompt.splitlines() if x.startswith(label)][-1]
    return [x.strip() for x in line[len(label):].split(";") if x.strip()]


def cooperative(prompt: str) -> str:
    """Plays every baseline's prompts sensibly without any knowledge: takes the first options,
    never claims enough information, so searches run to their depth limit."""
    case = prompt.split("\nNow\n")[-1]  # the question at hand, after any worked example
    if "Its relations:" in prompt:  # ToG relation pruning
        names = _list_after(prompt, "Its relations:")[:3]
        return "\n".join(f"{{{n} (Score: {0.5 / (i + 1):.2f})}}" for i, n in enumerate(names))
    if prompt.startswith("Rate how much each candidate"):  # ToG entity scores
        count = len(_list_after(prompt, "Candidates:"))
        return ", ".join(f"{1.0 / (i + 1):.2f}" for i in range(count))
    if "For each entity, choose up to" in prompt:  # ToG-2 relation pruning
        lines, entity = [], 0
        for line in case.splitlines():
            if line.startswith("Entity "):
                entity += 1
                lines.append(f"Entity {entity}: x")
            elif line.startswith("Relations:") and entity:
                lines += [f"{{{r} (Score: 8)}}" for r in _list_after(line, "Relations:")[:2]]
        return "\n".join(lines)
    if prompt.startswith("Break answering"):
        return '["find the first entity", "find the answer"]'
    if prompt.startswith("Choose as few relations"):  # PoG relations
        return f"['{_list_after(prompt, 'Relations:')[0]}']"
    if prompt.startswith("Which entities in the list"):  # PoG entities
        listed = re.search(r"\[(.*)\]", case.split("Triples:")[1].splitlines()[0]).group(1)
        return f"[{listed.split(', ')[0]}]"
    if prompt.startswith("From the information below"):
        return '{"1": "partly known", "2": "not yet"}'
    if prompt.startswith("The search has not answered"):
        return "{continue} the entities look right"
    if prompt.startswith("Candidate relations:"):  # StructGPT relations
        first = prompt.splitlines()[0][len("Candidate relations: "):].split(", ")[0].strip('".')
        return f"Relation: {first}"
    if prompt.startswith("Read the knowledge-graph triples"):  # StructGPT reading
        return "Need further information"
    if "Start your reply with {Yes} or {No}" in prompt or "({Yes} or {No})" in prompt:
        return "{No}. {more about the targets}"
    return "{unknown}"


# ---------------------------------------------------------------- ToG
TOG_NAMES = ("topicdrug", "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
TOG_EDGES = [("topicdrug", "ra", "alpha"), ("topicdrug", "ra", "beta"), ("topicdrug", "rb", "gamma"),
             ("topicdrug", "rc", "delta"), ("topicdrug", "rc", "epsilon"), ("topicdrug", "rd", "zeta"),
             ("topicdrug", "re", "eta"), ("delta", "rf", "theta")]


def tog_script(yes_when):
    return ScriptedBackend(rules={
        # relation pruning: five scores; ToG keeps every relation the reply scores
        "Topic entity: topicdrug": "{rb (Score: 0.05)}\n{rc (Score: 0.5)}\n{ra (Score: 0.3)}\n"
                                   "{re (Score: 0.05)}\n{rd (Score: 0.1)}",
        "Topic entity: delta": "{rf (Score: 0.9)} {rc (Score: 0.1)}",
        "Relation followed: rc": "0.8, 0.2",  # delta, epsilon
        "Relation followed: ra": "0.1, 0.9",  # alpha, beta
        "say whether the triplets": lambda p: "{Yes}. So the answer is {theta}." if yes_when in p else "{No}.",
    }, default="{theta}")


def test_tog_keeps_every_scored_relation_and_answers_from_the_yes_reply():
    g = hand_graph(TOG_NAMES, TOG_EDGES)
    backend = tog_script(yes_when="delta, rf, theta")
    q = Query("q1", "explicit", "Which entity hangs off the drug?", tuple(ids(g, "topicdrug")))
    (result,) = build("tog", g, backend).answer([q])
    # hand-worked: every scored relation is expanded, in reply order rb, rc, ra, re, rd; lone
    # candidates gamma (.05), eta (.05) and zeta (.1) take their relation's score without a call;
    # delta .5*.8=.4, epsilon .5*.2=.1, alpha .3*.1=.03, beta .3*.9=.27. Top 3: delta, beta,
    # then epsilon before zeta (rc came before rd in the reply).
    depth1 = [("topicdrug", "rc", "delta"), ("topicdrug", "ra", "beta"), ("topicdrug", "rc", "epsilon")]
    depth2 = depth1 + [("delta", "rf", "theta")]
    question = q.text
    expected = [
        prompts.tog_relations(question, "topicdrug", ["ra", "rb", "rc", "rd", "re"], 3),
        prompts.tog_entities(question, "rc", ["delta", "epsilon"]),
        prompts.tog_entities(question, "ra", ["alpha", "beta"]),
        prompts.tog_sufficient(question, depth1),
        prompts.tog_relations(question, "delta", ["rc", "rf"], 3),
        prompts.tog_relations(question, "beta", ["ra"], 3),
        prompts.tog_relations(question, "epsilon", ["rc"], 3),
        prompts.tog_sufficient(question, depth2),
    ]  # the {Yes} reply holds the answer: no answer call
    assert backend.seen == expected
    assert backend.batches == [1, 2, 1, 3, 1]
    assert result.answer == "theta" and result.answer_source == "braces"
    assert result.raw == "{Yes}. So the answer is {theta}."
    assert result.extra["stopped_at"] == 2 and result.extra["stop"] == "sufficient"
    t, a, b, c, d, e, z, h, th = ids(g, "topicdrug", "alpha", "beta", "gamma", "delta", "epsilon", "zeta",
                                     "eta", "theta")
    assert result.paths == [[[t, "rc", d], [d, "rf", th]], [[t, "ra", b]], [[t, "rc", e]]]
    assert result.explored == {"1": sorted([a, b, c, d, e, z, h]), "2": [th]}
    assert result.usage["calls"] == 8
    assert result.usage["prompt_tokens"] == sum(tokens(p) for p in expected)
    assert_real_walks(g, q, result)


def test_tog_stops_at_depth_one_and_answers_from_knowledge_at_the_limit():
    g = hand_graph(TOG_NAMES, TOG_EDGES)
    q = Query("q1", "explicit", "Which entity hangs off the drug?", tuple(ids(g, "topicdrug")))
    backend = tog_script(yes_when="topicdrug, rc, delta")
    (result,) = build("tog", g, backend).answer([q])
    assert result.extra["stopped_at"] == 1 and result.usage["calls"] == 4  # 1 + 2 + the check that answers
    assert backend.batches == [1, 2, 1]
    # never yes: depth 1 and 2 searched (depth 3 has no candidate left: half stop from paths)
    backend = tog_script(yes_when="never")
    (result,) = build("tog", g, backend, max_depth=2).answer([q])
    assert result.extra == {"stopped_at": 2, "stop": "depth-limit"}
    assert backend.seen[-1] == prompts.few_shot_cot(q.text) and result.fallback == "llm-knowledge"
    backend = tog_script(yes_when="never")
    (result,) = build("tog", g, backend, max_depth=2, exhausted="paths").answer([q])
    assert backend.seen[-1].startswith("Given a question and knowledge-graph triplets") and "answer the question " \
        "with these triplets" in backend.seen[-1] and result.fallback == ""


def test_tog_samples_long_neighbour_lists_with_a_seed():
    names = ["hub"] + [f"leaf{i:02d}" for i in range(30)]
    g = hand_graph(names, [("hub", "ra", n) for n in names[1:]])
    q = Query("q", "explicit", "Which leaf?", tuple(ids(g, "hub")))
    backend = ScriptedBackend(rules={"Topic entity: hub": "{ra (Score: 1.0)}"}, default="{No}")
    (result,) = build("tog", g, backend, sample_size=4).answer([q])
    scored = next(p for p in backend.seen if p.startswith("Rate how much"))
    listed = _list_after(scored, "Candidates:")
    assert len(listed) == 4 and listed == sorted(listed)
    assert len(result.explored["1"]) == 4
    backend2 = ScriptedBackend(rules={"Topic entity: hub": "{ra (Score: 1.0)}"}, default="{No}")
    build("tog", g, backend2, sample_size=4).answer([Query("other", "explicit", "x", q.topic_ids), q])
    assert scored in backend2.seen  # the same sample whatever else is in the batch


# ---------------------------------------------------------------- ToG-2
def test_tog2_prompts_hold_the_chunk_ranked_first_and_the_clue():
    names = ("topicdrug", "alpha", "beta", "gamma")
    descriptions = ["Topicdrug is a small molecule. It is taken by mouth.",
                    "Alpha binds copper ions. It is found in the liver.",
                    "Beta cleaves glucoside bonds. It is a gut enzyme.",
                    "Gamma is a structural protein."]
    g = hand_graph(names, [("topicdrug", "ra", "alpha"), ("topicdrug", "ra", "beta"),
                           ("beta", "rb", "gamma")], descriptions)
    backend = ScriptedBackend(rules={
        "For each entity": lambda p: "Entity 1: x\n{ra (Score: 9)}" if "Entity 1: topicdrug" in p
        else "Entity 1: x\n{rb (Score: 7)}",
        "Clue from the previous round: substrates": "{Yes}. The answer is {gamma}.",
        "Start your reply with {Yes}": "{No}. Still missing: {substrates of the gut enzyme}",
    })
    q = Query("q", "explicit", "Which gut enzyme cleaves glucoside bonds?", tuple(ids(g, "topicdrug")))
    (result,) = build("tog2", g, backend, gate=False, ranker="bm25", chunk_sentences=1, width=1,
                      clue=True).answer([q])
    # hand-worked BM25: of the candidates' chunks only "Beta cleaves glucoside bonds." and "It is a
    # gut enzyme." share words with the question; alpha's chunks score 0. The first has three
    # query words, so it ranks first, beta is the one entity kept, and that sentence heads the
    # references of the reasoning prompt.
    reasoning = [p for p in backend.seen if p.startswith("Decide whether")]
    first = reasoning[0].split("References:\n")[-1].splitlines()[0]
    assert first == "beta: Beta cleaves glucoside bonds."
    assert "(topicdrug, ra, beta)" in reasoning[0] and "(topicdrug, ra, alpha)" not in reasoning[0]
    assert "Clue from the previous round: substrates of the gut enzyme" in reasoning[1]
    assert result.answer == "gamma" and result.answer_source == "braces"
    assert result.extra["stopped_at"] == 2 and result.usage["calls"] == 4  # 2 depths x (relations, reasoning)
    t, a, b, c = ids(g, "topicdrug", "alpha", "beta", "gamma")
    assert result.paths == [[[t, "ra", b], [b, "rb", c]]]
    assert result.explored == {"1": [a, b], "2": [c]}
    assert_real_walks(g, q, result)


class RecordingEncoder(HashingEncoder):
    """The hashing encoder, keeping every text it was asked to encode."""

    def __init__(self):
        super().__init__()
        self.texts = []

    def encode(self, texts):
        self.texts += list(texts)
        return super().encode(texts)


@pytest.mark.parametrize("clue", [False, True])
def test_tog2_feeds_the_clue_back_only_when_asked(clue):
    names = ("topicdrug", "alpha", "beta", "gamma")
    g = hand_graph(names, [("topicdrug", "ra", "alpha"), ("alpha", "rb", "beta"), ("beta", "rc", "gamma")])
    backend = ScriptedBackend(rules={"For each entity": lambda p: "Entity 1: x\n{ra (Score: 9)}"
                                     if "Entity 1: topicdrug" in p else "Entity 1: x\n{rb (Score: 9)}",
                                     "Start your reply with {Yes}": "{No}. Still missing: {substrates of the enzyme}"})
    q = Query("q", "explicit", "Which enzyme?", tuple(ids(g, "topicdrug")))
    spec = get_method("tog2")
    context = MethodContext(g, None, backend, "hashing", params=spec.resolve_params(
        {"gate": "false", "width": "1", "max_depth": "2", "clue": str(clue)}))
    context._encoder = encoder = RecordingEncoder()
    (result,) = spec.make(context).answer([q])
    reasoning = [p for p in backend.seen if p.startswith("Decide whether")]
    assert len(reasoning) == 2
    # the official main: the clue slot stays empty, every retrieval query is the question alone
    assert ("Clue from the previous round: substrates of the enzyme" in reasoning[1]) is clue
    assert ("Which enzyme? substrates of the enzyme" in encoder.texts) is clue
    assert "Which enzyme?" in encoder.texts
    assert result.extra["clue"] == ("substrates of the enzyme" if clue else "")


def test_tog2_dense_ranking_with_an_encoder():
    names = ("topicdrug", "alpha", "beta")
    descriptions = ["Topicdrug is a drug.", "Copper binding liver protein.", "Which gut enzyme cleaves glucoside bonds?"]
    g = hand_graph(names, [("topicdrug", "ra", "alpha"), ("topicdrug", "ra", "beta")], descriptions)
    backend = ScriptedBackend(rules={"For each entity": "{ra (Score: 9)}"}, default="{No}")
    q = Query("q", "explicit", "Which gut enzyme cleaves glucoside bonds?", tuple(ids(g, "topicdrug")))
    build("tog2", g, backend, gate=False, width=1, max_depth=1).answer([q])
    reasoning = next(p for p in backend.seen if p.startswith("Decide whether"))
    # beta's description is the question itself: cosine 1, ranked first, beta kept
    assert reasoning.split("References:\n")[-1].splitlines()[0] == "beta: Which gut enzyme cleaves glucoside bonds?"
    assert "(topicdrug, ra, beta)" in reasoning


# ---------------------------------------------------------------- PoG
POG_NAMES = ("topicdrug", "alpha", "beta", "gamma", "delta")
POG_EDGES = [("topicdrug", "r1", "alpha"), ("topicdrug", "r1", "beta"), ("alpha", "r2", "gamma"),
             ("beta", "r2", "delta")]


def pog_script():
    return ScriptedBackend(rules={
        "Break answering": '["find the protein", "find what it binds"]',
        "Entity: topicdrug\n": "['r1']",
        "Entity: alpha\n": "['r2']",
        "Entity: beta\n": "['r2']",
        "Entity: gamma\n": "[]",
        "Triples: topicdrug r1": "['alpha']",
        "From the information below": '{"1": "alpha found", "2": "unknown"}',
        "Knowledge Triplets: beta, r2, ['delta']": '{"A": {"Sufficient": "Yes", "Answer": "delta"}, "R": "beta binds"}',
        "Entities set to be retrieved: ['alpha']": '{"Add": "No", "Reason": "alpha is right"}',
        "Entities set to be retrieved: ['gamma']": '{"Add": "Yes", "Reason": "gamma leads nowhere"}',
        "Choose the fewest entities": "['beta']",
    }, default='{"A": {"Sufficient": "No", "Answer": "Null"}, "R": "not yet"}')


def test_pog_reflection_adds_the_entity_it_names_to_the_current_ones():
    g = hand_graph(POG_NAMES, POG_EDGES)
    backend = pog_script()
    q = Query("q", "explicit", "What does the protein bind?", tuple(ids(g, "topicdrug")))
    (result,) = build("pog", g, backend).answer([q])
    t, a, b, c, d = ids(g, *POG_NAMES)
    # the pick offered every entity of the explored subgraph not explored now, by name
    pick = next(p for p in backend.seen if p.startswith("Choose the fewest"))
    assert "Candidate Entities: ['alpha', 'beta', 'topicdrug']" in pick and "Reason: gamma leads nowhere" in pick
    # the addition keeps gamma and adds beta, along beta's own path
    assert [p.split("Entity: ")[-1].splitlines()[0] for p in backend.seen if p.startswith("Choose as few")] == \
        ["topicdrug", "alpha", "gamma", "beta"]
    assert [[t, "r1", b], [b, "r2", d]] in result.paths
    assert result.extra["reflections"] == [{"decision": "add", "entities": [b]}]
    assert result.answer == "delta" and result.answer_source == "braces" and result.extra["stopped_at"] == 3
    assert result.explored == {"1": [a, b], "2": [c, d]}
    # calls: decompose 1; depth 1: relations, entities, memory, evaluation, reflection (no) = 5;
    # depth 2: relations (gamma alone: no entity call), memory, evaluation, reflection (yes), pick = 5;
    # depth 3: relations of gamma and of beta, memory, evaluation (sufficient) = 4
    assert result.usage["calls"] == 15
    assert result.usage["prompt_tokens"] == sum(tokens(p) for p in backend.seen)
    assert_real_walks(g, q, result)


def test_pog_caps_long_entity_lists_by_similarity():
    question = "copper binding liver protein"
    names = ["topicdrug", "copper binding liver protein", "unrelated walnut", "plain granite", "copper binding liver protein"]
    names[4] = "liver protein copper binding"
    g = hand_graph(names, [("topicdrug", "r1", n) for n in names[1:]])
    backend = ScriptedBackend(rules={"Entity: topicdrug\n": "['r1']"}, default="{No}")
    q = Query("q", "explicit", question, tuple(ids(g, "topicdrug")))
    build("pog", g, backend, entity_cap=2, max_depth=1).answer([q])
    listed = next(p for p in backend.seen if p.startswith("Which entities in the list"))
    assert "['copper binding liver protein', 'liver protein copper binding']" in listed


# ---------------------------------------------------------------- StructGPT
def test_structgpt_follows_the_relation_the_script_picks():
    names = ("topicdrug", "alpha", "beta", "gamma")
    g = hand_graph(names, [("topicdrug", "ra", "alpha"), ("topicdrug", "rb", "beta"), ("beta", "rc", "gamma")])
    backend = ScriptedBackend(rules={
        "Relations already chosen: rb": "The relevant relation: rc",
        "Candidate relations:": "The relevant relation: rb",
        "(topicdrug, rb, beta)": "Need further information",
        "(beta, rc, gamma)": "The final answers: {gamma}",
    })
    q = Query("q", "explicit", "What does the drug's partner connect to?", tuple(ids(g, "topicdrug")))
    (result,) = build("structgpt", g, backend).answer([q])
    t, a, b, c = ids(g, *names)
    assert backend.seen[0].startswith('Candidate relations: "ra", "rb".')
    assert result.paths == [[[t, "rb", b], [b, "rc", c]]]
    assert result.extra["relations_followed"] == ["rb", "rc"]
    assert result.explored == {"1": [b], "2": [c]}
    assert result.answer == "gamma" and result.answer_source == "braces" and result.usage["calls"] == 4
    assert backend.batches == [1, 1, 1, 1]
    assert_real_walks(g, q, result)


# ---------------------------------------------------------------- all four
@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("baselines")
    graph = generate(scale=0.01, seed=5)
    graph.save(root / "kg")
    records = QueryGenerator(graph).generate(4, seed=3)
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return root, KnowledgeGraph.load(root / "kg"), records


@pytest.mark.parametrize("name", METHODS)
def test_one_backend_batch_per_step_across_queries(name, generated):
    _, graph, records = generated
    queries = [query_from_record(r, "explicit") for r in records[:3]]
    singles, single_batches = [], []
    for q in queries:
        backend = ScriptedBackend(rules={"": cooperative})
        singles += build(name, graph, backend).answer([q])
        single_batches.append(backend.batches)
    backend = ScriptedBackend(rules={"": cooperative})
    together = build(name, graph, backend).answer(queries)
    assert comparable(together) == comparable(singles)
    # one backend call per step: no more calls than the longest single run, the same prompts
    assert len(backend.batches) <= max(len(b) for b in single_batches)
    assert sum(backend.batches) == sum(sum(b) for b in single_batches)
    for q, result in zip(queries, together):
        assert result.usage["calls"] >= 2 and result.paths
        assert_real_walks(graph, q, result)


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("reply", ["", "%%% ??? {", "{}", "Yes yes yes {Yes} {"])
def test_garbage_and_empty_replies_do_not_crash(name, reply, generated):
    _, graph, records = generated
    queries = [query_from_record(r, "explicit") for r in records[:2]]
    results = build(name, graph, ScriptedBackend(default=reply)).answer(queries)
    for q, result in zip(queries, results):
        assert result.answer_source in ("braces", "mentioned", "stated", "best-path", "none")
        assert result.usage["calls"] >= 1
        assert_real_walks(graph, q, result)


@pytest.mark.parametrize("name", METHODS)
def test_no_gold_field_is_read(name, generated):
    _, graph, records = generated
    stripped = [{k: v for k, v in r.items() if k not in GOLD_FIELDS} for r in records]
    a = build(name, graph, ScriptedBackend(rules={"": cooperative})).answer(
        [query_from_record(r, "implicit") for r in records])
    b = build(name, graph, ScriptedBackend(rules={"": cooperative})).answer(
        [query_from_record(r, "implicit") for r in stripped])
    assert comparable(a) == comparable(b)


@pytest.mark.parametrize("name", METHODS)
def test_multiple_choice_reads_an_option_letter(name, generated):
    _, graph, records = generated
    q = query_from_record(records[0], "explicit")
    q = Query(q.id, q.level, q.text, q.topic_ids, ("aspirin", "ibuprofen", "warfarin", "heparin"))
    backend = ScriptedBackend(rules={"Reply with the letter": "{Yes} {C}", "": cooperative})
    (result,) = build(name, graph, backend, max_depth=1).answer([q])
    assert result.answer == "C" and result.answer_source == "braces"
    assert "C. warfarin" in backend.seen[-1]


@pytest.mark.parametrize("name", METHODS)
def test_answer_command_runs_each_method_end_to_end(name, generated, tmp_path, monkeypatch, capsys):
    root, graph, records = generated
    import adapath.llm

    monkeypatch.setattr(adapath.llm, "make_backend", lambda spec, *args, **kw: ScriptedBackend(rules={"": cooperative}))
    out = tmp_path / f"{name}.jsonl"
    code, _, err = run_cli(["answer", "--method", name, "--kg", root / "kg", "--queries", f"biostrat:{root / 'test.jsonl'}",
                            "--out", out, "--llm", "openai:http://127.0.0.1:9/v1#scripted", "--encoder", "hashing",
                            "--level", "all", "--batch", "3"], capsys)
    assert code == 0, err
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 3 * len(records) and {x["method"] for x in lines} == {name}
    for line in lines:
        assert line["usage"]["calls"] >= 2 and line["usage"]["prompt_tokens"] > 0
        topic = next(r for r in records if str(r["data_id"]) == line["id"])["topic_entities"]
        q = Query(line["id"], line["level"], "", tuple(int(k) for k in topic))
        assert_real_walks(graph, q, Result.from_json(line))


def test_reply_readers():
    assert s.read_scored("{Rel A (Score: 0.4)}\n2. {rel b (score: .5)} {c (Score: 1)}", ["rel a", "Rel B", "d"]) == \
        [(0, 0.4), (1, 0.5)]
    assert s.read_scores("0.2, 0.8", 2) == [0.2, 0.8] and s.read_scores("0.2", 2) is None
    names = ["breast cancer", "cancer", "aspirin"]
    assert s.read_names("['cancer', 'aspirin']", names) == [1, 2]
    assert s.read_names("I pick breast cancer here", names) == [0]
    assert s.read_names("nothing", names) == []
    assert s.read_verdict("{Yes}. The answer is {x}") and not s.read_verdict("{No} {yes}")
    assert s.read_verdict("yes, enough") and not s.read_verdict("garbage")
    assert s.braced_text("{No}. Missing: {the gene}") == "the gene"


@pytest.mark.parametrize("name, param, message", [
    ("tog", "exhausted=maybe", "choose knowledge or paths"),
    ("tog2", "ranker=cosine", "choose dense or bm25"),
    ("pog", "entity_cap=0", "must be at least 1"),
    ("structgpt", "max_triples=many", "expected an integer"),
])
def test_bad_parameters_get_one_line(name, param, message, generated, tmp_path, monkeypatch, capsys):
    root, _, _ = generated
    import adapath.llm

    monkeypatch.setattr(adapath.llm, "make_backend", lambda spec, *args, **kw: ScriptedBackend(rules={"": cooperative}))
    out = tmp_path / "r.jsonl"
    code, _, err = run_cli(["answer", "--method", name, "--kg", root / "kg", "--queries", f"biostrat:{root / 'test.jsonl'}",
                            "--out", out, "--llm", "openai:http://127.0.0.1:9/v1#scripted", "--encoder", "hashing",
                            "--param", param], capsys)
    assert code == 2 and message in err and "Traceback" not in err
    assert not out.exists()


def three_hop_structgpt_world():
    """topicdrug -ra- alpha -rb- beta -rc- gamma (the 3-hop gold path), with a decoy at each step;
    the script picks the gold relation at each step and answers once it reads (beta, rc, gamma)."""
    names = ("topicdrug", "alpha", "beta", "gamma", "decoy1", "decoy2", "decoy3")
    g = hand_graph(names, [("topicdrug", "ra", "alpha"), ("alpha", "rb", "beta"), ("beta", "rc", "gamma"),
                           ("topicdrug", "rd", "decoy1"), ("alpha", "rd", "decoy2"), ("beta", "rd", "decoy3")])
    backend = ScriptedBackend(rules={
        "Relations already chosen: ra, rb": "The relevant relation: rc",
        "Relations already chosen: ra": "The relevant relation: rb",
        "Candidate relations:": "The relevant relation: ra",
        "(beta, rc, gamma)": "The final answers: {gamma}",
        "Read the knowledge-graph triples": "Need further information",
    }, default="{unknown}")
    q = Query("q", "explicit", "What does the partner of the drug's target connect to?", tuple(ids(g, "topicdrug")))
    return g, backend, q


def test_structgpt_reaches_a_three_hop_gold_path_by_default():
    g, backend, q = three_hop_structgpt_world()
    (result,) = build("structgpt", g, backend).answer([q])
    t, a, b, c = ids(g, "topicdrug", "alpha", "beta", "gamma")
    assert result.paths == [[[t, "ra", a], [a, "rb", b], [b, "rc", c]]]
    assert result.answer == "gamma" and result.answer_source == "braces"
    assert result.extra["relations_followed"] == ["ra", "rb", "rc"] and result.usage["calls"] == 6  # 3 x (pick, read)
    assert_real_walks(g, q, result)


def test_structgpt_d2_keeps_the_official_two_steps():
    g, backend, q = three_hop_structgpt_world()
    (result,) = build("structgpt-d2", g, backend).answer([q])
    assert result.extra["relations_followed"] == ["ra", "rb"]
    assert max(len(p) for p in result.paths) == 2 and result.answer != "gamma"
    assert result.usage["calls"] == 5  # 2 x (pick, read), then the answer from the model's own knowledge
