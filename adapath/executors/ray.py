"""The Ray executor: tasks on a local or an existing Ray cluster (``pip install 'adapath[distributed]'``).

- The spec (its arrays, settings and ``make``) goes once into Ray's object store
  (``ray.put``); a worker process reads the arrays zero-copy and read-only (NumPy and Arrow
  buffers in shared memory) and makes its worker on its first task, keeping it for the next.
- The driver keeps up to ``slots`` tasks in flight and hands each result to ``on_result``
  as it comes.
- A task whose worker process dies (killed, out of memory) is retried up to ``MAX_RETRIES``
  times by Ray; a task that raises is not, and what it raised is raised in the driver. A
  killed driver takes its tasks with it: the workloads write what they finish so that
  rerunning the same command resumes.
- No address: a local cluster is started on the loopback interface, without the dashboard,
  with an object store sized to the arrays and ``workers`` x ``threads_per_worker`` CPUs
  (default: every core), and stopped at ``close``. With an address, that cluster is joined
  (``ray start --head`` prints it) and left running. A driver already connected to Ray
  (``ray.init`` before) is used as it is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

from adapath.errors import InputError
from adapath.executors.base import OnResult, Worker, WorkerSpec, arrays_nbytes
from adapath.executors.cluster import connect, import_ray

MAX_RETRIES = 3

# Per worker process: the worker made from the spec its last task used.
_workers: dict[str, Worker] = {}


def run_task(key: str, spec_box: list, threads: int, task):
    """A Ray task. ``spec_box`` holds the spec's object reference inside a list, so Ray hands
    over the reference and the spec is fetched only by a process that has no worker for it."""
    worker = _workers.get(key)
    if worker is None:
        import ray

        _workers.clear()
        spec: WorkerSpec = ray.get(spec_box[0])
        worker = _workers[key] = spec.make(spec.arrays, spec.settings, threads)
    return worker.run(task)


class RayExecutor:
    def __init__(self, address: str | None = None, workers: int = 0, threads_per_worker: int = 1,
                 max_retries: int = MAX_RETRIES):
        """``workers`` tasks at once (0 = every CPU of the cluster), each asking for
        ``threads_per_worker`` CPUs, on the cluster at ``address`` (None = a local cluster
        started here)."""
        if threads_per_worker < 1:
            raise InputError("--threads-per-worker must be at least 1")
        if workers < 0:
            raise InputError("--workers must be 0 (every CPU) or more")
        self.address, self.workers, self.threads = address, workers, threads_per_worker
        self.max_retries = max_retries
        self.connected = False  # this executor called ray.init (and so calls ray.shutdown)
        self.put_seconds = 0.0
        self.arrays_bytes = 0
        self.slots = 0
        self._spec_ref = None

    def start(self, spec: WorkerSpec) -> None:
        ray = import_ray()
        self.arrays_bytes = arrays_nbytes(spec.arrays)
        # a local cluster gets an object store sized to the arrays
        cpus = self.workers * self.threads if self.workers else (os.cpu_count() or 1)
        self.connected = connect(self.address, cpus, int(self.arrays_bytes * 1.25) + 64 * 2**20) or self.connected
        resources = ray.cluster_resources()
        cpus, gpus = int(resources.get("CPU", 0)), int(resources.get("GPU", 0))
        if cpus < self.threads:
            raise InputError(f"the Ray cluster has {cpus} CPUs; --threads-per-worker {self.threads} "
                             "asks for more per task")
        if spec.gpus and gpus < spec.gpus:
            raise InputError("--device cuda: the Ray cluster has no GPU")
        by_cpu = cpus // self.threads
        self.slots = min(self.workers or by_cpu, gpus // spec.gpus if spec.gpus else by_cpu)
        clock = time.perf_counter()
        self._spec_ref = ray.put(spec)
        self.put_seconds = time.perf_counter() - clock
        self._task = ray.remote(run_task).options(
            name=spec.name, num_cpus=self.threads, num_gpus=spec.gpus,
            max_retries=self.max_retries, retry_exceptions=False)

    def run(self, tasks: Sequence, on_result: OnResult) -> None:
        import ray

        waiting = iter(enumerate(tasks))
        in_flight: dict = {}  # object reference -> (index, task)
        key = self._spec_ref.hex()

        def submit() -> None:
            following = next(waiting, None)
            if following is not None:
                in_flight[self._task.remote(key, [self._spec_ref], self.threads, following[1])] = following

        for _ in range(self.slots):
            submit()
        try:
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    index, task = in_flight.pop(ref)
                    on_result(index, self._result(ray, ref, getattr(task, "name", index)))
                    submit()
        finally:
            for ref in in_flight:
                ray.cancel(ref, force=True)

    def _result(self, ray, ref, label):
        """A finished task's result; what the task raised is raised here as it was raised."""
        from ray.exceptions import RayError, RayTaskError

        try:
            return ray.get(ref)
        except RayTaskError as exc:
            if isinstance(exc.cause, BaseException):
                raise exc.cause from None
            raise
        except RayError as exc:
            raise RuntimeError(
                f"batch {label}: its worker died in each of its {self.max_retries + 1} attempts "
                f"({type(exc).__name__}); finished batches are kept, rerun the same command to resume") from None

    def close(self) -> None:
        """Drop the spec; leave the cluster (a local one started here stops with it)."""
        self._spec_ref = None
        if self.connected:
            import ray

            ray.shutdown()
            self.connected = False
