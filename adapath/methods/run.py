"""The resumable batch runner every command and bench uses to answer questions.

- Finished (id, level) pairs already in the output are skipped; a line torn by a crash is cut
  off; each batch's lines are flushed and fsynced before the next batch starts.
- The settings a result file was made with sit beside it (``FILE.settings.json``); resuming
  with other settings is refused, so one file never mixes two runs.
- The output file is created only when the first batch is done: a run that fails on its
  input leaves nothing behind.
- Batches run through an executor of ``adapath.executors`` (this process by default, or Ray
  workers); answering is a workload of it: a worker is a method, made from a ``MethodRecipe``
  (plain values) and the graph's arrays, and a task is a batch of queries. Results are
  written in batch order whatever order batches finish in, so every executor writes the same
  file and resumes the same way.
- ``prepare_answer_run``: what ``adapath answer`` checks and makes before its first question.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from adapath.config import without_later
from adapath.engine.graph import KnowledgeGraph
from adapath.errors import InputError, ctrl_c_between_steps, stop_if_interrupted
from adapath.errors import Interrupted as Stopped
from adapath.executors import Executor, LocalExecutor, WorkerSpec, in_order
from adapath.fsutil import name_the_path
from adapath.jsonl import read_json_object
from adapath.methods.base import (
    Method,
    MethodContext,
    MethodSpec,
    Query,
    Result,
    ResultShapeError,
    check_result_shape,
)
from adapath.progress import Progress

UNPARSED = ("mentioned", "stated", "best-path", "none")


class Interrupted(Stopped):
    """Ctrl-C during a run; ``kept`` results are safely on disk."""

    def __init__(self, kept: int, out: Path):
        super().__init__(f"interrupted: {kept} results kept in {out}; rerun the same command to resume" if kept
                         else "interrupted before any result was finished; nothing was written")
        self.kept = kept


# ------------------------------------------------------------------------ the workload
TASK_NAME = "answer_batch"


class MethodWorker:
    """A method as an executor's worker: a task is a batch of queries, its result their results."""

    def __init__(self, method: Method):
        self.method = method

    def run(self, batch: list[Query]) -> list[Result]:
        return self.method.answer(batch)


@dataclass(frozen=True)
class MethodRecipe:
    """How a worker makes a registered method: plain values only (the graph travels beside it
    as arrays, paths are read where the worker runs, the LLM is made there from its spec)."""

    method: str
    params: dict
    graph_dir: Path | None = None
    llm: str = "none"
    llm_options: dict = field(default_factory=dict)
    tensor_parallel: int = 1
    encoder: str = "minilm"
    bank: Path | None = None
    model: Path | None = None
    # Called after each LLM step, in this process only: a recipe that travels leaves it behind
    # (a Ray worker reports per batch).
    observe: Callable[[int, float], None] | None = field(default=None, compare=False, repr=False)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "observe": None}


def make_method_worker(arrays: dict, recipe: MethodRecipe, threads: int) -> MethodWorker:
    """The recipe's method over the shipped graph (``threads`` is the executor's to give; a
    method takes what its parameters say)."""
    from adapath.llm import ObservedBackend, make_backend
    from adapath.methods.registry import get_method

    graph = KnowledgeGraph.from_arrays(arrays["graph"])
    backend = make_backend(recipe.llm, dict(recipe.llm_options), tensor_parallel_size=recipe.tensor_parallel)
    if backend is not None and recipe.observe is not None:
        backend = ObservedBackend(backend, recipe.observe)
    context = MethodContext(graph, recipe.graph_dir, backend, recipe.encoder, recipe.bank, recipe.model,
                            dict(recipe.params))
    return MethodWorker(get_method(recipe.method).make(context))


def method_worker_spec(graph: KnowledgeGraph, recipe: MethodRecipe) -> WorkerSpec:
    return WorkerSpec(TASK_NAME, make_method_worker, recipe, arrays={"graph": graph.to_arrays()})


def make_built_method_worker(arrays: dict, build: Callable[[], Method], threads: int) -> MethodWorker:
    return MethodWorker(build())


@dataclass
class RunSummary:
    new: int = 0
    already: int = 0
    seconds: float = 0.0
    answer_sources: dict[str, int] = field(default_factory=dict)

    @property
    def unparsed(self) -> int:
        return sum(self.answer_sources.get(k, 0) for k in UNPARSED)


def settings_path(out: Path) -> Path:
    return out.with_name(out.name + ".settings.json")


def finished_pairs(out: Path) -> set[tuple[str, str]]:
    """(id, level) of complete result lines; a torn last line (a crash mid-write) is cut off,
    and a broken line with lines after it is an error (cutting there would lose them)."""
    if not out.is_file():
        return set()
    done = set()
    good_bytes = 0
    torn = 0  # the number of a line that could not be read, when one is pending
    with open(out, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                good_bytes += 0 if torn else len(raw)
                continue
            if torn:
                raise InputError(f"{out}:{torn}: not a complete result line, and lines follow it; mend or "
                                 "remove that line, or pass --force to start over")
            try:
                obj = json.loads(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
                if not raw.endswith(b"\n"):
                    raise ValueError
            except (ValueError, UnicodeDecodeError, RecursionError):
                torn = lineno
                continue
            if not isinstance(obj, dict):
                raise InputError(f"{out}:{lineno}: expected a JSON object (a result line)")
            try:
                check_result_shape(obj)
            except ResultShapeError as exc:
                raise InputError(f"{out}:{lineno}: {exc}") from None
            done.add((str(obj["id"]), obj.get("level", "")))
            good_bytes += len(raw)
    if good_bytes != out.stat().st_size:
        with open(out, "r+b") as handle:
            handle.truncate(good_bytes)
    return done


# Settings that files made before them lack; such a file still resumes (and gains them).
RECORDED_SINCE = frozenset({"queries_path", "queries_checksum"})
# Method params added later, each with the value the files made before it answered with: such
# a file resumes where the param keeps that value (PathMind's answering entity count; its
# reader, which no model had before).
PARAMS_SINCE = {"nodes": 0, "rerank": 0}


def _same(key: str, old, new) -> bool:
    if key == "params" and isinstance(old, dict) and isinstance(new, dict):
        new = without_later(new, {k: v for k, v in PARAMS_SINCE.items() if k not in old})
    return old == new


def check_settings(out: Path, settings: dict, force: bool) -> None:
    """Start over with ``force``; else refuse to resume a file made with other settings."""
    sidecar = settings_path(out)
    if force:
        for path in (out, sidecar):
            if path.exists():
                path.unlink()
        return
    if not out.exists():
        return
    if not sidecar.is_file():
        raise InputError(f"{out}: results without their settings file {sidecar.name}; "
                         "pass --force to start over")
    old = read_json_object(sidecar)
    changed = [k for k in sorted(set(old) | set(settings)) if not _same(k, old.get(k), settings.get(k))
               and not (k in RECORDED_SINCE and k not in old)]
    if changed:
        key = changed[0]
        raise InputError(f"{out}: made with {key}={old.get(key)!r}, now {key}={settings.get(key)!r}; "
                         "pass --force to start over or choose another --out")


def _write_settings(out: Path, settings: dict) -> None:
    sidecar = settings_path(out)
    tmp = sidecar.with_name(f".{sidecar.name}.tmp")
    tmp.write_text(json.dumps(settings, indent=2, sort_keys=True))
    os.replace(tmp, sidecar)


def run_queries(method: WorkerSpec | Callable[[], Method], queries: list[Query], out: str | Path, *,
                settings: dict | None = None, batch: int = 16, force: bool = False,
                executor: Executor | None = None,
                progress: Progress | None = None) -> RunSummary:
    """Answer ``queries`` into the JSONL file ``out``, resuming what is there.

    ``method``: the workers' spec (``method_worker_spec``), or a function that builds the
    method in this process (tests, benches). Nothing is built when every query is done.
    ``executor``: where batches run (default: this process); the caller closes one it
    gives. ``settings`` describe the run for the settings file; ``progress`` is sized to the
    whole run (finished questions included) and advanced per batch.
    """
    if batch < 1:
        raise InputError("--batch must be at least 1")
    out = Path(out)
    settings = dict(settings or {})
    check_settings(out, settings, force)
    done = finished_pairs(out)
    todo = [q for q in queries if (q.id, q.level) not in done]
    summary = RunSummary(already=len(queries) - len(todo))
    if progress is not None:
        progress.set_total(len(queries), done=summary.already)
    batches = [todo[lo:lo + batch] for lo in range(0, len(todo), batch)]
    spec = method if isinstance(method, WorkerSpec) else WorkerSpec(TASK_NAME, make_built_method_worker, method)
    own_executor = executor is None
    executor = executor or LocalExecutor()
    start = time.perf_counter()
    handle = None

    def write(_: int, results: list[Result]) -> None:
        nonlocal handle
        try:
            if handle is None:
                out.parent.mkdir(parents=True, exist_ok=True)
                _write_settings(out, settings)
                handle = open(out, "a", encoding="utf-8")
            handle.write("".join(json.dumps(r.to_json(), ensure_ascii=False) + "\n" for r in results))
            handle.flush()
            os.fsync(handle.fileno())
        except OSError as exc:  # a full disk names no file: say which one was being written
            name_the_path(exc, out)
            if handle is not None:  # closing flushes what is left, which fails the same way
                with contextlib.suppress(OSError):
                    handle.close()
                handle = None
            raise
        summary.new += len(results)
        for r in results:
            summary.answer_sources[r.answer_source] = summary.answer_sources.get(r.answer_source, 0) + 1
        if progress is not None:
            progress.update(summary.already + summary.new)
        stop_if_interrupted()  # the batch is kept: a safe point for a Ctrl-C noted meanwhile

    try:
        with ctrl_c_between_steps():  # Ctrl-C stops between batches, never inside a kernel
            if batches:
                executor.start(spec)
                executor.run(batches, in_order(write))
    except KeyboardInterrupt:
        raise Interrupted(summary.already + summary.new, out) from None
    finally:
        if handle is not None:
            handle.close()
        if own_executor:
            executor.close()
    summary.seconds = time.perf_counter() - start
    return summary


def load_results(path: str | Path) -> list[Result]:
    """Every result line of a file; a malformed line names the file and line."""
    from adapath.jsonl import iter_jsonl

    out = []
    for lineno, obj in iter_jsonl(path):
        try:
            out.append(Result.from_json(obj))
        except (ValueError, TypeError) as exc:
            raise InputError(f"{path}:{lineno}: {exc}") from None
    return out


def answer_all(method: Method, queries: Iterable[Query], batch: int = 16) -> list[Result]:
    """In memory, no file: the benches' and tests' way to answer a list of queries."""
    queries = list(queries)
    return [r for lo in range(0, len(queries), batch) for r in method.answer(queries[lo:lo + batch])]


# ------------------------------------------------------------------------ run preparation
@dataclass
class AnswerRun:
    """A checked ``adapath answer`` run: the questions, the graph, the method's recipe and the
    settings its result file is made with."""

    queries: list[Query]
    graph: KnowledgeGraph
    recipe: MethodRecipe
    settings: dict

    def worker_spec(self) -> WorkerSpec:
        return method_worker_spec(self.graph, self.recipe)


def prepare_answer_run(spec: MethodSpec, *, kg: Path, queries: str, given: dict[str, str],
                       topics: Path | None = None, bank: Path | None = None, model: Path | None = None,
                       level: str | None = None, limit: int = 0, llm: str = "none",
                       llm_options: dict | None = None, tensor_parallel: int = 1, encoder: str = "minilm",
                       note: Callable[[str], None] = lambda message: None,
                       observe: Callable[[int, float], None] | None = None) -> AnswerRun:
    """Every check of a run before its first question, in this order: the method's parameters
    (``given`` as NAME=VALUE strings) and its LLM, the questions (``level``; the first
    ``limit`` of each level), the graph, the bank's graph, every topic in the graph. ``note``
    hears that questions without topic ids are left out; ``observe`` each LLM step of a
    worker in this process (``MethodRecipe.observe``)."""
    from adapath.bank.store import BankStore
    from adapath.datasets.specs import load_query_set
    from adapath.llm import PLACEMENT

    llm_options = dict(llm_options or {})
    params = spec.resolve_params(given)
    if spec.llm == "required" and llm == "none":
        raise InputError(f"--method {spec.name} needs an LLM (--llm ...)")
    query_set = load_query_set(queries, topics=topics)
    levels = query_set.resolve_levels(level)
    todo = query_set.queries(levels)
    if limit:
        todo = [q for lv in levels for q in [x for x in todo if x.level == lv][:limit]]
    skipped = query_set.unanswerable()
    if skipped:
        note(f"{skipped} of {len(query_set.items)} questions have no topic ids and are left out "
             "(link them with `adapath dataset topics` and pass --topics)")
    if not todo:
        raise InputError(f"{queries}: no question to answer")
    graph = KnowledgeGraph.load(kg)
    checksum = graph.checksum()
    if "bank" in spec.needs and bank is not None:
        BankStore(bank).check_graph(checksum, kg)
    if "model" in spec.needs:  # a PathMind model: its packages, its folder and its graph
        from adapath.methods.pathmind.checks import (
            check_installed,
            check_model_graph,
            model_encoder,
        )

        check_installed(f"--method {spec.name}")
        if model is not None:  # (without one, making the method says so)
            encoder = model_encoder(check_model_graph(model, checksum, kg)) or encoder  # the one it answers with
    settings = {"method": spec.name, "params": params, "llm": llm, "encoder": encoder, "queries": queries,
                "topics": str(topics.resolve()) if topics else None, "graph_checksum": checksum,
                "bank": str(bank.resolve()) if bank else None, "model": str(model.resolve()) if model else None}
    # the questions file answered, for `adapath eval` to compare with its --queries
    settings["queries_path"], settings["queries_checksum"] = str(query_set.path()), query_set.checksum()
    replying = {k: v for k, v in llm_options.items() if k not in PLACEMENT}  # options that change replies
    if replying:  # absent otherwise, so files made before --llm-option still resume
        settings["llm_options"] = replying
    for q in todo:
        missing = graph.index_of(list(q.topic_ids), missing="ignore")
        if (missing < 0).any():
            raise InputError(f"question {q.id}: topic id(s) {[t for t, i in zip(q.topic_ids, missing) if i < 0]} "
                             f"are not in {kg}")
    recipe = MethodRecipe(spec.name, params, graph_dir=kg, llm=llm, llm_options=llm_options,
                          tensor_parallel=tensor_parallel, encoder=encoder, bank=bank, model=model,
                          observe=observe)
    return AnswerRun(todo, graph, recipe, settings)
