"""``GET /api/v1/events``: the tenant's feed, oldest first, with the contract's cursor."""

from __future__ import annotations

import pytest

from memoryhub.services.events import changed_event, pressure_event
from tenants.context import tenant_context

# Authentication (key lookup, last_used_at), the tenant context's savepoint and settings,
# and the list's own query: a constant, whatever the number of rows.
LIST_QUERIES = 12


def record_changes(kit, count: int, user_id: str = "alice") -> list[int]:
    with tenant_context(kit.tenant.id):
        return [
            changed_event(tenant_id=kit.tenant.id, user_id=user_id, actor="app",
                          change="created", path=f"/n{i}.md", scope="global").seq
            for i in range(count)
        ]


def test_events_come_oldest_first_with_the_contract_fields(acme, globex) -> None:
    ids = record_changes(acme, 2)
    with tenant_context(acme.tenant.id):
        pressure = pressure_event(tenant_id=acme.tenant.id, user_id="alice", actor="assistant",
                                  scope="session", scope_key="s1", used_bytes=900, limit_bytes=1000)
    body = acme.client.get("/api/v1/events").json()
    assert [e["id"] for e in body["events"]] == [*ids, pressure.seq]
    assert body["next_cursor"] == pressure.seq  # the cursor of the last event
    first, last = body["events"][0], body["events"][-1]
    assert set(first) == {"id", "type", "created_at", "actor", "user_id", "data"}
    assert first["type"] == "memory.changed"
    assert first["actor"] == "app" and first["user_id"] == "alice"
    assert first["data"]["change"] == "created" and first["data"]["path"] == "/n0.md"
    assert first["data"]["scope"] == "global"
    assert last["type"] == "memory.pressure"
    assert {k: last["data"][k] for k in ("scope", "scope_key", "used_bytes", "limit_bytes")} == {
        "scope": "session", "scope_key": "s1", "used_bytes": 900, "limit_bytes": 1000}


def test_paging_with_after_and_limit(acme, globex, django_assert_max_num_queries) -> None:
    ids = record_changes(acme, 5)
    record_changes(globex, 3)
    with django_assert_max_num_queries(LIST_QUERIES):
        page = acme.client.get("/api/v1/events", {"limit": 2}).json()
    assert [e["id"] for e in page["events"]] == ids[:2]
    assert page["next_cursor"] == ids[1]
    page = acme.client.get("/api/v1/events", {"after": page["next_cursor"], "limit": 2}).json()
    assert [e["id"] for e in page["events"]] == ids[2:4]
    page = acme.client.get("/api/v1/events", {"after": page["next_cursor"], "limit": 2}).json()
    assert [e["id"] for e in page["events"]] == ids[4:]
    assert page["next_cursor"] == ids[4]  # a short last page still says where it stopped
    # Nothing after the cursor: null, until new events arrive.
    assert acme.client.get("/api/v1/events", {"after": ids[-1]}).json() == {
        "events": [], "next_cursor": None}
    new_ids = record_changes(acme, 1)
    page = acme.client.get("/api/v1/events", {"after": ids[-1], "limit": 2}).json()
    assert ([e["id"] for e in page["events"]], page["next_cursor"]) == (new_ids, new_ids[0])


def test_default_limit_is_100(acme, globex) -> None:
    ids = record_changes(acme, 101)
    body = acme.client.get("/api/v1/events").json()
    assert len(body["events"]) == 100
    assert body["next_cursor"] == ids[99]
    assert len(acme.client.get("/api/v1/events", {"limit": 1000}).json()["events"]) == 101


def test_a_tenant_sees_only_its_own_events(acme, globex) -> None:
    record_changes(acme, 3)
    globex_ids = record_changes(globex, 2, user_id="bob")
    assert [e["id"] for e in globex.client.get("/api/v1/events").json()["events"]] == globex_ids
    assert {e["user_id"] for e in globex.client.get("/api/v1/events").json()["events"]} == {"bob"}


def test_each_tenant_numbers_its_own_events(acme, globex) -> None:
    """Ids drawn from one sequence for every tenant would let a tenant estimate the others'
    volume from the gaps between its own ids."""
    first = record_changes(acme, 2)
    record_changes(globex, 5, user_id="bob")
    then = record_changes(acme, 2)
    assert first + then == [1, 2, 3, 4]  # globex's five events in between left no gap
    feed = globex.client.get("/api/v1/events").json()
    assert ([e["id"] for e in feed["events"]], feed["next_cursor"]) == ([1, 2, 3, 4, 5], 5)
    # Both feeds have an event 3: globex's cursor reads globex's own events only.
    after = globex.client.get("/api/v1/events", {"after": 2}).json()["events"]
    assert [(e["id"], e["user_id"]) for e in after] == [(3, "bob"), (4, "bob"), (5, "bob")]


def test_a_forgotten_persons_numbers_are_never_given_again(acme, globex) -> None:
    """Forgetting deletes the person's events, the latest ones included; a consumer's cursor
    may be past them, so the feed goes on above them (a counter, not max + 1)."""
    record_changes(acme, 1, user_id="bob")
    for path in ("/a.md", "/b.md", "/c.md"):  # events 2-4, alice's
        acme.client.post("/api/v1/users/alice/memory", {
            "command": "create", "path": f"/memories{path}", "file_text": "x"}, format="json")
    cursor = acme.client.get("/api/v1/events").json()["next_cursor"]
    assert cursor == 4
    assert acme.client.delete("/api/v1/users/alice").status_code == 204
    page = acme.client.get("/api/v1/events", {"after": cursor}).json()
    assert [(e["id"], e["data"]["change"]) for e in page["events"]] == [(5, "forgotten")]
    assert record_changes(acme, 1) == [6]
    assert [e["id"] for e in acme.client.get("/api/v1/events").json()["events"]] == [1, 5, 6]


@pytest.mark.parametrize("query", [
    {"after": "-1"}, {"after": "abc"}, {"after": "1.5"}, {"after": "9" * 30},
    {"limit": "0"}, {"limit": "1001"}, {"limit": "-5"}, {"limit": "ten"},
])
def test_invalid_after_or_limit_is_400(acme, globex, query) -> None:
    response = acme.client.get("/api/v1/events", query)
    assert response.status_code == 400
    code = "invalid_cursor" if "after" in query else "invalid_limit"
    assert response.json()["error"]["code"] == code


def test_events_need_the_admin_permission(acme, globex) -> None:
    record_changes(acme, 1)
    response = acme.client_with(acme.memory_key).get("/api/v1/events")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
