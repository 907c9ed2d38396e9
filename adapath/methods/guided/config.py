"""AdaPath's settings: the one home of their defaults. Each ``setting`` field is a ``--param``
of ``adapath answer --method adapath`` (in this order), with the help the method's listing
and the reference pages show."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from adapath.bank.index import TOP_K
from adapath.config import nested, setting
from adapath.errors import InputError
from adapath.llm import GenerationParams
from adapath.methods.level_banks import MODES as RETRIEVAL_LEVELS
from adapath.methods.walk_scorer import WalkConfig

SCORERS = ("beam", "walk")
BEAM_METAPATHS = 3  # the paper's surviving meta-paths per question
WALK_RETRIEVE = 10  # the walk scorer weighs what it walks, so it can take a wider pool
WALK_METAPATHS = 8


@dataclass
class AdaPathConfig:
    """What ``adapath answer`` runs by default: without an LLM the walk scorer over meta-paths
    weighed by the retrieval vote, with one the paper's frontier beam (``resolved`` settles
    ``scorer=auto`` and the scorer's own ``retrieve`` and ``metapaths``)."""

    metapath: bool = setting(True, "follow retrieved meta-paths (false: free BFS, the w/o meta-path ablation)")
    plan: str = setting("bank", "where meta-paths come from: bank, or llm (the w/o Path-Bank ablation)")
    scorer: str = setting("auto", "walk (every walk along the meta-paths, weighed by the query; picks what an "
                                  "LLM sees), beam (the paper's frontier beam) or auto (walk without an LLM, "
                                  "beam with one)")
    retrieval_level: str = setting("same", "bank texts Eq. 6 compares a question with: same (its own level), "
                                           "explicit, implicit or bare (the cross-level setting)")
    retrieve: int = setting(0, f"training queries retrieved per question, Eq. 6's k (0: {TOP_K} for the beam, "
                               f"{WALK_RETRIEVE} for the walk scorer)")
    metapaths: int = setting(0, f"surviving meta-paths walked per question (0: {BEAM_METAPATHS} for the beam, "
                                f"{WALK_METAPATHS} for the walk scorer)")
    pool: str = setting("own", "rank retrieved meta-paths by the similarity of the queries holding them as their "
                               "own (at their hop count and answer type), or all (Eq. 6's sum over every query "
                               "holding them)")
    control: str = setting("weigh", "filter (keep meta-paths of the predicted answer type and hops) or weigh "
                                    "(weigh them by the retrieval vote's shares; an LLM's signals still filter)")
    type_model: bool = setting(True, "without an LLM, a model of the question's wh-phrase trained on the bank's "
                                     "questions joins the retrieval vote on the answer type")
    walk: WalkConfig = nested(WalkConfig)
    share: bool = setting(True, "beam without an LLM: share the frontier among meta-paths by retrieval score")
    shorter: bool = setting(True, "keep shorter completed paths ending in the predicted answer type")
    junction: bool = setting(True, "two topics: walk from both and meet at the answer")
    beam: int = setting(3, "next-frontier width")
    narrow: int = setting(5, "candidates kept per group by cosine")
    max_depth: int = setting(3, "most hops walked")
    prefilter: int = 50  # BM25 cap on a candidate group before embedding narrowing
    max_triplets: int = 30  # distinct triplets in the answer prompt
    params: GenerationParams = field(default_factory=lambda: GenerationParams(max_tokens=64))

    def check(self, with_llm: bool) -> None:
        """One line for the first setting out of range (``with_llm``: an LLM answers)."""
        if self.retrieve < 0 or self.metapaths < 0:
            raise InputError("--param retrieve and metapaths take 0 (the scorer's default) or a positive count")
        if self.plan == "llm" and not with_llm:
            raise InputError("plan=llm (--llm-plan) needs an LLM (--llm ...)")
        if self.plan not in ("bank", "llm"):
            raise InputError(f"--param plan={self.plan!r}: choose bank or llm")
        for name, allowed in (("pool", ("own", "all")), ("control", ("filter", "weigh"))):
            if getattr(self, name) not in allowed:
                raise InputError(f"--param {name}={getattr(self, name)!r}: choose {' or '.join(allowed)}")
        self.walk.check()
        if self.retrieval_level not in RETRIEVAL_LEVELS:
            raise InputError(f"--param retrieval_level={self.retrieval_level!r}: choose from "
                             f"{', '.join(RETRIEVAL_LEVELS)}")
        if self.scorer not in (*SCORERS, "auto"):
            raise InputError(f"--param scorer={self.scorer!r}: choose from {', '.join(SCORERS)}")

    def resolved(self, with_llm: bool) -> AdaPathConfig:
        """The settings a run uses: ``scorer=auto`` as the walk scorer without an LLM and the
        beam with one, and ``retrieve`` / ``metapaths`` of 0 as that scorer's own defaults."""
        scorer = self.scorer if self.scorer != "auto" else ("beam" if with_llm else "walk")
        walk = scorer == "walk"
        return replace(self, scorer=scorer, retrieve=self.retrieve or (WALK_RETRIEVE if walk else TOP_K),
                       metapaths=self.metapaths or (WALK_METAPATHS if walk else BEAM_METAPATHS))
