"""Logs carry our lines only: third-party progress bars and known-harmless warnings are
silenced where a model loads; every other warning still passes.

- transformers' tqdm bars ("Loading weights" while a checkpoint loads) are turned off;
- ``HARMLESS`` lists the messages dropped from transformers' logger: ``loss_type=None`` (an
  encoder or a base model has no training loss configured; we never train with it there, and
  PathMind's trainer sets its own);
- ``HARMLESS_WARNINGS`` lists the Python warnings dropped: transformers' deprecation of its
  ``gradient_checkpointing`` names (trl and transformers call them, we do not), and peft's
  "Could not find a config file" when it saves an adapter over a base read from a ``.gguf``
  file (no ``config.json`` beside it; fine-tuning never changes the vocabulary);
- ``quiet_gguf_loading()`` also turns off the bar transformers draws while it de-quantizes a
  ``.gguf`` file (a tqdm bar of its own, not behind its progress-bar switch).

Call ``quiet_third_party()`` just before a model loads (it imports transformers, so only
commands that load one pay for it); calling it again changes nothing.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import warnings

HARMLESS = (re.compile(r"`loss_type=None` was set in the config but it is unrecognized"),)
HARMLESS_WARNINGS = (
    (FutureWarning, r"`\w*gradient_checkpointing\w*` is deprecated"),
    (UserWarning, r"Could not find a config file in .* will assume that the vocabulary was not modified"),
)


class HarmlessFilter(logging.Filter):
    """Drops the records whose message matches one of ``HARMLESS``."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(pattern.search(message) for pattern in HARMLESS)


_FILTER = HarmlessFilter()


def quiet_third_party() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # processes we start, and the hub
    for category, message in HARMLESS_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.disable_progress_bar()
    root = hf_logging.get_logger()  # the library's root logger, with its stderr handler set up
    # a record is filtered by the handlers it reaches, not by the filters of parent loggers
    for target in (root, *root.handlers, *logging.getLogger().handlers):
        if _FILTER not in target.filters:
            target.addFilter(_FILTER)


def quiet_gguf_loading() -> None:
    """``quiet_third_party()``, and no bar while transformers de-quantizes a ``.gguf`` file."""
    quiet_third_party()
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_loading
    except ImportError:
        return
    bar = getattr(gguf_loading, "tqdm", None)
    if bar is not None and not getattr(bar, "quiet", False):
        quiet = functools.partial(bar, disable=True)
        quiet.quiet = True
        gguf_loading.tqdm = quiet
