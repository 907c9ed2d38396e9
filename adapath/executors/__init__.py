"""Where a workload's tasks run: one protocol (``base.Executor``), two executors.

- ``local``: this process, task after task (``LocalExecutor``);
- ``ray``: Ray tasks on a local or an existing Ray cluster (``RayExecutor``,
  ``pip install 'adapath[distributed]'``; ``cluster`` starts or joins it).

A workload hands an executor a ``WorkerSpec`` (how its worker is made, from plain settings and
arrays) and a list of tasks. The bank build (``adapath.bank.worker``) and answering
(``adapath.methods.run``) are the two workloads. Nothing here imports Ray until the Ray
executor is asked for, nor anything of ours above it.
"""

from __future__ import annotations

from adapath.errors import InputError
from adapath.executors.base import (
    Executor,
    OnResult,
    StagedWorker,
    Worker,
    WorkerSpec,
    arrays_nbytes,
    in_order,
)
from adapath.executors.local import LocalExecutor

__all__ = ["EXECUTORS", "Executor", "LocalExecutor", "OnResult", "StagedWorker", "Worker", "WorkerSpec",
           "arrays_nbytes", "in_order", "make_executor"]

EXECUTORS = ("local", "ray")


def make_executor(name: str, workers: int = 0, ray_address: str | None = None,
                  threads_per_worker: int = 1, pipeline: bool | None = None) -> Executor:
    """``local``: ``workers`` CPUs for the worker in this process (0 = every core), the next
    task's first half run while this one's second half runs if ``pipeline`` (None: on the
    GPU). ``ray``: ``workers`` Ray tasks at once (0 = every CPU of the cluster), each with
    ``threads_per_worker`` CPUs, on the cluster at ``ray_address`` (None = a local cluster
    started here)."""
    if name == "local":
        if ray_address:
            raise InputError("--ray-address needs --executor ray")
        return LocalExecutor(threads=workers, pipeline=pipeline)
    if name == "ray":
        if pipeline:
            raise InputError("--pipeline needs --executor local (a Ray worker runs one batch at a time)")
        from adapath.executors.ray import RayExecutor

        return RayExecutor(address=ray_address, workers=workers, threads_per_worker=threads_per_worker)
    raise InputError(f"--executor {name!r}: choose {' or '.join(EXECUTORS)}")
