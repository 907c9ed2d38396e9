"""LLM-only baselines: the model answers from what it knows, no graph (AdaPath Table 2's
IO, CoT and SC rows).

- ``io``: the question, the answer at once;
- ``cot``: step-by-step reasoning, then the answer (Wei et al. 2022, zero-shot);
- ``sc``: self-consistency (Wang et al., ICLR 2023): ``k`` (40, the paper's setting)
  few-shot chain-of-thought replies sampled at ``temperature`` in one request per question
  (one call: vLLM/OpenAI ``n``; local backends sample with seeds seed + i), the majority
  answer (answers compared lower-cased, without surrounding punctuation, articles or extra
  spaces) wins; a tie goes to the answer sampled first. Unreadable samples do not vote.

Each step of a batch (the one prompt per query) is one backend batch.
"""

from __future__ import annotations

import re

from adapath.contract import Query, Result
from adapath.llm import GenerationParams, Usage, prompts
from adapath.llm.parse import lenient_reading, read_reply
from adapath.methods.base import LLMCaller, MethodContext, MethodSpec, Param

_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_EDGES = " \t\n\"'`.,;:!?()[]{}"


def vote_key(answer: str) -> str:
    """What two sampled answers must share to count as the same vote."""
    text = re.sub(r"\s+", " ", answer.lower()).strip(_EDGES)
    return _ARTICLE.sub("", text).strip(_EDGES)


def majority(answers: list[str]) -> tuple[int | None, dict[str, int]]:
    """(index of the sample whose answer wins, votes per answer); ties go to the answer that
    was sampled first; empty answers do not vote."""
    votes: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, answer in enumerate(answers):
        key = vote_key(answer)
        if key:
            votes[key] = votes.get(key, 0) + 1
            first.setdefault(key, i)
    if not votes:
        return None, {}
    winner = max(votes, key=lambda k: (votes[k], -first[k]))
    return first[winner], votes


class SinglePrompt:
    """IO and CoT: one prompt per query, one batch."""

    def __init__(self, name: str, build_prompt, llm, params: GenerationParams):
        self.name, self.build_prompt = name, build_prompt
        self._generate = LLMCaller(llm, params)

    def answer(self, queries: list[Query]) -> list[Result]:
        usages = [Usage() for _ in queries]
        replies = self._generate([self.build_prompt(q.text, q.options) for q in queries],
                                 list(range(len(queries))), usages)
        results = []
        for q, reply, usage in zip(queries, replies, usages):
            answer, source = read_reply(reply, q.options)
            results.append(Result(q.id, q.level, answer, method=self.name, raw=reply, answer_source=source,
                                  usage=usage.as_dict()))
        return results


class SelfConsistency:
    """k sampled few-shot chain-of-thought replies per query, one request each; the majority."""

    name = "sc"

    def __init__(self, llm, samples: int = 40, temperature: float = 0.7, seed: int = 42, max_tokens: int = 256):
        self.samples = samples
        self.params = GenerationParams(max_tokens=max_tokens, temperature=temperature, seed=seed)
        self._generate = LLMCaller(llm)

    def answer(self, queries: list[Query]) -> list[Result]:
        usages = [Usage() for _ in queries]
        replies = self._generate.samples([prompts.few_shot_cot(q.text, q.options) for q in queries],
                                         list(range(len(queries))), usages, self.params, n=self.samples)
        results = []
        for j, (q, mine) in enumerate(zip(queries, replies)):
            read = [read_reply(reply, q.options) for reply in mine]
            winner, votes = majority([answer for answer, _ in read])
            if winner is None:
                answer, source, raw = "", "none", mine[0] if mine else ""
            else:
                (answer, source), raw = read[winner], mine[winner]
            results.append(Result(q.id, q.level, answer, method=self.name, raw=raw, answer_source=source,
                                  usage=usages[j].as_dict(),
                                  extra={"samples": [a for a, _ in read], "votes": votes}))
        return results


def _single(name: str, build_prompt, max_tokens: int):
    def build(context: MethodContext) -> SinglePrompt:
        return SinglePrompt(name, build_prompt, context.llm,
                            GenerationParams(max_tokens=context.params.get("max_tokens", max_tokens)))
    return build


def _build_sc(context: MethodContext) -> SelfConsistency:
    from adapath.errors import InputError

    p = context.params
    if p["k"] < 1:
        raise InputError("--param k must be at least 1")
    if p["temperature"] <= 0:
        raise InputError("--param temperature must be above 0 (self-consistency samples)")
    return SelfConsistency(context.llm, p["k"], p["temperature"], p["seed"], p["max_tokens"])


_READER = lenient_reading("an option (multiple choice)")
_FORMAT = ("the prompt closes with this project's answer format (the answer in braces, or an option letter) "
           "so that one reader reads every method")

METHODS = [
    MethodSpec("io", "the LLM answers the question directly, no graph",
               "IO prompting (the AdaPath paper's LLM-only baseline)", _single("io", prompts.direct_answer, 64),
               llm="required", path_finding=False, calls="1",
               params=(Param("max_tokens", 64, "most tokens in the reply"),),
               deviations=("zero-shot: the question and the answer format only (there is no official code)",
                           _READER)),
    MethodSpec("cot", "the LLM reasons step by step, then answers; no graph (zero-shot)",
               "Chain-of-thought prompting (Wei et al. 2022), zero-shot as Kojima et al. 2022",
               _single("cot", prompts.chain_of_thought, 256), llm="required", path_finding=False,
               calls="1",
               params=(Param("max_tokens", 256, "most tokens in the reply"),),
               deviations=("zero-shot (a 'step by step' instruction) where Wei et al. prompt with worked "
                           "exemplars: the few-shot chains of thought are what sc samples", _FORMAT, _READER)),
    MethodSpec("sc", "k few-shot chain-of-thought answers sampled in one request (one call); the majority wins",
               "Self-consistency (Wang et al., ICLR 2023)", _build_sc, llm="required", path_finding=False, calls="1",
               params=(Param("k", 40, "sampled chain-of-thought replies per question (the paper's 40)"),
                       Param("temperature", 0.7, "sampling temperature (above 0; the paper's 0.7)"),
                       Param("seed", 42, "seed of the request (local backends: sample i uses seed + i)"),
                       Param("max_tokens", 256, "most tokens in each reply")),
               deviations=("six biomedical exemplars in this project's words, in Wei et al.'s 'Q: ... A: ... The "
                           "answer is ...' format and StrategyQA's count (the paper reuses Wei et al.'s exemplars, "
                           "written for other tasks)",
                           "no top-k truncation (the paper samples GPT-3 and PaLM with top-k 40): the backends "
                           "here take temperature and top_p only", _FORMAT, _READER)),
]
