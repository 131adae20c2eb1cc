"""The hourly retention purge running while the tenant's people write: no deadlock, and
nothing written since the purge chose what to delete is deleted.

Every write takes its person's lock, then (recording its event) the tenant's feed lock. A
purge batch records an event per session or conversation, person after person, in one
transaction: it held the feed lock (after its first event) when it came to lock the next
person, whom a writer held while waiting for the feed lock. PostgreSQL ended one of them
("deadlock detected"): the hourly task or the agent's write (a 503). The purge of
conversations also locked the conversations, then their facts, without the person's lock,
against augmentation and captures which take the person first. The purge now takes the
batch's people first, in user_id order (as mem0's batch does), and checks each session and
conversation again under them. These tests run the task while a write of the second person
comes in after the purge's first event, on a connection of its own (a thread).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub.models import Conversation, MemoryDocument, MemoryEvent
from memoryhub.tasks import augment_conversation, retention_purge
from tenants.context import tenant_context
from tests.elsewhere import Elsewhere

pytestmark = pytest.mark.django_db(transaction=True)  # both sides must commit for real



def _after_the_first_event(work: Callable[[], Any], started: list[Elsewhere]) -> Any:
    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if f"INSERT INTO {MemoryEvent._meta.db_table}" in sql and not started:
            started.append(Elsewhere(work).as_far_as_it_gets())
        return result
    return between


def test_a_session_purge_and_a_write_of_its_next_person_do_not_deadlock(acme, globex) -> None:
    acme.tenant.session_days = 30
    acme.tenant.save()
    for user_id in ("alice", "bob"):
        response = acme.client.put(f"/api/v1/users/{user_id}/documents/session/s1/old.md",
                                   {"content": "old"}, format="json")
        assert response.status_code == 201
    with tenant_context(acme.tenant.id):  # alice's session is the older: purged first
        for user_id, days in (("alice", 41), ("bob", 40)):
            MemoryDocument.objects.filter(end_user__user_id=user_id).update(
                updated_at=timezone.now() - timedelta(days=days))
    bob_writes: list[Elsewhere] = []
    write = {"command": "create", "path": "/memories/new.md", "file_text": "new",
             "session_id": "s1", "scope": "session"}

    with connection.execute_wrapper(_after_the_first_event(
            lambda: acme.client_with(acme.key).post("/api/v1/users/bob/memory", write,
                                                    format="json").status_code, bob_writes)):
        purged = retention_purge(tenant_id=acme.tenant.id)
    assert bob_writes, "the purge recorded no event"
    bob_writes[0].join(10)
    assert bob_writes[0].error is None and bob_writes[0].result == 200
    assert purged == 2  # bob's write waited for the purge: his new document came after it
    with tenant_context(acme.tenant.id):
        assert list(MemoryDocument.objects.values_list("end_user__user_id", "path")) == [
            ("bob", "/new.md")]


def test_a_session_written_to_after_the_purge_chose_it_is_kept(acme) -> None:
    acme.tenant.session_days = 30
    acme.tenant.save()
    assert acme.client.put("/api/v1/users/bob/documents/session/s1/old.md", {"content": "old"},
                           format="json").status_code == 201
    with tenant_context(acme.tenant.id):
        MemoryDocument.objects.update(updated_at=timezone.now() - timedelta(days=40))
    wrote: list[Elsewhere] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "FOR NO KEY UPDATE" in sql and not wrote:  # chosen; the people not yet locked
            wrote.append(Elsewhere(lambda: acme.client_with(acme.key).put(
                "/api/v1/users/bob/documents/session/s1/new.md", {"content": "new"},
                format="json").status_code).as_far_as_it_gets())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between):
        purged = retention_purge(tenant_id=acme.tenant.id)
    assert wrote and wrote[0].result == 201
    assert purged == 0  # the session is not idle any more: the unit is the session
    with tenant_context(acme.tenant.id):
        assert sorted(MemoryDocument.objects.values_list("path", flat=True)) == ["/new.md",
                                                                                 "/old.md"]


def test_a_conversation_purge_and_an_edit_of_its_next_persons_fact_do_not_deadlock(
        acme, globex) -> None:
    """bob's fact came from his old conversation only, so the purge deletes it with the
    conversation (spec: what augmentation took only from it goes with it) while bob's app
    edits it: the edit waits for the purge and finds no fact (404), or the purge waits."""
    acme.tenant.conversation_days = 30
    acme.tenant.save()
    old = (timezone.now() - timedelta(days=60)).isoformat()
    said = {}
    for user_id in ("alice", "bob"):
        response = acme.client.post(f"/api/v1/users/{user_id}/sessions/s1/messages", {
            "messages": [{"role": "user", "content": "I like tea.", "created_at": old}]},
            format="json")
        assert response.status_code == 201
        said[user_id] = response.json()
    augment_conversation(tenant_id=acme.tenant.id, conversation_id=said["bob"]["conversation_id"])
    [fact] = acme.client.get("/api/v1/users/bob/facts").json()["facts"]
    assert fact["updated_by"] == "augmentation", fact
    with tenant_context(acme.tenant.id):  # alice's conversation is the older: purged first
        Conversation.objects.filter(end_user__user_id="alice").update(
            last_message_at=timezone.now() - timedelta(days=61))
    bob_edits: list[Elsewhere] = []

    def edit() -> int:
        return acme.client_with(acme.key).patch(f"/api/v1/users/bob/facts/{fact['id']}",
                                                {"content": "Likes green tea"},
                                                format="json").status_code

    with connection.execute_wrapper(_after_the_first_event(edit, bob_edits)):
        purged = retention_purge(tenant_id=acme.tenant.id)
    assert bob_edits, "the purge recorded no event"
    bob_edits[0].join(10)
    assert bob_edits[0].error is None and bob_edits[0].result == 404  # it came after
    assert purged == 2
    with tenant_context(acme.tenant.id):
        assert not Conversation.objects.exists()
