"""API v1, "End users": list, show with counts, the person's switch, forget, sessions, export,
portal links."""

from __future__ import annotations

from django.test import Client

from tests.spec.api_client import BASE, assert_error, err, events, index, ok, put_document


def seed(kit, user_id: str = "alice") -> None:
    ok(kit, user_id, command="create", path="/memories/g.md", file_text="global")
    ok(kit, user_id, command="create", path="/p.md", file_text="profile!", scope="profile",
       profile="cooking")
    put_document(kit, "session/s-1/a.md", "s1 a", user_id=user_id)
    put_document(kit, "session/s-1/b.md", "s1 b", user_id=user_id)
    put_document(kit, "session/s-2/c.md", "s2 c", user_id=user_id)


def test_list_and_show_with_counts(acme, globex) -> None:
    seed(acme)
    ok(acme, "bob", command="create", path="/x.md", file_text="x")
    listed = acme.client.get(f"{BASE}/users")
    assert listed.status_code == 200
    assert [u["user_id"] for u in listed.json()["users"]] == ["alice", "bob"]
    alice = acme.client.get(f"{BASE}/users/alice").json()
    assert alice["user_id"] == "alice" and alice["memory_enabled"] is True
    assert alice["documents"] == {"session": 3, "profile": 1, "global": 1, "total": 5}
    assert alice["bytes"] == len("global") + len("profile!") + 3 * 4
    assert (alice["sessions"], alice["profiles"]) == (2, 1)
    assert globex.client.get(f"{BASE}/users").json()["users"] == []


def test_the_persons_own_switch(acme, globex) -> None:
    seed(acme)
    response = acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": False}, format="json")
    assert response.status_code == 200 and response.json()["memory_enabled"] is False
    assert acme.client.get(f"{BASE}/users/alice").json()["memory_enabled"] is False
    assert index(acme)["enabled"] is False
    assert err(acme, command="view", path="/memories").startswith("Error: memory is disabled ")
    for body in ({"memory_enabled": "no"}, {}, {"memory_enabled": None}):
        assert_error(acme.client.patch(f"{BASE}/users/alice", body, format="json"), 400)
    acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": True}, format="json")
    assert ok(acme, command="view", path="/g.md").endswith("1\tglobal")
    # Switching off a person nobody wrote for yet keeps them off from their first write.
    assert acme.client.patch(f"{BASE}/users/newbie", {"memory_enabled": False},
                             format="json").status_code == 200
    assert err(acme, "newbie", command="create", path="/a.md", file_text="x").startswith(
        "Error: memory is disabled ")


def test_delete_a_session_removes_only_its_memory(acme, globex) -> None:
    seed(acme)
    seed(globex)
    assert acme.client.delete(f"{BASE}/users/alice/sessions/s-1").status_code == 204
    remaining = acme.client.get(f"{BASE}/users/alice/documents").json()["documents"]
    assert sorted((d["scope"], d["path"]) for d in remaining) == [
        ("global", "/g.md"), ("profile", "/p.md"), ("session", "/c.md")]
    assert acme.client.delete(f"{BASE}/users/alice/sessions/s-1").status_code == 204
    assert acme.client.delete(f"{BASE}/users/nobody/sessions/s-1").status_code == 204
    assert len(globex.client.get(f"{BASE}/users/alice/documents").json()["documents"]) == 5
    deleted = [e["data"] for e in events(acme) if e["data"].get("change") == "deleted"]
    assert sorted(d["path"] for d in deleted) == ["/a.md", "/b.md"]


def test_delete_forgets_everything_about_the_person(acme, globex) -> None:
    seed(acme)
    seed(globex)
    acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": False}, format="json")
    assert acme.client.delete(f"{BASE}/users/alice").status_code == 204
    person = acme.client.get(f"{BASE}/users/alice").json()
    assert person["documents"]["total"] == 0 and person["memory_enabled"] is True
    assert "alice" not in [u["user_id"] for u in acme.client.get(f"{BASE}/users").json()["users"]]
    assert acme.client.get(f"{BASE}/users/alice/export").json()["documents"] == []
    for params in ({}, {"session_id": "s-1", "profile": "cooking"}, {"session_id": "s-2"}):
        assert index(acme, **params) == {"enabled": True, "text": "", "entries": [], "omitted": 0}
    assert [e for e in events(acme) if e["data"].get("path")] == []  # paths can say too much
    assert acme.client.delete(f"{BASE}/users/alice").status_code == 204
    assert globex.client.get(f"{BASE}/users/alice").json()["documents"]["total"] == 5


def test_export_holds_everything_stored(acme, globex) -> None:
    seed(acme)
    export = acme.client.get(f"{BASE}/users/alice/export")
    assert export.status_code == 200
    body = export.json()
    assert body["user_id"] == "alice"
    assert sorted((d["scope"], d["scope_key"], d["path"], d["content"])
                  for d in body["documents"]) == [
        ("global", None, "/g.md", "global"), ("profile", "cooking", "/p.md", "profile!"),
        ("session", "s-1", "/a.md", "s1 a"), ("session", "s-1", "/b.md", "s1 b"),
        ("session", "s-2", "/c.md", "s2 c")]
    assert globex.client.get(f"{BASE}/users/alice/export").json()["documents"] == []


def test_a_portal_link_opens_the_persons_page_once(acme, globex) -> None:
    seed(acme)
    response = acme.client.post(f"{BASE}/users/alice/portal-link")
    assert response.status_code in (200, 201)
    link = response.json()["url"]
    assert link.startswith("http") and "expires_at" in response.json()
    path = link[link.index("/", len("https://")):]
    browser = Client()
    landing = browser.get(path)
    assert landing.status_code == 302
    page = browser.get(landing["Location"])
    assert page.status_code == 200 and "/g.md" in page.content.decode()
    assert Client().get(path).status_code >= 400
