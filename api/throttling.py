"""Per-API-key rate limit: a fixed window counter in the cache (429 with Retry-After).

DRF's SimpleRateThrottle keeps every request's timestamp in one cache entry, which costs a
list of thousands of floats per request at agent rates; a counter per window costs one
increment. With the default local-memory cache the limit is per server process, which
production refuses (``memoryhub/infra/checks.py``); ``REDIS_CACHE_URL`` shares it across
processes and machines (``memoryhub/infra/cache.py``).
"""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from api.authentication import ApiPrincipal

_PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600}


def parse_rate(rate: str) -> tuple[int, int]:
    """``"6000/min"`` -> (6000, 60)."""
    count, _, period = rate.partition("/")
    return int(count), _PERIODS[period.strip().lower()]


def key_retry_after(principal: ApiPrincipal) -> float | None:
    """Count one request for the key; None while it is within ``API_RATE_LIMIT``, else the
    seconds until its window ends. The API and the MCP endpoint share the count."""
    rate = settings.API_RATE_LIMIT
    if not rate:
        return None
    limit, period = parse_rate(rate)
    now = time.time()
    window = int(now // period)
    key = f"ratelimit:{principal.key_id}:{window}"
    cache.add(key, 0, timeout=period + 1)
    try:
        count = cache.incr(key)
    except ValueError:  # evicted between add and incr: start again
        cache.set(key, 1, timeout=period + 1)
        count = 1
    if count <= limit:
        return None
    return (window + 1) * period - now


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self.retry_after: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        principal = request.user
        if not isinstance(principal, ApiPrincipal):  # None: no key authenticated
            return True
        self.retry_after = key_retry_after(principal)
        return self.retry_after is None

    def wait(self) -> float | None:
        return self.retry_after
