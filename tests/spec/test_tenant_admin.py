"""API v1, "Tenant administration": settings and limits, profiles, the event feed."""

from __future__ import annotations

from tests.spec.api_client import BASE, assert_error, err, index, ok, put_document

DEFAULT_LIMITS = {"max_document_bytes": 16384, "max_index_entries": 50, "max_index_tokens": 1500,
                  "max_scope_bytes": 262144, "max_writes_per_turn": 20,
                  # the conversation settings, also spelt at the top level
                  "max_message_bytes": 65536, "max_history_tokens": 2000}


def test_settings_show_the_defaults_and_patch_changes_only_what_is_sent(acme, globex) -> None:
    body = acme.client.get(f"{BASE}/tenant").json()
    assert body["name"] == "Acme" and body["memory_enabled"] is True
    assert body["limits"] == DEFAULT_LIMITS
    assert set(body["retention"]) == {"session_days", "conversation_days"}
    response = acme.client.patch(f"{BASE}/tenant", {
        "name": "Acme Corp", "limits": {"max_document_bytes": 100, "max_scope_bytes": None},
        "retention": {"session_days": 7}}, format="json")
    assert response.status_code == 200
    assert response.json()["limits"] == {**DEFAULT_LIMITS, "max_document_bytes": 100,
                                         "max_scope_bytes": None}
    assert response.json()["retention"] == {"session_days": 7, "conversation_days": None}
    assert acme.client.get(f"{BASE}/tenant").json() == response.json()
    assert globex.client.get(f"{BASE}/tenant").json()["limits"] == DEFAULT_LIMITS
    for bad in ({"limits": {"max_document_bytes": 0}}, {"limits": {"max_document_bytes": "big"}},
                {"memory_enabled": "yes please"}, {"memory_enabled": 1},
                {"limits": {"max_doc_bytes": 1}}, {"retention": {"days": 1}}):
        assert_error(acme.client.patch(f"{BASE}/tenant", bad, format="json"), 400)


def test_limits_apply_at_once_and_null_switches_them_off(acme, globex) -> None:
    acme.client.patch(f"{BASE}/tenant", {"limits": {"max_document_bytes": 5}}, format="json")
    assert err(acme, command="create", path="/a.md", file_text="123456").startswith("Error: ")
    assert_error(put_document(acme, "global/a.md", "123456"), 422, "document_too_large")
    acme.client.patch(f"{BASE}/tenant", {"limits": {"max_document_bytes": None}}, format="json")
    ok(acme, command="create", path="/a.md", file_text="x" * 20_000)


def test_a_disabled_profiles_sessions_get_no_memory(acme, globex) -> None:
    ok(acme, command="create", path="/a.md", file_text="a")
    assert acme.client.get(f"{BASE}/profiles").json()["profiles"] == []
    response = acme.client.put(f"{BASE}/profiles/cooking", {"disabled": True}, format="json")
    assert response.status_code in (200, 201)
    assert (response.json()["name"], response.json()["disabled"]) == ("cooking", True)
    assert [(p["name"], p["disabled"]) for p in
            acme.client.get(f"{BASE}/profiles").json()["profiles"]] == [("cooking", True)]
    assert index(acme, session_id="s-1", profile="cooking")["enabled"] is False
    assert err(acme, command="view", path="/a.md", session_id="s-1",
               profile="cooking").startswith("Error: memory is disabled ")
    assert index(acme, session_id="s-1", profile="baking")["enabled"] is True
    assert globex.client.get(f"{BASE}/profiles").json()["profiles"] == []
    assert acme.client.put(f"{BASE}/profiles/cooking", {"disabled": False},
                           format="json").status_code == 200
    assert index(acme, session_id="s-1", profile="cooking")["enabled"] is True
    for bad in ({"disabled": "yes"}, {}):
        assert_error(acme.client.put(f"{BASE}/profiles/cooking", bad, format="json"), 400)
    assert_error(acme.client.put(f"{BASE}/profiles/Not%20Valid", {"disabled": True},
                                 format="json"), 400)


def test_the_event_feed_oldest_first_with_its_cursor(acme, globex) -> None:
    assert acme.client.get(f"{BASE}/events").json() == {"events": [], "next_cursor": None}
    ok(acme, command="create", path="/memories/a.md", file_text="a")
    ok(acme, command="str_replace", path="/a.md", old_str="a", new_str="b")
    put_document(acme, "session/s-1/b.md", "b")
    ok(acme, command="rename", old_path="/a.md", new_path="/c.md")
    ok(acme, command="delete", path="/c.md")
    ok(globex, command="create", path="/g.md", file_text="g")
    feed = acme.client.get(f"{BASE}/events")
    assert feed.status_code == 200
    body = feed.json()
    assert set(body) == {"events", "next_cursor"}
    found = body["events"]
    assert [(e["type"], e["actor"], e["user_id"], e["data"]["change"], e["data"]["path"],
             e["data"]["scope"]) for e in found] == [
        ("memory.changed", "assistant", "alice", "created", "/a.md", "global"),
        ("memory.changed", "assistant", "alice", "updated", "/a.md", "global"),
        ("memory.changed", "app", "alice", "created", "/b.md", "session"),
        ("memory.changed", "assistant", "alice", "renamed", "/c.md", "global"),
        ("memory.changed", "assistant", "alice", "deleted", "/c.md", "global")]
    assert all(set(e) == {"id", "type", "created_at", "actor", "user_id", "data"} for e in found)
    ids = [e["id"] for e in found]
    assert ids == sorted(ids)
    # next_cursor: the cursor of the last event, or null when there are no more.
    assert body["next_cursor"] == ids[-1]
    page = acme.client.get(f"{BASE}/events", {"limit": 2}).json()
    assert ([e["id"] for e in page["events"]], page["next_cursor"]) == (ids[:2], ids[1])
    page = acme.client.get(f"{BASE}/events", {"after": page["next_cursor"], "limit": 2}).json()
    assert ([e["id"] for e in page["events"]], page["next_cursor"]) == (ids[2:4], ids[3])
    page = acme.client.get(f"{BASE}/events", {"after": page["next_cursor"], "limit": 2}).json()
    assert ([e["id"] for e in page["events"]], page["next_cursor"]) == (ids[4:], ids[4])
    assert acme.client.get(f"{BASE}/events", {"after": ids[-1]}).json() == {
        "events": [], "next_cursor": None}
    # Polling on from the last cursor picks up what happens next.
    ok(acme, command="create", path="/d.md", file_text="d")
    page = acme.client.get(f"{BASE}/events", {"after": ids[-1]}).json()
    assert [e["data"]["path"] for e in page["events"]] == ["/d.md"]
    assert page["next_cursor"] == page["events"][0]["id"]
    for bad in ({"after": "x"}, {"limit": "0"}):
        assert_error(acme.client.get(f"{BASE}/events", bad), 400)
