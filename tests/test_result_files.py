"""Result files are checked when read: eval, view and a resumed answer run name the file, the
line and the field of a line with the wrong shape, and exit 2 (never a traceback)."""

import json
import threading

import pytest

from adapath.sources.synthetic import generate
from tests.conftest import run_cli
from tests.test_eval_report import RECORDS, alpha_lines, graph  # noqa: F401 - the hand-built graph fixture

GOOD = alpha_lines()[0]  # a full line: paths, explored, explored_edges, meta-paths, usage

# (field, the bad value, words of the message); None drops the field
CASES = [
    ("id", None, "missing"),
    ("answer", None, "missing"),
    ("id", ["1"], "must be a string"),
    ("answer", {"text": "x"}, "must be a string"),
    ("answer", 5, "must be a string, got int"),
    ("answer", 2.5, "must be a string, got float"),
    ("answer", ["Aspirin"], "must be a string, got list"),
    ("level", 2, "must be a string"),
    ("method", ["adapath"], "must be a string"),
    ("answer_source", 1, "must be a string"),
    ("explored", [[101, 103], [102]], "must be a mapping"),
    ("explored", {"1": 101}, "list of node ids"),
    ("explored", {"one": [101]}, "integer depths"),
    ("paths", {"0": []}, "must be a list of paths"),
    ("paths", [[100, "target", 101]], "not [head_id, relation, tail_id]"),
    ("paths", [[[100, "target"]]], "not [head_id, relation, tail_id]"),
    ("paths", [[[100, 7, 101]]], "not [head_id, relation, tail_id]"),
    ("explored_edges", [[101, "associated with", 106]], "must be a mapping"),
    ("explored_edges", {"2": [[101, 106]]}, "not [head_id, relation, tail_id]"),
    ("explored_edges", {"two": []}, "integer depths"),
    ("metapaths", "drug -[indication]- disease", "must be a list"),
    ("ranked_metapaths", [{"score": 1.0}], "is not {'metapath'"),
    ("control", ["disease", 2], "must be a mapping"),
    ("usage", 3, "must be a mapping"),
    ("usage", {"calls": "three"}, "must be a number"),
]


def bad_file(tmp_path, field, value):
    line = json.loads(json.dumps(GOOD))
    if value is None:
        line.pop(field)
    else:
        line[field] = value
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(alpha_lines()[1]) + "\n" + json.dumps(line) + "\n")  # the bad one is line 2
    return path


def one_line_error(code, err, path, field):
    assert code == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert f"{path}:2:" in err and f"field '{field}'" in err, err


@pytest.mark.parametrize("field, value, words", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_eval_names_file_line_and_field(graph, tmp_path, capsys, field, value, words):  # noqa: F811
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    path = bad_file(tmp_path, field, value)
    graph.save(tmp_path / "kg")
    code, _, err = run_cli(["eval", "--results", path, "--queries", f"biostrat:{queries}", "--kg", tmp_path / "kg",
                            "--out", tmp_path / "report", "--resamples", "5"], capsys)
    one_line_error(code, err, path, field)
    assert words in err
    assert not (tmp_path / "report").exists()


def test_the_good_line_itself_passes(graph, tmp_path, capsys):  # noqa: F811
    """The reference line the cases spoil evaluates cleanly (so each case fails for its field)."""
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(alpha_lines()[1]) + "\n" + json.dumps(GOOD) + "\n")
    graph.save(tmp_path / "kg")
    code, _, err = run_cli(["eval", "--results", path, "--queries", f"biostrat:{queries}", "--kg", tmp_path / "kg",
                            "--out", tmp_path / "report", "--resamples", "5"], capsys)
    assert code == 0, err


def test_view_names_file_line_and_field(graph, tmp_path, capsys):  # noqa: F811
    queries = tmp_path / "q.jsonl"
    queries.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    graph.save(tmp_path / "kg")
    path = bad_file(tmp_path, "explored", [[101, 103]])
    code, _, err = run_cli(["view", "--results", path, "--queries", f"biostrat:{queries}", "--kg", tmp_path / "kg",
                            "--out", tmp_path / "page.html"], capsys)
    one_line_error(code, err, path, "explored")
    assert not (tmp_path / "page.html").exists()


@pytest.fixture(scope="module")
def io_world(tmp_path_factory):
    """A tiny graph, three questions and a scripted LLM served over loopback (the `io` method)."""
    from adapath.datasets.generate import QueryGenerator
    from adapath.engine.graph import KnowledgeGraph
    from adapath.llm import ScriptedBackend
    from adapath.llm.serve import make_server

    root = tmp_path_factory.mktemp("io")
    generate(scale=0.01, seed=3).save(root / "kg")
    records = QueryGenerator(KnowledgeGraph.load(root / "kg")).generate(3, seed=1)
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    server = make_server(ScriptedBackend(default="The answer is {aspirin}."), "127.0.0.1", 0, name="s")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield root, server
    server.shutdown()
    server.server_close()


def answer_args(root, out, llm):
    return ["answer", "--method", "io", "--kg", root / "kg", "--queries", f"biostrat:{root / 'q.jsonl'}",
            "--out", out, "--llm", llm, "--llm-option", "retries=0"]


def test_resumed_answer_run_names_file_line_and_field(io_world, tmp_path, capsys):
    root, server = io_world
    out = tmp_path / "io.jsonl"
    args = answer_args(root, out, f"openai:http://127.0.0.1:{server.server_port}/v1#s")
    code, _, err = run_cli(args + ["--limit", "2"], capsys)
    assert code == 0, err
    lines = out.read_text().splitlines()
    spoiled = json.loads(lines[1])
    spoiled.pop("id")
    out.write_text(lines[0] + "\n" + json.dumps(spoiled) + "\n")
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, out, "id")
