"""The client's tests run against a live MemoryHub (pytest-django's ``live_server``, the
project's test database and tenants) and local HTTP servers that speak the model providers'
protocols (``llm_servers.py``). Run them from the project root: ``pytest clients/python/tests``
(``make test`` does, in a pytest run of their own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from memoryhub_client import MemoryHub

from tests.conftest import TenantKit, acme, django_db_setup, globex  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hub(live_server: Any, acme: TenantKit) -> Iterator[MemoryHub]:  # noqa: F811
    with MemoryHub(live_server.url, acme.key, timeout=30) as client:
        yield client
