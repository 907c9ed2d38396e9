"""The established routes past one GPU or one server: several OpenAI-compatible servers behind
one --llm spec (real loopback servers), and vLLM's own tensor/pipeline parallelism over Ray
(the wiring, with a stand-in vllm module that records what it was asked for)."""

import socket
import sys
import threading
import types

import pytest

from adapath.errors import InputError
from adapath.llm import GenerationParams, ScriptedBackend, make_backend
from adapath.llm.serve import make_server


def serve(backend):
    server = make_server(backend, "127.0.0.1", 0, name="m")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_several_servers_share_a_batch_and_keep_its_order():
    backends = [ScriptedBackend(rules={"": lambda p: "{" + p.split()[-1] + "}"}) for _ in range(2)]
    servers = [serve(b) for b in backends]
    try:
        urls = ",".join(f"http://127.0.0.1:{s.server_address[1]}" for s in servers)
        llm = make_backend(f"openai:{urls}#m", {"concurrency": "2"})
        prompts = [f"question {i}" for i in range(40)]
        replies = llm.generate(prompts, GenerationParams(max_tokens=8))
        assert [r.text for r in replies] == [f"{{{i}}}" for i in range(40)]  # in prompt order
        seen = [len(b.seen) for b in backends]
        assert sum(seen) == 40 and min(seen) >= 10  # both servers took a real share
        assert llm.sent == seen
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def test_a_server_that_is_down_costs_a_retry_not_the_run():
    backend = ScriptedBackend(default="{ok}")
    server = serve(backend)
    try:
        dead = f"http://127.0.0.1:{free_port()}"
        llm = make_backend(f"openai:{dead},http://127.0.0.1:{server.server_address[1]}#m", {"retries": "2"})
        replies = llm.generate([f"p{i}" for i in range(6)], GenerationParams(max_tokens=4))
        assert [r.text for r in replies] == ["{ok}"] * 6 and len(backend.seen) == 6
    finally:
        server.shutdown()
        server.server_close()


def test_vllm_parallelism_reaches_the_engine(monkeypatch):
    asked = {}

    class LLM:
        def __init__(self, **kwargs):
            asked.update(kwargs)

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM))
    backend = make_backend("vllm:org/model", {"tensor_parallel_size": "4", "pipeline_parallel_size": "2",
                                              "distributed_executor_backend": "ray", "max_model_len": "4096"})
    assert backend.name == "vllm:org/model"
    assert asked["tensor_parallel_size"] == 4 and asked["pipeline_parallel_size"] == 2
    assert asked["distributed_executor_backend"] == "ray" and asked["max_model_len"] == 4096
    with pytest.raises(InputError, match="choose ray or mp"):
        make_backend("vllm:org/model", {"distributed_executor_backend": "slurm"})
