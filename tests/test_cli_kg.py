"""The kg commands end to end, and every bad-input case: one line, exit 2, no output left."""

import csv
import json
import subprocess
import sys

import pytest

from adapath.sources.primekg import PRIMEKG_COLUMNS
from tests.conftest import run_cli

GOOD_ROW = ["indication", "indication", "0", "DB1", "drug", "Drugol", "DrugBank",
            "1", "M1", "disease", "Illness", "MONDO"]


def write_csv(path, header, rows):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_synth_then_info_json(tmp_path, capsys):
    out = tmp_path / "kg"
    code, _, err = run_cli(["kg", "synth", "--scale", "0.01", "--seed", "1", "--out", out], capsys)
    assert code == 0, err
    code, stdout, _ = run_cli(["kg", "info", out, "--json"], capsys)
    assert code == 0
    info = json.loads(stdout)
    for key in ("nodes", "edges", "half_edges", "node_types", "relations", "degree"):
        assert key in info
    assert set(info["degree"]) >= {"mean", "p50", "p90", "p99", "max"}
    assert info["half_edges"] == 2 * info["edges"]
    assert sum(info["node_types"].values()) == info["nodes"]
    assert sum(info["relations"].values()) == info["edges"]


def test_import_primekg_cli(tmp_path, capsys):
    kg = write_csv(tmp_path / "kg.csv", PRIMEKG_COLUMNS, [GOOD_ROW, GOOD_ROW[:2] + GOOD_ROW[7:] + GOOD_ROW[2:7]])
    code, _, err = run_cli(["kg", "import", "primekg", kg, "--out", tmp_path / "g"], capsys)
    assert code == 0, err
    code, stdout, _ = run_cli(["kg", "info", tmp_path / "g", "--json"], capsys)
    assert json.loads(stdout)["edges"] == 1


def bad_cases(tmp_path):
    cases = {}
    cases["missing file"] = ([tmp_path / "nope.csv"], "no such file")
    header = list(PRIMEKG_COLUMNS)
    header[header.index("x_type")] = "x_kind"
    cases["misnamed column"] = ([write_csv(tmp_path / "misnamed.csv", header, [GOOD_ROW])], "x_type")
    short = [c for c in PRIMEKG_COLUMNS if c != "y_index"]
    cases["missing column"] = ([write_csv(tmp_path / "missing.csv", short, [])], "y_index")
    bad_type = list(GOOD_ROW)
    bad_type[9] = "spaceship"
    cases["unknown node type"] = ([write_csv(tmp_path / "type.csv", PRIMEKG_COLUMNS,
                                             [GOOD_ROW, bad_type])], ":3: unknown node type")
    bad_id = list(GOOD_ROW)
    bad_id[7] = "one"
    cases["non-integer id"] = ([write_csv(tmp_path / "id.csv", PRIMEKG_COLUMNS,
                                          [GOOD_ROW, GOOD_ROW, bad_id])], ":4: column y_index")
    utf = tmp_path / "bytes.csv"
    write_csv(utf, PRIMEKG_COLUMNS, [GOOD_ROW])
    with open(utf, "ab") as handle:
        handle.write(b"indication,indication,0,DB1,drug,Dr\xff\xfeugol,DrugBank,1,M1,disease,Illness,MONDO\n")
    cases["non-UTF-8"] = ([utf], ":3: bytes are not valid UTF-8")
    clash = list(GOOD_ROW)
    clash[4] = "disease"
    cases["two types"] = ([write_csv(tmp_path / "clash.csv", PRIMEKG_COLUMNS,
                                     [GOOD_ROW, clash])], ":3: node 0 has two types")
    return cases


@pytest.mark.parametrize("case", ["missing file", "misnamed column", "missing column",
                                  "unknown node type", "non-integer id", "non-UTF-8", "two types"])
def test_primekg_bad_input(tmp_path, capsys, case):
    args, expected = bad_cases(tmp_path)[case]
    out = tmp_path / "out"
    code, stdout, err = run_cli(["kg", "import", "primekg", *args, "--out", out], capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("adapath: error:"), err
    assert expected in lines[0]
    assert str(args[0].name) in lines[0]
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_edges_and_biostrat_bad_input(tmp_path, capsys):
    nodes = write_csv(tmp_path / "nodes.csv", ["id", "name", "type", "description"],
                      [["1", "A", "drug", ""], ["2", "B", "planet", ""]])
    edges = write_csv(tmp_path / "edges.csv", ["head", "relation", "tail"], [["1", "target", "2"]])
    code, _, err = run_cli(["kg", "import", "edges", edges, "--nodes", nodes, "--out", tmp_path / "o"], capsys)
    assert code == 2 and "nodes.csv:3: unknown node type 'planet'" in err
    nodes = write_csv(tmp_path / "nodes.csv", ["id", "name", "type", "description"],
                      [["1", "A", "drug", ""], ["2", "B", "disease", ""]])
    edges = write_csv(tmp_path / "edges.csv", ["head", "relation", "tail"], [["1", "target", "3"]])
    code, _, err = run_cli(["kg", "import", "edges", edges, "--nodes", nodes, "--out", tmp_path / "o"], capsys)
    assert code == 2 and "edges.csv:2: tail 3" in err
    bad = tmp_path / "records.jsonl"
    bad.write_text('{"node_metadata": []}\nnot json\n')
    code, _, err = run_cli(["kg", "import", "biostrat", bad, "--out", tmp_path / "o"], capsys)
    assert code == 2 and "records.jsonl:1:" in err
    assert not (tmp_path / "o").exists()


def test_subprocess_error_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "adapath.cli", "kg", "info", str(tmp_path / "none")],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_importing_adapath_pulls_no_heavy_stack():
    code = ("import sys, adapath, adapath.cli, adapath.bank.build, adapath.executors, "
            "adapath.bank.index, adapath.methods.adapath, adapath.eval.report; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'cupy', 'vllm', 'transformers', 'sentence_transformers', 'faiss', 'ray'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


def test_outputs_follow_the_umask(tmp_path, capsys):
    import os
    import stat

    old = os.umask(0o022)
    try:
        code, _, err = run_cli(["kg", "synth", "--scale", "0.005", "--seed", "1", "--out", tmp_path / "kg"], capsys)
        assert code == 0, err
        code, _, err = run_cli(["dataset", "generate", "--kg", tmp_path / "kg", "--n", "3",
                                "--out", tmp_path / "q.jsonl"], capsys)
        assert code == 0, err
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "kg").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "kg" / "graph.npz").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "q.jsonl").stat().st_mode) == 0o644


def test_json_error_names_the_column(tmp_path):
    from adapath.errors import InputError
    from adapath.jsonl import iter_jsonl

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"ok": 1}\n{"text": "a\tb"}\n')
    with pytest.raises(InputError) as info:
        list(iter_jsonl(bad))
    assert str(info.value) == f"{bad}:2: not valid JSON (Invalid control character at column 12)"
