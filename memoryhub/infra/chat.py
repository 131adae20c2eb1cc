"""A client for any server that speaks OpenAI's `POST /v1/chat/completions` and can answer
in JSON (`response_format: {"type": "json_object"}`): OpenAI itself, vLLM, Ollama, LocalAI,
llama.cpp's server.

Like the embeddings client (`memoryhub.infra.embeddings.openai`, whose retry rules it
shares): a timeout per attempt; transient failures (429, 408, 5xx, timeouts, dropped
connections) retried with exponential backoff and full jitter, honouring `Retry-After`; any
other 4xx fails at once. It returns the reply's text; what the text must say is the caller's
business.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

import httpx

from memoryhub.infra.embeddings.openai import (
    _is_retryable,
    _retry_after,
    _server_message,
    embeddings_endpoint,
)


class ChatError(Exception):
    """No usable reply: the server failed, timed out or answered without a message."""


@dataclass(frozen=True)
class ChatClient:
    url: str
    api_key: str | None
    model: str
    timeout: float = 30.0
    max_retries: int = 2
    backoff_base: float = 0.5
    backoff_max: float = 8.0

    @property
    def endpoint(self) -> str:
        return chat_endpoint(self.url)

    def complete_json(self, messages: list[dict[str, str]], *, temperature: float = 0.0) -> str:
        """The text of the first choice's message, asked for as a JSON object."""
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": temperature,
                                "response_format": {"type": "json_object"}}
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        with httpx.Client(timeout=self.timeout, headers=headers) as client:
            response = self._post_with_retries(client, body)
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ChatError(f"chat server {self.endpoint} answered without a message "
                            f"({type(exc).__name__})") from exc
        if not isinstance(content, str):
            raise ChatError(f"chat server {self.endpoint} answered a message without text")
        return content

    def _post_with_retries(self, client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
        attempts = 0
        while True:
            attempts += 1
            wait: float | None = None
            retryable = True
            try:
                response = client.post(self.endpoint, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                failure = f"unreachable ({type(exc).__name__})"
            else:
                if response.is_success:
                    return response
                failure = f"HTTP {response.status_code}: {_server_message(response)}"
                retryable = _is_retryable(response.status_code)  # else a retry cannot fix it
                wait = _retry_after(response)
            if not retryable or attempts > self.max_retries:
                raise ChatError(f"chat server {self.endpoint} answered {failure} "
                                f"(after {attempts} attempt{'s' if attempts > 1 else ''})")
            time.sleep(self._backoff(attempts - 1) if wait is None else wait)

    def _backoff(self, attempt: int) -> float:
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))  # noqa: S311


def chat_endpoint(url: str) -> str:
    """`http://host:8000`, `http://host:8000/` and `http://host:8000/v1` all name one API."""
    return embeddings_endpoint(url).removesuffix("/embeddings") + "/chat/completions"
