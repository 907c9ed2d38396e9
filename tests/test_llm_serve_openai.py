"""`llm serve` called from the official `openai` Python client: the models list, a completion
with usage, a 401 for a wrong key, and streaming (server-sent events) as the OpenAI API sends it;
a bad streaming setting is a 400."""

import threading

import pytest

from adapath.llm import ScriptedBackend
from adapath.llm.serve import make_server

openai = pytest.importorskip("openai")

KEY = "s3cret-key"
REPLY = "The answer is {aspirin}."
PROMPT = "Which drug lowers fever? Reply in braces."


def tokens(text: str) -> int:
    """ScriptedBackend's counting rule, written out: round(words * 4 / 3)."""
    return round(len(text.split()) * 4 / 3)


@pytest.fixture
def served():
    backend = ScriptedBackend(default=REPLY)
    server = make_server(backend, "127.0.0.1", 0, name="scripted", api_key=KEY)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, backend
    server.shutdown()
    server.server_close()


def client(server, key=KEY):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key=key, max_retries=0,
                         timeout=30)


def ask(server, **kwargs):
    return client(server).chat.completions.create(model="scripted", messages=[{"role": "user", "content": PROMPT}],
                                                  **kwargs)


def test_models_completion_with_usage_and_a_wrong_key(served):
    server, _ = served
    assert [m.id for m in client(server).models.list()] == ["scripted"]
    reply = ask(server, max_tokens=64)
    assert reply.choices[0].message.content == REPLY and reply.choices[0].finish_reason == "stop"
    # 7 words -> 9 prompt tokens; 4 words -> 5 completion tokens
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (9, 5, 14)
    assert (tokens(PROMPT), tokens(REPLY)) == (9, 5)
    with pytest.raises(openai.AuthenticationError):
        client(server, key="wrong").models.list()


def test_a_streamed_completion_arrives_as_chunks_then_usage(served):
    server, backend = served
    chunks = list(ask(server, max_tokens=64, n=2, stream=True, stream_options={"include_usage": True}))
    assert {c.object for c in chunks} == {"chat.completion.chunk"} and len({c.id for c in chunks}) == 1
    texts, reasons, roles = {0: "", 1: ""}, {}, {}
    for chunk in chunks[:-1]:
        assert chunk.usage is None  # only the last chunk carries usage
        (choice,) = chunk.choices
        texts[choice.index] += choice.delta.content or ""
        roles.setdefault(choice.index, choice.delta.role)
        if choice.finish_reason:
            reasons[choice.index] = choice.finish_reason
    assert texts == {0: REPLY, 1: REPLY} and roles == {0: "assistant", 1: "assistant"}
    assert reasons == {0: "stop", 1: "stop"}
    last = chunks[-1]
    assert last.choices == []
    assert (last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens) == (9, 10, 19)
    assert backend.batches == [1]


def test_a_stream_without_usage_options_has_no_usage_chunk(served):
    server, _ = served
    chunks = list(ask(server, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == REPLY
    assert all(c.choices and c.usage is None for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"
    # the connection stays usable: a plain request on the same client follows
    assert ask(server).choices[0].message.content == REPLY


def test_a_cut_reply_streams_finish_reason_length(served):
    server, _ = served
    chunks = list(ask(server, max_tokens=5, stream=True))  # the reply's 5 tokens reach the cap
    assert chunks[-1].choices[0].finish_reason == "length"


@pytest.mark.parametrize("body, words", [
    ({"stream": "yes"}, "'stream' must be true or false"),
    ({"stream_options": {"include_usage": True}}, "only allowed when 'stream' is true"),
    ({"stream": True, "stream_options": {"include_usage": "y"}}, "'include_usage' is true or false"),
])
def test_bad_stream_settings_are_400s(served, body, words):
    server, backend = served
    with pytest.raises(openai.BadRequestError, match=words):
        client(server).chat.completions.create(model="scripted", messages=[{"role": "user", "content": "x"}],
                                               extra_body=body)
    assert backend.seen == []
