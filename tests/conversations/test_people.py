"""Conversations belong to the person: counted with them, exported with them, forgotten with
them, and deleted by the hourly retention job once ``conversation_days`` have passed since
their last message.

Conversations are captured over HTTP (``POST .../sessions/{s}/messages``); what must be gone
is checked in the tables themselves.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.models import Conversation, EndUser, MemoryEvent, Message
from memoryhub.services import conversations as conversation_service
from memoryhub.services.conversations import conversations_expired_purge
from memoryhub.tasks import retention_purge, retention_purge_all
from tenants.context import tenant_context
from tests.api.helpers import put_doc
from tests.pages.conftest import account, signed_in
from tests.workers.conftest import celery_worker, wait_for  # noqa: F401 - the worker fixture

USERS = "/api/v1/users"


def capture(kit, user: str, session: str, *messages: dict[str, Any], **body: Any) -> dict:
    response = kit.client.post(f"{USERS}/{user}/sessions/{session}/messages",
                               {"messages": list(messages), **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def said(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def ago(**delta: float) -> str:
    return (timezone.now() - timedelta(**delta)).isoformat()


def stored(kit) -> dict[str, set]:
    """Every conversation and message id of the tenant, read from the tables."""
    with tenant_context(kit.tenant.id):
        return {"conversations": set(Conversation.objects.values_list("id", flat=True)),
                "messages": set(Message.objects.values_list("id", flat=True))}


def ids_of(kit, user: str) -> dict[str, set]:
    with tenant_context(kit.tenant.id):
        end_user = EndUser.objects.get(user_id=user)
        return {"conversations": set(Conversation.objects.filter(end_user=end_user)
                                     .values_list("id", flat=True)),
                "messages": set(Message.objects.filter(end_user=end_user)
                                .values_list("id", flat=True))}


def seed(kit, user: str = "alice") -> None:
    """Three conversations in two sessions: 2 + 3 + 1 messages."""
    capture(kit, user, "s1", said("user", "Why is the build red?"),
            said("assistant", "ReviewOrchestrator still uses ChangedFile.Patch."))
    capture(kit, user, "s1", said("user", "And now?"), said("assistant", "Green."),
            said("user", "Thanks"), new_conversation=True)
    capture(kit, user, "s2", said("user", "Plan Friday"), profile="work")


# --- forget everything ---------------------------------------------------------------------------


def test_forget_deletes_every_conversation_and_message_of_the_person(acme, globex) -> None:
    seed(acme)
    seed(acme, "bob")
    seed(globex)
    put_doc(acme, "alice", "global/notes/a.md", "a note")
    alices = ids_of(acme, "alice")
    assert (len(alices["conversations"]), len(alices["messages"])) == (3, 6)
    before, globex_before = stored(acme), stored(globex)

    assert acme.client.delete(f"{USERS}/alice").status_code == 204

    after = stored(acme)
    assert after["conversations"] == before["conversations"] - alices["conversations"]
    assert after["messages"] == before["messages"] - alices["messages"]
    assert after["conversations"] == ids_of(acme, "bob")["conversations"]  # bob keeps his
    assert stored(globex) == globex_before
    with tenant_context(acme.tenant.id):
        left = list(MemoryEvent.objects.filter(user_id="alice").values_list("data", flat=True))
    assert left == [{"change": "forgotten", "path": None, "scope": None, "scope_key": None}]
    shown = acme.client.get(f"{USERS}/alice").json()
    assert (shown["conversations"], shown["messages"], shown["created_at"]) == (0, 0, None)
    assert acme.client.get(f"{USERS}/alice/conversations").json()["conversations"] == []


def test_the_dashboard_forgets_the_persons_conversations_too(acme, globex, settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    seed(acme)
    seed(globex)
    client = signed_in(account(acme.tenant, "owner@acme.test"))
    people = client.get("/t/acme/people").content.decode()
    assert '<td data-label="Conversations" class="num">3</td>' in people
    assert '<td data-label="Messages" class="num">6</td>' in people
    with tenant_context(acme.tenant.id):
        pk = EndUser.objects.get(user_id="alice").pk
    assert client.post(f"/t/acme/people/{pk}/forget").status_code == 302
    assert stored(acme) == {"conversations": set(), "messages": set()}
    assert len(stored(globex)["messages"]) == 6


# --- counts ---------------------------------------------------------------------------------------


def test_counts_show_conversations_and_messages(acme, globex) -> None:
    seed(acme)
    put_doc(acme, "alice", "session/s1/todo.md", "buy milk")
    capture(acme, "bob", "s9", said("user", "hello"))
    seed(globex, "carol")
    alice = acme.client.get(f"{USERS}/alice").json()
    assert (alice["conversations"], alice["messages"]) == (3, 6)
    assert alice["documents"]["total"] == 1 and alice["sessions"] == 1  # documents, as before
    listed = {u["user_id"]: (u["conversations"], u["messages"])
              for u in acme.client.get(USERS).json()["users"]}
    assert listed == {"alice": (3, 6), "bob": (1, 1)}
    assert acme.client.get(f"{USERS}/carol").json()["conversations"] == 0  # globex's carol


def test_a_page_of_people_is_counted_in_one_query_whatever_its_size(acme, globex) -> None:
    for user in ("p1", "p2", "p3", "p4", "p5"):
        capture(acme, user, "s", said("user", "hi"), said("assistant", "hello"))
        put_doc(acme, user, "global/a.md", "x")
    statements = []
    for limit in (1, 5):
        with CaptureQueriesContext(connection) as queries:
            users = acme.client.get(USERS, {"limit": limit}).json()["users"]
        assert [(u["conversations"], u["messages"], u["documents"]["total"])
                for u in users] == [(1, 2, 1)] * limit
        statements.append(len(queries))
    assert statements[0] == statements[1]


# --- export ---------------------------------------------------------------------------------------


def test_export_holds_every_conversation_with_its_messages_in_order(acme, globex) -> None:
    first = capture(acme, "alice", "s1",
                    said("user", "I moved to Lisbon.", id="c-1", created_at="2026-11-06T17:02:11Z",
                         metadata={"channel": "web"}),
                    said("assistant", "Noted.", created_at="2026-11-06T17:02:15Z"),
                    profile="home", process="support-agent")
    second = capture(acme, "alice", "s2", said("user", "Friday?"), new_conversation=True)
    summary = acme.client.put(f"{USERS}/alice/conversations/{first['conversation_id']}/summary",
                              {"summary": "Alice moved to Lisbon."}, format="json")
    assert summary.status_code == 200
    seed(globex)

    exported = acme.client.get(f"{USERS}/alice/export").json()

    assert (exported["conversations"][0]["id"], exported["conversations"][1]["id"]) == (
        first["conversation_id"], second["conversation_id"])  # in the order they started
    lisbon = exported["conversations"][0]
    assert {k: lisbon[k] for k in ("session_id", "profile", "process", "started_at",
                                   "last_message_at", "message_count", "summary")} == {
        "session_id": "s1", "profile": "home", "process": "support-agent",
        "started_at": "2026-11-06T17:02:11Z", "last_message_at": "2026-11-06T17:02:15Z",
        "message_count": 2, "summary": "Alice moved to Lisbon."}
    assert [(m["seq"], m["role"], m["content"], m["client_id"], m["created_at"], m["metadata"])
            for m in lisbon["messages"]] == [
        (1, "user", "I moved to Lisbon.", "c-1", "2026-11-06T17:02:11Z", {"channel": "web"}),
        (2, "assistant", "Noted.", None, "2026-11-06T17:02:15Z", {})]
    assert [m["id"] for m in lisbon["messages"]] == [m["id"] for m in first["captured"]]
    assert [m["content"] for m in exported["conversations"][1]["messages"]] == ["Friday?"]
    assert (exported["conversations"][1]["summary"], exported["messages"]) == (None, 3)
    assert "ReviewOrchestrator" not in str(exported)  # globex's alice is someone else
    assert len(globex.client.get(f"{USERS}/alice/export").json()["conversations"]) == 3


# --- retention -----------------------------------------------------------------------------------


def seed_ages(kit) -> dict[str, str]:
    """Conversations by the age of their last message; returns their ids by name."""
    made = {
        "old": capture(kit, "alice", "s1", said("user", "long ago", created_at=ago(days=40))),
        "old-bob": capture(kit, "bob", "s1", said("user", "long ago", created_at=ago(days=31))),
        # Started long ago, but its last message is recent: it stays.
        "continued": capture(kit, "alice", "s2", said("user", "then", created_at=ago(days=45)),
                             said("user", "now", created_at=ago(days=1))),
        "recent": capture(kit, "alice", "s3", said("user", "yesterday", created_at=ago(days=1))),
    }
    return {name: reply["conversation_id"] for name, reply in made.items()}


def conversation_ids(kit) -> set[str]:
    return {str(pk) for pk in stored(kit)["conversations"]}


def deleted_events(kit) -> list[tuple[str, str, str]]:
    feed = kit.client.get("/api/v1/events", {"limit": 1000}).json()["events"]
    return sorted((e["user_id"], e["actor"], e["data"]["conversation_id"]) for e in feed
                  if e["data"].get("change") == "deleted" and e["data"].get("conversation_id"))


def keep_for(kit, days: int | None) -> None:
    kit.tenant.conversation_days = days
    kit.tenant.save()


def test_conversations_past_conversation_days_are_purged_with_an_event_each(
    acme, globex
) -> None:
    keep_for(acme, 30)
    keep_for(globex, None)  # keeps them forever
    ids = seed_ages(acme)
    globex_ids = seed_ages(globex)
    with tenant_context(acme.tenant.id):
        assert conversations_expired_purge(tenant=acme.tenant, now=timezone.now()) == 2
        assert conversations_expired_purge(tenant=acme.tenant, now=timezone.now()) == 0
    with tenant_context(globex.tenant.id):
        assert conversations_expired_purge(tenant=globex.tenant, now=timezone.now()) == 0
    assert conversation_ids(acme) == {ids["continued"], ids["recent"]}
    assert deleted_events(acme) == sorted([("alice", "app", ids["old"]),
                                           ("bob", "app", ids["old-bob"])])
    with tenant_context(acme.tenant.id):
        assert not Message.objects.filter(conversation_id=ids["old"]).exists()
    assert conversation_ids(globex) == set(globex_ids.values())
    assert deleted_events(globex) == []


def test_the_cutoff_is_conversation_days_before_now(acme, globex) -> None:
    keep_for(acme, 7)
    last = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    kept = capture(acme, "alice", "s", said("user", "x", created_at=last.isoformat()))
    with tenant_context(acme.tenant.id):
        just_inside = last + timedelta(days=7)
        assert conversations_expired_purge(tenant=acme.tenant, now=just_inside) == 0
        assert conversations_expired_purge(
            tenant=acme.tenant, now=just_inside + timedelta(seconds=1)) == 1
    assert kept["conversation_id"] not in conversation_ids(acme)


def test_the_hourly_task_loops_batches_until_none_is_left(
    acme, globex, eager_tasks, monkeypatch
) -> None:
    monkeypatch.setattr(conversation_service, "RETENTION_BATCH", 2)
    keep_for(acme, 30)
    keep_for(globex, 30)
    for session in ("a", "b", "c", "d", "e"):
        capture(acme, "alice", session, said("user", "old", created_at=ago(days=60)))
    capture(acme, "alice", "f", said("user", "new"))
    capture(globex, "alice", "g", said("user", "old", created_at=ago(days=60)))
    assert retention_purge(tenant_id=acme.tenant.id) == 5  # batches of 2, 2, 1, then 0
    assert len(conversation_ids(acme)) == 1
    assert len(deleted_events(acme)) == 5
    assert len(conversation_ids(globex)) == 1  # its own task, in its own context
    assert retention_purge_all() == 2
    assert conversation_ids(globex) == set()


@pytest.mark.worker
def test_a_real_worker_purges_expired_conversations(
    transactional_db, celery_worker, acme, globex  # noqa: F811 - the fixture imported above
) -> None:
    keep_for(acme, 30)
    keep_for(globex, None)
    ids = seed_ages(acme)
    globex_ids = seed_ages(globex)
    retention_purge_all.delay()

    def purged() -> bool:
        """the worker to delete acme's two expired conversations"""
        return conversation_ids(acme) == {ids["continued"], ids["recent"]}

    wait_for(purged)
    assert deleted_events(acme) == sorted([("alice", "app", ids["old"]),
                                           ("bob", "app", ids["old-bob"])])
    assert conversation_ids(globex) == set(globex_ids.values())
