"""Embedding providers: turn texts into L2-normalised vectors for recall.

Contract shared by every provider:
- `embed(texts)` returns one vector of `dimension` floats per text, in input order.
- Vectors have unit L2 norm, so cosine similarity is a plain dot product.
- An empty or whitespace-only text gets the zero vector (there is nothing to embed, and
  remote APIs reject empty input). Its cosine with anything is undefined (pgvector returns
  NaN), so callers should not store it as an embedding.
- Failures raise `EmbeddingError` with a message that says what to fix.

This package never imports Django at module level: `get_provider()` reads
`settings.MEMORYHUB_EMBEDDINGS` lazily, so the providers can be used and tested without
configured settings.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "DEFAULT_DIMENSION",
    "EmbeddingError",
    "EmbeddingProvider",
    "get_provider",
    "is_blank",
    "l2_normalise",
    "provider_from_config",
]

DEFAULT_DIMENSION = 384


class EmbeddingError(RuntimeError):
    """Texts could not be embedded; the message names the cause and, where known, the fix."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Anything that turns texts into L2-normalised vectors of a fixed dimension."""

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Return one unit vector per text, in order (the zero vector for a blank text)."""
        ...


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Scale each row to unit length; all-zero rows stay zero instead of becoming NaN."""
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


def is_blank(text: str) -> bool:
    """True for texts that get the zero vector by contract."""
    return not text.strip()


def provider_from_config(config: Mapping[str, Any]) -> EmbeddingProvider:
    """Build a provider from a `MEMORYHUB_EMBEDDINGS`-shaped mapping (no caching)."""
    kind = config.get("provider", "hashing")
    dimension = int(config.get("dimension", DEFAULT_DIMENSION))
    if kind == "hashing":
        from memoryhub.infra.embeddings.hashing import HashingProvider

        return HashingProvider(dimension=dimension)
    if kind == "local":
        from memoryhub.infra.embeddings.local import LocalOnnxProvider

        return LocalOnnxProvider(
            model_path=config.get("model_path"),
            dimension=dimension,
            batch_size=int(config.get("batch_size", 32)),
        )
    if kind == "openai":
        return _openai_from_config(config, dimension)
    raise EmbeddingError(
        f"unknown embedding provider {kind!r} in MEMORYHUB_EMBEDDINGS['provider']; "
        "expected 'hashing', 'local' or 'openai'"
    )


def _openai_from_config(config: Mapping[str, Any], dimension: int) -> EmbeddingProvider:
    from memoryhub.infra.embeddings.openai import OpenAICompatibleProvider

    for key in ("url", "model"):
        if not config.get(key):
            raise EmbeddingError(
                f"MEMORYHUB_EMBEDDINGS['{key}'] is required when provider is 'openai'"
            )
    return OpenAICompatibleProvider(
        url=config["url"],
        api_key=config.get("api_key"),
        model=config["model"],
        dimension=dimension,
        timeout=float(config.get("timeout", 10)),
        batch_size=int(config.get("batch_size", 64)),
        max_retries=int(config.get("max_retries", 3)),
    )


@functools.lru_cache(maxsize=8)
def _cached_provider(frozen_config: str) -> EmbeddingProvider:
    return provider_from_config(json.loads(frozen_config))


def get_provider() -> EmbeddingProvider:
    """The provider configured by `settings.MEMORYHUB_EMBEDDINGS` (hashing by default).

    One instance per distinct settings dict, so a local model loads once per process and
    `override_settings` in tests gets a fresh provider. `get_provider.cache_clear()` drops
    the cached instances.
    """
    from django.conf import settings

    config = getattr(settings, "MEMORYHUB_EMBEDDINGS", None) or {}
    # A dict is unhashable; its canonical JSON is a stable cache key.
    return _cached_provider(json.dumps(dict(config), sort_keys=True, default=str))


get_provider.cache_clear = _cached_provider.cache_clear  # type: ignore[attr-defined]
