"""KGARevion, Chain-of-Knowledge and ToG-2 as their authors run them: the stage sequence and
call count of one scripted question against each original's control flow, and the
KG-embedding review scorer against hand-worked numbers and a planted graph."""

import numpy as np
import pytest

from adapath.contract import Query
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import ScriptedBackend
from adapath.llm.base import count_tokens
from adapath.methods.base import MethodContext
from adapath.methods.kgarevion import KGARevion
from adapath.methods.registry import all_methods
from adapath.retrieval.dense import HashingEncoder
from adapath.retrieval.kge import KGEConfig, TripletScorer, best_threshold, scorer_for_graph, train

NODES = [("aspirin", 0, ""), ("PTGS1", 1, ""), ("PTGS2", 1, ""), ("headache", 2, "Headache is pain in the head."),
         ("bleeding", 2, ""), ("warfarin", 0, "Warfarin is an anticoagulant."), ("VKORC1", 1, "")]
EDGES = [(0, 0, 1), (0, 0, 2), (0, 1, 3), (0, 2, 4), (5, 2, 4), (5, 0, 6)]


@pytest.fixture(scope="module")
def graph():
    head, rel, tail = zip(*EDGES)
    return KnowledgeGraph.from_edges(
        np.array(head), np.array(tail), np.array(rel), node_type=np.array([t for _, t, _ in NODES]),
        node_id=np.arange(100, 100 + len(NODES)), names=[n for n, _, _ in NODES],
        descriptions=[d for _, _, d in NODES], type_names=("drug", "gene/protein", "disease"),
        relation_names=("target", "indication", "side effect"), relation_descriptions=("", "", ""))


def build(name, graph, backend, **params):
    spec = all_methods()[name]
    return spec.make(MethodContext(graph, None, backend, "hashing",
                                   params=spec.resolve_params({k: str(v) for k, v in params.items()})))


# ---------------------------------------------------------------- the review scorer
def test_distmult_score_and_threshold_by_hand():
    entity = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]], dtype=np.float32)
    relation = np.array([[2.0, 1.0]], dtype=np.float32)
    scorer = TripletScorer(entity, relation, threshold=1.0, holdout_accuracy=1.0)
    # by hand: e0*w*e1 = 1*2*3 + 2*1*(-1) = 4; e0*w*e2 = 1*2*0.5 + 2*1*0.5 = 2; symmetric
    assert scorer.score([0, 0, 1], [0, 0, 0], [1, 2, 0]).tolist() == [4.0, 2.0, 4.0]
    assert scorer.best([0], 0, [1, 2]) == (0, 1, 4.0) and scorer.accepts(2.0) and not scorer.accepts(0.5)
    # positives 3, 5; negatives 1, 4: cutting between 1 and 3 misclassifies only the 4 (3 of 4 right);
    # cutting between 4 and 5 misclassifies only the 3; the lower cut wins the tie: (1 + 3) / 2
    assert best_threshold(np.array([3.0, 5.0]), np.array([1.0, 4.0])) == (2.0, 0.75)
    assert best_threshold(np.array([3.0, 5.0]), np.array([1.0, 2.0])) == (2.5, 1.0)


def planted_graph():
    """Two communities: each drug of a community targets every gene of it, and nothing else."""
    drugs, genes = 12, 12
    head, tail = [], []
    for d in range(drugs):
        for g in range(genes):
            if d % 2 == g % 2:
                head.append(d)
                tail.append(drugs + g)
    types = [0] * drugs + [1] * genes
    return KnowledgeGraph.from_edges(
        np.array(head), np.array(tail), np.zeros(len(head), dtype=np.int64), node_type=np.array(types),
        node_id=np.arange(drugs + genes), names=[f"n{i}" for i in range(drugs + genes)],
        descriptions=[""] * (drugs + genes), type_names=("drug", "gene/protein"), relation_names=("target",),
        relation_descriptions=("",))


def test_kge_separates_true_triplets_from_corrupted_ones_and_caches(tmp_path):
    g = planted_graph()
    config = KGEConfig(dim=16, epochs=60, batch=32, holdout=0.2, seed=3)
    scorer = train(g, config)
    assert scorer.holdout_accuracy >= 0.9
    # every within-community pair (true or held out) beats every cross-community pair
    same = [(d, 12 + x) for d in range(12) for x in range(12) if d % 2 == x % 2]
    cross = [(d, 12 + x) for d in range(12) for x in range(12) if d % 2 != x % 2]
    s_same = scorer.score([a for a, _ in same], [0] * len(same), [b for _, b in same])
    s_cross = scorer.score([a for a, _ in cross], [0] * len(cross), [b for _, b in cross])
    assert np.mean(s_same >= scorer.threshold) > 0.9 and np.mean(s_cross < scorer.threshold) > 0.9
    # seeded: the same settings train the same model
    again = train(g, config)
    np.testing.assert_allclose(again.entity, scorer.entity)
    # cached as npz beside the graph, and read back
    cached = scorer_for_graph(g, tmp_path, config)
    files = list((tmp_path / "cache").rglob("scorer.npz"))
    assert len(files) == 1
    loaded = TripletScorer.load(files[0])
    np.testing.assert_allclose(loaded.entity, cached.entity)
    assert loaded.threshold == cached.threshold


# ---------------------------------------------------------------- KGARevion
def test_kgarevion_stages_and_calls(graph):
    """Original flow for a free-text question: extraction (asked again while unreadable), one
    generation, one revision per rejected triplet per round, the answer."""
    entity = np.zeros((len(NODES), 2), dtype=np.float32)
    entity[0], entity[3], entity[4] = [1, 0], [1, 0], [0, 1]  # aspirin~headache: 1; aspirin~bleeding: 0
    scorer = TripletScorer(entity, np.ones((3, 2), dtype=np.float32), threshold=0.5, holdout_accuracy=1.0)
    tries = iter(["I think aspirin.", '{"medical_terminologies": ["aspirin", "headache"]}'])
    backend = ScriptedBackend(rules={
        "medical entities named": lambda p: next(tries),
        "Write knowledge triplets": '{"Triplets": [["aspirin", "side effect", "bleeding"], '
                                    '["aspirin", "indication", "headaches"], ["aspirin", "target", "COX-9"]]}',
        "Revise the head": '{"Revised_Triplets": [["aspirin", "indication", "headache"]]}'}, default="{headache}")
    method = KGARevion(graph, HashingEncoder(), backend, scorer)
    (result,) = method.answer([Query("q", "explicit", "Which disease does aspirin treat?", (100,))])
    assert backend.batches == [1, 1, 1, 1, 1]  # extract, extract again, generate, revise, answer
    assert result.usage["calls"] == 5 and result.extra["entities"] == ["aspirin", "headache"]
    # the graph holds (aspirin, side effect, bleeding) but the scorer gives it 0: rejected (no oracle);
    # "headaches" links to headache and scores 1: accepted; COX-9 links to nothing: kept unjudged
    assert [t["status"] for t in result.extra["triplets"]] == ["rejected", "accepted", "unlinked"]
    revise = next(p for p in backend.seen if p.startswith("Revise the head"))
    assert "(aspirin, side effect, bleeding)" in revise and "Question: Which disease" in revise
    assert "knowledge graph holds" not in revise and "(aspirin, target" not in revise  # triplet and question only
    assert "Medical entities: aspirin, headache" in next(p for p in backend.seen if "Write knowledge" in p)
    assert result.paths == [[[100, "indication", 103]]]  # accepted triplets the graph holds


def test_kgarevion_builds_its_scorer(graph):
    backend = ScriptedBackend(default="{headache}")
    method = build("kgarevion", graph, backend, kge_epochs=2)
    assert method.scorer is not None and method.scorer.entity.shape == (len(NODES), 64)
    assert "oracle" in all_methods()["kgarevion"].summary


# ---------------------------------------------------------------- Chain-of-Knowledge
def chain(answer, first="aspirin blocks PTGS1.", second="aspirin is used for headache."):
    return f"First, {first} Second, {second} The answer is {answer}."


def test_cok_gate_answers_without_retrieval_when_samples_agree(graph):
    answers = ["headache"] * 3 + ["bleeding"] * 2 + ["migraine"] * 5  # the first five vote: 3/5 >= 0.5
    backend = ScriptedBackend(rules={
        "Available Domains": "medical, biology",
        "Q: Which disease does aspirin treat?": lambda p, params: chain(answers[params.seed - 42])})
    (result,) = build("cok", graph, backend).answer([Query("q", "explicit", "Which disease does aspirin treat?",
                                                           (100,))])
    assert len(backend.batches) == 2  # domains; one request for ten samples
    assert [p.temperature for p in backend.params_seen[1:]] == [0.7] * 10  # ten samples, seeds 42 to 51
    assert result.usage["calls"] == 2 and not result.extra["retrieved"]
    # one request for ten samples: the prompt's tokens once, all ten completions' tokens
    prompts, replies = backend.seen[:2], [chain(a) for a in answers]
    assert result.usage["prompt_tokens"] == sum(count_tokens(p) for p in prompts)
    assert result.usage["completion_tokens"] == count_tokens("medical, biology") + sum(map(count_tokens, replies))
    assert (result.answer, result.extra["stages"]["consistency"]) == ("headache", 0.6)
    assert result.extra["stages"]["domains"] == ["medical", "biology"] and result.paths == []


def test_cok_four_stages_when_samples_disagree(graph):
    answers = ["headache", "bleeding", "migraine", "fever", "pain"] * 2  # 1/5 < 0.5

    def reasoning(prompt, params):
        if prompt.endswith("The answer is "):
            return "headache."
        if prompt.endswith("Second, "):
            return "aspirin is indicated for headache. The answer is headache."
        return chain(answers[params.seed - 42])

    backend = ScriptedBackend(rules={
        "Available Domains": "medical",
        "Write a question that asks": lambda p: ("Which gene does aspirin target? {aspirin}" if "blocks" in p
                                                 else "Which disease is aspirin an indication for? {Aspirin}"),
        "correct them using the knowledge": lambda p: ("aspirin blocks PTGS1 and PTGS2." if "blocks" in p
                                                       else "aspirin is indicated for headache."),
        "Q: Which disease does aspirin treat?": reasoning})
    (result,) = build("cok", graph, backend, facts=2, alpha=0.0).answer(
        [Query("q", "explicit", "Which disease does aspirin treat?", (103,))])
    # domains, samples, query 1, edit 1, rationale 2, query 2, edit 2, consolidation
    assert len(backend.batches) == 8 and result.usage["calls"] == 8 and len(backend.params_seen) == 17
    stages = result.extra["stages"]
    # retrieval reads the braced entity's facts (aspirin, not the topic headache), ranked by BM25 for the
    # generated question: "Which gene does aspirin target?" shares "target" with the two target facts
    assert stages["rationale_1"]["facts"] == [["aspirin", "target", "PTGS1"], ["aspirin", "target", "PTGS2"]]
    # the second query shares "indication" with one fact; the rest tie on "aspirin" and keep graph order
    assert stages["rationale_2"]["facts"] == [["aspirin", "indication", "headache"], ["aspirin", "target", "PTGS1"]]
    edit = [p for p in backend.seen if "correct them using the knowledge" in p][0]
    assert "Knowledge: aspirin target PTGS1. aspirin target PTGS2." in edit
    final = backend.seen[-1]
    assert final.endswith("First, aspirin blocks PTGS1 and PTGS2. Second, aspirin is indicated for headache. "
                          "The answer is ")
    assert (result.answer, result.answer_source, result.extra["retrieved"]) == ("headache", "stated", True)
    assert [100, "indication", 103] in [p[0] for p in result.paths]


# ---------------------------------------------------------------- ToG-2
def test_tog2_gate_answers_at_eighty_percent(graph):
    q = Query("q", "explicit", "Which disease does aspirin treat?", (100,))
    for agree, calls in ((8, 1), (7, None)):
        answers = ["headache"] * agree + ["bleeding"] * (10 - agree)
        backend = ScriptedBackend(rules={"Q: Which disease": lambda p, params, answers=answers: chain(answers[params.seed - 42])},
                                  default="{No}")
        (result,) = build("tog2", graph, backend, ranker="bm25", max_depth=1).answer([q])
        assert [p.temperature for p in backend.params_seen[:10]] == [0.7] * 10  # the gate's ten samples
        if calls is not None:
            assert len(backend.batches) == 1 and result.usage["calls"] == 1
            assert (result.answer, result.extra["stop"], result.extra["gate_score"]) == ("headache", "self-consistency", 0.8)
        else:  # 7/10 < 0.8: the graph search runs (relation pruning picks nothing, so the own-knowledge answer)
            assert result.extra["stop"] == "no-candidates" and result.usage["calls"] == 3


def test_tog2_gives_bare_nodes_their_facts(graph):
    backend = ScriptedBackend(default="{No}")
    method = build("tog2", graph, backend, gate=False)
    # PTGS1 has no description: its name, type and typed one-hop fact become its text
    assert method.chunks(1) == ["PTGS1 is a gene/protein. PTGS1 target aspirin (drug)."]
    assert method.chunks(3) == ["Headache is pain in the head."]
    assert build("tog2", graph, backend, gate=False, bare_nodes="skip").chunks(1) == []
    # reachable: aspirin's targets are candidates now (ToG-2 would drop them without a page)
    q = Query("q", "explicit", "Which gene does aspirin target?", (100,))
    backend = ScriptedBackend(rules={"For each entity": "Entity 1: aspirin\n{target (Score: 9)}"}, default="{No}")
    (result,) = build("tog2", graph, backend, gate=False, ranker="bm25", max_depth=1).answer([q])
    assert {101, 102} <= set(result.explored.get("1", []))
