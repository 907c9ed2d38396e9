"""OpenAI-compatible chat completions over HTTP (vLLM serve, llama.cpp server, ...).

Standard library only. A batch is sent as concurrent requests (the server batches them);
each request has a timeout and is retried with exponential backoff; after the last retry
an LLMError names the server and the cause.

Several servers of one model (``openai:URL1,URL2#MODEL``, e.g. one ``vllm serve`` per GPU
or node) share the requests: each request goes to the server with the fewest requests in
flight from this process, and a retry moves to the next server, so a server that goes
down costs a retry, not the run.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from adapath.llm.base import (
    Generation,
    GenerationParams,
    LLMError,
    ParamsArg,
    count_tokens,
    per_prompt,
)


def _v1(url: str) -> str:
    url = url.strip().rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIHTTPBackend:
    def __init__(self, base_url: str, model: str, timeout: float = 60.0, retries: int = 3,
                 backoff: float = 0.5, concurrency: int = 16, api_key: str | None = None):
        """``base_url``: one server, or several separated by commas (one model behind all)."""
        self.base_urls = [_v1(u) for u in base_url.split(",") if u.strip()]
        self.base_url = ",".join(self.base_urls)
        self.model, self.timeout, self.retries = model, timeout, retries
        self.backoff, self.concurrency, self.api_key = backoff, concurrency * len(self.base_urls), api_key
        self.name = f"openai:{self.base_url}#{model}"
        self.in_flight = [0] * len(self.base_urls)
        self.sent = [0] * len(self.base_urls)  # requests each server was sent
        self._lock = threading.Lock()

    def _pick(self, after: int | None = None) -> int:
        """The server with the fewest requests in flight (the next one after ``after`` on a retry)."""
        with self._lock:
            n = len(self.base_urls)
            if after is None:
                server = min(range(n), key=lambda s: (self.in_flight[s], s))
            else:
                server = (after + 1) % n
            self.in_flight[server] += 1
            self.sent[server] += 1
            return server

    def _done(self, server: int) -> None:
        with self._lock:
            self.in_flight[server] -= 1

    def _request(self, prompt: str, params: GenerationParams) -> Generation:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": params.max_tokens, "temperature": params.temperature,
            "top_p": params.top_p, "seed": params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        if params.n > 1:  # n samples in one request: one call
            body["n"] = params.n
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode()
        last = "no attempt"
        server = None
        failed = 0  # attempts that failed before the reply: counted apart from the call
        for attempt in range(self.retries + 1):
            rounds, step = divmod(attempt, len(self.base_urls))
            if attempt and step == 0:  # every server tried since the last pause
                time.sleep(self.backoff * 2 ** (rounds - 1))
            server = self._pick(server)
            url = self.base_urls[server]
            request = urllib.request.Request(f"{url}/chat/completions", data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                choices = sorted(payload["choices"], key=lambda c: c.get("index", 0))
                texts = [c["message"]["content"] or "" for c in choices]
                usage = payload.get("usage") or {}
                # a reply without usage: estimated counts, marked so in the efficiency table
                estimated = not (usage.get("prompt_tokens") and "completion_tokens" in usage)
                completion = (int(usage["completion_tokens"]) if not estimated
                              else sum(count_tokens(t) for t in texts))
                return Generation(texts[0], int(usage.get("prompt_tokens") or count_tokens(prompt)), completion,
                                  estimated=estimated, failed_attempts=failed,
                                  samples=tuple(texts) if params.n > 1 else ())
            except urllib.error.HTTPError as exc:
                failed += 1
                last = f"{url}: HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    break  # a client error does not improve with retries
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                failed += 1
                last = f"{url}: {type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except (json.JSONDecodeError, KeyError, IndexError, TypeError, UnicodeDecodeError):
                failed += 1
                last = f"{url}: malformed reply"
            finally:
                self._done(server)
        raise LLMError(f"{self.base_url}: request failed after {self.retries + 1} attempt(s) ({last})")

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        if not prompts:
            return []
        settings = per_prompt(params, len(prompts))
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(self._request, prompts, settings))
