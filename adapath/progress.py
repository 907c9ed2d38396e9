"""Progress of a long loop: a rich bar on a terminal, plain periodic lines in a log.

When the stream (stderr by default) is a terminal, a transient rich bar shows done/total,
rate and time left. When it is not (nohup, Slurm, a pipe), a line such as

    epoch 3: 480/800 questions (60%), 35.2 questions/s, ETA 9s

is written every ``interval`` seconds, and a closing line with the total time when at
least one such line was written (short loops stay silent; their caller reports them).

The rate and the time left are measured from the end of the first step (the first call that
finished work), so its warm-up (JIT compilation, a model load, the first batch's caches) does
not stretch the estimate; until a second step finishes a line says how long the first took.

    with Progress(len(items), "epoch 3", unit="questions") as bar:
        for batch in batches:
            ...
            bar.advance(len(batch))       # or bar.update(done)

    for item in track(items, "node text", unit="nodes"):
        ...
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO

from adapath.errors import stop_if_interrupted


def format_seconds(seconds: float) -> str:
    """12s, 4m05s, 2h03m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """Counts work done towards ``total`` (None: unknown) and shows it on ``stream``.

    ``bar``: None picks by ``stream.isatty()``; True or False forces the rich bar or the
    plain lines. ``interval``: seconds between lines in a log (default: the environment's
    ``ADAPATH_PROGRESS_INTERVAL``, else 5). ``quiet``: count only, show nothing (library calls that a caller runs
    silently). ``clock`` is injectable for tests.
    """

    def __init__(self, total: int | None, label: str, unit: str = "items", *, stream: TextIO | None = None,
                 interval: float | None = None, bar: bool | None = None, quiet: bool = False,
                 clock: Callable[[], float] = time.monotonic):
        if interval is None:
            interval = float(os.environ.get("ADAPATH_PROGRESS_INTERVAL", "5"))
        self.total, self.label, self.unit, self.interval, self.clock = total, label, unit, interval, clock
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.use_bar = bool(isatty and isatty()) if bar is None else bar
        self.quiet = quiet
        if quiet:
            self.use_bar, self.interval = False, float("inf")
        self.done = 0
        self.initial = 0  # work done before this run (a resumed job): counted, not in the rate
        self.detail = ""  # what the loop is doing inside a step (an LLM call, say)
        self.lines = 0
        self.start = self.clock()
        self._steady: tuple[float, int] | None = None  # (time, done) when the first step finished
        self._next_line = self.start + self.interval
        self._bar = self._task = None
        if self.use_bar:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn(label), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[rate]}"), console=Console(file=self.stream),
                                     transient=True)
            self._bar.start()
            self._task = self._bar.add_task(label, total=total, rate="")

    def rate(self) -> float | None:
        """Units per second since the first step finished (None until a second one has)."""
        if self._steady is None or self.done == self._steady[1]:
            return None
        since, base = self._steady
        return (self.done - base) / max(self.clock() - since, 1e-9)

    def _pace(self) -> str:
        """The rate and time left, or what stands in for them while they are not known yet."""
        rate = self.rate()
        if rate is None:
            if self._steady is None:
                return "first step running"
            return f"first step took {format_seconds(self._steady[0] - self.start)} (warm-up, left out of the rate)"
        text = f"{rate:.1f} {self.unit}/s"
        if self.total is not None:
            text += f", ETA {format_seconds((self.total - self.done) / rate) if rate > 0 else '?'}"
        return text

    def set_total(self, total: int | None, done: int = 0) -> None:
        """Size the loop once it is known; ``done`` units were finished by an earlier run."""
        self.total, self.done, self.initial = total, done, done
        self._steady = None  # the rate starts again from the next step
        if self._bar is not None:
            self._bar.update(self._task, total=total, completed=done)

    def line(self) -> str:
        """The plain progress line for the current state."""
        text = f"{self.label}: {self.done}"
        if self.total is not None:
            text += f"/{self.total} {self.unit} ({100 * self.done / max(self.total, 1):.0f}%)"
        else:
            text += f" {self.unit}"
        text += f", {self._pace()}"
        if self.detail:
            text += f"; {self.detail}"
        return text

    def update(self, done: int) -> None:
        """Set the count of work done (for loops that know it rather than each step's size)."""
        self.advance(done - self.done)

    def note(self, detail: str) -> None:
        """Say what the current step is doing; in a log it shows on the next periodic line, so a
        long step (a batch of LLM calls) still writes lines while no unit finishes."""
        self.detail = detail
        self.advance(0)

    def advance(self, n: int = 1) -> None:
        stop_if_interrupted()  # a step ended: a safe point for a Ctrl-C noted meanwhile
        self.done += n
        now = self.clock()
        if n > 0 and self._steady is None:
            self._steady = (now, self.done)
        if self._bar is not None:
            rate = self._pace() + (f"  {self.detail}" if self.detail else "")
            self._bar.update(self._task, completed=self.done, rate=rate)
            return
        if now >= self._next_line:
            self._write(self.line())
            self._next_line = now + self.interval

    def close(self, stopped: BaseException | None = None) -> None:
        """End the display; in a log, a closing line for the whole run when lines were written.
        ``stopped``: the exception that ended the loop early, which the line then says (a run
        stopped by Ctrl-C must not read like a finished one)."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self.lines:  # the whole run, warm-up included
            from adapath.errors import Interrupted

            elapsed = self.clock() - self.start
            done = f"{self.done - self.initial} {self.unit} in {format_seconds(elapsed)}"
            if stopped is None:
                overall = (self.done - self.initial) / max(elapsed, 1e-9)
                self._write(f"{self.label}: {done}, {overall:.1f} {self.unit}/s")
            elif isinstance(stopped, (KeyboardInterrupt, Interrupted)):
                self._write(f"{self.label}: interrupted after {done}")
            else:
                self._write(f"{self.label}: stopped by an error after {done}")

    def _write(self, text: str) -> None:
        self.lines += 1  # counted first: a Ctrl-C just after the write still gets its closing line
        self.stream.write(text + "\n")
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(exc)


def track(items: Iterable, label: str, unit: str = "items", total: int | None = None, **options) -> Iterator:
    """Yield from ``items`` while showing progress (``total`` defaults to ``len(items)``)."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)
    with Progress(total, label, unit, **options) as bar:
        for item in items:
            yield item
            bar.advance()
