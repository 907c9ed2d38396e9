"""PathMind's named training options for the benches' ``--models``: each name's settings in full
where they differ from today's default, so a name keeps its model."""

from __future__ import annotations

MODELS = {"default": {}, "paper": {"loss": "bce", "entity_text": False},
          "softmax": {"loss": "softmax", "entity_text": False}, "balanced": {"loss": "balanced", "entity_text": False},
          "product": {"cost": "product", "loss": "bce"}, "gate": {"entity": "gate", "loss": "bce"},
          "layers": {"readout": "layers", "loss": "bce"}, "scalar": {"reading": "scalar", "loss": "bce"},
          "nbfnet": {"cost": "product", "entity": "gate", "readout": "layers", "loss": "softmax"},
          "unpruned": {"nodes": 0}, "mul": {"message": "mul"}, "walk": {"network": "walk", "loss": "bce"},
          "bce": {"loss": "bce"}, "adversarial": {"loss": "adversarial"}, "no-text": {"entity_text": False},
          "nodes8": {"nodes": 8}, "nodes64": {"nodes": 64}, "nodes128": {"nodes": 128}}


def model_settings(name: str) -> dict:
    """A ``--models`` entry: a name of ``MODELS`` or ``key=value+key=value`` settings."""
    if name in MODELS:
        return dict(MODELS[name])
    pairs = [pair.partition("=")[::2] for pair in name.split("+")]
    return {key: int(value) if value.isdigit() else value for key, value in pairs}
