"""What does not belong together is refused in one line, exit 2, before any work and with
nothing written: results scored against another questions file than the one they answered
(the README tour's two generated sets share ids from --first-id 100000), results, a Path-Bank
or a PathMind model read against another graph than theirs, and PathMind without its packages."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil

import pytest

from tests.conftest import run_cli
from tests.helpers import generated_world


@pytest.fixture(scope="module")
def tour(small_world, tmp_path_factory):
    """Two generated question sets whose ids overlap (both from --first-id 100000), the first
    answered by AdaPath; and another generated graph."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph

    graph = KnowledgeGraph.load(small_world / "kg")
    for name, seed in (("test.jsonl", 2), ("other.jsonl", 3)):
        records = QueryGenerator(graph).generate(6, seed=seed, first_id=100000)
        (small_world / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    answers = small_world / "answers.jsonl"
    code, _, err = run_cli(["answer", "--kg", small_world / "kg", "--bank", small_world / "bank", "--queries",
                            f"biostrat:{small_world / 'test.jsonl'}", "--encoder", "hashing", "--out", answers],
                           _Quiet())
    assert code == 0, err
    other_world = tmp_path_factory.mktemp("other")
    generated_world(other_world, graph_seed=4, questions=2, question_seed=1)
    return small_world, answers, other_world / "kg"


class _Quiet:
    """capsys for a module-scoped fixture: run_cli reads back what it captured (nothing here)."""

    def readouterr(self):
        class Captured:
            out = err = ""
        return Captured


def one_line_refusal(code, err, *needles):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("adapath: error: "), err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def test_results_record_their_questions_file_and_its_checksum(tour):
    root, answers, _ = tour
    settings = json.loads((root / "answers.jsonl.settings.json").read_text())
    expected = hashlib.blake2b((root / "test.jsonl").read_bytes(), digest_size=16).hexdigest()
    assert settings["queries_path"] == str((root / "test.jsonl").resolve())
    assert settings["queries_checksum"] == expected


def test_eval_refuses_another_question_set_with_the_same_ids(tour, tmp_path, capsys):
    root, answers, _ = tour
    test_ids = {json.loads(line)["data_id"] for line in (root / "test.jsonl").read_text().splitlines()}
    other_ids = {json.loads(line)["data_id"] for line in (root / "other.jsonl").read_text().splitlines()}
    assert test_ids == other_ids  # the ids alone cannot tell the two sets apart
    args = ["eval", "--results", answers, "--queries", f"biostrat:{root / 'other.jsonl'}", "--kg", root / "kg",
            "--out", tmp_path / "report", "--resamples", "10"]
    code, _, err = run_cli(args, capsys)
    one_line_refusal(code, err, str(answers), "test.jsonl", "other.jsonl", "--allow-other-queries")
    assert not (tmp_path / "report").exists()
    code, _, err = run_cli([*args, "--allow-other-queries"], capsys)  # the deliberate case
    assert code == 0, err
    assert (tmp_path / "report" / "metrics.json").is_file()


def test_eval_compare_refuses_another_question_set_too(tour, capsys):
    root, answers, _ = tour
    code, _, err = run_cli(["eval", "compare", answers, answers, "--queries", f"biostrat:{root / 'other.jsonl'}",
                            "--resamples", "10"], capsys)
    one_line_refusal(code, err, "other.jsonl")


def test_eval_follows_a_moved_questions_file_and_refuses_a_changed_one(tour, tmp_path, capsys):
    root, answers, _ = tour
    moved = tmp_path / "moved.jsonl"
    shutil.copy(root / "test.jsonl", moved)

    def evaluate(results, report):
        return run_cli(["eval", "--results", results, "--queries", f"biostrat:{moved}", "--kg", root / "kg",
                        "--out", tmp_path / report, "--resamples", "10"], capsys)

    code, _, err = evaluate(answers, "r1")
    assert code == 0, err  # the same content under another name
    results = tmp_path / "answers.jsonl"  # results of moved.jsonl, which then changes
    shutil.copy(answers, results)
    settings = json.loads((root / "answers.jsonl.settings.json").read_text())
    settings["queries"] = f"biostrat:{moved}"
    (tmp_path / "answers.jsonl.settings.json").write_text(json.dumps(settings))
    code, _, err = evaluate(results, "r2")
    assert code == 0, err
    moved.write_text("".join(moved.read_text().splitlines(keepends=True)[:-1]))
    code, _, err = evaluate(results, "r3")
    one_line_refusal(code, err, "has changed since", str(moved))
    assert not (tmp_path / "r3").exists()


def results_from_before_checksums(root, answers, folder):
    """A copy of the tour's results whose settings lack the questions checksum (as written
    before it was recorded): (its path, its settings)."""
    old = folder / "old.jsonl"
    shutil.copy(answers, old)
    settings = json.loads((root / "answers.jsonl.settings.json").read_text())
    for key in ("queries_path", "queries_checksum"):
        settings.pop(key)
    (folder / "old.jsonl.settings.json").write_text(json.dumps(settings))
    return old, settings


def test_eval_of_old_settings_without_a_checksum_compares_the_path(tour, tmp_path, capsys):
    """Settings written before checksums were recorded name the questions file by its spec:
    the same path is accepted (its content cannot be compared), another refused."""
    root, answers, _ = tour
    old, settings = results_from_before_checksums(root, answers, tmp_path)
    base = ["eval", "--results", old, "--resamples", "10", "--kg", root / "kg"]
    code, _, err = run_cli([*base, "--queries", f"biostrat:{root / 'other.jsonl'}", "--out", tmp_path / "r1"], capsys)
    one_line_refusal(code, err, "before checksums were recorded", "other.jsonl")
    code, _, err = run_cli([*base, "--queries", settings["queries"], "--out", tmp_path / "r2"], capsys)
    assert code == 0, err


def test_an_old_result_file_resumes_and_gains_the_checksum(tour, tmp_path, capsys):
    """A result file made before the questions checksum was recorded is not refused on resume."""
    root, answers, _ = tour
    old, settings = results_from_before_checksums(root, answers, tmp_path)
    code, _, err = run_cli(["answer", "--kg", root / "kg", "--bank", root / "bank", "--queries", settings["queries"],
                            "--encoder", "hashing", "--out", old], capsys)
    assert code == 0 and "complete already" in err, err


def test_results_and_a_bank_on_another_graph_are_refused(tour, tmp_path, capsys):
    root, answers, other_kg = tour
    code, _, err = run_cli(["eval", "--results", answers, "--queries", f"biostrat:{root / 'test.jsonl'}", "--kg",
                            other_kg, "--out", tmp_path / "report", "--resamples", "10"], capsys)
    one_line_refusal(code, err, "answered on another graph", str(other_kg))
    assert not (tmp_path / "report").exists()
    code, _, err = run_cli(["view", "--results", answers, "--queries", f"biostrat:{root / 'test.jsonl'}", "--kg",
                            other_kg, "--out", tmp_path / "view.html"], capsys)
    one_line_refusal(code, err, "answered on another graph")
    code, _, err = run_cli(["bank", "view", root / "bank", "--kg", other_kg, "--out", tmp_path / "bank.html"], capsys)
    one_line_refusal(code, err, "built on another graph")
    assert list(tmp_path.iterdir()) == []


def model_folder(path, graph_checksum):
    """A PathMind model folder as `pathmind train` writes it, trained on the graph of that checksum
    (its weights are never read: the graph is checked first)."""
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"format": "adapath-pathmind", "version": 3, "model": {},
                                                  "train": {"encoder": "hashing"},
                                                  "graph_checksum": graph_checksum}))
    (path / "model.safetensors").write_bytes(b"\0")
    return path


def test_a_pathmind_model_on_another_graph_is_refused(tour, tmp_path, capsys):
    from adapath.engine.graph import KnowledgeGraph

    root, _, other_kg = tour
    model = model_folder(tmp_path / "model", KnowledgeGraph.load(other_kg).checksum())
    out = tmp_path / "pm.jsonl"
    code, _, err = run_cli(["answer", "--method", "pathmind", "--kg", root / "kg", "--model", model, "--queries",
                            f"biostrat:{root / 'test.jsonl'}", "--out", out], capsys)
    line = one_line_refusal(code, err, "trained on another graph", str(root / "kg"))
    assert KnowledgeGraph.load(other_kg).checksum()[:12] in line
    assert not out.exists() and not out.with_name("pm.jsonl.settings.json").exists()
    if importlib.util.find_spec("torch") and importlib.util.find_spec("safetensors"):
        code, _, err = run_cli(["pathmind", "train", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}",
                                "--init", model, "--encoder", "hashing", "--out", tmp_path / "m2"], capsys)
        one_line_refusal(code, err, "trained on another graph")
        assert not (tmp_path / "m2").exists()


def test_pathmind_answer_settings_record_the_models_encoder(tour, tmp_path):
    """--encoder is the default (minilm) but the model was trained with hashing: the settings
    say hashing, the encoder the model answers with."""
    from adapath.engine.graph import KnowledgeGraph
    from adapath.methods.registry import get_method
    from adapath.methods.run import prepare_answer_run

    root, _, _ = tour
    model = model_folder(tmp_path / "model", KnowledgeGraph.load(root / "kg").checksum())
    run = prepare_answer_run(get_method("pathmind"), kg=root / "kg", queries=f"biostrat:{root / 'test.jsonl'}",
                             given={}, model=model, encoder="minilm")
    assert run.settings["encoder"] == "hashing"


@pytest.mark.parametrize("missing", ["torch", "safetensors"])
def test_pathmind_without_its_packages_names_the_extra(tour, tmp_path, capsys, monkeypatch, missing):
    root, _, _ = tour
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == missing else real(name, *a))
    code, _, err = run_cli(["pathmind", "train", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}",
                            "--out", tmp_path / "model"], capsys)
    one_line_refusal(code, err, missing, 'pip install -e ".[pathmind]"')
    code, _, err = run_cli(["answer", "--method", "pathmind", "--kg", root / "kg", "--model", tmp_path / "model",
                            "--queries", f"biostrat:{root / 'test.jsonl'}", "--out", tmp_path / "pm.jsonl"], capsys)
    one_line_refusal(code, err, missing, ".[pathmind]")
    assert list(tmp_path.iterdir()) == []


def test_finetune_without_its_packages_names_the_train_extra(tmp_path, capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "trl" else real(name, *a))
    code, _, err = run_cli(["pathmind", "finetune", "--base", tmp_path / "base", "--stage", "sft", "--data",
                            tmp_path / "sft.jsonl", "--out", tmp_path / "adapter"], capsys)
    one_line_refusal(code, err, "trl", '".[train]"')
    assert list(tmp_path.iterdir()) == []


def test_a_json_array_as_questions_is_named_as_one(tmp_path, capsys):
    """A JSON array (pretty-printed or on one line) is not JSON Lines: the message says so."""
    records = [{"data_id": 1, "explicit_query": "q"}]
    for name, text in (("pretty.json", json.dumps(records, indent=2)), ("flat.json", json.dumps(records))):
        path = tmp_path / name
        path.write_text(text)
        code, _, err = run_cli(["answer", "--kg", tmp_path / "kg", "--queries", f"biostrat:{path}", "--out",
                                tmp_path / "a.jsonl"], capsys)
        one_line_refusal(code, err, f"{path}:1: a JSON array, not JSON Lines")


def test_a_result_file_from_before_a_param_resumes_where_the_param_keeps_its_old_value(tmp_path):
    """PathMind's answering entity count (`--param nodes`, 0: the model's) came after files
    were made without it: such a file resumes with 0, refuses another count, and still refuses
    any other changed param."""
    from adapath.errors import InputError
    from adapath.methods.run import check_settings

    out = tmp_path / "pm.jsonl"
    out.write_text("")
    before = {"method": "pathmind", "params": {"k": 3, "rounds": 3}}
    (tmp_path / "pm.jsonl.settings.json").write_text(json.dumps(before))
    check_settings(out, {"method": "pathmind", "params": {"k": 3, "rounds": 3, "nodes": 0}}, force=False)
    for params in ({"k": 3, "rounds": 3, "nodes": 128}, {"k": 1, "rounds": 3, "nodes": 0}):
        with pytest.raises(InputError) as error:
            check_settings(out, {"method": "pathmind", "params": params}, force=False)
        assert "\n" not in str(error.value) and "params" in str(error.value)
