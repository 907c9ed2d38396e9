"""`llm serve --api-key`: requests without `Authorization: Bearer KEY` get 401 (over loopback);
the openai: backend sends the key from --llm-option api_key= or OPENAI_API_KEY; binding beyond
loopback without a key is warned about."""

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from adapath.llm import GenerationParams, LLMError, ScriptedBackend, make_backend
from adapath.llm.serve import make_server
from tests.helpers import ctrl_c_enabled

REPO = Path(__file__).resolve().parents[1]
KEY = "s3cret-key"


@pytest.fixture
def keyed():
    backend = ScriptedBackend(default="The answer is {aspirin}.")
    server = make_server(backend, "127.0.0.1", 0, name="m", api_key=KEY)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, backend
    server.shutdown()
    server.server_close()


def call(port, headers, path="/v1/chat/completions", body=None):
    body = {"messages": [{"role": "user", "content": "hi"}]} if body is None else body
    data = None if path.endswith("models") else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers,
                                     method="GET" if data is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": KEY},
                                     {"Authorization": f"Basic {KEY}"}])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/models"])
def test_requests_without_the_key_get_401(keyed, headers, path):
    server, backend = keyed
    status, reply = call(server.server_port, headers, path)
    assert status == 401 and reply["error"]["type"] == "invalid_api_key"
    assert backend.seen == []


def test_requests_with_the_key_are_served(keyed):
    server, backend = keyed
    status, reply = call(server.server_port, {"Authorization": f"Bearer {KEY}"})
    assert status == 200 and reply["choices"][0]["message"]["content"] == "The answer is {aspirin}."
    status, reply = call(server.server_port, {"Authorization": f"Bearer {KEY}"}, "/v1/models")
    assert status == 200 and reply["data"][0]["id"] == "m"
    assert backend.seen == ["hi"]


def test_openai_backend_sends_the_key_from_an_option_or_the_environment(keyed, monkeypatch):
    server, backend = keyed
    spec = f"openai:http://127.0.0.1:{server.server_port}/v1#m"
    params = [GenerationParams(max_tokens=8)]
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError):
        make_backend(spec, {"retries": "0"}).generate(["no key"], params)
    assert make_backend(spec, {"api_key": KEY}).generate(["option"], params)[0].text == "The answer is {aspirin}."
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert make_backend(spec).generate(["environment"], params)[0].text == "The answer is {aspirin}."
    assert backend.seen == ["option", "environment"]


def serve(args, env_extra=None):
    """`adapath llm serve` in a subprocess; (its first stderr lines, the process)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("ADAPATH_API_KEY", None)
    env.update(env_extra or {})
    proc = subprocess.Popen([sys.executable, "-m", "adapath.cli", "llm", "serve", "--port", "0",
                             "--llm", "openai:http://127.0.0.1:9/v1#m", *args],
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, preexec_fn=ctrl_c_enabled)
    lines = []
    while not any("serving" in x for x in lines):
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
    return lines, proc


def stop(proc):
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)


def test_serve_command_key_from_the_environment_and_the_warning():
    # the key from ADAPATH_API_KEY, on loopback: no warning, and a request without it gets 401
    lines, proc = serve([], {"ADAPATH_API_KEY": KEY})
    try:
        assert not any("warning" in x for x in lines), lines
        port = int(lines[-1].split(" on http://127.0.0.1:")[1].split("/")[0])
        assert call(port, {})[0] == 401
        assert call(port, {"Authorization": f"Bearer {KEY}"}, "/v1/models")[0] == 200
    finally:
        stop(proc)


@pytest.mark.parametrize("host, key, warned", [
    ("0.0.0.0", None, True), ("192.0.2.7", "", True), ("::", None, True), ("0.0.0.0", KEY, False),
    ("127.0.0.1", None, False), ("localhost", None, False), ("::1", None, False), ("127.0.1.1", None, False),
])
def test_binding_beyond_loopback_without_a_key_is_warned(host, key, warned):
    """The rule the command applies before it serves (tests bind loopback only, so not by binding)."""
    from adapath.llm.serve import exposure_warning

    text = exposure_warning(host, key)
    assert (text is not None) == warned
    if warned:
        assert text.startswith(f"warning: listening on {host} without --api-key")
