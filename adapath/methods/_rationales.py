"""The sampled two-rationale chain of thought that CoK's stage 1 and ToG-2's gate share.

- ``sample_chains``: ``n`` chains of thought per question at a temperature, sent as one
  backend batch of seeded copies (sample i uses seed + i) and charged as the authors' one
  request for ``n`` completions is (one call, the prompt's tokens once);
- ``stated_answer`` / ``read_chain``: the answer after "The answer is" and the two rationales;
- ``consistency``: the majority answer and its share, the self-consistency score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from adapath.llm import GenerationParams, Usage
from adapath.llm.parse import read_option
from adapath.methods.base import LLMCaller

_STATED = re.compile(r"the answer is\s*:?\s*", re.IGNORECASE)
_EDGES = " \t\n\"'`.,;:!?()[]{}*"


def stated_answer(text: str) -> str:
    """What follows the last "The answer is" up to the end of its line ('' when absent)."""
    parts = _STATED.split(text or "")
    if len(parts) < 2:
        return ""
    answer = parts[-1].split("\n")[0].strip().strip(_EDGES).strip()
    return answer if re.search(r"\w", answer) else ""


def continued_answer(text: str) -> str:
    """The answer a reply gives when the prompt ended in "The answer is ": its first line
    (or what follows a repeated "The answer is")."""
    line = (text or "").strip().split("\n")[0].strip().strip(_EDGES).strip()
    return stated_answer(text) or (line if re.search(r"\w", line) else "")


def answer_key(answer: str, options: tuple[str, ...]) -> str:
    """What two answers must share to count as the same: an option letter for multiple choice,
    else the text lower-cased without a leading article or surrounding punctuation."""
    if not answer:
        return ""
    if options:
        return read_option(answer, list(options))[0]
    text = re.sub(r"\s+", " ", answer.lower()).strip(_EDGES)
    return re.sub(r"^(?:the|a|an)\s+", "", text).strip(_EDGES)


def split_rationales(text: str) -> tuple[str, str]:
    """(first, second) rationale of a "First, ... Second, ... The answer is" chain; a chain that
    does not follow the format is all first rationale."""
    body = _STATED.split(text or "")[0]
    body = re.split(r"\bFirst,\s*", body, maxsplit=1)[-1]
    parts = re.split(r"\bSecond,\s*", body, maxsplit=1)
    return parts[0].strip(), (parts[1].strip() if len(parts) > 1 else "")


def rationale_only(text: str) -> str:
    """A continued rationale without the answer sentence that may follow it."""
    return _STATED.split(text or "")[0].strip()


@dataclass
class Consistency:
    answers: list[str]  # each sample's stated answer ('' when it states none)
    winner: int | None  # the sample whose answer won (the first sample with it)
    score: float  # the winning answer's votes / the denominator


def consistency(replies: list[str], options: tuple[str, ...], voters: int | None = None,
                denominator: str = "voters") -> Consistency:
    """The majority answer of the samples that state one (the first ``voters`` of them when
    given). ``denominator``: "voters" divides the winner's votes by the answers counted (CoK),
    "samples" by the number of samples drawn (ToG-2). Ties go to the answer stated first."""
    answers = [stated_answer(r) for r in replies]
    keyed = [(i, answer_key(a, options)) for i, a in enumerate(answers)]
    keyed = [(i, k) for i, k in keyed if k]
    if voters is not None:
        keyed = keyed[:voters]
    if not keyed:
        return Consistency(answers, None, 0.0)
    votes: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, key in keyed:
        votes[key] = votes.get(key, 0) + 1
        first.setdefault(key, i)
    best = max(votes, key=lambda k: (votes[k], -first[k]))
    total = len(keyed) if denominator == "voters" else len(replies)
    return Consistency(answers, first[best], votes[best] / max(total, 1))


def sample_chains(call: LLMCaller, prompts: list[str], owners: list[int], usages: list[Usage], n: int,
                  params: GenerationParams) -> list[list[str]]:
    """``n`` sampled replies per prompt (seeds ``params.seed + i``), one backend batch. Each
    prompt's ``n`` copies are charged as the one request for ``n`` completions they stand for:
    one call, its prompt tokens once, every completion's tokens."""
    if not prompts:
        return []
    native = getattr(call, "samples", None)
    if native is not None:  # a caller that asks the backend for n samples in one request
        return native(prompts, owners, usages, params, n=n)
    settings = [GenerationParams(params.max_tokens, params.temperature, params.top_p, params.seed + i, params.stop)
                for i in range(n)]
    before = {j: (usages[j].calls, usages[j].prompt_tokens) for j in owners}
    replies = call([p for p in prompts for _ in range(n)], [j for j in owners for _ in range(n)], usages,
                   settings * len(prompts))
    for j, (calls, prompt_tokens) in before.items():  # identical copies: each holds 1/n of the increase
        usages[j].calls = calls + (usages[j].calls - calls) // n
        usages[j].prompt_tokens = prompt_tokens + (usages[j].prompt_tokens - prompt_tokens) // n
    return [replies[i * n:(i + 1) * n] for i in range(len(prompts))]
