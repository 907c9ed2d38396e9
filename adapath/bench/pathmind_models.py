"""PathMind's named training options for the benches' ``--models``: each name's settings in full
where they differ from today's default, so a name keeps its model."""

from __future__ import annotations

BEFORE_PRIOR = {"answer_type": False, "answer_text": False}  # the readout's answer prior, the default since 2026-12-07
MODELS = {"default": {}, "no-prior": BEFORE_PRIOR, "answer-type": {"answer_text": False}} | {
    name: BEFORE_PRIOR | settings for name, settings in {
        "paper": {"loss": "bce", "entity_text": False}, "softmax": {"loss": "softmax", "entity_text": False},
        "balanced": {"loss": "balanced", "entity_text": False}, "product": {"cost": "product", "loss": "bce"},
        "gate": {"entity": "gate", "loss": "bce"}, "layers": {"readout": "layers", "loss": "bce"},
        "scalar": {"reading": "scalar", "loss": "bce"},
        "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
        "unpruned": {"nodes": 0}, "mul": {"message": "mul"}, "walk": {"network": "walk", "loss": "bce"},
        "bce": {"loss": "bce"}, "adversarial": {"loss": "adversarial"}, "no-text": {"entity_text": False},
        "nodes8": {"nodes": 8}, "nodes64": {"nodes": 64}, "nodes128": {"nodes": 128}}.items()}


def model_settings(name: str) -> dict:
    """A ``--models`` entry: a name of ``MODELS`` or ``key=value+key=value`` settings."""
    if name in MODELS:
        return dict(MODELS[name])
    pairs = [pair.partition("=")[::2] for pair in name.split("+")]
    return {key: number(value) for key, value in pairs}


def number(value: str):
    """``value`` as an int, else a float, else the text itself (``degree_ratio=2.5``)."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value
