"""The ``pathmind+walk`` blend on a hand-built graph where the walk's vote must change
PathMind's pick at three hops: hand-set priorities stand in for a trained network (a confident
one: its favourite, a rival, 20 logits above the walk's answer), the walk's candidates for the
Path-Bank's. The vote meets PathMind's logits standardized over the subgraph, so the blend must
give the same answer whatever the network's logit scale."""

import numpy as np
import pytest

from adapath.contract import Query
from adapath.engine.graph import KnowledgeGraph
from adapath.methods.pathmind.config import TrainConfig
from adapath.methods.pathmind.guide import Guide
from adapath.methods.pathmind.infer import PathMind, Prioritized
from adapath.retrieval.dense import HashingEncoder

# topic T=0; A=1 and B=2 one hop out; C=3 behind A, D=4 behind B; W=5 behind C (the walk's
# answer), R=6 behind D (a rival the network prefers)
EDGES = [(0, 1), (0, 2), (1, 3), (2, 4), (3, 5), (4, 6)]
T, A, B, C, D, W, R = range(7)
LOGITS = np.array([0.0, 2, 3, 1, 4, 10, 30])  # by node; R 20 logits above W


def make_graph() -> KnowledgeGraph:
    head, tail = (np.array(x) for x in zip(*EDGES))
    return KnowledgeGraph.from_edges(head, tail, np.zeros(len(EDGES), np.int64), node_type=np.zeros(7, np.int8),
                                     names=[f"n{i}" for i in range(7)], descriptions=[""] * 7, type_names=("t",),
                                     relation_names=("r",), relation_descriptions=("",))


class HandSet(PathMind):
    """PathMind with the network's priorities set by hand (the whole graph is the subgraph)."""

    logits = LOGITS

    def _prioritize(self, chunk):
        n = self.graph.num_nodes
        depth = np.array([0, 1, 1, 2, 2, 3, 3])
        return [Prioritized(np.array(self.logits, dtype=np.float64), np.ones(n, dtype=np.bool_), depth)
                for _ in chunk]


class WalkVote:
    """The walk scorer's candidates, best first (what MetaPathGuide.guides returns)."""

    def __init__(self, candidates):
        self.candidates = candidates

    def guides(self, queries):
        return [Guide([(v, 1.0) for v in self.candidates]) for _ in queries]


def answer(logits, vote, k=1):
    graph = make_graph()
    method = HandSet(graph, None, TrainConfig(), HashingEncoder(dim=4), k=k, rounds=3, vote=vote,
                     name="pathmind+walk" if vote else "pathmind")
    method.logits = logits
    (result,) = method.answer([Query("q", "explicit", "which n?", topic_ids=(int(graph.node_id[T]),))])
    ids = {int(graph.node_id[v]): v for v in range(graph.num_nodes)}
    result.explored = {t: [ids[v] for v in vs] for t, vs in result.explored.items()}  # back to our places
    return result


def test_pathmind_alone_follows_its_favourite():
    got = answer(LOGITS, None)
    # K = 1, look-ahead: round 1 ranks A by 10 (W behind it) and B by 30 (R behind it) -> B; then D; then R
    assert got.explored == {"1": [B], "2": [D], "3": [R]}
    assert got.answer == f"n{R}"


def standardized(logits, node):
    """By hand: (logit - mean) / standard deviation over the entities a round may take (all but T)."""
    takeable = np.asarray(logits, dtype=np.float64)[1:]
    return (logits[node] - takeable.mean()) / takeable.std()


@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_the_walks_vote_changes_the_three_hop_pick_at_any_logit_scale(scale):
    """By hand, over A..R (2, 3, 1, 4, 10, 30: mean 8.33, standard deviation 10.11): R stands
    at 2.14, W at 0.16; the walk's first candidate W gains 2.5: 2.66 above R's 2.14. Round 1
    then ranks A (W two steps behind it) above B (R behind it): A, then C, then W, the answer,
    at every scale. Added to the raw logits instead, the blend before (gain 8) lifted W to 18,
    short of R's 30 (and of 300 at scale 10): it answered R."""
    assert standardized(LOGITS, W) + 2.5 > standardized(LOGITS, R)  # the hand-worked sums above
    got = answer(LOGITS * scale, WalkVote([W]))
    assert got.explored == {"1": [A], "2": [C], "3": [W]}
    assert got.answer == f"n{W}"


def test_the_walks_order_among_its_candidates_counts():
    """A less confident network (R at 12: over A..R mean 5.33, standard deviation 4.15; R
    1.61, W 1.12), both depth-3 entities walk candidates: R first, R 1.61 + 2.5 = 4.11 against
    W 1.12 + 1.25 = 2.37, so R; W first, W 1.12 + 2.5 = 3.62 against R 1.61 + 1.25 = 2.86, so W.
    With the confident network (R at 30) R stays first either way: 2.14 + 1.25 = 3.39 against
    W's 0.16 + 2.5 = 2.66."""
    unsure = LOGITS.copy()
    unsure[R] = 12
    assert answer(unsure, WalkVote([R, W]), k=3).extra["answer_set"][0] == f"n{R}"
    assert answer(unsure, WalkVote([W, R]), k=3).extra["answer_set"][0] == f"n{W}"
    assert answer(LOGITS, WalkVote([W, R]), k=3).extra["answer_set"][0] == f"n{R}"


def test_the_guide_says_the_vote_as_the_listing_does():
    from pathlib import Path

    from adapath.methods.pathmind.guide import VOTE
    from adapath.methods.registry import get_method

    page = " ".join((Path(__file__).parents[1] / "docs" / "guide" / "pathmind.md").read_text().split())
    assert " ".join(VOTE.split()) in page
    assert any(VOTE in line for line in get_method("pathmind+walk").deviations)
