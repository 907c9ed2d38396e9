"""The walk scorer's vote in PathMind: carried into the meta-path cut by hand-worked ranks,
added to the priority logit as a residual (against the network run without it), trained
questions guided out of fold, validation Hits@1/3 against a brute-force ranking."""

import numpy as np
import pytest
import torch

from adapath.methods.pathmind.guide import OutOfFoldGuide
from adapath.methods.pathmind.model import PathMindNet
from adapath.methods.pathmind.subgraph import Guide, SubgraphBuilder
from adapath.retrieval.bm25 import GraphText
from tests.test_pathmind_subgraph import hand_graph


def test_metapath_cut_carries_the_scorers_vote_by_rank():
    graph = hand_graph()
    text = GraphText.for_graph(graph, None, b=0.0)
    lane = ((0, 1), (0, 1, 2))
    # candidates best first: 4 (its walk 0-2-4), then 3, then 7 (off the lane), then the topic itself
    guide = Guide([lane], [[0, 2, 4]], [(4, 0.9), (3, 0.5), (7, 0.2), (0, 0.1)])
    small = SubgraphBuilder(graph, hops=3, budget=2, mode="metapath", text=text)
    sub = small.build_many([[0]], ["question"], [guide])[0]
    vote = dict(zip(sub.nodes.tolist(), sub.candidate.tolist()))
    assert vote == {0: 0.0, 2: 0.0, 4: 1.0}  # 3 and 7 did not fit; the topic never gets a vote
    big = SubgraphBuilder(graph, hops=3, budget=7, mode="metapath", text=text)
    sub = big.build_many([[0]], ["question"], [Guide([lane], [[0, 2, 4]], [(4, 0.9), (3, 0.5), (7, 0.2), (0, 0.1)])])[0]
    vote = dict(zip(sub.nodes.tolist(), sub.candidate.tolist()))
    assert vote == {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.5, 4: 1.0, 5: 0.0, 6: 0.0, 7: pytest.approx(1 / 3)}
    # without a guide (no meta-path survived) nobody votes; the question cut carries no vote
    sub = big.build_many([[0]], ["question"], [None])[0]
    assert sub.candidate is not None and not sub.candidate.any()
    question = SubgraphBuilder(graph, hops=3, budget=7, mode="question", text=text)
    assert question.build_many([[0]], ["question"])[0].candidate is None


def inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    src = torch.tensor([0, 1, 1, 2, 2, 3, 0, 3])
    dst = torch.tensor([1, 0, 2, 1, 3, 2, 3, 0])
    rel = torch.tensor([0, 0, 1, 1, 0, 0, 2, 2])
    return (torch.tensor([0, 1, 1, 0]), torch.randn(4, 5, generator=g), torch.tensor([0]),
            torch.randn(6, generator=g), src, dst, rel)


@pytest.mark.parametrize("learn", [True, False])
def test_vote_is_a_residual_on_the_logit(learn):
    torch.manual_seed(0)
    model = PathMindNet(num_types=2, num_relations=3, query_dim=6, text_dim=5, hidden=8, prior=True,
                        candidate=True, candidate_gain=3.0, learn_candidate_gain=learn)
    with torch.no_grad():  # the vote's node-state input off: what is left is the residual alone
        model.candidate_proj.weight.zero_()
        model.candidate_proj.bias.zero_()
    prior = torch.tensor([1.0, 0.6, 0.3, 0.0])
    vote = torch.tensor([0.0, 1.0, 0.5, 0.0])
    with_vote = model(*inputs(1), prior=prior, candidate=vote)[0]
    without = model(*inputs(1), prior=prior, candidate=torch.zeros(4))[0]
    assert torch.allclose(with_vote - without, 3.0 * vote, atol=1e-5)
    names = {name for name, _ in model.named_parameters()}
    assert ("candidate_gain" in names) is learn
    assert float(model.state_dict()["candidate_gain"]) == 3.0  # saved either way (checkpoints)
    if learn:
        (grad,) = torch.autograd.grad(with_vote.sum(), [model.candidate_gain])
        assert float(grad) == pytest.approx(float(vote.sum()))
    # a network built without the vote ignores it
    plain = PathMindNet(num_types=2, num_relations=3, query_dim=6, text_dim=5, hidden=8)
    assert torch.equal(plain(*inputs(2), candidate=vote)[0], plain(*inputs(2))[0])


class Recorder:
    def __init__(self, name):
        self.name, self.seen = name, []

    def guides(self, queries):
        self.seen += [q.id for q in queries]
        return [(self.name, q.id) for q in queries]


class Q:
    def __init__(self, id):
        self.id = id


def test_out_of_fold_guide_asks_each_questions_own_fold_in_order():
    folds = [Recorder("a"), Recorder("b"), Recorder("c")]
    fold_of = {"q1": 2, "q2": 0, "q3": 2, "q4": 1, "q5": 0}
    got = OutOfFoldGuide(fold_of, folds).guides([Q(i) for i in ("q1", "q2", "q3", "q4", "q5")])
    assert got == [("c", "q1"), ("a", "q2"), ("c", "q3"), ("b", "q4"), ("a", "q5")]
    assert [f.seen for f in folds] == [["q2", "q5"], ["q4"], ["q1", "q3"]]


def test_validation_hits_match_a_brute_force_ranking():
    """Scores come straight from each example (a stand-in network); Hits@1/3 skip the topics."""
    from types import SimpleNamespace

    from adapath.methods.pathmind.train import hits_at_many

    class Featurize:
        def batch(self, chunk):
            bounds = np.cumsum([0] + [len(e.scores) for e in chunk])
            return SimpleNamespace(inputs=(chunk,), nodes_of=lambda i: slice(int(bounds[i]), int(bounds[i + 1])))

    class Model:
        def eval(self):
            pass

        def __call__(self, chunk):
            return (torch.cat([e.scores for e in chunk]),)

    rng = np.random.default_rng(0)
    examples = [SimpleNamespace(scores=torch.tensor(rng.normal(size=9)),
                                subgraph=SimpleNamespace(topics=np.array([int(rng.integers(9))])),
                                local_answers=rng.choice(9, 2, replace=False)) for _ in range(40)]
    want = []
    for k in (1, 3):
        hits = 0
        for e in examples:
            ranked = sorted((v for v in range(9) if v not in set(e.subgraph.topics.tolist())),
                            key=lambda v: -float(e.scores[v]))
            hits += bool(set(ranked[:k]) & set(e.local_answers.tolist()))
        want.append(hits / len(examples))
    assert 0 < want[0] < want[1] < 1
    assert hits_at_many(Model(), Featurize(), examples, (1, 3)) == pytest.approx(want)
