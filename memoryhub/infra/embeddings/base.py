"""What every embedding provider shares: the interface, the error and the vector helpers.

Contract shared by every provider:
- `embed(texts)` returns one vector of `dimension` floats per text, in input order.
- Vectors have unit L2 norm, so cosine similarity is a plain dot product.
- An empty or whitespace-only text gets the zero vector (there is nothing to embed, and
  remote APIs reject empty input). Its cosine with anything is undefined (pgvector returns
  NaN), so callers should not store it as an embedding.
- Failures raise `EmbeddingError` with a message that says what to fix.

The providers import this module, never the package: the package (the registry) imports
the providers, so a provider importing it back would close a cycle.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["DEFAULT_DIMENSION", "EmbeddingError", "EmbeddingProvider", "is_blank", "l2_normalise"]

DEFAULT_DIMENSION = 384
# The longest provider key a vector is stored with (Passage.embedding_provider's max_length).
PROVIDER_KEY_MAX = 64


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


def provider_key(provider: EmbeddingProvider) -> str:
    """What produced a vector: provider, model and dimension (vectors of two keys don't mix)."""
    model = getattr(provider, "model", None) or getattr(provider, "model_dir", None) or ""
    if isinstance(model, Path):
        model = "/".join(model.parts[-2:])
    key = ":".join(str(part) for part in (provider.name, model, provider.dimension) if part)
    if len(key) <= PROVIDER_KEY_MAX:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{key[: PROVIDER_KEY_MAX - 17]}:{digest}"
