"""Rate limits hold across server processes (issue 17): the counters are in Redis.

Two gunicorn servers (one worker each) on the test database share one Redis cache, and the
requests alternate between them, so each process sees half: a per-process count would let
every request through. Each run has a key prefix of its own in Redis DB 6 (the worker tests
use 5, the benchmarks 7), so runs on one Redis never count each other's requests.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from tenants.services import account_get_or_create, membership_set
from tests.benchmarks.benchserver import free_port, serving
from tests.factories import ApiKeyFactory, TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)

CACHE_URL = os.environ.get("MEMORYHUB_TEST_CACHE_URL", "redis://127.0.0.1:6379/6")
API_LIMIT = 30
PASSWORD = "a long enough passphrase 17"  # a test account's
FAILED_SIGN_INS_ALLOWED = 5  # ACCOUNT_RATE_LIMITS["login_failed"]: 5/5m/key
# The name both servers answer to, as behind one load balancer: allauth's per-email count
# of failed sign-ins is keyed by the site's domain too, and so would differ by port.
HOST = "memory.test"


@pytest.fixture(scope="module")
def servers(django_db_setup: Any) -> Iterator[list[str]]:
    """Two gunicorn servers sharing the Redis cache under this run's own key prefix."""
    prefix = f"memoryhub-test-{uuid.uuid4().hex[:12]}"
    env = {
        **os.environ,  # MEMORYHUB_DB_NAME is the test database by now
        # DEBUG keeps the CSRF cookie usable over plain HTTP; it changes no limit.
        "DEBUG": "1", "LOG_LEVEL": "WARNING", "ALLOWED_HOSTS": f"127.0.0.1,{HOST}",
        "REDIS_CACHE_URL": CACHE_URL, "REDIS_CACHE_KEY_PREFIX": prefix,
        # Per hour, so that a run seldom straddles two windows (see the test below).
        "API_RATE_LIMIT": f"{API_LIMIT}/hour",
    }
    redis.Redis.from_url(CACHE_URL).ping()  # Redis is part of the test environment (.ci/run)
    with serving_on(env) as first, serving_on(env) as second:
        yield [first, second]
    client = redis.Redis.from_url(CACHE_URL)
    for key in client.scan_iter(match=f"{prefix}:*"):
        client.delete(key)


def serving_on(env: dict[str, str]) -> Any:
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "memoryhub.wsgi:application", "--bind",
           f"127.0.0.1:{port}", "--workers", "1", "--log-level", "warning"]
    return serving(cmd, env, port, "gunicorn")


def alternating(servers: list[str], count: int) -> list[str]:
    return [servers[i % len(servers)] for i in range(count)]


def test_an_api_key_gets_exactly_its_limit_across_two_processes(servers: list[str]) -> None:
    tenant = TenantFactory(slug="limited")
    # The limit counts per fixed window of the clock's hours. A run that straddles the end of
    # one (the requests take a second or two) is run again with a new key, in the new window,
    # rather than waiting for a safe moment beforehand.
    for attempt in range(2):
        key = ApiKeyFactory(tenant=tenant, name=f"k{attempt}",
                            permissions=["memory", "admin"]).plaintext
        window = int(time.time() // 3600)
        statuses = requests_per_server(servers, key, 2 * API_LIMIT)
        if int(time.time() // 3600) == window:
            break
    total = sum(statuses.values(), Counter())
    assert total == {200: API_LIMIT, 429: API_LIMIT}, statuses
    # Each process answered half the requests, and refused some: the count is one.
    assert all(sum(s.values()) == API_LIMIT and s[429] for s in statuses.values()), statuses


def requests_per_server(servers: list[str], key: str, count: int) -> dict[str, Counter[int]]:
    """GET the tenant ``count`` times with ``key``, alternating servers; statuses by server."""
    statuses: dict[str, Counter[int]] = {base: Counter() for base in servers}
    for base in alternating(servers, count):
        response = httpx.get(f"{base}/api/v1/tenant", headers={"Authorization": f"Bearer {key}"})
        statuses[base][response.status_code] += 1
    return statuses


def sign_in(base: str, password: str) -> int:
    """POST the sign-in form (with its CSRF token) to ``base``; the answer's status."""
    with httpx.Client(base_url=base, headers={"Host": HOST}) as client:
        client.get("/accounts/login/")
        token = client.cookies["csrftoken"]
        return client.post("/accounts/login/", data={
            "login": "owner@limited.test", "password": password, "csrfmiddlewaretoken": token,
        }).status_code


def test_failed_sign_ins_are_counted_once_across_two_processes(servers: list[str]) -> None:
    tenant = TenantFactory(slug="limited")
    user = account_get_or_create(email="owner@limited.test", password=PASSWORD)
    membership_set(tenant=tenant, user=user, role="owner", actor="test")
    attempts = [sign_in(base, "wrong")
                for base in alternating(servers, FAILED_SIGN_INS_ALLOWED + 3)]
    # allauth answers a wrong password with the form again (200), a refusal with 429.
    assert attempts == [200] * FAILED_SIGN_INS_ALLOWED + [429] * 3
    assert [sign_in(base, PASSWORD) for base in servers] == [429, 429]


