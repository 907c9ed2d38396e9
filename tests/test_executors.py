"""The one executor protocol (``adapath.executors``) with toy workloads: results in the
driver, tasks' order restored, a kept worker, pipelining; and what travels to a worker
(arrays and plain values, never the graph object or a progress callback)."""

import pickle
import threading

import numpy as np
import pytest

from adapath.errors import InputError
from adapath.executors import LocalExecutor, WorkerSpec, in_order, make_executor

MADE = []


class Adder:
    """Adds its arrays' total to each task; ``begin``/``end`` split the same sum in two."""

    def __init__(self, arrays, settings):
        self.total = int(arrays["values"].sum()) * settings["scale"]
        self.log = []

    def run(self, task):
        return self.total + task

    def begin(self, task):
        self.log.append(("begin", task, threading.current_thread().name))
        return task

    def end(self, begun):
        self.log.append(("end", begun, threading.current_thread().name))
        return self.total + begun


class PlainAdder:
    def __init__(self, arrays, settings):
        self.total = int(arrays["values"].sum()) * settings["scale"]

    def run(self, task):
        return self.total + task


def make_adder(arrays, settings, threads):
    MADE.append(threads)
    return Adder(arrays, settings)


def make_plain_adder(arrays, settings, threads):
    return PlainAdder(arrays, settings)


def collect(executor, tasks):
    seen = []
    executor.run(tasks, lambda index, result: seen.append((index, result)))
    return seen


def test_local_executor_runs_every_task_in_order():
    values = np.arange(5)  # total 10
    executor = LocalExecutor(threads=3)
    executor.start(WorkerSpec("add", make_plain_adder, {"scale": 2}, {"values": values}))
    assert collect(executor, [1, 2, 3]) == [(0, 21), (1, 22), (2, 23)]
    assert not executor.pipelined  # a plain worker is never pipelined


def test_a_worker_is_kept_for_the_same_spec_and_made_again_for_another():
    """The same function, settings and the very same arrays keep the worker; equal arrays
    that are other objects, or other settings, make a new one."""
    MADE.clear()
    values = np.arange(4)
    executor = LocalExecutor(threads=2)
    executor.start(WorkerSpec("add", make_adder, {"scale": 1}, {"values": values}))
    first = executor.worker
    executor.start(WorkerSpec("add", make_adder, {"scale": 1}, {"values": values}))
    assert executor.worker is first and MADE == [2]
    executor.start(WorkerSpec("add", make_adder, {"scale": 1}, {"values": values.copy()}))
    assert executor.worker is not first
    second = executor.worker
    executor.start(WorkerSpec("add", make_adder, {"scale": 3}, {"values": values}))
    assert executor.worker is not second and collect(executor, [0]) == [(0, 18)]
    assert MADE == [2, 2, 2]
    executor.close()
    assert executor.worker is None


@pytest.mark.parametrize("pipeline, gpus, pipelined", [(None, 0, False), (None, 1, True), (True, 0, True),
                                                       (False, 1, False)])
def test_pipelining_runs_the_next_begin_on_another_thread_and_changes_no_result(pipeline, gpus, pipelined):
    values = np.arange(3)  # total 3
    executor = LocalExecutor(threads=1, pipeline=pipeline)
    executor.start(WorkerSpec("add", make_adder, {"scale": 1}, {"values": values}, gpus=gpus))
    assert executor.pipelined is pipelined
    assert collect(executor, [5, 6, 7, 8]) == [(0, 8), (1, 9), (2, 10), (3, 11)]
    log = executor.worker.log
    if pipelined:
        assert {name for step, _, name in log if step == "begin"} != {threading.current_thread().name}
        assert [t for step, t, _ in log if step == "end"] == [5, 6, 7, 8]
    else:
        assert log == []  # run, not begin/end


def test_in_order_holds_results_back_until_the_earlier_ones_came():
    seen = []
    receive = in_order(lambda index, result: seen.append((index, result)))
    for index in (2, 0, 3, 1, 4):
        receive(index, f"r{index}")
        if index == 0:
            assert seen == [(0, "r0")]
    assert seen == [(i, f"r{i}") for i in range(5)]


@pytest.mark.parametrize("args, message", [
    (("dask",), "--executor 'dask': choose local or ray"),
    (("local", 0, "127.0.0.1:6379"), "--ray-address needs --executor ray"),
    (("ray", 0, None, 1, True), "--pipeline needs --executor local"),
    (("ray", -1), "--workers must be 0 (every CPU) or more"),
    (("ray", 0, None, 0), "--threads-per-worker must be at least 1"),
])
def test_make_executor_refuses_bad_choices_in_one_line(args, message):
    pytest.importorskip("ray")
    with pytest.raises(InputError) as info:
        make_executor(*args)
    assert message in str(info.value)


def test_a_method_recipe_travels_as_plain_values_without_its_callback():
    """What a Ray worker gets to make a method: the recipe's plain values; the progress
    callback stays in this process, and the graph goes as arrays beside the recipe."""
    from pathlib import Path

    from adapath.methods.run import MethodRecipe, method_worker_spec
    from tests.test_graph import random_multigraph

    recipe = MethodRecipe("adapath", {"scorer": "walk"}, graph_dir=Path("kg"), encoder="hashing",
                          bank=Path("bank"), observe=lambda prompts, seconds: None)
    travelled = pickle.loads(pickle.dumps(recipe))
    assert travelled.observe is None and recipe.observe is not None
    assert (travelled.method, travelled.params, travelled.graph_dir, travelled.bank, travelled.encoder) == \
        ("adapath", {"scorer": "walk"}, Path("kg"), Path("bank"), "hashing")
    graph, _, _ = random_multigraph(0)
    spec = method_worker_spec(graph, recipe)
    assert spec.settings is recipe and set(spec.arrays) == {"graph"}
    assert spec.arrays["graph"]["indices"] is graph.indices
