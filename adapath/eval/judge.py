"""Context relevance judged by an LLM (AdaPath Appendix F): 0 / 1 / 2 rescaled to [0, 1].

Each (question, retrieved triplets) pair is asked up to ``retries`` times until the reply
holds a score in braces; pairs still unparsed are excluded from the mean and counted.
"""

from __future__ import annotations

import re

from adapath.llm import GenerationParams, prompts

_SCORE = re.compile(r"\{\s*([012])\s*\}")


def parse_score(text: str) -> int | None:
    match = _SCORE.search(text or "")
    return int(match.group(1)) if match else None


def context_relevance(llm, items: list[tuple[str, list[tuple[str, str, str]]]], retries: int = 3,
                      max_triplets: int = 30) -> dict:
    prompt_list = [prompts.judge_relevance(q, t[:max_triplets]) for q, t in items]
    scores: list[int | None] = [None] * len(items)
    pending = list(range(len(items)))
    for attempt in range(retries):
        if not pending:
            break
        replies = llm.generate([prompt_list[i] for i in pending], GenerationParams(max_tokens=8, seed=42 + attempt))
        for i, reply in zip(pending, replies):
            scores[i] = parse_score(reply.text)
        pending = [i for i in pending if scores[i] is None]
    parsed = [s / 2 for s in scores if s is not None]
    return {"context_relevance": sum(parsed) / len(parsed) if parsed else None,
            "judged": len(parsed), "unparsed": len(items) - len(parsed), "scores": scores}
