"""Shared fixtures: a throwaway database migrated by the owner role, and two tenants.

Every API test gets ``acme`` and ``globex``: the second tenant is there to prove that
nothing of one is visible to the other (Zulip's "lear", healthchecks' "Charlie").
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connections
from rest_framework.test import APIClient

from memoryhub.celery import app as celery_app
from tenants.models import Tenant
from tenants.services import CreatedKey
from tests.factories import ApiKeyFactory, TenantFactory

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
        from memoryhub.infra.embedded_db import Cluster, ensure_database

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
