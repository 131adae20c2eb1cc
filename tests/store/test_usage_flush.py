"""Recalls are counted per process and written by a background thread
(``memoryhub.services.usage``, ``USAGE_FLUSH_SECONDS``): the request writes nothing for its
count, and every recall is on its tenant's day once the thread has flushed.

``transactional_db``: the thread's connection sees only committed rows, and commits its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.models import UsageDay
from memoryhub.selectors.usage import usage_day
from memoryhub.services.usage import recall_counts
from tenants.context import tenant_context
from tests.recall.helpers import put, recall

pytestmark = pytest.mark.usefixtures("transactional_db")


def _recalls(kit: Any) -> int:
    with tenant_context(kit.tenant.id):
        row = UsageDay.objects.filter(day=usage_day(timezone.now())).first()
        return row.recalls if row else 0


def test_recalls_are_counted_by_the_flush_not_in_the_request(acme, globex, settings) -> None:
    settings.USAGE_FLUSH_SECONDS = 0.05
    put(acme, "alice", "/notes/tea.md", "Alice drinks green tea.")
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):
            assert recall(acme, "alice", query="tea").status_code == 200
        assert recall(globex, "bob", query="tea").status_code == 200
    assert not [q for q in queries.captured_queries if UsageDay._meta.db_table in q["sql"]]

    assert recall_counts.flush(timeout=10)
    assert (_recalls(acme), _recalls(globex)) == (3, 1)
    assert recall(acme, "alice", query="tea").status_code == 200
    assert recall_counts.flush(timeout=10)
    assert _recalls(acme) == 4  # added to the day's row
