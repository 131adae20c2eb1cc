"""``MemoryHub`` and ``AsyncMemoryHub`` against a live MemoryHub: every endpoint, over HTTP."""

from __future__ import annotations

import asyncio
import inspect
import multiprocessing
import pickle
import socket
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import httpx
import pytest
from llm_servers import Canned
from memoryhub_client import AsyncMemoryHub, MemoryHub, MemoryHubError

pytestmark = pytest.mark.django_db(transaction=True)

USER = "ext:42|team+a@example.com"  # every punctuation mark a user_id may hold


def first_refusal(call: Any) -> MemoryHubError:
    """The error of the first of a few calls that fails (the rate limit counts earlier ones)."""
    with pytest.raises(MemoryHubError) as caught:
        for _ in range(5):
            call()
    return caught.value


def error_of(call: Any, *args: Any, **kwargs: Any) -> MemoryHubError:
    with pytest.raises(MemoryHubError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_documents_with_versions_in_every_scope(hub: MemoryHub) -> None:
    created = hub.document_put(USER, "/notes/diet.md", "vegetarian\n", description="Diet",
                               if_none_match=True)
    assert (created["path"], created["version"], created["updated_by"]) == (
        "/notes/diet.md", 1, "app")
    assert error_of(hub.document_put, USER, "/notes/diet.md", "x", if_none_match=True).status == 412
    got = hub.document_get(USER, "notes/diet.md")
    assert (got["content"], got["description"], got["scope_key"]) == ("vegetarian\n", "Diet", None)
    stale = error_of(hub.document_put, USER, "/notes/diet.md", "vegan\n", if_match=7)
    assert (stale.status, stale.code) == (412, "precondition_failed")
    assert hub.document_put(USER, "/notes/diet.md", "vegan\n", if_match=1)["version"] == 2
    hub.document_put(USER, "/todo.md", "call mum", session_id="s-1")
    hub.document_put(USER, "/memories/style.md", "short answers", profile="cooking",
                     confidence=0.5)
    assert hub.document_get(USER, "/style.md", profile="cooking")["confidence"] == 0.5
    assert hub.document_get(USER, "/todo.md", session_id="s-1")["scope_key"] == "s-1"
    page = hub.documents(USER, limit=2)
    rest = hub.documents(USER, limit=2, cursor=page["next_cursor"])
    assert [(d["scope"], d["path"]) for d in page["documents"] + rest["documents"]] == [
        ("global", "/notes/diet.md"), ("profile", "/style.md"), ("session", "/todo.md")]
    assert rest["next_cursor"] is None
    assert [d["path"] for d in hub.documents(USER, prefix="/notes")["documents"]] == [
        "/notes/diet.md"]
    assert error_of(hub.document_delete, USER, "/notes/diet.md", if_match=1).status == 412
    assert hub.document_delete(USER, "/notes/diet.md", if_match=2) is None
    missing = error_of(hub.document_get, USER, "/notes/diet.md")
    assert (missing.status, missing.code) == (404, "not_found")
    refused = error_of(hub.document_put, USER, "/key.md", "sk-ant-api03-" + "a" * 40)
    assert (refused.status, refused.code) == (422, "credential_detected")
    with pytest.raises(ValueError):
        hub.document_get(USER, "/x.md", profile="p", session_id="s")


def test_dot_segments_reach_the_server_as_they_are(hub: MemoryHub) -> None:
    """httpx resolves "." and ".." in a URL's path before sending: a session ".." deleted
    the person, a document path with ".." reached another person's documents."""
    hub.document_put(USER, "/keep.md", "mine")
    hub.document_put("dave", "/pwn.md", "untouched")
    hub.document_put(USER, "/s.md", "in the session", session_id="..")
    assert hub.session_delete(USER, "..") is None  # the session "..", not the person
    assert hub.user(USER)["documents"] == {"session": 0, "profile": 0, "global": 1, "total": 1}
    for path in ("/../../../dave/documents/global/pwn.md", "/../profile/cooking/p.md",
                 "/x/../keep.md", "/./keep.md"):
        refused = error_of(hub.document_put, USER, path, "overwritten")
        assert (refused.status, refused.code) == (422, "invalid_path"), path
    assert hub.document_get("dave", "/pwn.md")["content"] == "untouched"
    assert hub.document_get(USER, "/keep.md")["content"] == "mine"


def test_a_slash_in_an_id_is_refused_not_read_as_another_address(hub: MemoryHub) -> None:
    """The server decodes %2F before routing: a session_id "s/1" wrote the session "s"'s
    /1/x.md, a profile "cook/ing" the profile "cook"'s /ing/x.md, and a user_id
    "alice/sessions/s" deleted alice's session "s"."""
    hub.document_put("alice", "/keep.md", "mine", session_id="s")
    refusals = [
        (lambda: hub.document_put("alice", "/x.md", "x", session_id="s/1"), "invalid_session_id"),
        (lambda: hub.document_put("alice", "/x.md", "x", profile="cook/ing"), "invalid_profile"),
        (lambda: hub.user_delete("alice/sessions/s"), "invalid_user_id"),
        (lambda: hub.capture("alice/x", "s", [{"role": "user", "content": "hi"}]),
         "invalid_user_id"),
    ]
    for call, code in refusals:
        refused = error_of(call)
        assert (refused.status, refused.code) == (400, code)
    assert [(d["scope_key"], d["path"]) for d in hub.documents("alice")["documents"]] == [
        ("s", "/keep.md")]
    assert error_of(hub.conversation, "alice", "c/summary").code == "not_found"


def test_the_memory_tool_the_index_the_snapshot_and_recall(hub: MemoryHub) -> None:
    assert hub.memory(USER, {"command": "create", "path": "/memories/notes/diet.md",
                             "file_text": "Vegetarian since 2019\n", "description": "Diet"}) == {
        "content": "File created successfully at: /memories/notes/diet.md", "is_error": False}
    assert hub.memory(USER, {"command": "view", "path": "/memories/nope.md"}) == {
        "content": "The path /memories/nope.md does not exist. Please provide a valid path.",
        "is_error": True}
    note = hub.memory(USER, {"command": "create", "path": "/todo.md", "file_text": "buy figs"},
                      session_id="s-1", scope="session", turn_id="t-1")
    assert note["is_error"] is False
    index = hub.memory_index(USER, session_id="s-1")
    assert index["enabled"] is True and index["omitted"] == 0
    assert [(e["path"], e["scope"]) for e in index["entries"]] == [
        ("/todo.md", "session"), ("/notes/diet.md", "global")]
    assert "- /notes/diet.md (global, 22 bytes): Diet" in index["text"].splitlines()
    assert [e["path"] for e in hub.memory_index(USER)["entries"]] == ["/notes/diet.md"]
    assert hub.memory_snapshot(USER)["text"] == (
        '<memory path="/notes/diet.md" scope="global">\nVegetarian since 2019\n\n</memory>\n')
    found = hub.recall(USER, "vegetarian", limit=5, session_id="s-1")
    assert [r["path"] for r in found["results"]][:1] == ["/notes/diet.md"]
    assert found["context"].startswith("<memori_context>\n")
    assert hub.recall(USER, "zebra crossings")["context"] == ""
    assert len(hub.recall(USER, "zebra crossings", relaxed=True, threshold=0.9)["results"]) <= 2


def test_end_users_sessions_export_and_the_portal_link(hub: MemoryHub) -> None:
    hub.document_put(USER, "/a.md", "one")
    hub.document_put(USER, "/b.md", "two", session_id="s-1")
    hub.document_put("bob", "/a.md", "three")
    assert [u["user_id"] for u in hub.users()["users"]] == ["bob", USER]
    page = hub.users(limit=1)
    assert [u["user_id"] for u in hub.users(cursor=page["next_cursor"])["users"]] == [USER]
    person = hub.user(USER)
    assert person["documents"] == {"session": 1, "profile": 0, "global": 1, "total": 2}
    assert hub.user("nobody")["created_at"] is None
    assert hub.user_update(USER, memory_enabled=False)["memory_enabled"] is False
    assert hub.memory_index(USER)["enabled"] is False
    hub.user_update(USER, memory_enabled=True)
    assert hub.session_delete(USER, "s-1") is None
    assert hub.user(USER)["documents"]["session"] == 0
    link = hub.portal_link(USER)
    assert "/portal/" in link["url"] and link["expires_at"]
    export = hub.export(USER)
    assert [d["content"] for d in export["documents"]] == ["one"]
    assert len(export["portal_links"]) == 1 and export["portal_links"][0]["used_at"] is None
    assert hub.user_delete(USER) is None
    assert hub.export(USER)["documents"] == []


def test_tenant_profiles_events_and_webhooks(hub: MemoryHub, settings: Any) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    tenant = hub.tenant()
    assert tenant["slug"] == "acme" and tenant["limits"]["max_document_bytes"] == 16384
    changed = hub.tenant_update({"name": "Acme Inc", "limits": {"max_index_entries": 5},
                                 "retention": {"session_days": 7}})
    assert (changed["name"], changed["limits"]["max_index_entries"],
            changed["retention"]["session_days"]) == ("Acme Inc", 5, 7)
    bad = error_of(hub.tenant_update, {"limits": {"max_doc_bytes": 1}})  # type: ignore[typeddict-unknown-key]
    assert bad.status == 400
    assert hub.profile_set("cooking", disabled=True) == {
        "name": "cooking", "disabled": True, "created_at": hub.profiles()["profiles"][0]["created_at"]}
    assert [p["name"] for p in hub.profiles(limit=10)["profiles"]] == ["cooking"]
    hub.document_put(USER, "/a.md", "one")
    hub.document_put(USER, "/a.md", "two")
    feed = hub.events()
    assert [e["data"]["change"] for e in feed["events"]] == ["created", "updated"]
    assert hub.events(after=feed["next_cursor"]) == {"events": [], "next_cursor": None}
    assert [e["user_id"] for e in hub.events(limit=1)["events"]] == [USER]
    made = hub.webhook_create("http://127.0.0.1:9/hook", event_types=["memory.changed"])
    assert made["secret"] and made["enabled"] is True
    assert hub.webhooks()["webhooks"] == [{k: v for k, v in made.items() if k != "secret"}]
    assert hub.webhook(made["id"])["url"] == "http://127.0.0.1:9/hook"
    assert hub.webhook_update(made["id"], {"enabled": False})["enabled"] is False
    assert hub.webhook_delete(made["id"]) is None
    assert error_of(hub.webhook, made["id"]).code == "not_found"


def test_conversations_history_and_the_turn_context(hub: MemoryHub) -> None:
    first = hub.capture(USER, "s-1", [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "I moved to Lisbon last week.", "id": "m-1",
         "metadata": {"channel": "web"}},
        {"role": "assistant", "content": "Welcome to Lisbon!", "id": "m-2"},
    ], profile="travel", process="support-agent")
    assert first["enabled"] is True and first["dropped"]["excluded_role"] == 1
    assert [(m["client_id"], m["seq"]) for m in first["captured"]] == [("m-1", 1), ("m-2", 2)]
    again = hub.capture(USER, "s-1", [{"role": "user", "content": "I moved to Lisbon last week.",
                                       "id": "m-1"}])
    assert again["captured"] == [] and again["dropped"]["duplicate"] == 1
    conversation_id = first["conversation_id"]
    assert conversation_id is not None
    later = hub.capture(USER, "s-2", [{"role": "user", "content": "Hello again"}],
                        new_conversation=True)
    page = hub.messages(USER, "s-1", limit=1)
    assert [m["content"] for m in page["messages"]] == ["I moved to Lisbon last week."]
    assert page["messages"][0]["metadata"] == {"channel": "web"}
    rest = hub.messages(USER, "s-1", after=page["next_cursor"], conversation_id=conversation_id)
    assert [m["role"] for m in rest["messages"]] == ["assistant"]
    listed = hub.conversations(USER)
    assert [c["session_id"] for c in listed["conversations"]] == ["s-2", "s-1"]
    assert [c["id"] for c in hub.conversations(USER, session_id="s-1")["conversations"]] == [
        conversation_id]
    older = hub.conversations(USER, limit=1)
    assert [c["session_id"] for c in hub.conversations(
        USER, before=older["next_cursor"])["conversations"]] == ["s-1"]
    shown = hub.conversation(USER, conversation_id)
    assert (shown["profile"], shown["process"], shown["message_count"]) == (
        "travel", "support-agent", 2)
    summarised = hub.summary_put(USER, conversation_id, "They moved to Lisbon.")
    assert summarised["summary"] == "They moved to Lisbon."
    history = hub.history(USER, exclude_session="s-2", limit=5)
    assert [c["id"] for c in history["conversations"]] == [conversation_id]
    assert "They moved to Lisbon." in history["text"]
    assert hub.history(USER, profile="travel")["conversations"][0]["id"] == conversation_id
    hub.document_put(USER, "/home.md", "Lives in Lisbon")
    turn = hub.context(USER, session_id="s-2", query="Lisbon", history=3, limit=5)
    assert turn["enabled"] is True and turn["recall"] is not None and turn["history"] is not None
    assert [e["path"] for e in turn["index"]["entries"]] == ["/home.md"]
    assert "Lisbon" in turn["recall"]["context"]
    assert [c["id"] for c in turn["history"]["conversations"]] == [conversation_id]
    assert hub.context(USER)["recall"] is None
    assert hub.conversation_delete(USER, str(later["conversation_id"])) is None
    assert error_of(hub.conversation, USER, str(later["conversation_id"])).status == 404
    bad = error_of(hub.capture, USER, "s-1", [{"role": "robot", "content": "x"}])  # type: ignore[typeddict-item]
    assert (bad.status, bad.code) == (400, "invalid_role")


def test_facts_with_versions_and_history_and_keys(hub: MemoryHub, live_server: Any) -> None:
    made = hub.fact_create(USER, "User prefers dark mode", type="preference")
    assert (made["type"], made["version"], made["updated_by"]) == ("preference", 1, "app")
    again = hub.fact_create(USER, "user prefers dark mode.")  # the same, normalised
    assert again["id"] == made["id"]
    stale = error_of(hub.fact_update, USER, made["id"], confidence=0.5, if_match=9)
    assert (stale.status, stale.code) == (412, "precondition_failed")
    changed = hub.fact_update(USER, made["id"], confidence=0.5, if_match=1)
    assert (changed["confidence"], changed["version"]) == (0.5, 2)
    ended = hub.fact_update(USER, made["id"], invalid_at="2026-12-01T00:00:00Z")
    assert ended["invalid_at"] is not None
    assert hub.facts(USER)["facts"] == []
    assert [f["id"] for f in hub.facts(USER, include_invalid=True)["facts"]] == [made["id"]]
    assert hub.fact_update(USER, made["id"], invalid_at=None)["invalid_at"] is None
    assert hub.fact(USER, made["id"])["content"] == "User prefers dark mode"
    assert [v["event"] for v in hub.fact_history(USER, made["id"])["history"]] == [
        "created", "updated", "invalidated", "updated"]
    assert hub.fact_delete(USER, made["id"], if_match=4) is None
    assert error_of(hub.fact, USER, made["id"]).status == 404
    past = hub.fact_create(USER, "User lives in Porto", valid_at="2019-01-01T00:00:00Z",
                           invalid_at="2024-06-01T00:00:00Z")  # the body takes it: so does this
    assert past["invalid_at"] == "2024-06-01T00:00:00Z" and hub.facts(USER)["facts"] == []

    bound = hub.key_create("phone", user_id=USER)
    assert bound["permissions"] == ["memory"] and bound["api_key"].startswith("mh_")
    assert bound["id"] in [k["id"] for k in hub.keys()["keys"]]
    with MemoryHub(live_server.url, bound["api_key"]) as phone:
        assert phone.user(USER)["user_id"] == USER
        assert hub.key_revoke(bound["id"]) is None
        assert error_of(phone.user, USER).status == 401


def test_errors_auth_tenancy_and_rate_limits(hub: MemoryHub, live_server: Any, acme: Any,
                                             globex: Any, settings: Any) -> None:
    hub.document_put(USER, "/a.md", "mine")
    with MemoryHub(live_server.url, globex.key) as other:
        assert error_of(other.document_get, USER, "/a.md").code == "not_found"
        assert other.user(USER)["documents"]["total"] == 0
    with MemoryHub(live_server.url + "/api/v1/", "mh_not_a_key") as stranger:
        assert error_of(stranger.users).status == 401
    with MemoryHub(live_server.url, acme.memory_key) as agent:
        assert error_of(agent.tenant).status == 403
    assert error_of(hub.user, "bad user").code == "invalid_user_id"
    settings.API_RATE_LIMIT = "2/min"
    limited = first_refusal(hub.tenant)
    assert (limited.status, limited.code) == (429, "rate_limited")
    assert limited.retry_after is not None and 0 < limited.retry_after <= 61


def test_a_key_with_a_newline_works_and_a_bad_key_is_never_shown(live_server: Any,
                                                                   acme: Any) -> None:
    """A key read from a file ends with a newline: httpx refused the header with the whole
    key in its error message."""
    with MemoryHub(live_server.url, f" {acme.key}\n") as hub:
        assert hub.users() == {"users": [], "next_cursor": None}
    for broken in (acme.key[:12] + "\x00" + acme.key[12:], acme.key + "\u00e9", "  "):
        with pytest.raises(ValueError) as refused:
            AsyncMemoryHub(live_server.url, broken)
        assert acme.key[6:] not in str(refused.value)


def test_no_answer_at_all_is_a_memoryhub_error_that_is_still_httpxs() -> None:
    """MemoryHub unreachable or silent: httpx's exceptions went out as they came, past
    ``except MemoryHubError``."""
    with MemoryHub("http://127.0.0.1:9", "mh_key") as down:  # nothing listens there
        refused = error_of(down.users, limit=5)
    assert (refused.status, refused.code) == (0, "connection_error")
    assert isinstance(refused, httpx.ConnectError)
    assert "GET http://127.0.0.1:9/api/v1/users" in refused.message
    with socket.create_server(("127.0.0.1", 0)) as silent:  # connects, never answers

        async def the_async_client() -> MemoryHubError:
            async with AsyncMemoryHub(f"http://127.0.0.1:{silent.getsockname()[1]}", "mh_key",
                                      timeout=0.5) as hub:
                with pytest.raises(MemoryHubError) as raised:
                    await hub.users()
                return raised.value

        late = asyncio.run(the_async_client())
    assert (late.status, late.code) == (0, "timeout")
    assert isinstance(late, httpx.ReadTimeout)


def test_a_proxy_answering_in_memoryhubs_place_is_an_error() -> None:
    """http:// in front of deploy/nginx's redirect to https: a DELETE answered None, as if
    done, and a GET raised JSONDecodeError; so did a proxy's 200 page."""
    moved = {"Location": "https://memory.example.com/api/v1/users/alice"}
    with Canned(301, b"<html>301 Moved Permanently</html>", moved) as proxy, MemoryHub(
            proxy.url, "mh_key") as hub:
        redirected = error_of(hub.user_delete, "alice")
        assert (redirected.status, redirected.code) == (301, "http_301")
        assert "https://memory.example.com/api/v1/users/alice" in redirected.message
        assert error_of(hub.users).status == 301
    with Canned(200, b"<html>Welcome to nginx!</html>", {"Content-Type": "text/html"}) as proxy:
        with MemoryHub(proxy.url, "mh_key") as hub:
            page = error_of(hub.users)
            assert (page.status, page.code) == (200, "invalid_response")
            assert "Welcome to nginx!" in page.message

        async def the_async_client() -> None:
            async with AsyncMemoryHub(proxy.url, "mh_key") as hub:
                with pytest.raises(MemoryHubError) as raised:
                    await hub.users()
                assert raised.value.code == "invalid_response"

        asyncio.run(the_async_client())


def test_retry_after_as_an_http_date_is_seconds_too() -> None:
    """A proxy's 429 or 503 may say when rather than how long (RFC 9110): retry_after was
    None."""
    for when, wait in (("Wed, 21 Oct 2015 07:28:00 GMT", 0.0), ("120", 120.0)):
        with Canned(429, b"Too Many Requests", {"Retry-After": when}) as proxy, MemoryHub(
                proxy.url, "mh_key") as hub:
            assert error_of(hub.users).retry_after == wait
    with Canned(503, b"", {"Retry-After": "Fri, 01 Jan 2100 00:00:00 GMT"}) as proxy, MemoryHub(
            proxy.url, "mh_key") as hub:
        unavailable = error_of(hub.users)
    assert unavailable.status == 503 and unavailable.retry_after is not None
    assert unavailable.retry_after > 365 * 24 * 3600


def stale_put(url: str, key: str) -> None:
    """A call in a worker process that MemoryHub refuses (412)."""
    with MemoryHub(url, key) as hub:
        hub.document_put(USER, "/diet.md", "vegan", if_match=9)


def test_an_error_reaches_the_caller_from_a_worker_process(live_server: Any, acme: Any) -> None:
    """Exception pickles its args, one text that __init__ could not take back: the worker's
    MemoryHubError failed to unpickle in the caller."""
    spawned = multiprocessing.get_context("spawn")  # a fork of this threaded process may hang
    with ProcessPoolExecutor(1, mp_context=spawned) as workers, pytest.raises(
            MemoryHubError) as raised:
        workers.submit(stale_put, live_server.url, acme.key).result()
    assert (raised.value.status, raised.value.code) == (412, "precondition_failed")
    with MemoryHub("http://127.0.0.1:9", "mh_key") as down:
        refused = pickle.loads(pickle.dumps(error_of(down.users)))
    assert (refused.status, refused.code, refused.retry_after) == (0, "connection_error", None)


def test_the_async_client_has_every_method_and_sends_the_same(live_server: Any, acme: Any,
                                                               settings: Any) -> None:
    public = {name for name in dir(MemoryHub) if not name.startswith("_")} - {"close"}
    assert public == {name for name in dir(AsyncMemoryHub) if not name.startswith("_")} - {
        "aclose"}
    assert inspect.signature(AsyncMemoryHub("http://x", "k").recall) == inspect.signature(
        MemoryHub("http://x", "k").recall)

    async def scenario() -> None:
        async with AsyncMemoryHub(live_server.url, acme.key) as hub:
            made = await hub.document_put(USER, "/diet.md", "vegetarian", if_none_match=True)
            assert made["version"] == 1
            with pytest.raises(MemoryHubError) as stale:
                await hub.document_put(USER, "/diet.md", "vegan", if_match=5)
            assert stale.value.code == "precondition_failed"
            assert (await hub.memory(USER, {"command": "view", "path": "/diet.md"}))[
                "content"].endswith("1\tvegetarian")
            assert "vegetarian" in (await hub.recall(USER, "vegetarian"))["context"]
            captured = await hub.capture(USER, "s-1", [{"role": "user", "content": "hi"}])
            conversation_id = str(captured["conversation_id"])
            await hub.summary_put(USER, conversation_id, "greeting")
            assert (await hub.conversation(USER, conversation_id))["summary"] == "greeting"
            assert await hub.conversation_delete(USER, conversation_id) is None
            settings.API_RATE_LIMIT = "1/min"
            with pytest.raises(MemoryHubError) as limited:
                for _ in range(3):
                    await hub.tenant()
            assert limited.value.status == 429 and limited.value.retry_after

    asyncio.run(scenario())
