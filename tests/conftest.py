"""Shared fixtures: a throwaway database migrated by the owner role, and two tenants.

Every API test gets ``acme`` and ``globex``: the second tenant is there to prove that
nothing of one is visible to the other (Zulip's "lear", healthchecks' "Charlie").
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis
from django.conf import settings
from django.core.management import call_command
from django.db import connections
from django.test import TransactionTestCase
from rest_framework.test import APIClient

from memoryhub.celery import app as celery_app
from memoryhub.infra.embedded_db import Cluster
from memoryhub.infra.queues import webhooks_queue
from tenants.models import Tenant
from tenants.services import CreatedKey
from tests.factories import ApiKeyFactory, TenantFactory
from tests.workers.conftest import REDIS_URL, worker_running

os.environ.setdefault("PLAYWRIGHT_BROWSERS_PATH", "0")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs a loop


@pytest.fixture(scope="session")
def django_db_setup(django_db_blocker: Any) -> Iterator[None]:
    """Create the test database as the owner role, migrate it, and grant the app role.

    Replaces pytest-django's setup because migrations must run on the owner connection
    ("migrate") while the tests run on the application's role ("default").
    """
    from memoryhub.infra.db import grant_app_role

    name = settings.DATABASES["default"]["TEST"]["NAME"]
    if settings.EMBEDDED_POSTGRES:
        from memoryhub.infra.embedded_db import ensure_database

        ensure_database(Cluster(**settings.EMBEDDED_POSTGRES), name, recreate=True)
    for alias in ("default", "migrate"):
        connections[alias].close()
        connections[alias].settings_dict["NAME"] = name
    os.environ["MEMORYHUB_DB_NAME"] = name  # for workers and servers the tests start
    with django_db_blocker.unblock():
        call_command("migrate", database="migrate", verbosity=0, interactive=False)
        grant_app_role("migrate", truncate=True)
        connections["migrate"].close()
    yield
    for alias in ("default", "migrate"):
        connections[alias].close()


# What post_migrate fills (content types, permissions): never written by the tests, so kept.
_SEEDED_TABLES = frozenset({"django_content_type", "auth_permission"})


def _empty_written_tables(self: TransactionTestCase) -> None:
    """A transactional test's teardown: empty the tables that were written, not every table.

    Django's flush truncates all 35 tables and runs post_migrate again: 150 ms after each of
    the suite's 400-odd transactional tests. A table never written since it was last emptied
    has an empty heap file (``pg_relation_size`` 0, whatever row-level security the role
    asking is under), and the tables post_migrate fills are left as they are. What the test
    database holds afterwards is what flush leaves."""
    for alias in self._databases_names(include_mirrors=False):
        connection = connections[alias]
        tables = sorted(set(connection.introspection.django_table_names(only_existing=True))
                        - _SEEDED_TABLES)
        with connection.cursor() as cursor:
            cursor.execute("SELECT name FROM unnest(%s::text[]) AS name"
                           " WHERE pg_relation_size(quote_ident(name)::regclass) > 0", [tables])
            written = [connection.ops.quote_name(name) for (name,) in cursor.fetchall()]
            if not written:
                continue
            if not settings.EMBEDDED_POSTGRES:
                cursor.execute(f"TRUNCATE {', '.join(written)} CASCADE")
                continue
        # TRUNCATE must take every table with a foreign key to one it empties, written or not
        # (the tenants table: all of them), and costs about 2 ms a table. The embedded
        # server's superuser, under no row-level security and with foreign keys and triggers
        # off (replica), deletes the rows of the written tables alone: about 1 ms in all.
        cluster = Cluster(**settings.EMBEDDED_POSTGRES)
        with psycopg.connect(cluster.superuser_conninfo(connection.settings_dict["NAME"]),
                             autocommit=True) as superuser:
            superuser.execute("SET session_replication_role = replica; "
                              + " ".join(f"DELETE FROM {table};" for table in written))


def _fixture_teardown(self: TransactionTestCase) -> None:
    if self.serialized_rollback or self.available_apps is not None:
        _flush_teardown(self)  # what the faster one does not cover; no test asks for it now
    else:
        _empty_written_tables(self)


_flush_teardown = TransactionTestCase._fixture_teardown
TransactionTestCase._fixture_teardown = _fixture_teardown  # type: ignore[method-assign]


@dataclass
class TenantKit:
    tenant: Tenant
    key: str  # memory + admin
    memory_key: str  # memory only
    client: APIClient  # authenticated with ``key``

    def client_with(self, key: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        return client


def _kit(slug: str) -> TenantKit:
    tenant = TenantFactory(slug=slug, name=slug.title())
    full: CreatedKey = ApiKeyFactory(tenant=tenant, name="full", permissions=["memory", "admin"])
    memory: CreatedKey = ApiKeyFactory(tenant=tenant, name="agent", permissions=["memory"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {full.plaintext}")
    return TenantKit(tenant=tenant, key=full.plaintext, memory_key=memory.plaintext, client=client)


@pytest.fixture
def acme(db: Any) -> TenantKit:
    return _kit("acme")


@pytest.fixture
def globex(db: Any) -> TenantKit:
    return _kit("globex")


@pytest.fixture(scope="session")
def celery_workers_of_the_run(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The workers, started once for the run and shared by the modules that use them (a start
    and a warm stop take about 7 s); yields their queue. Each test's rows are gone after it,
    as they are for the tests that share one module."""
    redis.Redis.from_url(REDIS_URL).ping()  # Redis is part of the test environment (.ci/run)
    queue = f"memoryhub-test-{uuid.uuid4().hex[:12]}"
    log = Path(tmp_path_factory.mktemp("worker")) / "worker.log"
    try:
        with worker_running(log, broker_url=REDIS_URL, queue=queue):
            yield queue
    finally:
        redis.Redis.from_url(REDIS_URL).delete(queue, webhooks_queue(queue))


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Tasks run inline when enqueued: the chain hook -> task -> service without a broker.

    Here because recall (passages), webhooks (delivery) and workers (retention) all use it."""
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = False


@pytest.fixture
def fresh_rate_window() -> None:
    """API rate limits count in fixed windows of the clock (api/throttling.py: a minute for
    ``n/min``): a test that fills one must not straddle two, or its last request lands in a
    new, empty window. It starts with at least 15 s of the minute left."""
    left = 60 - time.time() % 60
    if left < 15:
        time.sleep(left + 0.05)
