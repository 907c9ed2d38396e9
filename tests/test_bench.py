"""`adapath bench`: the shared inputs are built once per request, the timing helper warms up
before it clocks and alternates the sides, every result validates against its schema,
`compare` prints the right ratios and flags a thread-count difference, `collect-env` runs
without a GPU and with one mocked, and suite files read as written."""

from __future__ import annotations

import argparse
import json
import subprocess
import types
from pathlib import Path

import jsonschema
import pytest

from adapath.bench import BENCHES, environment, result, runner, suite, timing
from adapath.bench.inputs import Inputs
from tests.conftest import run_cli

SCHEMA = json.loads(result.SCHEMA.read_text())
ENVIRONMENT = {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/environment"}


# ---------------------------------------------------------------- inputs
def test_two_benches_asking_for_the_same_graph_questions_and_bank_build_them_once(tmp_path):
    """As `bench answer` and `bench methods` ask (two processes: two Inputs on one folder)."""
    first, second = Inputs(tmp_path), Inputs(tmp_path)
    graph, kg = first.graph(0.005, 0)
    train = first.questions(graph, 6, seed=1)
    bank = first.bank(graph, kg, train)
    assert dict(first.built) == {"graph": 1, "questions": 1, "bank": 1}

    again, kg_again = second.graph(0.005, 0)
    assert kg_again == kg and again.checksum() == graph.checksum()
    assert second.questions(again, 6, seed=1) == train
    assert second.bank(again, kg_again, train) == bank
    assert sum(second.built.values()) == 0 and second.used == first.used
    from adapath.retrieval.dense import make_encoder

    store, _ = first.node_store(graph, kg, make_encoder("hashing"))
    assert second.node_store(again, kg_again, make_encoder("hashing"))[0] == store and "node store" not in second.built
    assert first.built["node store"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(first.used)
    # another request is another artefact: another seed, other questions
    other, other_kg = second.graph(0.005, 1)
    assert other_kg != kg and other.checksum() != graph.checksum()
    assert second.questions(graph, 6, seed=2) != train
    assert dict(second.built) == {"graph": 1, "questions": 1}


class Stop(Exception):
    """Ends a bench once its inputs are in hand (what it does with them is not this test's)."""


def stop_after_the_bank(monkeypatch, cache) -> list:
    """The bench cache at ``cache``; every bank a bench builds is built, its folder appended to
    the list returned, and the bench stopped there (``Stop``)."""
    from adapath.bench import inputs

    monkeypatch.setenv(inputs.ENV, str(cache))
    built_bank = inputs.Inputs.bank
    folders = []

    def bank_then_stop(self, *args, **kwargs):
        folders.append(built_bank(self, *args, **kwargs))
        raise Stop

    monkeypatch.setattr(inputs.Inputs, "bank", bank_then_stop)
    return folders


def test_bench_answer_and_bench_methods_share_one_graph_and_one_bank(tmp_path, monkeypatch):
    """The two benches, run one after the other on the same cache, ask for the same graph,
    questions and bank: the second builds none of them."""
    from adapath.bench import answer, inputs, methods

    folders = stop_after_the_bank(monkeypatch, tmp_path)
    for bench, argv in ((answer, ["--encoder", "hashing"]), (methods, ["--no-real", "--encoder", "hashing"])):
        with pytest.raises(Stop):
            bench.main(["--scale", "0.005", "--train", "6", "--test", "4", *argv])
    shared = inputs.inputs()
    assert shared.built["graph"] == 1 and shared.built["bank"] == 1 and folders[0] == folders[1]
    assert shared.built["questions"] == 2  # the training and the test questions: the same requests in both


def test_the_real_record_benches_share_one_planted_graph_and_one_bank(tmp_path, monkeypatch, dev_jsonl):
    """`bench real-records`, `bench pathmind --real` and `bench answer --queries biostrat:` on the
    same records and scale ask for the same split, planted graph and bank: built once, the
    graph the one `bench paths-recall` asks for (the records as evidence); with `--work`, a
    bench keeps its own in that folder."""
    from adapath.bench import answer, inputs, pathmind, real_records

    records = tmp_path / "dev.jsonl"
    records.write_text("".join(dev_jsonl.read_text().splitlines(keepends=True)[:12]))
    folders = stop_after_the_bank(monkeypatch, tmp_path / "cache")
    common = ["--scale", "0.005", "--encoder", "hashing"]
    for bench, argv in ((real_records, ["--records", records, "--graph", "planted"]),
                        (pathmind, ["--real", "--records", records, "--graph", "planted"]),
                        (answer, ["--queries", f"biostrat:{records}"])):
        with pytest.raises(Stop):
            bench.main([*map(str, argv), *common])
    shared = inputs.inputs()
    assert shared.built["graph"] == 1 and shared.built["bank"] == 1 and len(set(folders)) == 1
    _, folder = shared.graph(0.005, 0, evidence=[records])
    assert shared.built["graph"] == 1 and folder.parent == folders[0].parent
    assert len([u for u in shared.used if u.startswith("split-")]) == 1
    with pytest.raises(Stop):  # a work folder of its own: built there, the cache untouched
        real_records.main(["--records", str(records), "--work", str(tmp_path / "work"), *common])
    assert folders[-1] == tmp_path / "work" / "scale-0.005" / "bank-test" and shared.built["graph"] == 2


# ---------------------------------------------------------------- timing
def test_alternate_warms_each_side_untimed_then_alternates_and_keeps_each_best():
    events, now = [], [0.0]
    cost = {"a": [3.0, 2.0, 4.0], "b": [1.0, 1.5, 0.5]}

    def side(name):
        def run():
            events.append(name)
            now[0] += cost[name].pop(0)
            return name.upper()
        return run

    def warm(name):
        return lambda: events.append(f"warm {name}")

    done = timing.alternate({"a": side("a"), "b": side("b")}, 3, warm={"a": warm("a"), "b": warm("b")},
                            clock=lambda: now[0])
    assert events == ["warm a", "warm b", "a", "b", "b", "a", "a", "b"]
    assert done.seconds == {"a": [3.0, 2.0, 4.0], "b": [1.0, 1.5, 0.5]}
    assert done.best("a") == 2.0 and done.best("b") == 0.5 and done.ratio("a", "b") == 4.0
    assert done.round_ratios("a", "b") == [3.0, 2.0 / 1.5, 8.0] and done.best_value("b") == "B"


def test_a_side_that_clocks_itself_gives_its_own_seconds():
    done = timing.alternate({"x": lambda: timing.Measured(0.25, "v")}, 2, clock=iter(range(100)).__next__)
    assert done.seconds["x"] == [0.25, 0.25] and done.best_value("x") == "v"


# ---------------------------------------------------------------- environment
def fake_smi(monkeypatch, text):
    real = subprocess.run

    def run(args, *a, **k):
        if args[0] == "nvidia-smi":
            return subprocess.CompletedProcess(args, 0, stdout=text, stderr="")
        return real(args, *a, **k)

    monkeypatch.setattr(environment.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(environment.subprocess, "run", run)


def test_collect_env_without_a_gpu(monkeypatch, capsys):
    monkeypatch.setattr(environment.shutil, "which", lambda name: None)
    env = environment.collect_env()
    assert env["gpu"] is None and env["cpu"]["cores"] >= 1
    assert set(env["versions"]) >= {"numba", "torch", "numpy", "scipy", "faiss", "transformers", "vllm"}
    import numpy

    assert env["versions"]["numpy"] == numpy.__version__
    assert env["versions"]["openvino"] == environment.version(("openvino",))  # what makes the inputs too
    flags = set(Path("/proc/cpuinfo").read_text().split("flags", 1)[1].split("\n", 1)[0].split())
    assert env["cpu"]["vector"] == [f for f in environment.VECTOR_FLAGS if f in flags]
    jsonschema.validate(env, ENVIRONMENT)
    code, out, _ = run_cli(["collect-env"], capsys)
    assert code == 0 and "GPU: none" in out and "numpy " + numpy.__version__ in out


def test_collect_env_with_a_gpu_mocked(monkeypatch, capsys):
    fake_smi(monkeypatch, "NVIDIA H100 80GB HBM3, 550.54.15, 81559\nNVIDIA H100 80GB HBM3, 550.54.15, 81559\n")
    env = environment.collect_env()
    assert env["gpu"] == [{"model": "NVIDIA H100 80GB HBM3", "driver": "550.54.15", "memory_mib": 81559}] * 2
    jsonschema.validate(env, ENVIRONMENT)
    code, out, _ = run_cli(["collect-env", "--json"], capsys)
    assert code == 0 and json.loads(out)["gpu"][1]["driver"] == "550.54.15"
    code, out, _ = run_cli(["collect-env"], capsys)
    assert "GPU 1: NVIDIA H100 80GB HBM3, driver 550.54.15, 81,559 MiB" in out


# ---------------------------------------------------------------- results
def fake_bench(figures):
    def arguments():
        parser = argparse.ArgumentParser()
        parser.add_argument("--scale", type=float, default=1.0, help="scale")
        parser.add_argument("--fast", action="store_true", help="fast")
        parser.add_argument("--json", type=Path, default=None, help="figures")
        return parser

    def main(argv):
        args = arguments().parse_args(argv)
        args.json.write_text(json.dumps({**figures, "scale_seen": args.scale}))

    return types.SimpleNamespace(arguments=arguments, main=main)


def test_a_run_writes_a_result_that_validates_and_a_broken_one_does_not(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "module_of", lambda name: fake_bench({"queries_per_s": {"exact": 12.5}}))
    path = runner.run("bank", ["--scale", "0.5", "--fast"], result_dir=tmp_path / "results", cache=tmp_path / "c")
    made = json.loads(path.read_text())
    jsonschema.validate(made, SCHEMA)
    assert path.parent == tmp_path / "results" and path.name.startswith("bank-")
    assert made["figures"] == {"queries_per_s": {"exact": 12.5}, "scale_seen": 0.5}
    assert made["settings"] == {"scale": 0.5, "fast": True} and made["command"] == "adapath bench bank --scale 0.5 --fast"
    for broken in ({**made, "figures": None}, {**made, "environment": {**made["environment"], "versions": {}}},
                   {**made, "environment": {**made["environment"], "commit": "main"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SCHEMA)


def test_the_command_line_reaches_the_bench_with_its_own_options(tmp_path, monkeypatch):
    parser = fake_bench({})
    assert runner.as_argv(parser.arguments(), {"scale": 1.0, "fast": False}) == []
    assert runner.as_argv(parser.arguments(), {"scale": 0.2, "fast": True}) == ["--scale", "0.2", "--fast"]


def hand_made(figures, numba_threads, commit="a" * 40):
    env = {"commit": commit, "dirty": False, "date": "2026-12-06T10:00:00Z", "host": "h", "platform": "Linux",
           "python": "3.11.7", "adapath": "0.1.0", "cpu": {"model": "AMD EPYC", "cores": 16, "usable_cores": 16},
           "memory_gib": 128.0, "gpu": None, "threads": {"numba": numba_threads, "torch": None, "variables": {}},
           "versions": dict.fromkeys(("numba", "torch", "numpy", "scipy", "faiss", "transformers", "vllm"))}
    return result.make("pathmind-speed", "adapath bench pathmind-speed --scale 0.1", {"scale": 0.1}, figures, [],
                       1.0, env)


def test_compare_prints_each_ratio_and_flags_another_thread_count(tmp_path, capsys):
    a = hand_made([{"model": "paper", "setting": "after", "train": {"questions_per_s": 4.0}, "answers": "x"},
                   {"model": "paper", "setting": "cuda", "train": {"questions_per_s": 10.0}}], 2)
    b = hand_made([{"model": "paper", "setting": "after", "train": {"questions_per_s": 6.0}},
                   {"model": "paper", "setting": "cuda", "train": {"questions_per_s": 5.0}}], 16, "b" * 40)
    for r in (a, b):
        jsonschema.validate(r, SCHEMA)
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    code, out, err = run_cli(["bench", "compare", tmp_path / "a.json", tmp_path / "b.json"], capsys)
    assert code == 0, err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("paper/")}
    assert rows == {"paper/after.train.questions_per_s": ["4", "6", "1.500x"],
                    "paper/cuda.train.questions_per_s": ["10", "5", "0.500x"]}
    assert "! thread count: numba differs: 2 | 16" in out
    assert "machine" not in out  # the same machine: no machine flag
    # a single-run flag-free comparison, and results of two benches refused in one line
    assert "!" not in result.compare([a, a], ["a", "a"])
    other = {**b, "bench": "bank"}
    (tmp_path / "c.json").write_text(json.dumps(other))
    code, _, err = run_cli(["bench", "compare", tmp_path / "a.json", tmp_path / "c.json"], capsys)
    assert code == 2 and "different benches" in err and "Traceback" not in err


def test_markdown_renders_rows_and_names_the_machine_commit_and_command():
    text = result.markdown(hand_made([{"model": "paper", "setting": "after", "train": {"questions_per_s": 4.0}}], 2))
    assert "| model | setting | train questions_per_s |" in text and "| paper | after | 4 |" in text
    assert "AMD EPYC, 16 of 16 cores" in text and "`aaaaaaaaaa`" in text
    assert "adapath bench pathmind-speed --scale 0.1" in text


# ---------------------------------------------------------------- commands and suites
def test_bench_list_and_every_bench_help(capsys):
    code, out, _ = run_cli(["bench", "list"], capsys)
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == list(BENCHES)
    for name in BENCHES:
        code, out, err = run_cli(["bench", name, "--help"], capsys)
        assert code == 0 and "--save-result" in out, (name, err)
        assert not any(line.lstrip().startswith("--json ") for line in out.splitlines()), name


def test_a_suite_file_reads_its_budget_wheels_and_benches(tmp_path):
    path = tmp_path / "x.suite"
    path.write_text("# a comment\nbudget ${BUDGET:-60}\nwheels a==1 b==2\n\n"
                    "20 bank --scale ${SCALE:-${OUTER:-0.5}} --threads ${CORES}  # trailing\n"
                    "30 reasoner --steps 2 --base ${BASE:-}\n")
    read = suite.read_suite(path, {"OUTER": "0.25"})
    assert read.budget == 60 and read.wheels == ["a==1", "b==2"]
    import os

    assert read.steps == [(20, "bank", ["--scale", "0.25", "--threads", str(os.cpu_count())]),
                          (30, "reasoner", ["--steps", "2"])]
    assert suite.read_suite(path, {"BASE": "/m", "SCALE": "1"}).steps[1][2] == ["--steps", "2", "--base", "/m"]
    path.write_text("20 nonesuch --scale 1\n")
    with pytest.raises(Exception, match="x.suite:1: expected"):
        suite.read_suite(path, {})


def test_the_repository_suites_name_real_benches_and_options():
    root = Path(__file__).resolve().parents[1] / "bench"
    for path in sorted(root.glob("*.suite")):
        for _, name, options in suite.read_suite(path, {}).steps:
            parser = runner.module_of(name).arguments()
            parser.parse_args(options)  # an unknown option exits here


def test_real_records_tables_set_each_variant_beside_the_paper_and_list_walk_cells_below_it():
    """Hand-made reports of two variants: every level x hop row holds both and the paper's
    figure; only the walk's cells below the paper's row get their failure line."""
    from collections import Counter

    from adapath.bench.real_records import PAPER, tables

    def report(em):
        return {"cells": {lv: {"hop1_strict": em, "hop2_strict": em, "hop3_strict": em, "overall_strict": em}
                          for lv in PAPER}, "em_strict": em, "em_lenient": em + 1, "metapath_r1": 50.0,
                "metapath_r3": 60.0, "metapath_r5": 70.0, "control_accuracy": {"bare": {"answer_type": 90.0}}}

    reports = {"walk": report(60.0), "beam": report(40.0)}
    cause = {hop: {lv: {"answer choice": hop} for lv in PAPER} for hop in (1, 2, 3)}
    extras = {n: {"ranked": {"bare": {"R@1": 1.0, "MRR": 0.5}}, "failures_by_hop": cause} for n in reports}
    fails = {n: {lv: Counter({"correct": 3, "not retrieved": 1}) for lv in PAPER} for n in reports}
    got = tables(reports, extras, fails)
    assert got["em_strict"]["explicit 2"] == {"walk": 60.0, "beam": 40.0, "paper": 61.3}
    assert got["em_strict"]["all"] == {"walk": 60.0, "beam": 40.0, "paper": 65.5}
    assert got["em_lenient"] == {"walk": 61.0, "beam": 41.0}
    assert got["metapaths"]["beam bare"] == {"surviving R@1": 50.0, "surviving R@3": 60.0, "surviving R@5": 70.0,
                                             "ranked R@1": 1.0, "ranked MRR": 0.5, "vote type": 90.0, "vote hops": 0}
    assert got["failures"]["walk implicit"]["not retrieved"] == 1 and got["failures"]["walk implicit"]["correct"] == 3
    # the paper's cells above 60: explicit 1, 2, 3 (87.9, 61.3, 62.2), implicit 1, 2 (83.1, 62.5), bare 1 (69.8)
    below = got["walk cells below the paper, failures"]
    assert sorted(below) == ["walk bare 1", "walk explicit 1", "walk explicit 2", "walk explicit 3",
                             "walk implicit 1", "walk implicit 2"]
    assert below["walk explicit 2"]["answer choice"] == 2 and below["walk explicit 2"]["paper"] == 61.3


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[1] / "docs" / "benchmarks" / "results").glob("*.json")),
                         ids=lambda p: p.name)
def test_the_result_files_the_docs_render_validate_against_the_schema(path):
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)
