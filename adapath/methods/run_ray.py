"""Answers on Ray: the runner's batches as Ray tasks, for any registered method.

- The method's recipe (the ``build`` function the runner gets, with the graph it holds) goes
  once into Ray's object store; each worker builds the method from it on its first task
  and keeps it for the next ones, so graph arrays are read zero-copy and the method's
  start-up (encoders, indexes) is paid once per worker.
- Up to ``workers`` batches are in flight; results are handed back in batch order, so the
  runner writes the same file as with the local executor and resumes the same way.
- A task whose worker dies is retried by Ray. Paths the method reads (graph folder, bank,
  model) must be visible to every node; an LLM is best served once and shared: give the
  workers ``--llm openai:URL#MODEL`` pointing at a vLLM server (``vllm serve``, itself
  tensor/pipeline-parallel over GPUs and nodes) or at several servers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from adapath.cluster import connect, import_ray
from adapath.errors import InputError
from adapath.methods.base import Method, Query, Result

MAX_RETRIES = 3

# Per worker process: the method built from the recipe its last task used.
_methods: dict[str, Method] = {}


def answer_batch(key: str, recipe_box: list, batch: list[Query]) -> list[Result]:
    """A Ray task. ``recipe_box`` holds the recipe's object reference inside a list, so the
    recipe is fetched only by a worker that has not built the method yet."""
    method = _methods.get(key)
    if method is None:
        import ray

        _methods.clear()
        method = _methods[key] = ray.get(recipe_box[0])()
    return method.answer(batch)


class RayAnswerExecutor:
    """``workers`` batches at once (0 = one per CPU of the cluster), each task asking for
    ``cpus_per_task`` CPUs, on the cluster at ``address`` (None = a local cluster)."""

    def __init__(self, address: str | None = None, workers: int = 0, cpus_per_task: int = 1,
                 max_retries: int = MAX_RETRIES):
        if workers < 0:
            raise InputError("--workers must be 0 (every CPU) or more")
        if cpus_per_task < 1:
            raise InputError("--threads-per-worker must be at least 1")
        self.address, self.workers, self.cpus = address, workers, cpus_per_task
        self.max_retries = max_retries

    def run(self, build: Callable[[], Method], batches: list[list[Query]]) -> Iterator[list[Result]]:
        if not batches:
            return
        ray = import_ray()
        connected = connect(self.address, self.workers * self.cpus if self.workers else (os.cpu_count() or 1))
        try:
            slots = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)) // self.cpus)
            recipe = ray.put(build)
            task = ray.remote(answer_batch).options(num_cpus=self.cpus, max_retries=self.max_retries,
                                                    retry_exceptions=False)
            refs: dict[int, object] = {}
            following = 0

            def submit() -> None:
                nonlocal following
                if following < len(batches):
                    refs[following] = task.remote(recipe.hex(), [recipe], batches[following])
                    following += 1

            for _ in range(slots):
                submit()
            for index in range(len(batches)):
                yield self._get(ray, refs.pop(index), index)
                submit()
        finally:
            if connected:
                ray.shutdown()

    def _get(self, ray, ref, index: int) -> list[Result]:
        from ray.exceptions import RayError, RayTaskError

        try:
            return ray.get(ref)
        except RayTaskError as exc:  # the method raised: raise what it raised
            if isinstance(exc.cause, BaseException):
                raise exc.cause from None
            raise
        except RayError as exc:
            raise RuntimeError(f"batch {index}: its worker died in each of its {self.max_retries + 1} attempts "
                               f"({type(exc).__name__}); finished results are kept, rerun the same command "
                               "to resume") from None
