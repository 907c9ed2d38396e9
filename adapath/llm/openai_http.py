"""OpenAI-compatible chat completions over HTTP (vLLM serve, llama.cpp server, ...).

Standard library only. A batch is sent as concurrent requests (the server batches them);
each request has a timeout and is retried with exponential backoff; after the last retry
an LLMError names the server and the cause.
"""

from __future__ import annotations

import json
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


class OpenAIHTTPBackend:
    def __init__(self, base_url: str, model: str, timeout: float = 60.0, retries: int = 3,
                 backoff: float = 0.5, concurrency: int = 16, api_key: str | None = None):
        self.base_url = base_url.rstrip("/")
        if not self.base_url.endswith("/v1"):
            self.base_url += "/v1"
        self.model, self.timeout, self.retries = model, timeout, retries
        self.backoff, self.concurrency, self.api_key = backoff, concurrency, api_key
        self.name = f"openai:{self.base_url}#{model}"

    def _request(self, prompt: str, params: GenerationParams) -> Generation:
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt}],
            "max_tokens": params.max_tokens, "temperature": params.temperature,
            "top_p": params.top_p, "seed": params.seed,
        }
        if params.stop:
            body["stop"] = list(params.stop)
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode()
        last = "no attempt"
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(f"{self.base_url}/chat/completions", data=data,
                                             headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read().decode("utf-8"))
                text = payload["choices"][0]["message"]["content"] or ""
                usage = payload.get("usage") or {}
                return Generation(text, int(usage.get("prompt_tokens") or count_tokens(prompt)),
                                  int(usage.get("completion_tokens") or count_tokens(text)))
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
                if 400 <= exc.code < 500 and exc.code not in (408, 429):
                    break  # a client error does not improve with retries
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                last = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
            except (json.JSONDecodeError, KeyError, IndexError, TypeError, UnicodeDecodeError):
                last = "malformed reply"
        raise LLMError(f"{self.base_url}: request failed after {self.retries + 1} attempt(s) ({last})")

    def generate(self, prompts: list[str], params: ParamsArg) -> list[Generation]:
        if not prompts:
            return []
        settings = per_prompt(params, len(prompts))
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(prompts))) as pool:
            return list(pool.map(self._request, prompts, settings))
