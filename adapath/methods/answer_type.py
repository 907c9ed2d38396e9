"""The answer type a question asks for, read from its wh-phrase ("which antidiarrheal
medication ...", "in which digestive organ ..."), learned from the Path-Bank's questions.

Without an LLM, AdaPath's control signals come from the vote of the retrieved training
queries; that vote follows the topic and the question's overall wording, and misses what
the question's wh-phrase says outright. This model is a multinomial logistic regression
(L2, fitted with SciPy's L-BFGS) from the sentence embedding of a question's wh-phrase to
the answer type, trained on the bank's questions at every level; its probabilities
multiply the vote's shares. It reads only question text.
"""

from __future__ import annotations

import re

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

_WH = re.compile(r"\b(which|what)\b\s+(.*)", flags=re.IGNORECASE | re.DOTALL)
_STOP = frozenset(
    "is are was were be been does do did can could might would should has have had may will that which whose "
    "who whom where when in of for with by to from on at as through via while and or but".split())
VOTE_FLOOR = 0.1  # what a type the vote does not name keeps of the model's probability


def wh_phrase(question: str, longest: int = 8) -> str:
    """The words after the first "which"/"what" up to a verb, a preposition or a comma (at
    most ``longest``); the whole question when it has no such word."""
    match = _WH.search(question)
    if not match:
        return question
    words = []
    for raw in match.group(2).split():
        word = raw.strip(",;:?.")
        if words and word.lower() in _STOP:
            break
        if word:
            words.append(word)
        if len(words) == longest or raw[-1] in ",;:?":
            break
    return " ".join(words) or question


class SoftmaxRegression:
    """Multinomial logistic regression with an intercept and L2 penalty ``1 / (2C) |W|^2``."""

    def __init__(self, c: float = 10.0):
        self.c = c
        self.classes: list = []
        self.weights: np.ndarray | None = None  # (features + 1) x classes, the intercept last

    def fit(self, x: np.ndarray, labels: list) -> SoftmaxRegression:
        self.classes = sorted(set(labels))
        index = {label: i for i, label in enumerate(self.classes)}
        y = np.array([index[label] for label in labels])
        x1 = np.hstack([np.asarray(x, dtype=np.float64), np.ones((len(x), 1))])
        k = len(self.classes)
        onehot = np.eye(k)[y]

        def loss(flat: np.ndarray) -> tuple[float, np.ndarray]:
            w = flat.reshape(x1.shape[1], k)
            logits = x1 @ w
            log_p = logits - logsumexp(logits, axis=1, keepdims=True)
            penalized = w[:-1]  # the intercept is not penalized
            value = -np.sum(onehot * log_p) + np.sum(penalized ** 2) / (2 * self.c)
            grad = x1.T @ (np.exp(log_p) - onehot)
            grad[:-1] += penalized / self.c
            return value, grad.ravel()

        if k == 1:
            self.weights = np.zeros((x1.shape[1], 1))
            return self
        fitted = minimize(loss, np.zeros(x1.shape[1] * k), jac=True, method="L-BFGS-B",
                          options={"maxiter": 2000, "gtol": 1e-8})
        self.weights = fitted.x.reshape(x1.shape[1], k)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        logits = np.hstack([np.asarray(x, dtype=np.float64), np.ones((len(x), 1))]) @ self.weights
        return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


class AnswerTypeModel:
    """Answer-type probabilities of questions, trained on the bank's questions."""

    def __init__(self, encoder, texts: list[str], answer_types: list[str], c: float = 10.0):
        self.encoder = encoder
        keep = [i for i, t in enumerate(answer_types) if t]
        self.model = SoftmaxRegression(c).fit(encoder.encode([wh_phrase(texts[i]) for i in keep]),
                                              [answer_types[i] for i in keep])

    def probabilities(self, questions: list[str]) -> list[dict[str, float]]:
        p = self.model.predict_proba(self.encoder.encode([wh_phrase(q) for q in questions]))
        return [dict(zip(self.model.classes, row.tolist())) for row in p]


def combine(model: dict[str, float], vote: dict[str, float]) -> dict[str, float]:
    """The model's probabilities times the vote's shares (floored), normalized."""
    product = {t: p * (vote.get(t, 0.0) + VOTE_FLOOR) for t, p in model.items()}
    total = sum(product.values()) or 1.0
    return {t: v / total for t, v in product.items()}
