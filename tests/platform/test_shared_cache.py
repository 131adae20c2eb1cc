"""The rate limits' cache (issue 17): a per-process one is refused where several processes
may serve, and the Redis one keeps the limits holding while Redis is down."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.core.checks import run_checks
from django.core.exceptions import ImproperlyConfigured

from memoryhub.infra.cache import ResilientRedisCache
from memoryhub.infra.checks import SHARED_LIMITS_ID, refuse_per_process_limits

ROOT = Path(__file__).resolve().parents[2]
CACHE_URL = os.environ.get("MEMORYHUB_TEST_CACHE_URL", "redis://127.0.0.1:6379/6")
NOTHING_LISTENS = "redis://127.0.0.1:9/0"  # the discard port: connection refused
LOCMEM = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
REDIS = {"default": {"BACKEND": "memoryhub.infra.cache.ResilientRedisCache",
                     "LOCATION": CACHE_URL}}


def shared_limits_errors(*, deploy: bool) -> list[str]:
    return [m.msg for m in run_checks(include_deployment_checks=deploy)
            if m.id == SHARED_LIMITS_ID]


def production(settings: Any) -> None:
    settings.DEBUG, settings.EMBEDDED_DATABASE = False, False


def test_check_deploy_refuses_a_per_process_cache_with_limits(settings) -> None:
    settings.CACHES = LOCMEM
    [message] = shared_limits_errors(deploy=True)
    assert "per-process cache (LocMemCache)" in message
    assert "API_RATE_LIMIT 6000/min" in message and "login_failed" in message
    # Development (the embedded database) serves from one process without Redis: no error
    # outside --deploy, which asks about production.
    assert shared_limits_errors(deploy=False) == []
    settings.CACHES = REDIS
    assert shared_limits_errors(deploy=True) == []


def test_in_production_every_check_refuses_it(settings) -> None:
    production(settings)
    settings.CACHES = LOCMEM
    assert len(shared_limits_errors(deploy=False)) == 1
    assert len(shared_limits_errors(deploy=True)) == 1  # said once
    with pytest.raises(ImproperlyConfigured, match=SHARED_LIMITS_ID):
        refuse_per_process_limits()
    settings.CACHES = REDIS
    assert shared_limits_errors(deploy=False) == []
    refuse_per_process_limits()


def test_without_limits_a_per_process_cache_is_fine(settings) -> None:
    production(settings)
    settings.CACHES = LOCMEM
    settings.API_RATE_LIMIT = ""
    [message] = shared_limits_errors(deploy=True)  # allauth's limits remain
    assert "API_RATE_LIMIT 6000" not in message and "ACCOUNT_RATE_LIMITS for" in message
    settings.ACCOUNT_RATE_LIMITS = False
    assert shared_limits_errors(deploy=True) == []
    refuse_per_process_limits()


def test_a_production_server_does_not_start_with_per_process_limits() -> None:
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": "s" * 50,
           # Never connected to: the refusal comes before any request.
           "DATABASE_URL": "postgresql://nobody@127.0.0.1:9/nothing"}
    env.pop("REDIS_CACHE_URL", None)
    env.pop("PYTEST_CURRENT_TEST", None)
    result = subprocess.run([sys.executable, "-c", "import memoryhub.wsgi"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert f"ImproperlyConfigured: {SHARED_LIMITS_ID}: The rate limits count" in result.stderr


def test_with_redis_down_the_api_limit_holds_in_each_process(acme, settings, caplog,
                                                            fresh_rate_window) -> None:
    settings.CACHES = {"default": {**REDIS["default"], "LOCATION": NOTHING_LISTENS}}
    settings.API_RATE_LIMIT = "3/min"
    statuses = [acme.client.get("/api/v1/tenant").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]  # never a 500, and still limited
    down = [r for r in caplog.records if "Redis cache unreachable" in r.getMessage()]
    assert len(down) == 1  # said once per outage, not per request


def test_after_an_outage_redis_is_used_again(prefixes: list[str], caplog) -> None:
    cache = ResilientRedisCache(CACHE_URL, {"KEY_PREFIX": prefixes[0]})
    cache._went_down(redis.ConnectionError("refused"))  # what a failed call records
    cache.set("k", "local")
    assert not cache.reachable and redis.Redis.from_url(CACHE_URL).keys(f"{prefixes[0]}*") == []
    cache._down_until = time.monotonic()  # RETRY_SECONDS later
    cache.set("k", "shared")
    assert cache.reachable and redis.Redis.from_url(CACHE_URL).keys(f"{prefixes[0]}*") != []
    assert [r.getMessage() for r in caplog.records if "Redis cache" in r.getMessage()] == [
        "Redis cache unreachable (refused): rate limits count in each process until it answers",
        "Redis cache reachable again: rate limits are shared again"]


@pytest.fixture
def prefixes() -> Iterator[list[str]]:
    run = uuid.uuid4().hex[:12]
    yield [f"memoryhub-test-{run}-a", f"memoryhub-test-{run}-b"]
    client = redis.Redis.from_url(CACHE_URL)
    for key in client.scan_iter(match=f"memoryhub-test-{run}-*"):
        client.delete(key)


def test_clear_deletes_only_its_own_prefix(prefixes: list[str]) -> None:
    ours, theirs = (ResilientRedisCache(CACHE_URL, {"KEY_PREFIX": p}) for p in prefixes)
    ours.set("counter", 1)
    theirs.set("counter", 2)
    redis.Redis.from_url(CACHE_URL).set("celery-queue", "kept")  # no prefix at all
    ours.clear()  # Django's RedisCache would FLUSHDB
    assert (ours.get("counter"), theirs.get("counter")) == (None, 2)
    assert redis.Redis.from_url(CACHE_URL).getdel("celery-queue") == b"kept"
