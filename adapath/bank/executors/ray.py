"""The Ray executor: a bank's batches as Ray tasks on a local or an existing Ray cluster.

- The graph's arrays and its BM25 index go once into Ray's object store (``ray.put``); a
  worker reads them zero-copy and read-only (NumPy and Arrow buffers in shared memory), and
  builds its batch runner once, on its first task, keeping it for the next ones.
- Each batch is one task: it runs the batch and writes the batch's part itself (so ``--out``
  must be on a filesystem every node sees). The driver keeps ``workers`` tasks in flight and
  commits each result as it comes (progress, manifest).
- A task whose worker dies (killed, out of memory) is retried up to ``MAX_RETRIES`` times
  by Ray; its part is written under a temporary name and renamed, so a half-run attempt
  leaves nothing. A killed driver takes its tasks with it; rerunning the same command
  resumes from the parts on disk.
- No address: a local cluster is started on the loopback interface, without the dashboard,
  with an object store sized to the graph and ``workers`` CPUs (default: every core), and
  stopped at the end. With an address, that cluster is joined (``ray start --head`` prints
  it) and left running. A driver already connected to Ray (``ray.init`` before) is used
  as it is.
- Numba's thread count is set in each worker, to the CPUs its task asked for.
"""

from __future__ import annotations

import os
import time

from adapath.bank.executors.local import set_numba_threads
from adapath.bank.runner import BatchResult, BatchRunner, execute_batch
from adapath.cluster import connect, import_ray
from adapath.errors import InputError

MAX_RETRIES = 3

# Per worker process: the runner of the payload its last task used.
_runner_cache: dict[str, BatchRunner] = {}


# ------------------------------------------------------------------------ payload
def graph_payload(graph, text) -> dict:
    """Everything a worker needs, as NumPy and Arrow arrays (shipped out of band, zero-copy)."""
    def index(ix) -> dict:
        m = ix.matrix
        return {"data": m.data, "indices": m.indices, "indptr": m.indptr, "shape": m.shape,
                "vocab": ix.vocab, "k1": ix.k1, "b": ix.b}

    return {
        "graph": {
            "indptr": graph.indptr, "indices": graph.indices, "rel": graph.rel, "fwd": graph.fwd,
            "node_type": graph.node_type, "node_id": graph.node_id,
            "names": graph.names, "descriptions": graph.descriptions,
            "type_names": graph.type_names, "relation_names": graph.relation_names,
            "relation_descriptions": graph.relation_descriptions,
        },
        "text": {"nodes": index(text.nodes), "relations": index(text.relations)},
    }


def payload_bytes(payload: dict) -> int:
    g = payload["graph"]
    arrays = [g[k] for k in ("indptr", "indices", "rel", "fwd", "node_type", "node_id")]
    arrays += [payload["text"][part][k] for part in ("nodes", "relations") for k in ("data", "indices", "indptr")]
    return sum(a.nbytes for a in arrays) + g["names"].nbytes + g["descriptions"].nbytes


def runner_from_payload(payload: dict, config, threads: int) -> BatchRunner:
    import scipy.sparse as sp

    from adapath.engine.graph import KnowledgeGraph
    from adapath.retrieval.bm25 import GraphText, TextIndex

    def index(d: dict) -> TextIndex:
        matrix = sp.csr_matrix((d["data"], d["indices"], d["indptr"]), shape=tuple(d["shape"]), copy=False)
        return TextIndex(matrix, d["vocab"], d["k1"], d["b"])

    graph = KnowledgeGraph(**payload["graph"])
    text = GraphText(index(payload["text"]["nodes"]), index(payload["text"]["relations"]))
    return BatchRunner(graph, text, config, threads=threads)


def run_bank_batch(key: str, payload_box: list, config, threads: int, store, batch) -> BatchResult:
    """A Ray task: one batch, its part written. ``payload_box`` holds the payload's object
    reference inside a list, so Ray hands over the reference and the payload is fetched only
    by a worker that has no runner for it yet."""
    runner = _runner_cache.get(key)
    if runner is None:
        import ray

        set_numba_threads(threads)
        _runner_cache.clear()
        runner = _runner_cache[key] = runner_from_payload(ray.get(payload_box[0]), config, threads)
    return execute_batch(runner, store, batch)


# ------------------------------------------------------------------------ executor
class RayExecutor:
    def __init__(self, address: str | None = None, workers: int = 0, threads_per_worker: int = 1,
                 max_retries: int = MAX_RETRIES):
        if threads_per_worker < 1:
            raise InputError("--threads-per-worker must be at least 1")
        if workers < 0:
            raise InputError("--workers must be 0 (every CPU) or more")
        self.address, self.workers, self.threads = address, workers, threads_per_worker
        self.max_retries = max_retries
        self.connected = False  # this executor called ray.init (and so calls ray.shutdown)
        self.put_seconds = 0.0
        self.payload_bytes = 0
        self.slots = 0
        self._payload_ref = None

    # -------------------------------------------------------------- prepare
    def prepare(self, graph, text, config) -> None:
        ray = import_ray()
        payload = graph_payload(graph, text)
        self.payload_bytes = payload_bytes(payload)
        # a local cluster gets an object store sized to the payload
        cpus = self.workers * self.threads if self.workers else (os.cpu_count() or 1)
        self.connected = connect(self.address, cpus, int(self.payload_bytes * 1.25) + 64 * 2**20)
        resources = ray.cluster_resources()
        cpus, gpus = int(resources.get("CPU", 0)), int(resources.get("GPU", 0))
        if cpus < self.threads:
            raise InputError(f"the Ray cluster has {cpus} CPUs; --threads-per-worker {self.threads} "
                             "asks for more per task")
        if config.device == "cuda" and gpus < 1:
            raise InputError("--device cuda: the Ray cluster has no GPU")
        by_cpu = cpus // self.threads
        self.slots = min(self.workers or by_cpu, by_cpu if config.device == "cpu" else gpus)
        clock = time.perf_counter()
        self._payload_ref = ray.put(payload)
        self.put_seconds = time.perf_counter() - clock
        self._key = self._payload_ref.hex()
        self._config = config
        self._task = ray.remote(run_bank_batch).options(
            num_cpus=self.threads, num_gpus=1 if config.device == "cuda" else 0,
            max_retries=self.max_retries, retry_exceptions=False)

    # -------------------------------------------------------------- run
    def run(self, store, batches, on_result) -> None:
        import ray
        from ray.exceptions import RayTaskError

        waiting = iter(batches)
        in_flight: dict = {}

        def submit() -> None:
            batch = next(waiting, None)
            if batch is not None:
                ref = self._task.remote(self._key, [self._payload_ref], self._config, self.threads, store, batch)
                in_flight[ref] = batch

        for _ in range(self.slots):
            submit()
        try:
            while in_flight:
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    batch = in_flight.pop(ref)
                    try:
                        result = ray.get(ref)
                    except RayTaskError as exc:  # the task raised: re-raise what it raised
                        cause = exc.cause if isinstance(exc.cause, BaseException) else None
                        if cause is not None:
                            raise cause from None
                        raise
                    except ray.exceptions.RayError as exc:
                        raise RuntimeError(
                            f"batch {batch.name}: its worker died in each of its {self.max_retries + 1} "
                            f"attempts ({type(exc).__name__}); finished parts are kept, rerun the same "
                            "command to resume") from None
                    on_result(result)
                    submit()
        finally:
            for ref in in_flight:
                ray.cancel(ref, force=True)

    def close(self) -> None:
        """Drop the payload; leave the cluster (a local one started here stops with it)."""
        self._payload_ref = None
        if self.connected:
            import ray

            ray.shutdown()
            self.connected = False

