"""The wh-phrase answer-type model: phrase extraction, the regression against scikit-learn's,
and the vote it sharpens."""

import numpy as np
import pytest

from adapath.methods.answer_type import (
    VOTE_FLOOR,
    AnswerTypeModel,
    SoftmaxRegression,
    combine,
    wh_phrase,
)
from adapath.retrieval.dense import HashingEncoder


def test_wh_phrase():
    assert wh_phrase("Which antidiarrheal medication, commonly combined with atropine, is linked to X?") == \
        "antidiarrheal medication"
    assert wh_phrase("In which anatomical region of the skin might vinflunine accumulate?") == "anatomical region"
    assert wh_phrase("What gene is associated with asthma?") == "gene"
    assert wh_phrase("How might Flurandrenolide be linked to cancer?") == "How might Flurandrenolide be linked to cancer?"


@pytest.mark.parametrize("c", [0.5, 10.0])
def test_softmax_regression_matches_scikit_learn(c):
    sklearn = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(120, 6))
    labels = [["drug", "disease", "gene"][i] for i in np.argmax(x[:, :3] + rng.normal(scale=0.8, size=(120, 3)), 1)]
    ours = SoftmaxRegression(c).fit(x, labels)
    reference = sklearn.LogisticRegression(C=c, max_iter=10000, tol=1e-12).fit(x, labels)
    assert ours.classes == list(reference.classes_)
    test = rng.normal(size=(30, 6))
    assert ours.predict_proba(test) == pytest.approx(reference.predict_proba(test), abs=1e-4)


def test_combine_hand_worked():
    model = {"drug": 0.6, "disease": 0.3, "gene/protein": 0.1}
    vote = {"disease": 0.8, "drug": 0.2}
    raw = {"drug": 0.6 * (0.2 + VOTE_FLOOR), "disease": 0.3 * (0.8 + VOTE_FLOOR), "gene/protein": 0.1 * VOTE_FLOOR}
    total = sum(raw.values())
    assert combine(model, vote) == pytest.approx({t: v / total for t, v in raw.items()})


def test_model_reads_the_type_from_the_wh_phrase():
    texts = ["Which medication treats asthma?", "Which drug is used for gout?", "What medication relieves pain?",
             "Which disease does aspirin treat?", "What disorder is linked to BRCA1?", "Which disease affects the liver?"]
    types = ["drug", "drug", "drug", "disease", "disease", "disease"]
    model = AnswerTypeModel(HashingEncoder(), texts, types)
    drug, disease = model.probabilities(["Which medication, used for migraine, targets HTR1B?",
                                         "Which disease, linked to HTR1B, does the medication treat?"])
    assert drug["drug"] > 0.5 > disease["drug"]
