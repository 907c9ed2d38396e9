"""PathMind's named training options for the benches' ``--models``: each name's settings in full
where they differ from today's default, so a name keeps its model."""

from __future__ import annotations

import dataclasses

from adapath.errors import InputError
from adapath.methods.pathmind.config import TrainConfig
from adapath.typed import parse_as

# the settings issue 50's decision turned on (the prior, the wh-phrase, the exact sum, the
# reader) at the values every model before it had: the names measured before keep them (and
# their models)
BEFORE_PRIOR = {"answer_type": False, "answer_text": False, "focus": False, "negatives": "sampled", "rerank": False}
# the names measured while the default propagated from 32 entities per step: they keep their 32
_AT_32 = {"paper": {"loss": "bce", "entity_text": False},
          "softmax": {"loss": "softmax", "entity_text": False}, "balanced": {"loss": "balanced", "entity_text": False},
          "product": {"cost": "product", "loss": "bce"}, "gate": {"entity": "gate", "loss": "bce"},
          "layers": {"readout": "layers", "loss": "bce"}, "scalar": {"reading": "scalar", "loss": "bce"},
          "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
          "mul": {"message": "mul"}, "walk": {"network": "walk", "loss": "bce"},
          "bce": {"loss": "bce"}, "adversarial": {"loss": "adversarial"}, "no-text": {"entity_text": False},
          # our readout's answer prior alone; no-prior, the default then, as the docs' runs name it
          "answer-prior": {"answer_type": True, "answer_text": True}, "answer-type": {"answer_type": True},
          "no-prior": {}}
_LATER = {"unpruned": {"nodes": 0}, "nodes8": {"nodes": 8}, "nodes32": {"nodes": 32}, "nodes64": {"nodes": 64},
          "nodes128": {"nodes": 128}, "guide-paths": {"guide_paths": True}, "focus": {"focus": True},
          "all-negatives": {"negatives": "all"}}
# the default, then the names measured before issue 50's decision with what they had then
MODELS = {"default": {}, **{name: BEFORE_PRIOR | {"nodes": 32} | settings for name, settings in _AT_32.items()},
          **{name: BEFORE_PRIOR | settings for name, settings in _LATER.items()},
          # the network alone at today's count: the default before the decision
          "network": dict(BEFORE_PRIOR),
          # the paper's recipe on today's network: its BCE summed over every entity, no evidence, no prior, no reader
          "paper-recipe": BEFORE_PRIOR | {"loss": "bce", "entity_text": False, "negatives": "all"}}


def model_settings(name: str) -> dict:
    """A ``--models`` entry: a name of ``MODELS``, ``key=value+key=value`` settings, or a name
    followed by settings (``network+seed=1``: the name's settings, then these), each value read
    as its ``TrainConfig`` field's type (``entity_text=1`` is True, ``degree_ratio=0`` is 0.0); a
    key that is not a field, or a value not of its type, is a one-line error."""
    if name in MODELS:
        return dict(MODELS[name])
    kinds = {f.name: type(f.default) for f in dataclasses.fields(TrainConfig)}
    pairs = name.split("+")
    out = dict(MODELS[pairs.pop(0)]) if pairs[0] in MODELS else {}
    for key, _, value in (pair.partition("=") for pair in pairs):
        if key not in kinds:
            raise InputError(f"--models {name!r}: {key!r} is neither a model name nor a training setting")
        out[key] = parse_as(value, kinds[key], f"--models {key}")
    return out


def model_names(value: str) -> list[str]:
    """The comma-separated ``--models`` entries, each checked by :func:`model_settings` (a bad
    one, or none at all, is a one-line error before any work)."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    if not names:
        raise InputError(f"--models {value!r}: none given; choose from {', '.join(MODELS)} or key=value settings")
    for name in names:
        model_settings(name)
    return names
