"""The one timing rule of every bench: kernels are compiled untimed before the first timed
figure (``warm_up``), the sides of a comparison alternate for ``--rounds`` rounds and each
side's best round is its figure (``alternate``), and a long run says where it is on one
progress line (``Line``)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measured:
    """What a side returns when it clocks itself (its own warm-up or set-up left out)."""
    seconds: float
    value: Any = None


def warm_up(work: Callable[..., Any], *args, **kwargs) -> Any:
    """Run ``work`` once, untimed: the Numba kernels it calls compile (or load from Numba's
    disk cache) and its first-call set-up is paid before anything is clocked."""
    return work(*args, **kwargs)


@dataclass
class Comparison:
    """Seconds of every round of each side (and what each round returned)."""
    seconds: dict[str, list[float]] = field(default_factory=dict)
    values: dict[str, list[Any]] = field(default_factory=dict)

    def best(self, side: str) -> float:
        return min(self.seconds[side])

    def best_value(self, side: str) -> Any:
        rounds = self.seconds[side]
        return self.values[side][rounds.index(min(rounds))]

    def ratio(self, slower: str, faster: str) -> float:
        """How many times faster ``faster``'s best round ran than ``slower``'s."""
        return self.best(slower) / self.best(faster)

    def round_ratios(self, slower: str, faster: str) -> list[float]:
        return [a / b for a, b in zip(self.seconds[slower], self.seconds[faster])]

    def figures(self) -> dict:
        return {"best_seconds": {s: self.best(s) for s in self.seconds}, "round_seconds": self.seconds}


def alternate(sides: dict[str, Callable[[], Any]], rounds: int, warm: dict[str, Callable[[], Any] | None] | None = None,
              clock: Callable[[], float] = time.perf_counter, line: Line | None = None) -> Comparison:
    """Each side warmed up once (``warm[side]``, else the side itself; None: the side warms
    itself up before its own clock, ``Measured``), untimed; then
    ``rounds`` rounds, the order of the sides reversed every other round so neither always
    runs on the other's leftovers. A side that returns ``Measured`` gives its own seconds."""
    names = list(sides)
    for name in names:
        first = (warm or {}).get(name, sides[name])
        if first is None:
            continue  # the side warms itself up inside each call, before its own clock
        if line:
            line.step(f"{name}: warm-up (untimed)")
        warm_up(first)
    out = Comparison({n: [] for n in names}, {n: [] for n in names})
    for r in range(max(1, rounds)):
        for name in names if r % 2 == 0 else names[::-1]:
            if line:
                line.step(f"{name}: round {r + 1} of {max(1, rounds)}")
            start = clock()
            value = sides[name]()
            seconds = clock() - start
            if isinstance(value, Measured):
                seconds, value = value.seconds, value.value
            out.seconds[name].append(seconds)
            out.values[name].append(value)
    return out


class Line:
    """One progress line on stderr: ``bench NAME [3, 12s] what it is doing``."""

    def __init__(self, bench: str, stream=None, clock: Callable[[], float] = time.monotonic):
        self.bench, self.stream, self.clock = bench, stream or sys.stderr, clock
        self.start, self.count = clock(), 0

    def step(self, what: str) -> None:
        self.count += 1
        print(f"bench {self.bench} [{self.count}, {self.clock() - self.start:.0f}s] {what}",
              file=self.stream, flush=True)
