"""The answer reader without an LLM (``--rerank``, ours, on by default): the priority's top
``TOP`` entities of a question reordered by what the question says of its answer.

The paper ranks its top K by the learned priority and lets an LLM read their paths. Without an
LLM the extractive answer is the first of that ranking, and on the benchmark graph the misses
there are mostly planted rivals: entities of the answer's type, at its depth, hung from the
same entity by the same relation, which only the question's words about the answer tell apart.
AdaPath's walk ends on the same terms (``adapath.methods.walk_scorer``: the candidate's cosine to
the question, its BM25 match relative to the best-matching candidate, its cosine to the
question's wh-phrase). The priority network reads text only as embeddings, never the question's
words; the reader adds them after it, as a second stage:

    score(v) = w_p * logit(v) + w_q * cos(v, q) + w_l * bm25(v, q) / max_top bm25 + w_w * cos(v, wh(q))

over the ``TOP`` entities of highest priority; the weights are a conditional logit (the
softmax over a question's ``TOP`` against its answers among them) fitted on the training run's
validation fifth, questions the network did not train on, with SciPy's L-BFGS and an L2
penalty on the three text weights. The reordered entities stay above the rest of the subgraph,
so the selection's rounds and the K an LLM reads follow the reader.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from adapath.errors import InputError
from adapath.fsutil import atomic_file
from adapath.methods.walk_scorer import relative

FEATURES = ("priority", "question", "lexical", "wh_phrase")
TOP = 30  # on the benchmark graph the priority's top 30 hold a valid answer for 91% of the test-half questions
L2 = 1e-3  # per question, on the text weights (the priority's weight is free: it sets the scale)
FILE = "reader.json"
BM25_B = 0.0  # length-agnostic node BM25, as AdaPath's walk reads it (GraphText.for_graph(b=0))


def candidate_features(logits, question_cosine, bm25, wh_cosine) -> np.ndarray:
    """The reader's inputs for one question's candidates (``TOP`` x 4, in :data:`FEATURES`
    order): the BM25 match is divided by the best candidate's (0 when none matches)."""
    return np.stack([np.asarray(logits, np.float64), np.asarray(question_cosine, np.float64),
                     relative(np.asarray(bm25, np.float64)), np.asarray(wh_cosine, np.float64)], axis=1)


def conditional_logit_loss(weights: np.ndarray, groups: list[tuple[np.ndarray, np.ndarray]],
                           l2: float = L2) -> tuple[float, np.ndarray]:
    """(loss, gradient): the mean over groups of ``-log sum over answers of softmax(X w)``, plus
    ``l2`` times the squared text weights (every weight but the first)."""
    total, grad = 0.0, np.zeros_like(weights)
    for x, answer in groups:
        s = x @ weights
        p = np.exp(s - s.max())
        p /= p.sum()
        mass = p[answer].sum()
        total -= np.log(mass)
        grad -= p[answer] @ x[answer] / mass - p @ x
    n = max(len(groups), 1)
    text = weights.copy()
    text[0] = 0.0
    return total / n + l2 * float(text @ text), grad / n + 2 * l2 * text


@dataclass
class Reader:
    weights: list[float]  # per FEATURES
    top: int = TOP
    fitted_on: int = 0  # validation questions with an answer among their top
    val_hits1: dict = field(default_factory=dict)  # {"priority": ..., "reader": ...} on those it was fitted on

    def scores(self, x: np.ndarray) -> np.ndarray:
        return x @ np.asarray(self.weights, dtype=np.float64)

    def order(self, x: np.ndarray) -> np.ndarray:
        """Positions of the candidates (rows of ``x``, best priority first) in the reader's
        order; equal scores keep the priority's order."""
        return np.lexsort((np.arange(len(x)), -self.scores(x)))

    def reorder(self, priority: np.ndarray, inside: np.ndarray, top: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``priority`` (per node) with the ``top`` nodes (best priority first; ``x``: their
        features) ranked in the reader's order above every other node of the subgraph, which
        keep theirs. The selection reads priorities only as an order, so the top's values are
        ranks: one apart, the reader's last one above the best of the rest."""
        out = np.array(priority, dtype=np.float64)
        if not len(top):
            return out
        rest = inside.copy()
        rest[top] = False
        below = out[rest].max(initial=-np.inf)
        base = below if np.isfinite(below) else 0.0
        out[top[self.order(x)]] = base + np.arange(len(top), 0, -1, dtype=np.float64)
        return out

    def summary(self) -> str:
        """What its fit measured, in one line."""
        return (f"reader fitted on {self.fitted_on} validation questions: Hits@1 {self.val_hits1['reader']:.3f} "
                f"against {self.val_hits1['priority']:.3f} by the priority alone")

    def save(self, model_dir: str | Path) -> Path:
        path = Path(model_dir) / FILE
        with atomic_file(path) as f:
            f.write(json.dumps({"features": list(FEATURES), **asdict(self)}, indent=2))
        return path


def load_reader(model_dir: str | Path) -> Reader | None:
    """The model's reader, or None when it has none."""
    path = Path(model_dir) / FILE
    if not path.is_file():
        return None
    meta = json.loads(path.read_text())
    if meta.get("features") != list(FEATURES):
        raise InputError(f"{path}: a reader of other features ({meta.get('features')})")
    meta.pop("features")
    return Reader(**meta)


def top_nodes(priority: np.ndarray, inside: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` nodes of ``inside`` of highest priority, best first (ties: the smaller node)."""
    import torch

    members = np.flatnonzero(inside)  # ascending
    if len(members) > count:  # a selection, not a sort: the subgraph holds ~10^5 entities, the top 30
        score = priority[members]
        # the count-th highest value (torch's top-k: NumPy's partition slows ~40x on the many equal values)
        edge = float(torch.topk(torch.from_numpy(score), count, sorted=False).values.min())
        above = members[score > edge]
        # the ties at the edge (every entity the search did not reach shares s(0)): the smallest first
        members = np.concatenate([above, members[score == edge][:count - len(above)]])
    return members[np.lexsort((members, -priority[members]))][:count]


class Evidence:
    """What the reader reads of candidates: the node texts' BM25 index and unit embeddings."""

    def __init__(self, node_index, unit_text: np.ndarray):
        self.index, self.unit = node_index, unit_text

    def features(self, nodes: np.ndarray, logits: np.ndarray, text: str, query: np.ndarray,
                 wh: np.ndarray) -> np.ndarray:
        nodes = np.asarray(nodes, dtype=np.int64)
        bm25 = np.asarray((self.index.matrix[nodes] @ self.index.query_matrix([text])).todense()).ravel()
        unit = self.unit[nodes]
        return candidate_features(logits, unit @ unit_vector(query), bm25, unit @ unit_vector(wh))


def unit_vector(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / max(float(np.linalg.norm(v)), 1e-12)


def fit(groups: list[tuple[np.ndarray, np.ndarray]], top: int = TOP, l2: float = L2) -> Reader:
    """The reader fitted on ``groups`` (per question: its candidates' features, best priority
    first, and which are answers); questions without an answer among them teach nothing. Its
    validation Hits@1, the priority's and its own, are measured on the same questions."""
    usable = [(x, a) for x, a in groups if a.any()]
    start = np.array([1.0, 0.0, 0.0, 0.0])
    if usable:
        start = minimize(conditional_logit_loss, start, args=(usable, l2), jac=True, method="L-BFGS-B").x
    reader = Reader([float(w) for w in start], top, len(usable))
    first = [bool(len(a)) and bool(a[0]) for _, a in groups]
    mine = [bool(len(a)) and bool(a[reader.order(x)[0]]) for x, a in groups]
    reader.val_hits1 = {"priority": float(np.mean(first)) if groups else 0.0,
                        "reader": float(np.mean(mine)) if groups else 0.0}
    return reader


def read_groups(model, features, examples, evidence: Evidence, encoder=None, top: int = TOP,
                size: int = 8) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per question of ``examples`` (with answers): its ``top`` entities by the model's
    priority, as (features, which are answers), best priority first. The wh-phrase vectors
    are the examples' own (``Example.focus``) or encoded with ``encoder``."""
    from adapath.methods.pathmind.train import best_entities, encode_focus

    wh = [e.focus for e in examples]
    if any(v is None for v in wh):
        wh = list(encode_focus(encoder, [e.text for e in examples]))
    groups = []
    for e, vector, (nodes, logits) in zip(examples, wh, best_entities(model, features, examples, top, size)):
        nodes = np.asarray(nodes, dtype=np.int64)
        groups.append((evidence.features(nodes, logits, e.text, e.query, vector), np.isin(nodes, e.answers)))
    return groups


def evidence_for(graph, graph_dir, features) -> Evidence:
    """The reader's evidence over ``graph``: its node BM25 index (cached beside the graph when
    ``graph_dir`` is given) and the node texts' unit embeddings of ``features``."""
    from adapath.retrieval.bm25 import GraphText

    return Evidence(GraphText.for_graph(graph, graph_dir, b=BM25_B).nodes, features.unit.cpu().numpy())


def fit_reader(model, features, examples, config, evidence: Evidence, encoder=None) -> Reader:
    """The reader of a model trained on ``examples`` with ``config``, fitted on the validation
    fifth its training held out (:func:`~adapath.methods.pathmind.train.held_out`)."""
    from adapath.methods.pathmind.train import held_out

    return fit(read_groups(model, features, held_out(features, examples, config), evidence, encoder))
