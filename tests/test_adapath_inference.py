"""AdaPath inference on hand-made graphs and banks: level-matched retrieval, the full ranked
meta-path list, two-topic junctions, the beam's meta-path shares, shorter completed paths and
the walk scorer (its scores against an enumeration of every walk)."""

import json
import math

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from adapath.bank.index import BankIndex
from adapath.contract import Query
from adapath.engine.graph import KnowledgeGraph
from adapath.engine.metapath import MetaPath
from adapath.engine.traverse import Candidate
from adapath.methods.adapath import AdaPath, AdaPathConfig, shared_beam
from adapath.methods.guided.plan import Batch
from adapath.methods.level_banks import LevelBanks
from adapath.methods.walk_scorer import WalkConfig, WalkQuery, WalkScorer
from adapath.retrieval.dense import HashingEncoder

TYPES = ("drug", "disease", "gene/protein", "effect/phenotype")
RELATIONS = ("indication", "contraindication", "associated with", "target", "parent-child", "side effect",
             "synergistic interaction")


def make_graph(nodes: list[tuple[str, str, str]], edges: list[tuple[int, str, int]]) -> KnowledgeGraph:
    """nodes: (name, type, description); edges: (head, relation, tail)."""
    return KnowledgeGraph.from_edges(
        np.array([h for h, _, _ in edges]), np.array([t for _, _, t in edges]),
        np.array([RELATIONS.index(r) for _, r, _ in edges]),
        node_type=np.array([TYPES.index(t) for _, t, _ in nodes]), node_id=np.arange(100, 100 + len(nodes)),
        names=[n for n, _, _ in nodes], descriptions=[d for _, _, d in nodes], type_names=TYPES,
        relation_names=RELATIONS, relation_descriptions=tuple(f"{r} relation" for r in RELATIONS))


def make_bank(path, queries: list[dict], paths: list[tuple[str, str, str, int]]):
    """queries: id, texts per level, topic_type, answer_type, hops; paths: (query id, pair,
    meta-path, rank)."""
    columns = {k: [q[k] for q in queries] for k in ("id", "explicit", "implicit", "bare", "topic_type",
                                                    "answer_type", "hops")}
    columns.update(topic_id=[1] * len(queries), answer_id=[2] * len(queries), template_id=["t"] * len(queries))
    pq.write_table(pa.table(columns), path / "queries.parquet")
    pq.write_table(pa.table({"query_id": [p[0] for p in paths], "pair": [p[1] for p in paths],
                             "hop": [MetaPath.parse(p[2]).hops for p in paths], "rank": [p[3] for p in paths],
                             "metapath": [p[2] for p in paths]}), path / "paths.parquet")
    (path / "manifest.json").write_text(json.dumps({"parameters": {"level": "explicit"}}))
    return path


def training(qid, text, topic_type, answer_type, hops, implicit=None, bare=None):
    return {"id": qid, "explicit": text, "implicit": implicit or text, "bare": bare or text,
            "topic_type": topic_type, "answer_type": answer_type, "hops": hops}


# The settings these tests were written against (AdaPathConfig's defaults until `adapath answer`'s
# became its defaults): the paper's beam, meta-paths cut by the control signals, three of them.
PAPER_BEAM = {"scorer": "beam", "control": "filter", "metapaths": 3}


def answer(graph, bank, query: Query, **config) -> dict:
    method = AdaPath(graph, bank, HashingEncoder(), None, AdaPathConfig(**{**PAPER_BEAM, **config}))
    return method.answer([query])[0].to_json()


def ends(result: dict, graph) -> list[str]:
    return [graph.name(graph.index_of([p[-1][2]])[0]) for p in result["paths"]]


# ---------------------------------------------------------------------------- retrieval
def test_retrieval_matches_the_question_level(tmp_path):
    """An implicit question is compared with the bank's implicit texts unless a level is fixed."""
    graph = make_graph([("aspirin", "drug", ""), ("pain", "disease", ""), ("GENE1", "gene/protein", "")],
                       [(0, "indication", 1), (0, "target", 2)])
    bank = make_bank(tmp_path, [
        training("a", "which disease does the drug treat", "drug", "disease", 1,
                 implicit="what protein does the compound bind"),
        training("b", "which protein does the drug target", "drug", "gene/protein", 1,
                 implicit="what illness does the compound relieve"),
        training("c", "unrelated words entirely", "drug", "disease", 1)],
        [("a", "direct", "drug -[indication]- disease", 0), ("b", "direct", "drug -[target]- gene/protein", 0),
         ("c", "direct", "drug -[indication]- disease", 0)])
    query = Query("q", "implicit", "what illness does the compound relieve", (100,))
    same = answer(graph, LevelBanks(bank, HashingEncoder()), query)
    fixed = answer(graph, LevelBanks(bank, HashingEncoder(), "explicit"), query)
    assert same["retrieved"][0]["id"] == "b"
    assert fixed["retrieved"][0]["id"] != "b"
    # Eq. 6 by hand on the implicit texts: the same similarity BankIndex gives at that level
    index = BankIndex(bank, HashingEncoder(), level="implicit")
    encoder = HashingEncoder()
    by_hand = index.retrieve(encoder.encode([query.text]), [query.text], ["drug"])[0]
    assert [r["id"] for r in same["retrieved"]] == [index.ids[r.index] for r in by_hand]
    with pytest.raises(Exception, match="retrieval_level"):
        LevelBanks(bank, HashingEncoder(), "sideways")


def test_ranked_metapaths_are_the_whole_pooled_list_before_filtering(tmp_path):
    graph = make_graph([("aspirin", "drug", ""), ("pain", "disease", ""), ("GENE1", "gene/protein", "")],
                       [(0, "indication", 1), (0, "target", 2)])
    bank = make_bank(tmp_path, [
        training("a", "which disease does aspirin treat", "drug", "disease", 1),
        training("b", "which disease does the drug treat for pain", "drug", "disease", 1),
        training("c", "which gene does the drug target", "drug", "gene/protein", 1),
        training("d", "zzz", "drug", "disease", 1)],
        [("a", "direct", "drug -[indication]- disease", 0), ("b", "direct", "drug -[indication]- disease", 0),
         ("b", "direct", "drug -[contraindication]- disease", 1), ("c", "direct", "drug -[target]- gene/protein", 0),
         ("d", "direct", "drug -[target]- gene/protein", 0)])
    query = Query("q", "explicit", "which disease does aspirin treat", (100,))
    result = answer(graph, LevelBanks(bank, HashingEncoder()), query)
    sims = {r["id"]: r["similarity"] for r in result["retrieved"]}
    held = {"a": ["drug -[indication]- disease"],
            "b": ["drug -[indication]- disease", "drug -[contraindication]- disease"],
            "c": ["drug -[target]- gene/protein"], "d": ["drug -[target]- gene/protein"]}
    expected = {}
    for qid, sim in sims.items():
        for mp in held[qid]:
            expected[mp] = expected.get(mp, 0.0) + sim
    ranked = result["ranked_metapaths"]
    assert [m["metapath"] for m in ranked] == sorted(expected, key=lambda m: (-expected[m], m))
    assert [m["score"] for m in ranked] == pytest.approx([expected[m["metapath"]] for m in ranked], abs=1e-6)
    # the target meta-path ends in the wrong type: ranked, but filtered out
    assert "drug -[target]- gene/protein" in [m["metapath"] for m in ranked]
    assert [m["metapath"] for m in result["metapaths"]] == ["drug -[indication]- disease"]


# ---------------------------------------------------------------------------- two topics
def junction_world(tmp_path, chains: bool = True):
    """Zolpidem is contraindicated in three disorders; GENEX is associated with the beta one
    only. The question's words favour the alpha one."""
    graph = make_graph([
        ("Zolpidem", "drug", "a sedative"), ("alpha disorder", "disease", "swelling of the eyes and eyelids"),
        ("beta disorder", "disease", "a condition"), ("gamma disorder", "disease", "a condition"),
        ("GENEX", "gene/protein", "a gene"), ("unrelated gene", "gene/protein", "")],
        [(0, "contraindication", 1), (0, "contraindication", 2), (0, "contraindication", 3),
         (4, "associated with", 2), (5, "associated with", 1), (0, "target", 5)])
    paths = [("j", "direct", "drug -[contraindication]- disease", 0),
             ("o", "direct", "drug -[contraindication]- disease", 0)]
    if chains:
        paths.append(("j", "chain", "drug -[contraindication]- disease -[associated with]- gene/protein", 0))
    bank = make_bank(tmp_path, [
        training("j", "which disorder is contraindicated with the drug and associated with the gene",
                 "drug", "disease", 1),
        training("o", "zzz", "drug", "disease", 1)], paths)
    query = Query("q", "explicit", "which disorder with swelling of the eyes is contraindicated with Zolpidem and "
                  "associated with GENEX", (100, 104))
    return graph, bank, query


@pytest.mark.parametrize("scorer", ["beam", "walk"])
@pytest.mark.parametrize("chains", [True, False])
def test_two_topics_meet_at_the_answer(tmp_path, scorer, chains):
    graph, bank, query = junction_world(tmp_path, chains)
    banks = LevelBanks(bank, HashingEncoder())
    first_only = answer(graph, banks, query, scorer=scorer, junction=False)
    both = answer(graph, banks, query, scorer=scorer)
    assert first_only["answer"] == "alpha disorder"  # the first topic alone: the question's words win
    assert both["answer"] == "beta disorder"  # the disorder both topics reach
    assert [[104, "associated with", 102]] in both["paths"]  # the second topic's step, a real edge


def test_junction_relation_comes_from_the_bank_chains(tmp_path):
    graph, bank, query = junction_world(tmp_path)
    method = AdaPath(graph, LevelBanks(bank, HashingEncoder()), HashingEncoder(), None, AdaPathConfig(**PAPER_BEAM))
    plan = method.planner.plans(Batch([query], HashingEncoder().encode([query.text]), [None]))[0]
    assert plan.junction == [(RELATIONS.index("associated with"), TYPES.index("gene/protein"),
                              TYPES.index("disease"), 1.0)]


# ---------------------------------------------------------------------------- shorter paths
def shorter_world(tmp_path):
    """The bank's queries are 2-hop (indication, then a child disease), but the question asks
    for the disease Aspirin treats: one hop."""
    graph = make_graph([("Aspirin", "drug", "a drug"), ("migraine", "disease", "a throbbing headache disorder"),
                        ("cluster condition", "disease", "a condition"), ("other condition", "disease", "a condition")],
                       [(0, "indication", 1), (1, "parent-child", 2), (1, "parent-child", 3)])
    bank = make_bank(tmp_path, [training("a", "which subtype of the disease the drug treats", "drug", "disease", 2),
                                training("z", "zzz", "drug", "disease", 2)],
                     [("a", "direct", "drug -[indication]- disease -[parent-child]- disease", 0),
                      ("z", "direct", "drug -[indication]- disease -[parent-child]- disease", 0)])
    return graph, bank, Query("q", "explicit", "which throbbing headache disorder does Aspirin treat", (100,))


@pytest.mark.parametrize("scorer", ["beam", "walk"])
def test_shorter_completed_paths_of_the_answer_type_are_candidates(tmp_path, scorer):
    graph, bank, query = shorter_world(tmp_path)
    banks = LevelBanks(bank, HashingEncoder())
    exact = answer(graph, banks, query, scorer=scorer, shorter=False)
    kept = answer(graph, banks, query, scorer=scorer)
    assert exact["control"]["hops"] == 2
    assert "migraine" not in ends(exact, graph) and exact["answer"] != "migraine"
    assert [[100, "indication", 101]] in kept["paths"]
    assert kept["answer"] == "migraine"


# ---------------------------------------------------------------------------- the beam's shares
def test_shared_beam_hand_worked():
    flat = [(Candidate(0, node, 0, ms), cos) for node, ms, cos in
            [(10, (1,), 0.9), (11, (1,), 0.8), (12, (1,), 0.7), (20, (0,), 0.2), (21, (0,), 0.1), (30, (0, 1), 0.05)]]
    # scores 3 and 1 over a beam of 3: shares 2.25 / 0.75 -> slots 2 / 1 (largest remainder)
    picked = [c.node for c, _ in shared_beam(flat, [3.0, 1.0], 3)]
    assert picked == [20, 21, 10]
    # without shares the cosine order alone would take meta-path 1's three candidates
    assert sorted(c.node for c, _ in sorted(flat, key=lambda x: -x[1])[:3]) == [10, 11, 12]
    # a meta-path with fewer candidates than slots: the rest by meta-path weight, then cosine
    assert [c.node for c, _ in shared_beam(flat[:3] + flat[5:], [3.0, 1.0], 3)] == [30, 10, 11]


def test_beam_keeps_the_better_ranked_metapaths_share(tmp_path):
    """The best-ranked meta-path goes through genes the question does not name; a worse-ranked
    one through diseases it does. Without shares every slot of a beam of 2 goes to the
    diseases and the gene route never completes."""
    graph = make_graph([
        ("Aspirin", "drug", ""), ("GENE1", "gene/protein", ""), ("GENE2", "gene/protein", ""),
        ("headache migraine", "disease", "headache migraine"), ("headache cluster", "disease", "headache cluster"),
        ("headache tension", "disease", "headache tension"), ("stroke", "disease", "headache stroke disease")],
        [(0, "target", 1), (0, "target", 2), (1, "associated with", 6), (0, "indication", 3), (0, "indication", 4),
         (0, "indication", 5), (3, "parent-child", 4), (4, "parent-child", 5)])
    bank = make_bank(tmp_path, [
        training("a", "which disease is linked to a protein the drug binds headache", "drug", "disease", 2),
        training("b", "which disease relates to a disease the drug treats", "drug", "disease", 2),
        training("z", "zzz", "drug", "disease", 2)],
        [("a", "direct", "drug -[target]- gene/protein -[associated with]- disease", 0),
         ("b", "direct", "drug -[indication]- disease -[parent-child]- disease", 0),
         ("z", "direct", "drug -[indication]- disease -[parent-child]- disease", 0)])
    query = Query("q", "explicit", "which headache disease is linked to a protein the drug Aspirin binds", (100,))
    banks = LevelBanks(bank, HashingEncoder())
    alone = answer(graph, banks, query, beam=2, share=False)
    shared = answer(graph, banks, query, beam=2)
    scores = {m["metapath"]: m["score"] for m in shared["metapaths"]}
    gene_route = "drug -[target]- gene/protein -[associated with]- disease"
    assert max(scores, key=scores.get) == gene_route
    walked = lambda r: {tuple(step[1] for step in p) for p in r["paths"]}  # noqa: E731
    assert ("target", "associated with") not in walked(alone)
    assert ("target", "associated with") in walked(shared)


# ---------------------------------------------------------------------------- the walk scorer
class FixedEmbeddings:
    def __init__(self, vectors):
        self.vectors = vectors

    def get(self, nodes):
        return self.vectors[np.asarray(nodes)]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("lexical, focus", [(0.0, 0.0), (2.0, 1.5)])
def test_walk_scorer_matches_an_enumeration_of_every_walk(seed, lexical, focus):
    from tests.test_walks import random_graph, reference_walks, walk_weight

    graph, edge_list, node_type = random_graph(seed, n=22, edges=90)
    rng = np.random.default_rng(seed)
    dim = 8
    vectors = rng.normal(size=(graph.num_nodes, dim))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    question = rng.normal(size=(1, dim))
    question /= np.linalg.norm(question)
    bm25 = rng.uniform(0, 1, (graph.num_nodes, 1))
    wh = rng.normal(size=(1, dim))
    wh /= np.linalg.norm(wh)
    config = WalkConfig(damping=0.5, text=1.5, embed=2.0, end=3.0, lexical=lexical, focus=focus, answers=4,
                        walks_per_answer=2)
    drugs, genes = np.flatnonzero(node_type == 0), np.flatnonzero(node_type == 1)
    topic, second = int(drugs[0]), int(genes[-1])
    lanes = [((0, 2), (0, 1, 2), 0.6), ((3,), (0, 2), 0.3), ((0, 1, 2), (0, 1, 1, 2), 0.1)]
    query = WalkQuery(topic, lanes, (topic, second), second, [(2, 1, 2, 1.0)])
    outcome = WalkScorer(graph, FixedEmbeddings(vectors), config).score([query], bm25, question, wh)[0]

    cos = vectors @ question[0]
    phi = np.exp(config.text * bm25[:, 0] + config.embed * cos)
    share, heaviest = {}, {}
    for rels, types, weight in lanes:
        walks, d_out, d_in = reference_walks(edge_list, node_type, topic, rels, types, {topic, second})
        weights = [walk_weight(w, d_out, d_in, phi, 0.5) for w in walks]
        total = sum(weights)
        for w, value in zip(walks, weights):
            share[w[-1]] = share.get(w[-1], 0.0) + weight * value / total
            heaviest[w[-1]] = max(heaviest.get(w[-1], 0.0), weight * value / total)
    walks, d_out, d_in = reference_walks(edge_list, node_type, second, (2,), (1, 2), {topic, second})
    meet = {}
    for w in walks:
        meet[w[-1]] = meet.get(w[-1], 0.0) + walk_weight(w, d_out, d_in, phi, 0.5)
    total = sum(meet.values())
    assert set(meet) & set(share), "the graph should let the two topics meet"
    met = [v for v in share if v in meet]
    best_bm25 = max(bm25[v, 0] for v in met)  # the lexical term is relative to the best candidate's
    score = {v: share[v] * meet[v] / total * np.exp(config.end * cos[v] + lexical * bm25[v, 0] / best_bm25
                                                    + focus * float(vectors[v] @ wh[0])) for v in met}
    expected = sorted(score.items(), key=lambda item: (-item[1], item[0]))[:4]
    assert [v for v, _ in outcome.candidates] == [v for v, _ in expected]
    assert [s for _, s in outcome.candidates] == pytest.approx([s for _, s in expected], rel=1e-9)
    # paths: real walks of a lane into the top candidates, the heaviest one first for each
    for v, _ in outcome.candidates:
        mine = [(nodes, rels) for nodes, rels in outcome.paths if nodes[-1] == v]
        assert mine
        nodes, rels = mine[0]
        lane = next(lane for lane in lanes if lane[0] == tuple(rels))
        walks, d_out, d_in = reference_walks(edge_list, node_type, topic, lane[0], lane[1], {topic, second})
        assert nodes in walks
        total = sum(walk_weight(w, d_out, d_in, phi, 0.5) for w in walks)
        assert lane[2] * walk_weight(nodes, d_out, d_in, phi, 0.5) / total == pytest.approx(heaviest[v], rel=1e-9)
    assert {tuple(p[0]) for p in outcome.junction_paths} == {(second, v) for v, _ in outcome.candidates}
    for depth, nodes in outcome.explored.items():
        assert 1 <= depth <= 3 and len(nodes) <= config.explore


def test_lexical_term_separates_rivals_on_one_path_by_hand_worked_bm25():
    """Three transporters hang off one drug by the same relation with the same degrees and
    one embedding, so the walk share and every cosine tie; only the question's words can
    separate them. BM25 (k1 = 1.5, b = 0, Lucene's variant) worked by hand over the five node
    texts, min-max normalized over the graph (the topic scores highest, an unrelated gene 0),
    then taken relative to the best candidate."""
    from adapath.retrieval.bm25 import TextIndex, minmax_columns, node_texts

    graph = make_graph([
        ("Cefazolin", "drug", "antibiotic cleared as an organic anion"),
        ("SLC22A6", "gene/protein", "sodium dependent organic anion transport"),
        ("SLC22A5", "gene/protein", "organic cation transport"),
        ("SLC22A1", "gene/protein", "organic cation transport liver"),
        ("ALB", "gene/protein", "albumin")],
        [(0, "target", 1), (0, "target", 2), (0, "target", 3)])  # ALB: no edge, a text only
    question = "which organic anion mover takes up cefazolin"
    # the question's tokens in the texts: organic (4 of 5 texts), anion (2), cefazolin (1)
    n, k1 = 5, 1.5
    idf = {df: math.log(1 + (n - df + 0.5) / (df + 0.5)) for df in (1, 2, 4)}
    once = 1 / (1 + k1)  # term frequency 1 with b = 0 (Lucene's form: no k1 + 1 above)
    raw = np.array([idf[4] + idf[2] + idf[1], idf[4] + idf[2], idf[4], idf[4], 0.0]) * once
    index = TextIndex.build(node_texts(graph), k1=k1, b=0.0)
    assert index.scores([question])[:, 0] == pytest.approx(raw, rel=1e-6)
    relative = raw[1:4] / raw[1]  # SLC22A6 matches best among the candidates

    vectors = np.ones((5, 2)) / np.sqrt(2.0)
    bm25 = minmax_columns(index.scores([question]))
    query = WalkQuery(0, [((3,), (0, 2), 1.0)], (0,), question=question)
    q = np.array([[1.0, 0.0]])
    for lexical in (0.0, 1.5):
        config = WalkConfig(text=0.0, embed=1.0, end=2.0, lexical=lexical, answers=3)
        outcome = WalkScorer(graph, FixedEmbeddings(vectors), config).score([query], bm25, q)[0]
        got = dict(outcome.candidates)
        # every walk is one damped edge (out-degree 3, in-degree 1) times the same potential
        edge = 3.0 ** -config.damping * 1.0 ** -config.damping * math.exp(1.0 / math.sqrt(2.0))
        share = edge / (3 * edge)
        expected = {v: share * math.exp(2.0 / math.sqrt(2.0) + lexical * relative[v - 1]) for v in (1, 2, 3)}
        assert got == pytest.approx(expected, rel=1e-6)  # BM25 scores are float32
        if lexical:
            assert outcome.candidates[0][0] == 1  # the anion transporter, which the question's words name


# ---------------------------------------------------------------------------- own-hop pooling
def test_own_pooling_and_vote_shares_hand_worked(tmp_path):
    from adapath.bank.index import Retrieved
    from adapath.methods.level_banks import own_pooled, vote_shares

    bank = make_bank(tmp_path, [training("a", "alpha words", "drug", "disease", 1), training("b", "beta words", "drug", "disease", 2),
                                training("c", "gamma words", "drug", "gene/protein", 1)],
                     [("a", "direct", "drug -[indication]- disease", 0),
                      ("a", "direct", "drug -[target]- gene/protein -[associated with]- disease", 0),
                      ("b", "direct", "drug -[indication]- disease", 0),
                      ("b", "direct", "drug -[target]- gene/protein -[associated with]- disease", 0),
                      ("c", "direct", "drug -[target]- gene/protein", 0),
                      ("c", "direct", "drug -[indication]- disease", 0)])
    index = BankIndex(bank, HashingEncoder())
    retrieved = [Retrieved(0, 0.9), Retrieved(1, 0.5), Retrieved(2, 0.2)]
    # own support: a (1 hop, disease) holds indication as its own; b (2 hops) the target route;
    # c (1 hop, gene) the target step. Eq. 6 would rank indication first by 0.9 + 0.5 + 0.2.
    ranked = [(str(mp), score) for mp, score in own_pooled(index, retrieved)]
    assert ranked == [("drug -[indication]- disease", pytest.approx(0.9)),
                      ("drug -[target]- gene/protein -[associated with]- disease", pytest.approx(0.5)),
                      ("drug -[target]- gene/protein", pytest.approx(0.2))]
    types, hops = vote_shares(index, retrieved)
    assert types == pytest.approx({"disease": 1.4 / 1.6, "gene/protein": 0.2 / 1.6}, rel=1e-5)
    assert hops == pytest.approx({1: 1.1 / 1.6, 2: 0.5 / 1.6}, rel=1e-5)
    assert index.vote(retrieved) == ("disease", 1)


def test_walk_scorer_does_not_answer_with_what_the_question_names(tmp_path):
    """Questions describe their answer and name the entities on the way: the disorder the
    question names scores above the other, yet is not the answer."""
    graph = make_graph([("Zolpidem", "drug", ""), ("alpha disorder", "disease", "alpha disorder"),
                        ("beta disorder", "disease", "a condition")],
                       [(0, "contraindication", 1), (0, "contraindication", 2)])
    bank = make_bank(tmp_path, [training("a", "which disorder is contraindicated with the drug", "drug", "disease", 1),
                                training("z", "zzz", "drug", "disease", 1)],
                     [("a", "direct", "drug -[contraindication]- disease", 0),
                      ("z", "direct", "drug -[contraindication]- disease", 0)])
    query = Query("q", "explicit", "besides alpha disorder, which disorder is contraindicated with Zolpidem", (100,))
    banks = LevelBanks(bank, HashingEncoder())
    assert answer(graph, banks, query, scorer="walk", walk=WalkConfig(mentioned=1.0))["answer"] == "alpha disorder"
    assert answer(graph, banks, query, scorer="walk")["answer"] == "beta disorder"


def test_the_wh_phrase_model_corrects_the_votes_answer_type(tmp_path):
    graph = make_graph([("aspirin", "drug", ""), ("pain", "disease", "pain"), ("ibuprofen", "drug", "a medication")],
                       [(0, "indication", 1), (0, "synergistic interaction", 2)])
    bank = make_bank(tmp_path, [
        training("a", "which disease does the drug aspirin treat for pain", "drug", "disease", 1),
        training("b", "which disease does aspirin treat for chronic pain", "drug", "disease", 1),
        training("c", "which medication interacts with the drug", "drug", "drug", 1),
        training("d", "what medication works together with this one", "drug", "drug", 1)],
        [("a", "direct", "drug -[indication]- disease", 0), ("b", "direct", "drug -[indication]- disease", 0),
         ("c", "direct", "drug -[synergistic interaction]- drug", 0),
         ("d", "direct", "drug -[synergistic interaction]- drug", 0)])
    query = Query("q", "explicit", "which medication does aspirin treat pain with", (100,))
    banks = LevelBanks(bank, HashingEncoder())
    vote_only = answer(graph, banks, query, scorer="walk", type_model=False)
    with_model = answer(graph, banks, query, scorer="walk")
    assert vote_only["control"]["answer_type"] == "disease" and vote_only["answer"] == "pain"
    assert with_model["control"]["answer_type"] == "drug" and with_model["answer"] == "ibuprofen"


def test_explored_edges_join_consecutive_depths_by_hand():
    """Hand-built: topic 0; explored at depth 1 = {1, 2}, at depth 2 = {3}. The edges between
    consecutive depths, every relation of a pair, in either stored direction; nothing else."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.guided.answer import explored_edges

    head = np.array([0, 0, 0, 1, 2, 2, 1, 4])
    tail = np.array([1, 2, 4, 3, 3, 3, 2, 3])
    rel = np.array([0, 0, 0, 1, 1, 2, 1, 1])  # 2-3 joined by two relations; 1-2 within depth 1
    graph = KnowledgeGraph.from_edges(head, tail, rel, node_type=np.zeros(5, dtype=np.int64),
                                      names=[f"n{i}" for i in range(5)], descriptions=[""] * 5,
                                      type_names=("gene/protein",), relation_names=("ppi", "target", "carrier"),
                                      relation_descriptions=("",) * 3)
    ids = [int(graph.node_id[i]) for i in range(5)]
    edges = explored_edges(graph, 0, {1: [1, 2], 2: [3]})
    assert sorted(map(tuple, edges["1"])) == sorted([(ids[0], "ppi", ids[1]), (ids[0], "ppi", ids[2])])
    assert sorted(map(tuple, edges["2"])) == sorted([(ids[1], "target", ids[3]), (ids[2], "target", ids[3]),
                                                     (ids[2], "carrier", ids[3])])
