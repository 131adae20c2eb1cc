"""Capture (spec: Conversations, ``POST .../sessions/{s}/messages``), through HTTP.

Every field and error of the reply, all-or-nothing, the retry id, the capture policy in its
order, redaction of every credential detector, the timeout split and memory off at each level.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memoryhub.models import Conversation, Message
from memoryhub.services.conversations import conversations_expired_purge
from tenants.context import tenant_context
from tenants.models import Tenant
from tests.domain.test_credentials import SECRETS
from tests.spec.api_client import BASE


def capture_url(user: str = "alice", session: str = "s1") -> str:
    return f"{BASE}/users/{user}/sessions/{session}/messages"


def capture(kit, *messages: dict, user: str = "alice", session: str = "s1", status: int = 201,
            **body):
    response = kit.client.post(capture_url(user, session), {"messages": list(messages), **body},
                               format="json")
    assert response.status_code == status, response.content
    return response.json()


def stored(kit, session: str = "s1", user: str = "alice") -> list[dict]:
    response = kit.client.get(capture_url(user, session), {"limit": 500})
    assert response.status_code == 200, response.content
    return response.json()["messages"]


def tenant_set(kit, **fields) -> None:
    """Tenant settings straight on the platform table (the settings API has its own tests)."""
    Tenant.objects.filter(pk=kit.tenant.pk).update(**fields)


def user(content: str, **extra) -> dict:
    return {"role": "user", "content": content, **extra}


def error_of(response) -> tuple[int, str]:
    return response.status_code, response.json()["error"]["code"]


# --- the reply -------------------------------------------------------------------------------


def test_capture_replies_with_what_was_stored(acme) -> None:
    reply = capture(acme, user("I moved to Lisbon last week.", id="client-7",
                               created_at="2026-11-06T17:02:11Z", metadata={"channel": "web"}),
                    {"role": "assistant", "content": "Welcome to Lisbon!"},
                    profile="cooking", process="support-agent")
    assert set(reply) == {"enabled", "conversation_id", "captured", "dropped", "redacted"}
    assert reply["enabled"] is True
    assert reply["dropped"] == {"excluded_role": 0, "empty": 0, "duplicate": 0}
    assert reply["redacted"] == 0
    first, second = reply["captured"]
    assert set(first) == {"id", "client_id", "seq", "role", "created_at"}
    assert (first["client_id"], first["seq"], first["role"]) == ("client-7", 1, "user")
    assert first["created_at"] == "2026-11-06T17:02:11Z"
    assert (second["client_id"], second["seq"], second["role"]) == (None, 2, "assistant")
    assert datetime.fromisoformat(second["created_at"]) > datetime.now(UTC) - timedelta(minutes=1)

    messages = stored(acme)
    assert [(m["id"], m["seq"], m["content"]) for m in messages] == [
        (first["id"], 1, "I moved to Lisbon last week."), (second["id"], 2, "Welcome to Lisbon!")]
    assert messages[0]["metadata"] == {"channel": "web"} and messages[1]["metadata"] == {}
    assert {m["conversation_id"] for m in messages} == {reply["conversation_id"]}
    conversation = acme.client.get(
        f"{BASE}/users/alice/conversations/{reply['conversation_id']}").json()
    assert (conversation["profile"], conversation["process"], conversation["message_count"]) == (
        "cooking", "support-agent", 2)


@pytest.mark.parametrize("role", ["developer", "user", "assistant", "tool"])
def test_every_role_is_captured(acme, role: str) -> None:
    reply = capture(acme, {"role": role, "content": "x"})
    assert [m["role"] for m in reply["captured"]] == [role]


def test_system_messages_are_excluded_by_default(acme) -> None:
    reply = capture(acme, {"role": "system", "content": "You are helpful."}, user("hi"))
    assert reply["dropped"]["excluded_role"] == 1
    assert [m["role"] for m in stored(acme)] == ["user"]


# --- refusals: all or nothing ----------------------------------------------------------------

BAD_BATCHES = {
    "invalid_role": ([user("ok"), {"role": "narrator", "content": "x"}], 400, "invalid_role"),
    "role missing": ([user("ok"), {"content": "x"}], 400, "invalid_message"),
    "content missing": ([user("ok"), {"role": "user"}], 400, "invalid_message"),
    "role null": ([user("ok"), {"role": None, "content": "x"}], 400, "invalid_message"),
    "content null": ([user("ok"), user(None)], 400, "invalid_message"),
    "not an object": ([user("ok"), "hello"], 400, "invalid_message"),
    "NUL": ([user("ok"), user("a\x00b")], 400, "not_text"),
    "content not a string": ([user("ok"), user(42)], 400, "not_text"),
    "bad id": ([user("ok"), user("x", id="not ok!")], 400, "invalid_message"),
    "bad created_at": ([user("ok"), user("x", created_at="yesterday")], 400, "invalid_message"),
    "no such time": ([user("ok"), user("x", created_at="2026-13-45T00:00:00Z")], 400,
                     "invalid_message"),
    "past year 9999 in UTC": ([user("ok"), user("x", created_at="9999-12-31T23:59:59-23:59")],
                              400, "invalid_message"),
    "before year 1 in UTC": ([user("ok"), user("x", created_at="0001-01-01T00:00:00+23:59")],
                             400, "invalid_message"),
    "metadata not object": ([user("ok"), user("x", metadata=[1])], 400, "invalid_message"),
    "metadata over 4 KiB": ([user("ok"), user("x", metadata={"k": "v" * 4100})], 400,
                            "invalid_message"),
    "unknown field": ([user("ok"), user("x", colour="red")], 400, "invalid_message"),
    "101 messages": ([user(str(i)) for i in range(101)], 400, "too_many_messages"),
    "empty list": ([], 400, "invalid_message"),
}


@pytest.mark.parametrize("name", BAD_BATCHES)
def test_one_refused_message_stores_none(acme, name: str) -> None:
    messages, status, code = BAD_BATCHES[name]
    response = acme.client.post(capture_url(), {"messages": messages}, format="json")
    assert error_of(response) == (status, code), response.content
    assert stored(acme) == []


@pytest.mark.parametrize("body", [
    {}, {"messages": "hi"}, {"messages": {"role": "user"}}, [1], {"messages": None},
    # Other fields beside no messages list: still a body without one, not an unknown field.
    {"message": [{"role": "user", "content": "x"}]}, {"msgs": []},
    {"new_conversation": "yes"}, {"profile": "cooking"},
])
def test_a_body_without_a_messages_list_is_invalid_message(acme, body) -> None:
    response = acme.client.post(capture_url(), body, format="json")
    assert error_of(response) == (400, "invalid_message")
    assert stored(acme) == []


def test_metadata_is_measured_as_compact_json_and_its_numbers_must_be_finite(acme) -> None:
    def send(metadata: bytes) -> Any:
        raw = b'{"messages": [{"role": "user", "content": "x", "metadata": ' + metadata + b"}]}"
        return acme.client.post(capture_url(), raw, content_type="application/json")

    exactly_4_kib = b'{"k": "' + b"a" * 4088 + b'"}'  # 4,096 bytes compact, as sent
    assert send(exactly_4_kib).status_code == 201
    assert error_of(send(b'{"k": "' + b"a" * 4089 + b'"}')) == (400, "invalid_message")
    for number in (b"1e400", b"-1e400"):  # past a double's range: Python reads infinity
        assert error_of(send(b'{"n": ' + number + b"}")) == (400, "invalid_message")
    assert len(stored(acme)) == 1


def test_a_nul_in_metadata_is_not_text_but_an_escaped_one_is_text(acme) -> None:
    """PostgreSQL's jsonb refuses a NUL, in a key or a string. A backslash followed by "u0000"
    (a Windows path, a snippet of code) is text: it was refused as a NUL, because its JSON
    ends in the same six characters."""
    for metadata in ({"k": "a\x00b"}, {"a\x00": 1}, {"deep": [{"k": "\x00"}]}):
        response = acme.client.post(capture_url(), {"messages": [user("x", metadata=metadata)]},
                                    format="json")
        assert error_of(response) == (400, "not_text")
    path = {"path": "C:\\u0000dir", "C:\\u0000": ["\\u0000"]}
    capture(acme, user("x", metadata=path))
    assert [m["metadata"] for m in stored(acme)] == [path]


def test_invalid_utf8_is_not_text(acme) -> None:
    raw = b'{"messages": [{"role": "user", "content": "caf\xe9"}]}'
    response = acme.client.post(capture_url(), raw, content_type="application/json")
    assert error_of(response) == (400, "not_text")
    assert stored(acme) == []


def test_exactly_100_messages_are_accepted(acme) -> None:
    reply = capture(acme, *[user(str(i)) for i in range(100)])
    assert [m["seq"] for m in reply["captured"]] == list(range(1, 101))


def test_a_message_over_max_message_bytes_is_422_and_nothing_is_stored(acme) -> None:
    tenant_set(acme, max_message_bytes=10)
    response = acme.client.post(capture_url(), {"messages": [user("short"), user("é" * 6)]},
                                format="json")  # 12 bytes in UTF-8
    assert error_of(response) == (422, "message_too_large")
    assert stored(acme) == []
    capture(acme, user("é" * 5))  # exactly 10 bytes


def test_the_default_max_message_bytes_is_65536(acme) -> None:
    capture(acme, user("a" * 65536))
    response = acme.client.post(capture_url(), {"messages": [user("a" * 65537)]}, format="json")
    assert error_of(response) == (422, "message_too_large")


@pytest.mark.parametrize("field,value,code", [
    ("profile", "Not A Profile", "invalid_profile"),
    ("process", "bad process!", "invalid_process"),
    ("new_conversation", "yes", "invalid_request"),
    ("colour", "red", "invalid_request"),
])
def test_bad_body_fields_are_400(acme, field: str, value, code: str) -> None:
    response = acme.client.post(capture_url(), {"messages": [user("x")], field: value},
                                format="json")
    assert error_of(response) == (400, code)
    assert stored(acme) == []


@pytest.mark.parametrize("url,code", [
    (capture_url("bad user"), "invalid_user_id"), (capture_url("alice", "bad session"),
                                                   "invalid_session_id"),
])
def test_bad_identifiers_in_the_url_are_400(acme, url: str, code: str) -> None:
    response = acme.client.post(url, {"messages": [user("x")]}, format="json")
    assert error_of(response) == (400, code)


# --- retries ---------------------------------------------------------------------------------


def test_a_retried_request_adds_nothing(acme) -> None:
    batch = [user("one", id="m-1"), {"role": "assistant", "content": "two", "id": "m-2"}]
    first = capture(acme, *batch)
    again = capture(acme, *batch)
    assert again["captured"] == []
    assert again["dropped"] == {"excluded_role": 0, "empty": 0, "duplicate": 2}
    assert again["conversation_id"] == first["conversation_id"]
    assert [m["content"] for m in stored(acme)] == ["one", "two"]


def test_a_partly_retried_request_stores_only_the_new_messages(acme) -> None:
    capture(acme, user("one", id="m-1"))
    reply = capture(acme, user("one", id="m-1"), user("three", id="m-3"), user("no id"))
    assert [(m["client_id"], m["seq"]) for m in reply["captured"]] == [("m-3", 2), (None, 3)]
    assert reply["dropped"]["duplicate"] == 1


def test_an_id_twice_in_one_request_is_stored_once(acme) -> None:
    reply = capture(acme, user("first", id="same"), user("second", id="same"))
    assert [m["client_id"] for m in reply["captured"]] == ["same"]
    assert reply["dropped"]["duplicate"] == 1
    assert [m["content"] for m in stored(acme)] == ["first"]


def test_ids_are_per_session_and_per_person(acme) -> None:
    capture(acme, user("a", id="m-1"))
    assert len(capture(acme, user("b", id="m-1"), session="s2")["captured"]) == 1
    assert len(capture(acme, user("c", id="m-1"), user="bob")["captured"]) == 1


def test_ids_survive_a_new_conversation(acme) -> None:
    capture(acme, user("a", id="m-1"))
    reply = capture(acme, user("a", id="m-1"), new_conversation=True)
    assert reply["captured"] == [] and reply["dropped"]["duplicate"] == 1


# --- the policy, in its order ------------------------------------------------------------------


def test_empty_messages_are_dropped_by_default(acme) -> None:
    reply = capture(acme, user(""), user("  \n\t "), user("kept"))
    assert reply["dropped"] == {"excluded_role": 0, "empty": 2, "duplicate": 0}
    assert [m["content"] for m in stored(acme)] == ["kept"]


def test_empty_messages_are_kept_when_drop_empty_is_off(acme) -> None:
    tenant_set(acme, capture_drop_empty=False)
    reply = capture(acme, user(""), user("kept"))
    assert [m["seq"] for m in reply["captured"]] == [1, 2]
    assert [m["content"] for m in stored(acme)] == ["", "kept"]


def test_excluded_roles_come_before_empty_and_redaction(acme) -> None:
    tenant_set(acme, capture_excluded_roles=["tool"], capture_redact=[r"secret-\d+"])
    reply = capture(acme, {"role": "tool", "content": ""},  # excluded, not counted as empty
                    {"role": "tool", "content": "secret-1"},  # excluded, not redacted
                    {"role": "system", "content": "no longer excluded"}, user(" "),
                    user("my secret-42"))
    assert reply["dropped"] == {"excluded_role": 2, "empty": 1, "duplicate": 0}
    assert reply["redacted"] == 1
    assert [(m["role"], m["content"]) for m in stored(acme)] == [
        ("system", "no longer excluded"), ("user", "my [redacted]")]


def test_a_message_that_is_empty_after_redaction_is_kept(acme) -> None:
    """Redaction comes last: the message was not empty when the policy looked."""
    tenant_set(acme, capture_redact=["^.*$"])
    reply = capture(acme, user("everything"))
    assert reply["redacted"] == 1 and stored(acme)[0]["content"] == "[redacted]"


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_every_credential_detector_is_redacted_not_refused(acme, kind: str) -> None:
    secret = SECRETS[kind]
    reply = capture(acme, user(f"here it is: {secret} thanks"))
    assert reply["redacted"] == 1
    content = stored(acme)[0]["content"]
    assert "[redacted credential]" in content
    assert secret not in content and content.startswith("here it is: ")


def test_several_secrets_in_one_message_count_it_once(acme) -> None:
    reply = capture(acme, user(f"{SECRETS['github_classic']} and {SECRETS['openai_legacy']}"),
                    user("clean"))
    assert reply["redacted"] == 1
    assert stored(acme)[0]["content"] == "[redacted credential] and [redacted credential]"


def test_metadata_is_redacted_like_the_content(acme) -> None:
    tenant_set(acme, capture_redact=["(?i)project falcon"])
    secret = SECRETS["github_classic"]
    metadata = {"note": f"token {secret}", "tags": ["ok", {"deep": "Project Falcon"}],
                secret: 1, "n": 2}
    reply = capture(acme, user("clean", metadata=metadata), user("also clean"))
    assert reply["redacted"] == 1
    assert stored(acme)[0]["metadata"] == {
        "note": "token [redacted credential]", "tags": ["ok", {"deep": "[redacted]"}],
        "[redacted credential]": 1, "n": 2}
    assert stored(acme)[1]["metadata"] == {}


def test_a_redaction_pattern_replaces_each_match(acme) -> None:
    tenant_set(acme, capture_redact=[r"\b\d{3}-\d{4}\b", "(?i)project falcon"])
    capture(acme, user("Call 555-1234 or 555-9876 about Project Falcon."))
    assert stored(acme)[0]["content"] == "Call [redacted] or [redacted] about [redacted]."


# --- conversations ----------------------------------------------------------------------------


def at(minutes: float) -> str:
    return (datetime(2026, 11, 6, 17, 0, tzinfo=UTC) + timedelta(minutes=minutes)).isoformat()


def test_messages_within_the_timeout_continue_the_conversation(acme) -> None:
    first = capture(acme, user("a", created_at=at(0)))
    second = capture(acme, user("b", created_at=at(29)))
    assert second["conversation_id"] == first["conversation_id"]
    assert second["captured"][0]["seq"] == 2


def test_a_gap_over_the_timeout_starts_a_new_conversation(acme) -> None:
    first = capture(acme, user("a", created_at=at(0)), user("b", created_at=at(5)))
    second = capture(acme, user("c", created_at=at(5 + 30)))
    assert second["conversation_id"] != first["conversation_id"]
    assert second["captured"][0]["seq"] == 1
    conversations = acme.client.get(f"{BASE}/users/alice/conversations").json()["conversations"]
    assert [c["id"] for c in conversations] == [second["conversation_id"], first["conversation_id"]]
    assert [c["message_count"] for c in conversations] == [1, 2]


def test_the_tenant_timeout_applies(acme) -> None:
    tenant_set(acme, conversation_timeout_minutes=1)
    first = capture(acme, user("a", created_at=at(0)))
    assert capture(acme, user("b", created_at=at(0.5)))["conversation_id"] == first["conversation_id"]
    assert capture(acme, user("c", created_at=at(2)))["conversation_id"] != first["conversation_id"]


def test_without_created_at_the_capture_time_counts(acme) -> None:
    first = capture(acme, user("a"))
    assert capture(acme, user("b"))["conversation_id"] == first["conversation_id"]
    with tenant_context(acme.tenant.id):  # the conversation's last message, an hour ago
        Conversation.objects.update(last_message_at=datetime.now(UTC) - timedelta(hours=1))
    assert capture(acme, user("c"))["conversation_id"] != first["conversation_id"]


def test_new_conversation_starts_one(acme) -> None:
    first = capture(acme, user("a"))
    second = capture(acme, user("b"), new_conversation=True)
    assert second["conversation_id"] != first["conversation_id"]
    assert capture(acme, user("c"))["conversation_id"] == second["conversation_id"]


def test_sessions_have_their_own_conversations(acme) -> None:
    one = capture(acme, user("a"), session="s1")
    two = capture(acme, user("b"), session="s2")
    assert one["conversation_id"] != two["conversation_id"]
    assert two["captured"][0]["seq"] == 1


def test_a_request_that_stores_nothing_creates_no_conversation(acme) -> None:
    reply = capture(acme, {"role": "system", "content": "x"})
    assert reply["conversation_id"] is None and reply["captured"] == []
    assert acme.client.get(f"{BASE}/users/alice/conversations").json()["conversations"] == []


# --- memory off --------------------------------------------------------------------------------

OFF_REPLY = {"enabled": False, "conversation_id": None, "captured": [],
             "dropped": {"excluded_role": 0, "empty": 0, "duplicate": 0}, "redacted": 0}


def test_memory_off_for_the_tenant_stores_nothing(acme) -> None:
    tenant_set(acme, memory_enabled=False)
    assert capture(acme, user("hi"), status=200) == OFF_REPLY
    with tenant_context(acme.tenant.id):
        assert not Message.objects.exists() and not Conversation.objects.exists()
    assert acme.client.get(f"{BASE}/users").json()["users"] == []  # no person created either


def test_memory_off_for_the_profile_stores_nothing(acme) -> None:
    assert acme.client.put(f"{BASE}/profiles/cooking", {"disabled": True},
                           format="json").status_code in (200, 201)
    assert capture(acme, user("hi"), profile="cooking", status=200) == OFF_REPLY
    assert capture(acme, user("hi"), profile="travel")["enabled"] is True
    assert [m["content"] for m in stored(acme)] == ["hi"]


def test_memory_off_for_the_person_stores_nothing(acme) -> None:
    capture(acme, user("before"))
    acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": False}, format="json")
    assert capture(acme, user("after"), status=200) == OFF_REPLY
    assert [m["content"] for m in stored(acme)] == ["before"]


def test_capture_records_no_event(acme) -> None:
    capture(acme, user("hi"))
    assert acme.client.get(f"{BASE}/events").json()["events"] == []


def test_the_reply_is_json_with_the_stored_times(acme) -> None:
    reply = capture(acme, user("x", created_at="2026-11-06T17:02:11+02:00"))
    assert reply["captured"][0]["created_at"] == "2026-11-06T15:02:11Z"
    json.dumps(reply)


def test_a_time_after_the_capture_is_the_captures_so_retention_still_purges_it(acme) -> None:
    """A client whose clock is wrong (or an import with a typo) sends a message "said" in
    2099. Kept as sent, it made the conversation's last message 2099: retention never purged
    it, and every later capture of the session joined it (the gap to 2099 is negative), so the
    session's whole history outlived conversation_days. No message is said after its capture."""
    before = datetime.now(UTC)
    first = capture(acme, user("a", created_at="2099-01-01T00:00:00Z"))
    [message] = stored(acme)
    assert before <= datetime.fromisoformat(message["created_at"]) <= datetime.now(UTC)
    assert first["captured"][0]["created_at"] == message["created_at"]
    tenant_set(acme, conversation_days=30)
    acme.tenant.refresh_from_db()
    with tenant_context(acme.tenant.id):
        conversation = Conversation.objects.get()
        assert conversation.last_message_at <= datetime.now(UTC)
        assert conversations_expired_purge(tenant=acme.tenant,
                                           now=datetime.now(UTC) + timedelta(days=31)) == 1
        assert not Message.objects.exists()
