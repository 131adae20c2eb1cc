"""A recall's count lets its transaction commit without waiting for the disk, and only when
the count is the transaction's first write (``memoryhub.store.usage``): a write before it
keeps the synchronous commit, which every acknowledged memory relies on."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub.models import EndUser, UsageDay
from memoryhub.selectors.usage import usage_day
from memoryhub.services.usage import usage_recall_count
from tenants.context import tenant_context

pytestmark = pytest.mark.django_db(transaction=True)  # each block its own transaction


def _commit_setting() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('synchronous_commit')")
        return cursor.fetchone()[0]


def _recalls(tenant_id: int) -> int:
    with tenant_context(tenant_id):
        return UsageDay.objects.get(day=usage_day(timezone.now())).recalls


def test_a_recall_that_wrote_nothing_else_commits_without_waiting_for_the_disk(acme) -> None:
    with tenant_context(acme.tenant.id):
        assert _commit_setting() == "on"
        usage_recall_count()
        assert _commit_setting() == "off"
    assert _commit_setting() == "on"  # for that transaction only
    assert _recalls(acme.tenant.id) == 1


def test_a_transaction_that_wrote_before_the_count_keeps_the_synchronous_commit(acme) -> None:
    with tenant_context(acme.tenant.id):
        EndUser.objects.create(tenant=acme.tenant, user_id="alice")
        usage_recall_count()
        assert _commit_setting() == "on"
    with tenant_context(acme.tenant.id):
        assert EndUser.objects.filter(user_id="alice").exists()
    assert _recalls(acme.tenant.id) == 1
