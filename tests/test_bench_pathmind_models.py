"""The benches' PathMind model names: ``key=value`` settings read as the numbers they are, and
every named model a valid training configuration."""

import pytest

from adapath.bench.pathmind_models import MODELS, model_settings
from adapath.errors import InputError
from adapath.methods.pathmind.config import TrainConfig


def test_settings_read_as_their_fields_types():
    settings = model_settings("nodes=32+degree_ratio=2.5+message=mul+answer_type=1+entity_text=0")
    assert settings == {"nodes": 32, "degree_ratio": 2.5, "message": "mul", "answer_type": 1, "entity_text": False}
    assert [type(settings[k]) for k in ("nodes", "degree_ratio", "answer_type", "entity_text")] == [int, float, bool, bool]
    assert type(model_settings("degree_ratio=0")["degree_ratio"]) is float


@pytest.mark.parametrize("entry", ["nodes=many", "no_such_setting=3", "answer_type=maybe"])
def test_a_bad_setting_is_a_one_line_error(entry):
    with pytest.raises(InputError) as error:
        model_settings(entry)
    assert "\n" not in str(error.value) and entry.split("=")[0] in str(error.value)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_named_model_is_a_valid_configuration(name):
    config = TrainConfig(**model_settings(name))
    config.check()
    for key, value in MODELS[name].items():
        if config.network == "bellman-ford" or key not in ("entity_text", "answer_type", "answer_text"):
            assert getattr(config, key) == value
