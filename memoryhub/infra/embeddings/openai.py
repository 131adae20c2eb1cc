"""Embeddings from any server that speaks OpenAI's `POST /v1/embeddings`.

That covers OpenAI itself and self-hosted servers (vLLM, Ollama, LocalAI, TEI, llama.cpp).
Transient failures (429, 408, 5xx, timeouts, dropped connections) are retried with
exponential backoff and full jitter, honouring `Retry-After`; any other 4xx is a
configuration or input problem that a retry cannot fix, so it fails at once.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from memoryhub.infra.embeddings.base import (
    DEFAULT_DIMENSION,
    EmbeddingError,
    is_blank,
    l2_normalise,
)

_RETRYABLE_STATUS = frozenset({408, 429})
# A server asking us to wait longer than this is effectively down for a worker's purposes.
_MAX_RETRY_AFTER = 60.0
_MAX_ERROR_CHARS = 300


class OpenAICompatibleProvider:
    """Client for an OpenAI-compatible embeddings endpoint."""

    name = "openai"

    def __init__(
        self,
        url: str,
        api_key: str | None,
        model: str,
        dimension: int = DEFAULT_DIMENSION,
        timeout: float = 10.0,
        batch_size: int = 64,
        max_retries: int = 3,
        *,
        backoff_base: float = 0.5,
        backoff_max: float = 8.0,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.endpoint = embeddings_endpoint(url)
        self.api_key = api_key
        self.model = model
        self.dimension = dimension
        self.timeout = timeout
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        result = np.zeros((len(texts), self.dimension), dtype=np.float64)
        # Blank texts keep the zero vector: OpenAI rejects empty strings with a 400.
        wanted = [i for i, text in enumerate(texts) if not is_blank(text)]
        if wanted:
            # One client per call: connections are reused across batches and retries, and
            # nothing is shared across a Celery worker's fork.
            with httpx.Client(timeout=self.timeout, headers=self._headers()) as client:
                for start in range(0, len(wanted), self.batch_size):
                    rows = wanted[start : start + self.batch_size]
                    result[rows] = self._embed_batch(client, [texts[i] for i in rows])
        return l2_normalise(result).tolist()

    def _headers(self) -> dict[str, str]:
        if not self.api_key:
            return {}  # Self-hosted servers often need no key.
        return {"Authorization": f"Bearer {self.api_key}"}

    def _embed_batch(self, client: httpx.Client, batch: list[str]) -> np.ndarray:
        response = self._post_with_retries(client, {"model": self.model, "input": batch})
        return self._parse(response, expected=len(batch))

    def _post_with_retries(self, client: httpx.Client, body: dict[str, Any]) -> httpx.Response:
        for attempt in range(self.max_retries + 1):
            last_try = attempt == self.max_retries
            try:
                response = client.post(self.endpoint, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                if last_try:
                    raise EmbeddingError(
                        f"embedding server {self.endpoint} unreachable after "
                        f"{attempt + 1} attempts: {type(exc).__name__}: {exc}"
                    ) from exc
                time.sleep(self._backoff(attempt))
                continue
            if response.is_success:
                return response
            if not _is_retryable(response.status_code) or last_try:
                raise EmbeddingError(self._describe_failure(response, attempt + 1))
            delay = _retry_after(response)
            time.sleep(self._backoff(attempt) if delay is None else delay)
        raise AssertionError("unreachable: the loop returns or raises")  # pragma: no cover

    def _backoff(self, attempt: int) -> float:
        # Full jitter: concurrent workers that failed together do not retry together.
        return random.uniform(0, min(self.backoff_max, self.backoff_base * 2**attempt))  # noqa: S311

    def _describe_failure(self, response: httpx.Response, attempts: int) -> str:
        message = (
            f"embedding server {self.endpoint} answered HTTP {response.status_code}: "
            f"{_server_message(response)}"
        )
        if response.status_code in (401, 403):
            message += " (check MEMORYHUB_EMBEDDINGS['api_key'])"
        elif response.status_code == 404:
            message += " (check MEMORYHUB_EMBEDDINGS['url'] and ['model'])"
        if attempts > 1:
            message += f" (gave up after {attempts} attempts)"
        return message

    def _parse(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            items = response.json()["data"]
            ordered = sorted(items, key=lambda item: item["index"])
            vectors = [item["embedding"] for item in ordered]
        except (ValueError, KeyError, TypeError) as exc:
            raise EmbeddingError(
                f"embedding server {self.endpoint} returned an unexpected body "
                f"({type(exc).__name__}: {exc}): {response.text[:_MAX_ERROR_CHARS]!r}"
            ) from exc
        if [item["index"] for item in ordered] != list(range(expected)):
            raise EmbeddingError(
                f"embedding server {self.endpoint} returned {len(ordered)} embeddings "
                f"for {expected} inputs (indices must be 0..{expected - 1})"
            )
        return self._check_dimension(vectors)

    def _check_dimension(self, vectors: list[Any]) -> np.ndarray:
        for vector in vectors:
            if not isinstance(vector, list) or len(vector) != self.dimension:
                got = len(vector) if isinstance(vector, list) else type(vector).__name__
                raise EmbeddingError(
                    f"model {self.model!r} at {self.endpoint} returned {got}-dimensional "
                    f"vectors, but MEMORYHUB_EMBEDDINGS['dimension'] is {self.dimension}"
                )
        matrix = np.asarray(vectors, dtype=np.float64)
        if not np.isfinite(matrix).all():
            raise EmbeddingError(f"model {self.model!r} returned non-finite values")
        return matrix


def embeddings_endpoint(url: str) -> str:
    """`http://host:8000`, `http://host:8000/` and `http://host:8000/v1` all name one API."""
    base = url.strip().rstrip("/")
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return f"{base}/v1/embeddings"


def _is_retryable(status: int) -> bool:
    return status in _RETRYABLE_STATUS or status >= 500


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait (delta-seconds or HTTP-date), capped."""
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _server_message(response: httpx.Response) -> str:
    """The error text from OpenAI-style `{"error": {"message": ...}}` bodies and kin."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:_MAX_ERROR_CHARS] or response.reason_phrase
    if isinstance(body, dict):
        error = body.get("error", body.get("detail", body.get("message")))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error:
            return str(error)[:_MAX_ERROR_CHARS]
    return str(body)[:_MAX_ERROR_CHARS]
