"""Two requests with one API key at the minute its ``last_used_at`` is refreshed: neither
waits for the other's whole transaction, and they never deadlock.

Each request read the key, found ``last_used_at`` a minute old and updated it, in its own
transaction: the second waited on the key's row for the first request to commit, whatever
it was still doing, holding what it had already locked (the person its URL names). A
mem0 batch (the key, then the people of its memories) and a write of one of those people
(the person with the key's statement, then the key) so each waited for the other, and
PostgreSQL ended one ("deadlock detected": a 503). The refresh now skips a key row another
request is refreshing (FOR NO KEY UPDATE SKIP LOCKED): that one sets the same minute.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from tenants.context import tenant_context
from tenants.models import ApiKey
from tests.elsewhere import Elsewhere

pytestmark = pytest.mark.django_db(transaction=True)  # both requests must commit for real



def test_a_mem0_batch_and_a_write_with_the_same_key_at_its_refresh_do_not_deadlock(
        acme, globex) -> None:
    added = acme.client.post("/mem0/v3/memories/add/", {
        "messages": [{"role": "user", "content": "Likes tea"}], "user_id": "bob",
        "infer": False}, format="json")
    assert added.status_code == 200, added.content
    memory_id = added.json()["results"][0]["id"]
    with tenant_context(acme.tenant.id):  # the key's last use is a minute old: both refresh it
        ApiKey.objects.update(last_used_at=timezone.now() - timedelta(minutes=2))
    writes: list[Elsewhere] = []

    def write() -> int:
        return acme.client_with(acme.key).post("/api/v1/users/bob/memory", {
            "command": "create", "path": "/memories/a.md", "file_text": "x"},
            format="json").status_code

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if ApiKey._meta.db_table in sql and sql.startswith("UPDATE") and not writes:
            # The batch refreshed the key; bob's write comes in (locking bob with the key).
            writes.append(Elsewhere(write).as_far_as_it_gets())
        return result

    with connection.execute_wrapper(between):
        batch = acme.client.put("/mem0/v1/batch/", {"memories": [
            {"memory_id": memory_id, "text": "Likes green tea"}]}, format="json")
    assert writes, "the batch did not refresh the key"
    writes[0].join(10)
    assert batch.status_code == 200, batch.content
    assert writes[0].error is None and writes[0].result == 200
    with tenant_context(acme.tenant.id):  # refreshed, once
        assert ApiKey.objects.get(name="full").last_used_at > timezone.now() - timedelta(minutes=1)
