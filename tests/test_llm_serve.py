"""`adapath llm serve`: the OpenAI-compatible server over any backend, a real loopback HTTP
LLM for end-to-end runs of `adapath answer` with every method."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from adapath.bank.build import BankConfig, build_bank
from adapath.datasets.biostrat import query_from_record, training_queries
from adapath.datasets.generate import QueryGenerator
from adapath.engine.graph import KnowledgeGraph
from adapath.llm import GenerationParams, ScriptedBackend
from adapath.llm.base import count_tokens
from adapath.llm.openai_http import OpenAIHTTPBackend
from adapath.llm.serve import make_server
from adapath.methods.base import MethodContext
from adapath.methods.registry import all_methods, get_method
from adapath.methods.run import answer_all, load_results
from adapath.sources.synthetic import generate
from tests.conftest import run_cli
from tests.helpers import ctrl_c_enabled

REPO = Path(__file__).resolve().parents[1]


def scripted(graph=None):
    """Replies for every prompt our methods send (triplets name real nodes when a graph is given)."""
    triplet = json.dumps({"Triplets": [[graph.name(0), graph.relation_names[0], graph.name(1)] if graph else
                                       ["aspirin", "target", "PTGS2"], ["made up", "target", "nothing"]]})
    return ScriptedBackend(rules={
        "Write knowledge triplets": triplet,
        '{"answer_type"': '{"answer_type": "disease", "hops": 2}',
        "numbers in braces": "{2, 1}",
        "Revise the head": '{"Revised_Triplets": [["x", "y", "z"]]}',
    }, default="The answer is {aspirin}.")


def start(backend, **kwargs):
    server = make_server(backend, "127.0.0.1", 0, name="scripted", **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def served():
    backend = scripted()
    server = start(backend)
    yield server, backend
    server.shutdown()
    server.server_close()


def post(port, body, path="/v1/chat/completions"):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_models_and_chat_completion_with_usage(served):
    server, backend = served
    with urllib.request.urlopen(f"http://127.0.0.1:{server.server_port}/v1/models", timeout=30) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == ["scripted"]
    prompt = "Which drug? Reply in braces."
    status, reply = post(server.server_port, {"model": "scripted", "messages": [{"role": "user", "content": prompt}],
                                              "max_tokens": 7, "temperature": 0.5, "seed": 9, "n": 3})
    assert status == 200
    assert [c["message"]["content"] for c in reply["choices"]] == ["The answer is {aspirin}."] * 3
    # the scripted backend counts round(words * 4 / 3): 5 words -> 7 prompt tokens, 4 -> 5 per choice
    assert reply["usage"] == {"prompt_tokens": 7, "completion_tokens": 15, "total_tokens": 22}
    assert [(p.seed, p.max_tokens, p.temperature) for p in backend.params_seen] == [(9, 7, 0.5), (10, 7, 0.5),
                                                                                     (11, 7, 0.5)]
    assert backend.batches == [1]  # the three choices are one request to the backend


@pytest.mark.parametrize("body, status, words", [
    ({"model": "other", "messages": [{"role": "user", "content": "x"}]}, 404, "not served here"),
    ({"messages": []}, 400, "non-empty list"),
    ({"messages": [{"role": "assistant", "content": "x"}]}, 400, "only system and user"),
    ({"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}, 400, "max_tokens"),
    ({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, 400, "temperature"),
])
def test_bad_requests_get_openai_style_errors(served, body, status, words):
    server, backend = served
    code, reply = post(server.server_port, body)
    assert code == status and words in reply["error"]["message"]
    assert backend.seen == []
    code, reply = post(server.server_port, {"messages": [{"role": "user", "content": "x"}]}, path="/v1/nothing")
    assert code == 404


def test_concurrent_requests_share_one_backend_batch():
    backend = scripted()
    server = start(backend, wait=1.0)  # gather for up to a second
    try:
        client = OpenAIHTTPBackend(f"http://127.0.0.1:{server.server_port}/v1", "scripted", retries=0)
        settings = [GenerationParams(seed=s) for s in range(8)]
        out = client.generate([f"prompt {i}" for i in range(8)], settings)
        assert [g.text for g in out] == ["The answer is {aspirin}."] * 8
        assert sum(server.batcher.batches) == 8 and max(server.batcher.batches) > 1
        assert sorted(p.seed for p in backend.params_seen) == list(range(8))
        assert [g.prompt_tokens for g in out] == [count_tokens(f"prompt {i}") for i in range(8)]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    generate(scale=0.02, seed=11).save(root / "kg")
    graph = KnowledgeGraph.load(root / "kg")
    generator = QueryGenerator(graph)
    train = generator.generate(20, seed=1)
    test = generator.generate(5, seed=2, first_id=1000)
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    build_bank(graph, training_queries(train), root / "bank", BankConfig(), graph_dir=root / "kg")
    code = run_cli_quiet(["pathmind", "train", "--kg", root / "kg", "--queries", f"biostrat:{root / 'train.jsonl'}",
                          "--out", root / "pathmind", "--epochs", "1", "--encoder", "hashing"])
    assert code == 0
    return root, graph, test


def run_cli_quiet(args) -> int:
    from adapath.cli import main

    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


@pytest.mark.parametrize("method", sorted(all_methods()))
def test_answer_end_to_end_through_the_http_server(demo, method, tmp_path, capsys):
    """`adapath answer --llm openai:...` against the server gives what the same scripted
    backend gives in memory: answers, paths, LLM calls and prompt tokens."""
    root, graph, test = demo
    backend = scripted(graph)
    server = start(backend)
    try:
        out = tmp_path / f"{method}.jsonl"
        code, _, err = run_cli(["answer", "--method", method, "--kg", root / "kg", "--bank", root / "bank",
                                "--model", root / "pathmind",
                                "--queries", f"biostrat:{root / 'test.jsonl'}", "--encoder", "hashing",
                                "--llm", f"openai:http://127.0.0.1:{server.server_port}/v1#scripted",
                                "--out", out, "--batch", "3"], capsys)
        assert code == 0, err
    finally:
        server.shutdown()
        server.server_close()
    over_http = load_results(out)
    spec = get_method(method)
    reference = scripted(graph)
    method_object = spec.make(MethodContext(graph, root / "kg", reference, "hashing", root / "bank",
                                            root / "pathmind", spec.resolve_params({})))
    in_memory = answer_all(method_object, [query_from_record(r, "explicit") for r in test], batch=3)
    assert len(over_http) == len(test) and reference.seen  # the method did call the LLM
    for a, b in zip(over_http, in_memory):
        assert (a.id, a.answer, a.answer_source, a.paths, a.raw) == (b.id, b.answer, b.answer_source, b.paths, b.raw)
        for key in ("calls", "prompt_tokens", "completion_tokens"):
            assert a.usage[key] == b.usage[key] > 0, key
    assert sorted(backend.seen) == sorted(reference.seen)


def test_serve_command_over_another_backend_and_ctrl_c(served):
    """The CLI serves any backend: here an openai: client of the scripted server (a proxy)."""
    server, backend = served
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "adapath.cli", "llm", "serve", "--port", "0", "--name", "proxy",
                             "--llm", f"openai:http://127.0.0.1:{server.server_port}/v1#scripted"],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, preexec_fn=ctrl_c_enabled)
    try:
        line = proc.stderr.readline()
        assert "serving openai:" in line and "#proxy" in line, line
        port = int(line.split(" on http://127.0.0.1:")[1].split("/")[0])
        status, reply = post(port, {"model": "proxy", "messages": [{"role": "user", "content": "one two three"}]})
        assert status == 200, reply
        assert reply["choices"][0]["message"]["content"] == "The answer is {aspirin}."
        assert reply["usage"]["prompt_tokens"] == count_tokens("one two three")
        assert backend.seen == ["one two three"]
    finally:
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped" in rest


@pytest.mark.parametrize("args, words", [
    (["--llm", "none"], "nothing to serve"),
    (["--llm", "hf:/nonexistent/model"], "no model directory"),
    (["--llm", "openai:http://127.0.0.1:1/v1#m", "--llm-option", "device=cuda"], "takes none such"),
    (["--llm", "openai:http://127.0.0.1:1/v1#m", "--port", "70000"], "--port 70000"),
])
def test_serve_command_errors_are_one_line(args, words, capsys):
    code, _, err = run_cli(["llm", "serve", *args], capsys)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_options_that_change_replies_are_part_of_a_results_settings(demo, tmp_path, capsys):
    root, graph, _ = demo
    backend = scripted(graph)
    server = start(backend)
    out = tmp_path / "io.jsonl"
    args = ["answer", "--method", "io", "--kg", root / "kg", "--queries", f"biostrat:{root / 'test.jsonl'}",
            "--llm", f"openai:http://127.0.0.1:{server.server_port}/v1#scripted", "--out", out]
    try:
        code, _, err = run_cli(args + ["--llm-option", "temperature=0.5"], capsys)
        assert code == 0, err
        assert {p.temperature for p in backend.params_seen} == {0.5}
        code, _, err = run_cli(args + ["--llm-option", "temperature=0.2"], capsys)
        assert code == 2 and "made with llm_options=" in err
        # where the client waits is no reason to refuse a resume
        code, _, err = run_cli(args + ["--llm-option", "temperature=0.5", "--llm-option", "timeout=30"], capsys)
        assert code == 0 and "complete already" in err
    finally:
        server.shutdown()
        server.server_close()


def test_answer_logs_progress_per_llm_step(demo, tmp_path, capsys, monkeypatch):
    """In a log (stderr not a terminal) `answer` writes a line per LLM call, not only per batch,
    and the lines count every call the method makes."""
    monkeypatch.setenv("ADAPATH_PROGRESS_INTERVAL", "0")  # a line whenever anything happens
    root, graph, test = demo
    server = start(scripted(graph))
    try:
        code, _, err = run_cli(["answer", "--method", "tog", "--kg", root / "kg",
                                "--queries", f"biostrat:{root / 'test.jsonl'}", "--encoder", "hashing",
                                "--llm", f"openai:http://127.0.0.1:{server.server_port}/v1#scripted",
                                "--out", tmp_path / "tog.jsonl", "--batch", "5"], capsys)
        assert code == 0, err
    finally:
        server.shutdown()
        server.server_close()
    reference = scripted(graph)  # the same method in memory: how many LLM calls one batch of 5 makes
    spec = get_method("tog")
    method_object = spec.make(MethodContext(graph, root / "kg", reference, "hashing", None, None,
                                            spec.resolve_params({})))
    answer_all(method_object, [query_from_record(r, "explicit") for r in test], batch=5)
    steps = [re.search(r"; LLM call (\d+): (\d+) prompts in [\d.]+ s$", line) for line in err.splitlines()]
    logged = sorted({(int(m[1]), int(m[2])) for m in steps if m})
    assert len(reference.batches) > 1
    assert logged == list(enumerate(reference.batches, start=1))
    assert "answer: 5/5 questions (100%)" in err  # the batch's end
