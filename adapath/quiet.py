"""Logs carry our lines only: third-party progress bars and known-harmless warnings are
silenced where a model loads; every other warning still passes.

- transformers' tqdm bars ("Loading weights" while a checkpoint loads) are turned off;
- ``HARMLESS`` lists the messages dropped from transformers' logger: ``loss_type=None`` (an
  encoder or a base model has no training loss configured; we never train with it there, and
  PathMind's trainer sets its own).

Call ``quiet_third_party()`` just before a model loads (it imports transformers, so only
commands that load one pay for it); calling it again changes nothing.
"""

from __future__ import annotations

import logging
import os
import re

HARMLESS = (re.compile(r"`loss_type=None` was set in the config but it is unrecognized"),)


class HarmlessFilter(logging.Filter):
    """Drops the records whose message matches one of ``HARMLESS``."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not any(pattern.search(message) for pattern in HARMLESS)


_FILTER = HarmlessFilter()


def quiet_third_party() -> None:
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # processes we start, and the hub
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
