"""A small OpenAI-compatible chat-completions server over any adapath backend.

One loaded model serves several clients (workers of a run, several runs, tests): requests
that arrive together are handed to the backend as one batch (each with its own sampling
settings), so a local model batches work it gets from many connections. Standard library
only (``http.server.ThreadingHTTPServer``); loopback by default; no authentication, so
bind to another address only on a network you trust.

- ``GET /v1/models``: the one served model;
- ``POST /v1/chat/completions``: ``messages`` (system and user turns; the reply continues
  the last user turn), ``max_tokens`` (or ``max_completion_tokens``), ``temperature``,
  ``top_p``, ``seed``, ``stop``, ``n``; the reply carries ``usage`` (prompt, completion and
  total tokens as the backend counts them). The ``n`` choices are one request to the backend
  (``GenerationParams.n``: vLLM samples them natively; local backends use seeds ``seed + i``).
  ``stream: true`` answers with server-sent events as the OpenAI API does: ``chat.completion.chunk``
  objects (the role, the content, then the finish reason of each choice), a last chunk with
  ``usage`` when ``stream_options: {"include_usage": true}``, then ``data: [DONE]``. Backends
  return whole replies, so each choice's content comes in one chunk once it is generated.
"""

from __future__ import annotations

import hmac
import json
import queue
import threading
import time
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from adapath.llm.base import Generation, GenerationParams
from adapath.typed import type_phrase

MAX_BODY = 16 * 1024 * 1024


class RequestError(Exception):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status, self.kind = status, kind


@dataclass
class _Job:
    prompts: list[str]
    params: list[GenerationParams]
    done: threading.Event = field(default_factory=threading.Event)
    result: list[Generation] | None = None
    error: Exception | None = None


class Batcher:
    """Gathers the requests that arrive within ``wait`` seconds of each other (up to
    ``max_batch`` prompts) into one ``generate`` call; backends are called from this one
    thread only, so none needs to be thread-safe."""

    def __init__(self, backend, max_batch: int = 64, wait: float = 0.005):
        self.backend, self.max_batch, self.wait = backend, max_batch, wait
        self.queue: queue.Queue[_Job | None] = queue.Queue()
        self.batches: list[int] = []  # prompts per backend call (for tests and logs)
        self._thread = threading.Thread(target=self._run, name="adapath-llm-batcher", daemon=True)
        self._thread.start()

    def submit(self, prompts: list[str], params: list[GenerationParams]) -> list[Generation]:
        job = _Job(prompts, params)
        self.queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.result

    def close(self) -> None:
        self.queue.put(None)
        self._thread.join(timeout=5)

    def _gather(self, first: _Job) -> tuple[list[_Job], bool]:
        jobs, size = [first], len(first.prompts)
        deadline = time.monotonic() + self.wait
        while size < self.max_batch:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                job = self.queue.get(timeout=left)
            except queue.Empty:
                break
            if job is None:
                return jobs, True
            jobs.append(job)
            size += len(job.prompts)
        return jobs, False

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self.queue.get()
            if first is None:
                return
            jobs, stop = self._gather(first)
            prompts = [p for job in jobs for p in job.prompts]
            params = [s for job in jobs for s in job.params]
            self.batches.append(len(prompts))
            try:
                generations = self.backend.generate(prompts, params)
                at = 0
                for job in jobs:
                    job.result = generations[at:at + len(job.prompts)]
                    at += len(job.prompts)
            except Exception as exc:  # the backend failed: every waiting request hears why
                for job in jobs:
                    job.error = exc
            for job in jobs:
                job.done.set()


def _number(body: dict, key: str, kind: type, default, low, high):
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise RequestError(400, f"'{key}' must be {type_phrase(kind)}")
    if not low <= value <= high:
        raise RequestError(400, f"'{key}' must lie in [{low}, {high}]")
    return kind(value)


def parse_request(body: dict, served: str) -> tuple[str, GenerationParams]:
    """(prompt, its settings, ``n`` choices included) of a chat-completions request."""
    if not isinstance(body, dict):
        raise RequestError(400, "the body must be a JSON object")
    model = body.get("model")
    if model is not None and model != served:
        raise RequestError(404, f"model {model!r} is not served here (this server serves {served!r})",
                           "model_not_found")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError(400, "'messages' must be a non-empty list")
    parts = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise RequestError(400, "each message needs a 'role' and a text 'content'")
        if message.get("role") not in ("system", "user"):
            raise RequestError(400, "only system and user messages are supported (one turn)")
        parts.append(message["content"])
    if messages[-1].get("role") != "user":
        raise RequestError(400, "the last message must be the user's")
    stop = body.get("stop") or ()
    stop = (stop,) if isinstance(stop, str) else stop
    if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
        raise RequestError(400, "'stop' must be a string or a list of strings")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    base = GenerationParams(
        max_tokens=_number({"max_tokens": max_tokens}, "max_tokens", int, 256, 1, 10**6),
        temperature=_number(body, "temperature", float, 0.0, 0.0, 2.0),
        top_p=_number(body, "top_p", float, 1.0, 0.0, 1.0),
        seed=_number(body, "seed", int, 42, -2**63, 2**63 - 1),
        stop=tuple(stop))
    n = _number(body, "n", int, 1, 1, 128)
    return "\n\n".join(parts), replace(base, n=n)


def parse_stream(body: dict) -> tuple[bool, bool]:
    """(stream the reply?, add a usage chunk?) from ``stream`` and ``stream_options``."""
    stream, options = body.get("stream"), body.get("stream_options")
    if stream is not None and not isinstance(stream, bool):
        raise RequestError(400, "'stream' must be true or false")
    if options is None:
        return bool(stream), False
    if not stream:
        raise RequestError(400, "'stream_options' is only allowed when 'stream' is true")
    if not isinstance(options, dict) or not isinstance(options.get("include_usage", False), bool):
        raise RequestError(400, "'stream_options' must be an object whose 'include_usage' is true or false")
    return True, options.get("include_usage", False)


def stream_events(head: dict, texts: list[str], finish: str, usage: dict | None) -> list[dict]:
    """A completion as the chunks an OpenAI stream sends: per choice its role, its content and
    its finish reason; then, when ``usage`` is given, a chunk with no choices that carries it
    (every chunk before it has ``usage: null``, as the API sends them)."""
    chunk = {**head, "object": "chat.completion.chunk"}
    if usage is not None:
        chunk["usage"] = None

    def choice(index: int, delta: dict, reason: str | None = None) -> dict:
        return {**chunk, "choices": [{"index": index, "delta": delta, "logprobs": None, "finish_reason": reason}]}

    events = [choice(i, {"role": "assistant", "content": ""}) for i in range(len(texts))]
    events += [choice(i, {"content": text}) for i, text in enumerate(texts) if text]
    events += [choice(i, {}, finish) for i in range(len(texts))]
    if usage is not None:
        events.append({**chunk, "choices": [], "usage": usage})
    return events


def authorized(header: str | None, api_key: str | None) -> bool:
    """Does an ``Authorization`` header carry the key (always, when there is no key)?"""
    if not api_key:
        return True
    scheme, _, token = (header or "").strip().partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), api_key.encode())


def make_server(backend, host: str = "127.0.0.1", port: int = 0, name: str = "adapath",
                max_batch: int = 64, wait: float = 0.005, api_key: str | None = None) -> ThreadingHTTPServer:
    """A server bound to (host, port) (port 0: a free one, see ``server_port``); call
    ``serve_forever``, then ``shutdown`` and ``server_close``. With ``api_key``, requests
    without ``Authorization: Bearer API_KEY`` get 401."""
    batcher = Batcher(backend, max_batch=max_batch, wait=wait)
    counter = iter(range(1, 2**62))
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: a run sends thousands of requests
            pass

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 401:  # the request body was not read: this connection cannot go on
                self.send_header("WWW-Authenticate", "Bearer")
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)

        def _stream(self, events: list[dict]) -> None:
            """Server-sent events, one chunk of the HTTP/1.1 chunked body each, then [DONE]."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for event in [*(json.dumps(e) for e in events), "[DONE]"]:
                data = f"data: {event}\n\n".encode()
                self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")

        def _refused(self) -> bool:
            """Answer 401 when the request lacks the key; True when it did."""
            if authorized(self.headers.get("Authorization"), api_key):
                return False
            self._error(RequestError(401, "missing or wrong API key: send Authorization: Bearer KEY",
                                     "invalid_api_key"))
            return True

        def _error(self, exc: RequestError) -> None:
            self._send(exc.status, {"error": {"message": str(exc), "type": exc.kind}})

        def do_GET(self):
            if self._refused():
                return
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._send(200, {"object": "list", "data": [
                    {"id": name, "object": "model", "created": 0, "owned_by": "adapath"}]})
            else:
                self._error(RequestError(404, f"no route {self.path}", "not_found"))

        def do_POST(self):
            if self._refused():
                return
            try:
                if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
                    raise RequestError(404, f"no route {self.path}", "not_found")
                length = int(self.headers.get("Content-Length") or 0)
                if length > MAX_BODY:
                    raise RequestError(413, "request body too large")
                try:
                    body = json.loads(self.rfile.read(length).decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise RequestError(400, f"the body is not JSON ({exc})") from None
                prompt, setting = parse_request(body, name)
                stream, include_usage = parse_stream(body)
                try:
                    (generation,) = batcher.submit([prompt], [setting])
                except Exception as exc:  # the backend failed: a 500 the client may retry
                    raise RequestError(500, f"backend error: {type(exc).__name__}: {exc}", "server_error") from None
            except RequestError as exc:
                self._error(exc)
                return
            with lock:
                number = next(counter)
            prompt_tokens, completion = generation.prompt_tokens, generation.completion_tokens
            texts = generation.texts()
            # per-choice lengths are not kept: a choice counts as cut when the mean reaches the cap
            finish = "length" if completion >= setting.max_tokens * len(texts) else "stop"
            head = {"id": f"chatcmpl-{number}", "created": int(time.time()), "model": name}
            usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                     "total_tokens": prompt_tokens + completion}
            if stream:
                self._stream(stream_events(head, texts, finish, usage if include_usage else None))
                return
            self._send(200, {
                **head, "object": "chat.completion",
                "choices": [{"index": i, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish} for i, text in enumerate(texts)],
                "usage": usage})

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    server.batcher = batcher
    original_close = server.server_close

    def server_close():
        original_close()
        batcher.close()

    server.server_close = server_close
    return server


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def exposure_warning(host: str, api_key: str | None) -> str | None:
    """The start-up warning for a server that anyone beyond this machine may use, if any."""
    if is_loopback(host) or api_key:
        return None
    return f"warning: listening on {host} without --api-key: anyone who reaches this address can use the model"
