"""The timing rule of every bench: each side warmed up untimed (kernels compiled), the sides
alternating for ``--rounds`` rounds, each side's best round its figure; a progress line."""

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


@dataclass
class Comparison:
    """Seconds of every round of each side (and what each round returned)."""
    seconds: dict[str, list[float]] = field(default_factory=dict)
    values: dict[str, list[Any]] = field(default_factory=dict)

    def best(self, side: str) -> float:
        return min(self.seconds[side])

    def best_value(self, side: str) -> Any:
        return self.values[side][self.seconds[side].index(self.best(side))]

    def ratio(self, slower: str, faster: str) -> float:
        """How many times faster ``faster``'s best round ran than ``slower``'s."""
        return self.best(slower) / self.best(faster)

    def round_ratios(self, slower: str, faster: str) -> list[float]:
        return [a / b for a, b in zip(self.seconds[slower], self.seconds[faster])]


def timed(work: Callable, *args, **kwargs) -> tuple[float, Any]:
    """(wall seconds, value) of ``work(*args, **kwargs)``."""
    clock = time.perf_counter()
    value = work(*args, **kwargs)
    return time.perf_counter() - clock, value


def alternate(sides: dict[str, Callable[[], Any]], rounds: int, warm: dict[str, Callable[[], Any] | None] | None = None,
              clock: Callable[[], float] = time.perf_counter, line: Line | None = None) -> Comparison:
    """Each side run once untimed (``warm[side]``, else itself; None: it warms up itself and returns
    ``Measured``), then ``rounds`` rounds, the order reversed every other round so neither side
    always runs on the other's leftovers."""
    names = list(sides)
    for name in names:
        first = (warm or {}).get(name, sides[name])
        if first is not None:
            if line:
                line.step(f"{name}: warm-up (untimed)")
            first()
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


def timed_build(graph, queries, out, config, warm: int = 4, **options) -> tuple[float, Any]:
    """(seconds, progress) of a build after an untimed one of the first ``warm`` queries."""
    from adapath.bank.build import build_bank

    build_bank(graph, queries[:warm], out.with_name(out.name + "-warm-up"), config, force=True, **options)
    clock = time.perf_counter()
    progress = build_bank(graph, queries, out, config, force=True, **options)
    return time.perf_counter() - clock, progress
