"""The relevance judge: rescaling, retries, unparsed replies excluded and counted."""

import pytest

from adapath.eval.judge import context_relevance, parse_score
from adapath.llm import ScriptedBackend


def test_parse_score():
    assert parse_score("Score: {2}") == 2
    assert parse_score("{ 0 }") == 0
    assert parse_score("{3}") is None and parse_score("two") is None


def test_retries_and_exclusion():
    class Flaky(ScriptedBackend):
        def generate(self, prompts, params):
            out = super().generate(prompts, params)
            for g, p in zip(out, prompts):
                if "Question: q2" in p and len(self.batches) >= 2:
                    g.text = "{1}"  # the second attempt succeeds
                if "Question: q3" in p:
                    g.text = "no idea"  # never parses
            return out

    backend = Flaky(rules={"Question: q1": "{2}"}, default="maybe")
    items = [("q1", [("a", "r", "b")]), ("q2", []), ("q3", [("c", "r", "d")])]
    result = context_relevance(backend, items, retries=3)
    assert result["scores"] == [2, 1, None]
    assert result["context_relevance"] == pytest.approx((1.0 + 0.5) / 2)
    assert result["judged"] == 2 and result["unparsed"] == 1
    assert backend.batches == [3, 2, 1]  # q1 done at once, q2 at the second try, q3 tried thrice
