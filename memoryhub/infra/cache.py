"""The cache that holds the rate limits' counters: Redis, shared by every server process.

The API's rate limit (``api/throttling.py``) and allauth's login limits count in Django's
cache. A per-process cache (``LocMemCache``) gives each gunicorn worker its own counters, so
two workers let twice the limit through; Redis gives them one counter.

``ResilientRedisCache`` is Django's ``RedisCache`` that keeps answering while Redis cannot
be reached: each operation then goes to a per-process memory cache, so the limits still hold
in each process (looser by the number of processes, never switched off) and a request never
fails because the cache is down. After a failure Redis is left alone for
``RETRY_SECONDS`` before it is tried again, so an outage costs one connection attempt per
process every few seconds, not one per request. django-redis's ``IGNORE_EXCEPTIONS`` would
instead answer "nothing stored", which switches every limit off.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

RETRY_SECONDS = 5.0
# Redis is on the local network: an answer slower than this is an outage, not a slow reply.
SOCKET_TIMEOUT_SECONDS = 1.0
_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
T = TypeVar("T")


def _falling_back(name: str) -> Callable[..., Any]:
    """``RedisCache.<name>``, or the same operation on the per-process cache while Redis is
    unreachable."""
    on_redis = getattr(RedisCache, name)

    def operation(self: ResilientRedisCache, *args: Any, **kwargs: Any) -> Any:
        return self.call(lambda: on_redis(self, *args, **kwargs),
                         lambda: getattr(self.fallback, name)(*args, **kwargs))

    operation.__name__ = operation.__qualname__ = name
    return operation


class ResilientRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = {"socket_connect_timeout": SOCKET_TIMEOUT_SECONDS,
                   "socket_timeout": SOCKET_TIMEOUT_SECONDS, **(params.get("OPTIONS") or {})}
        super().__init__(server, {**params, "OPTIONS": options})
        kept = {k: v for k, v in params.items() if k in {"KEY_PREFIX", "VERSION", "TIMEOUT"}}
        self.fallback = LocMemCache(f"redis-fallback:{server}", kept)
        self._down_until: float | None = None  # monotonic time of the next try; None: up
        self._lock = threading.Lock()

    @property
    def reachable(self) -> bool:
        """False from a failure until ``RETRY_SECONDS`` later."""
        down_until = self._down_until
        return down_until is None or time.monotonic() >= down_until

    def call(self, on_redis: Callable[[], T], on_fallback: Callable[[], T]) -> T:
        if self.reachable:
            try:
                result = on_redis()
            except _UNREACHABLE as exc:
                self._went_down(exc)
            else:
                if self._down_until is not None:
                    self._came_back()
                return result
        return on_fallback()

    def _went_down(self, exc: Exception) -> None:
        with self._lock:
            first, self._down_until = self._down_until is None, time.monotonic() + RETRY_SECONDS
        if first:
            logger.warning("Redis cache unreachable (%s): rate limits count in each process "
                           "until it answers", exc)

    def _came_back(self) -> None:
        with self._lock:
            was_down, self._down_until = self._down_until is not None, None
        if was_down:
            logger.warning("Redis cache reachable again: rate limits are shared again")

    # Every operation of RedisCache (decr and get_or_set are built on these).
    add = _falling_back("add")
    get = _falling_back("get")
    set = _falling_back("set")
    touch = _falling_back("touch")
    delete = _falling_back("delete")
    get_many = _falling_back("get_many")
    has_key = _falling_back("has_key")
    incr = _falling_back("incr")
    set_many = _falling_back("set_many")
    delete_many = _falling_back("delete_many")

    def clear(self) -> None:
        """Delete this cache's keys only. Django's RedisCache empties the whole Redis database
        (FLUSHDB), which may hold other deployments' counters (each under its own
        ``KEY_PREFIX``) or a Celery queue."""
        self.fallback.clear()
        self.call(self._clear_prefix, lambda: None)

    def _clear_prefix(self) -> None:
        client = self._cache.get_client(write=True)  # type: ignore[attr-defined]  # not in the stubs
        pattern = re.sub(r"([*?\[\]\\])", r"\\\1", self.key_prefix) + ":*"  # glob-escaped
        for keys in _batches(client.scan_iter(match=pattern, count=500), 500):
            client.delete(*keys)


def _batches(items: Iterator[T], size: int) -> Iterator[list[T]]:
    batch: list[T] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


PER_PROCESS_BACKENDS = frozenset({
    "django.core.cache.backends.locmem.LocMemCache",
    "django.core.cache.backends.dummy.DummyCache",
})


def is_per_process(backend: str) -> bool:
    """True for a cache whose counters one process cannot share with another (DummyCache
    counts nothing at all)."""
    return backend in PER_PROCESS_BACKENDS
