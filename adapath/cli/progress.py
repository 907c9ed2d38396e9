"""Progress for long runs: a rich bar on a terminal, else (nohup, Slurm logs) one plain line
every few seconds with done/total, rate and ETA."""

from __future__ import annotations

import sys
import time

from adapath.cli.common import err_console


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class ProgressReport:
    """``update(done, rate)`` as work finishes; use as a context manager."""

    def __init__(self, label: str, total: int, unit: str = "items", every: float = 5.0,
                 terminal: bool | None = None):
        self.label, self.total, self.unit, self.every = label, total, unit, every
        self.terminal = sys.stderr.isatty() if terminal is None else terminal
        self._last = 0.0
        self._bar = None

    def __enter__(self) -> ProgressReport:
        if self.terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn(self.label), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                 console=err_console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total, rate="")
        self._last = time.monotonic()
        return self

    def update(self, done: int, rate: float) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=done, rate=f"{rate:.1f} {self.unit}/s")
            return
        now = time.monotonic()
        if now - self._last >= self.every or done >= self.total:
            self._last = now
            eta = _duration((self.total - done) / rate) if rate > 0 else "?"
            print(f"{self.label}: {done:,}/{self.total:,} {self.unit}, {rate:.1f} {self.unit}/s, ETA {eta}",
                  file=sys.stderr, flush=True)

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
