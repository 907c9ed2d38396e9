"""The benches' PathMind model names: ``key=value`` settings read as the numbers they are, and
every named model a valid training configuration."""

import pytest

from adapath.bench.pathmind_models import MODELS, model_settings
from adapath.methods.pathmind.config import TrainConfig


def test_settings_read_ints_floats_and_words():
    assert model_settings("nodes=32+degree_ratio=2.5+message=mul+answer_type=1") == {
        "nodes": 32, "degree_ratio": 2.5, "message": "mul", "answer_type": 1}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_named_model_is_a_valid_configuration(name):
    config = TrainConfig(**model_settings(name))
    config.check()
    for key, value in MODELS[name].items():
        if config.network == "bellman-ford" or key not in ("entity_text", "answer_type", "answer_text"):
            assert getattr(config, key) == value
