"""The one executor protocol: how every workload (a bank build, answering) runs its tasks.

A workload describes its worker once, as a ``WorkerSpec``: a module-level ``make`` function,
plain settings, and the arrays every worker reads (the graph as ``KnowledgeGraph.to_arrays``,
never a pickle of our objects). An executor builds the worker from the spec wherever it runs
(this process, or once per Ray worker process), then feeds it tasks and hands each result
back to the driver. This module imports nothing of ours: ``bank/`` and ``methods/`` adapt
to it, and the imports run one way (they import it, it imports neither).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class Worker(Protocol):
    def run(self, task: Any) -> Any:
        """One task's result (a plain dataclass or a list of them)."""


@runtime_checkable
class StagedWorker(Protocol):
    """A worker whose task has two halves, so that the local executor can run the next
    task's first half on another thread while this one's second half runs."""

    def run(self, task: Any) -> Any: ...

    def begin(self, task: Any) -> Any:
        """The first half; what it returns goes to ``end``."""

    def end(self, begun: Any) -> Any:
        """The second half: the task's result."""


@dataclass(frozen=True)
class WorkerSpec:
    """How every worker of a run is made: ``make(arrays, settings, threads)``.

    ``make`` is a module-level function (it travels by name); ``settings`` are plain values
    (a dataclass); ``arrays`` a dict of NumPy and Arrow arrays and plain values, shipped once
    and read zero-copy on a cluster. ``threads`` are the CPUs each task may use."""

    name: str  # tasks are named after it (a Ray worker process is titled ray::NAME)
    make: Callable[[dict, Any, int], Worker]
    settings: Any
    arrays: dict = field(default_factory=dict)
    gpus: int = 0  # GPUs each task needs (a workload that runs on the device asks for 1)

    def same_worker(self, other: WorkerSpec | None) -> bool:
        """Would ``other`` make the same worker? The same function and settings, and the very
        same arrays (compared by identity: the kept worker holds them, so they are alive)."""
        return (other is not None and other.make is self.make and other.name == self.name
                and other.gpus == self.gpus and other.settings == self.settings
                and _same_values(other.arrays, self.arrays))


def _same_values(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_values(a[k], b[k]) for k in a)
    if hasattr(a, "nbytes") or hasattr(b, "nbytes"):  # an array: the same one, not an equal one
        return False
    return type(a) is type(b) and a == b


def arrays_nbytes(arrays) -> int:
    """Bytes of every array in a (nested) dict of arrays and plain values."""
    if isinstance(arrays, dict):
        return sum(arrays_nbytes(v) for v in arrays.values())
    return int(getattr(arrays, "nbytes", 0))


OnResult = Callable[[int, Any], None]


class Executor(Protocol):
    def start(self, spec: WorkerSpec) -> None:
        """Get workers ready for ``spec`` (on Ray: join or start the cluster, check its
        resources, ship the arrays once). May refuse here, before the run writes anything."""

    def run(self, tasks: Sequence, on_result: OnResult) -> None:
        """Run every task; ``on_result(index, result)`` in the driver for each, in the order
        they finish (``in_order`` restores the tasks' order)."""

    def close(self) -> None:
        """Release the workers and any cluster this executor started."""


def in_order(on_result: OnResult) -> OnResult:
    """An ``on_result`` that holds results back until every earlier task's has come, so
    ``on_result`` sees tasks 0, 1, 2, ... whatever order they finish in."""
    waiting: dict[int, Any] = {}
    following = 0

    def receive(index: int, result: Any) -> None:
        nonlocal following
        waiting[index] = result
        while following in waiting:
            on_result(following, waiting.pop(following))
            following += 1

    return receive
