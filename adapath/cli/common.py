"""What every sub-command shares: the consoles and the one-line status printer."""

from __future__ import annotations

import sys

from rich.console import Console

out_console = Console()
err_console = Console(stderr=True)


def say(message: str) -> None:
    """Status and errors go to stderr as plain single lines (no wrapping)."""
    print(message, file=sys.stderr, flush=True)
