"""PathMind's named training options for the benches' ``--models``: each name's settings in full
where they differ from today's default, so a name keeps its model."""

from __future__ import annotations

import dataclasses

from adapath.errors import InputError
from adapath.methods.pathmind.config import TrainConfig
from adapath.typed import parse_as

# the names measured while the default propagated from 32 entities per step: they keep their 32
# (and their models)
_AT_32 = {"paper": {"loss": "bce", "entity_text": False},
          "softmax": {"loss": "softmax", "entity_text": False}, "balanced": {"loss": "balanced", "entity_text": False},
          "product": {"cost": "product", "loss": "bce"}, "gate": {"entity": "gate", "loss": "bce"},
          "layers": {"readout": "layers", "loss": "bce"}, "scalar": {"reading": "scalar", "loss": "bce"},
          "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
          "mul": {"message": "mul"}, "walk": {"network": "walk", "loss": "bce"},
          "bce": {"loss": "bce"}, "adversarial": {"loss": "adversarial"}, "no-text": {"entity_text": False},
          # our readout's answer prior (named variants); no-prior, the default then, as the docs' runs name it
          "answer-prior": {"answer_type": True, "answer_text": True}, "answer-type": {"answer_type": True},
          "no-prior": {}}
# the default, the names of a count or of no pruning, and the later variants take today's count
MODELS = {"default": {}, **{name: {"nodes": 32} | settings for name, settings in _AT_32.items()},
          "unpruned": {"nodes": 0}, "nodes8": {"nodes": 8}, "nodes32": {"nodes": 32}, "nodes64": {"nodes": 64},
          "nodes128": {"nodes": 128}, "guide-paths": {"guide_paths": True}, "focus": {"focus": True},
          "all-negatives": {"negatives": "all"}}


def model_settings(name: str) -> dict:
    """A ``--models`` entry: a name of ``MODELS`` or ``key=value+key=value`` settings, each
    value read as its ``TrainConfig`` field's type (``entity_text=1`` is True, ``degree_ratio=0``
    is 0.0); a key that is not a field, or a value not of its type, is a one-line error."""
    if name in MODELS:
        return dict(MODELS[name])
    kinds = {f.name: type(f.default) for f in dataclasses.fields(TrainConfig)}
    out = {}
    for key, _, value in (pair.partition("=") for pair in name.split("+")):
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
