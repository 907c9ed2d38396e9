"""LLM layer: reply parsing, and the HTTP backend against local servers that misbehave."""

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from adapath.llm import GenerationParams, LLMError, make_backend
from adapath.llm.openai_http import OpenAIHTTPBackend
from adapath.llm.parse import parse_answer, parse_choice, parse_control


def test_parse_answer_edge_cases():
    assert parse_answer("The answer is {aspirin}.") == "aspirin"
    assert parse_answer("{Yes} the drug is {warfarin}") == "warfarin"
    assert parse_answer("{ no }, it is {'heart failure'}") == "heart failure"
    assert parse_answer("no braces here") == ""
    assert parse_answer("") == "" and parse_answer(None) == ""
    assert parse_answer("{a} and {b}") == "a"
    assert parse_answer("{yes}") == ""


def test_parse_choice_and_control():
    assert parse_choice("I pick {3, 1, 3, 9}", 5) == [2, 0]
    assert parse_choice("2 and 4", 5) == [1, 3]
    assert parse_choice("{}", 5) == []
    types = ["drug", "disease", "gene/protein"]
    assert parse_control('{"answer_type": "disease", "hops": 2}', types, 3) == ("disease", 2)
    assert parse_control("The answer is a drug, 3 hops away", types, 3) == ("drug", 3)
    assert parse_control('{"answer_type": "planet", "hops": 9}', types, 3) == (None, None)


class _Handler(BaseHTTPRequestHandler):
    mode = "ok"
    calls = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        type(self).calls += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        if self.mode == "slow":
            time.sleep(1.0)
        if self.mode == "garbage":
            payload = b"<html>not json</html>"
        elif self.mode == "error":
            self.send_response(503)
            self.end_headers()
            return
        else:
            payload = json.dumps({"choices": [{"message": {"content": f"echo {prompt}"}}],
                                  "usage": {"prompt_tokens": 7, "completion_tokens": 3}}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (the timeout case)


@pytest.fixture
def server():
    handler = type("Handler", (_Handler,), {"mode": "ok", "calls": 0})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, handler
    httpd.shutdown()


def test_http_backend_batch(server):
    httpd, _ = server
    backend = OpenAIHTTPBackend(f"http://127.0.0.1:{httpd.server_port}", "m", retries=0)
    out = backend.generate(["a", "b", "c"], GenerationParams())
    assert [g.text for g in out] == ["echo a", "echo b", "echo c"]
    assert out[0].prompt_tokens == 7 and out[0].completion_tokens == 3


@pytest.mark.parametrize("mode", ["garbage", "error", "slow"])
def test_http_backend_failures_retry_then_fail(server, mode):
    httpd, handler = server
    handler.mode = mode
    backend = OpenAIHTTPBackend(f"http://127.0.0.1:{httpd.server_port}", "m", timeout=0.3,
                                retries=2, backoff=0.01)
    with pytest.raises(LLMError, match="after 3 attempt"):
        backend.generate(["x"], GenerationParams())
    assert handler.calls == 3


def test_http_backend_server_down():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    backend = OpenAIHTTPBackend(f"http://127.0.0.1:{port}", "m", retries=1, backoff=0.01)
    with pytest.raises(LLMError, match="127.0.0.1"):
        backend.generate(["x"], GenerationParams())


def test_make_backend_specs():
    assert make_backend("none") is None
    backend = make_backend("openai:http://localhost:8000#qwen")
    assert backend.model == "qwen" and backend.base_url == "http://localhost:8000/v1"
    from adapath.errors import InputError

    with pytest.raises(InputError):
        make_backend("openai:http://x")
    with pytest.raises(InputError):
        make_backend("magic:thing")
