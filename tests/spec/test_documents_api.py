"""API v1, "Documents (app-facing)" and "Memory documents": fields, ETags, preconditions, 422s."""

from __future__ import annotations

import pytest

from tests.spec.api_client import BASE, assert_error, events, ok, put_document, set_limits

FIELDS = {"path", "scope", "scope_key", "description", "content", "bytes", "version",
          "updated_by", "created_at", "updated_at"}


def url(where: str, user_id: str = "alice") -> str:
    return f"{BASE}/users/{user_id}/documents/{where}"


def test_put_creates_then_replaces_and_get_carries_the_etag(acme, globex) -> None:
    created = put_document(acme, "global/notes/café.md", "crème brûlée", description="Dessert")
    assert created.status_code in (200, 201)
    body = created.json()
    assert FIELDS <= set(body)
    assert (body["path"], body["scope"], body["content"], body["description"]) == (
        "/notes/café.md", "global", "crème brûlée", "Dessert")
    assert body["bytes"] == len("crème brûlée".encode()) == 15
    assert (body["version"], body["updated_by"]) == (1, "app")
    assert created.headers["ETag"] == '"1"'
    replaced = put_document(acme, "global/notes/café.md", "sorbet")
    assert replaced.status_code == 200
    assert (replaced.json()["version"], replaced.json()["bytes"]) == (2, 6)
    assert replaced.json()["description"] == "Dessert"  # kept when not sent
    cleared = put_document(acme, "global/notes/café.md", "sorbet", description=None)
    assert (cleared.json()["description"], cleared.json()["version"]) == ("", 3)
    replaced = put_document(acme, "global/notes/café.md", "sorbet", description="Dessert")
    assert replaced.json()["created_at"] == body["created_at"]
    assert replaced.json()["updated_at"] >= body["updated_at"]
    got = acme.client.get(url("global/notes/café.md"))
    assert got.status_code == 200 and got.headers["ETag"] == '"4"'
    assert got.json() == replaced.json()
    assert_error(globex.client.get(url("global/notes/café.md")), 404)


def test_paths_echo_the_callers_spelling_and_name_one_document(acme, globex) -> None:
    put_document(acme, "global/memories/notes/a.md", "one")
    assert acme.client.get(url("global/notes/a.md")).json()["path"] == "/notes/a.md"
    assert acme.client.get(url("global/memories/notes/a.md")).json()["path"] == (
        "/memories/notes/a.md")
    assert put_document(acme, "global/notes/a.md", "two").json()["version"] == 2
    assert ok(acme, command="view", path="/memories/notes/a.md").endswith("     1\ttwo")
    listed = acme.client.get(f"{BASE}/users/alice/documents").json()["documents"]
    assert [d["path"] for d in listed] == ["/notes/a.md"]


def test_the_three_scopes_are_three_documents(acme, globex) -> None:
    put_document(acme, "global/a.md", "g")
    put_document(acme, "profile/cooking/a.md", "p")
    put_document(acme, "session/s-1/a.md", "s")
    for where, scope, key, content in (("global/a.md", "global", None, "g"),
                                       ("profile/cooking/a.md", "profile", "cooking", "p"),
                                       ("session/s-1/a.md", "session", "s-1", "s")):
        body = acme.client.get(url(where)).json()
        assert (body["scope"], body["scope_key"], body["content"]) == (scope, key, content)
    assert acme.client.get(url("profile/baking/a.md")).status_code == 404
    assert acme.client.get(url("session/s-2/a.md")).status_code == 404
    assert ok(acme, command="view", path="/a.md", session_id="s-1",
              profile="cooking").endswith("1\ts")
    assert acme.client.delete(f"{BASE}/users/alice/sessions/s-1").status_code == 204
    assert acme.client.get(url("session/s-1/a.md")).status_code == 404
    assert acme.client.get(url("global/a.md")).status_code == 200


def test_if_match_replaces_or_deletes_only_that_version(acme, globex) -> None:
    put_document(acme, "global/a.md", "v1")
    put_document(acme, "global/a.md", "v2")
    assert_error(put_document(acme, "global/a.md", "x", headers={"If-Match": '"1"'}), 412)
    assert acme.client.get(url("global/a.md")).json()["content"] == "v2"
    response = put_document(acme, "global/a.md", "v3", headers={"If-Match": '"2"'})
    assert response.status_code == 200 and response.headers["ETag"] == '"3"'
    assert put_document(acme, "global/a.md", "v4", headers={"If-Match": '"1", "3"'}).status_code == 200
    assert_error(put_document(acme, "global/new.md", "x", headers={"If-Match": '"1"'}), 412)
    assert acme.client.get(url("global/new.md")).status_code == 404
    assert_error(acme.client.delete(url("global/a.md"), headers={"If-Match": '"3"'}), 412)
    assert acme.client.delete(url("global/a.md"), headers={"If-Match": '"4"'}).status_code == 204
    assert_error(acme.client.get(url("global/a.md")), 404, "not_found")
    assert_error(acme.client.delete(url("global/a.md")), 404)


def test_if_match_compares_strongly_a_weak_tag_matches_nothing(acme, globex) -> None:
    """``If-Match: "<version>"`` replaces only that version, else 412; ``W/"<version>"`` is not
    that tag: If-Match uses the strong comparison (RFC 9110, 13.1.1), and the weak tag was
    read as the version it names. If-None-Match on GET still compares weakly."""
    put_document(acme, "global/a.md", "v1")
    assert_error(put_document(acme, "global/a.md", "x", headers={"If-Match": 'W/"1"'}), 412)
    assert_error(acme.client.delete(url("global/a.md"), headers={"If-Match": 'W/"1"'}), 412)
    body = acme.client.get(url("global/a.md")).json()
    assert (body["content"], body["version"]) == ("v1", 1)
    assert put_document(acme, "global/a.md", "v2",
                        headers={"If-Match": 'W/"1", "1"'}).status_code == 200
    assert acme.client.get(url("global/a.md"), headers={"If-None-Match": 'W/"2"'}).status_code == 304


def test_if_none_match_star_creates_only(acme, globex) -> None:
    first = put_document(acme, "global/a.md", "first", headers={"If-None-Match": "*"})
    assert first.status_code in (200, 201) and first.json()["version"] == 1
    assert_error(put_document(acme, "global/a.md", "again", headers={"If-None-Match": "*"}), 412)
    assert acme.client.get(url("global/a.md")).json()["content"] == "first"
    # Another tenant's document of that name does not exist for this one.
    assert put_document(globex, "global/a.md", "g", headers={"If-None-Match": "*"}).status_code in (
        200, 201)


@pytest.mark.parametrize(("where", "written"), [
    ("global/.env", "/.env"), ("global/a/.git/x", "/a/.git/x"), ("global/100%25", "/100%"),
    ("global/a%5Cb", "/a\\b"), ("global/c:d", "/c:d"), ("global/a//b", "/a//b"),
    ("global/" + "a" * 255, "/" + "a" * 255), ("global/" + "a/" * 16 + "b", "/" + "a/" * 16 + "b"),
    ("profile/cooking/a%09b", "/a\tb"), ("session/s-1/memories/.x", "/memories/.x"),
])
def test_refused_paths_are_422_invalid_path_with_the_contracts_text(acme, globex, where,
                                                                    written) -> None:
    for response in (put_document(acme, where, "x"), acme.client.get(url(where))):
        error = assert_error(response, 422, "invalid_path")
        assert error["message"] == f"Error: {written} is not an allowed path"


def test_content_and_limit_rules_are_422_with_a_code(acme, globex) -> None:
    set_limits(acme, max_document_bytes=10, max_scope_bytes=25)
    assert_error(put_document(acme, "global/a.md", "x" * 11), 422, "document_too_large")
    assert put_document(acme, "global/a.md", "x" * 10).status_code in (200, 201)
    assert put_document(acme, "global/b.md", "x" * 10).status_code in (200, 201)
    assert_error(put_document(acme, "global/c.md", "x" * 6), 422, "scope_full")
    pressure = [e for e in events(acme) if e["type"] == "memory.pressure"]
    assert [(e["actor"], e["user_id"], e["data"]) for e in pressure] == [
        ("app", "alice", {"scope": "global", "scope_key": None, "used_bytes": 20,
                          "limit_bytes": 25})]
    assert put_document(acme, "session/s-1/c.md", "x" * 6).status_code in (200, 201)
    assert_error(put_document(acme, "global/d.md", "key AKIAIOSFODNN7EXAMPLE"), 422,
                 "credential_detected")
    assert_error(put_document(acme, "global/d.md", "ok", description="AKIAIOSFODNN7EXAMPLE"),
                 422, "credential_detected")
    assert_error(put_document(acme, "global/AKIAIOSFODNN7EXAMPLE.md", "ok"), 422,
                 "credential_detected")
    assert_error(put_document(acme, "global/d.md", "nul\x00"), 422, "not_text")
    assert acme.client.get(url("global/d.md")).status_code == 404


def test_every_write_records_an_app_event(acme, globex) -> None:
    put_document(acme, "global/a.md", "1")
    put_document(acme, "session/s-1/a.md", "1")
    put_document(acme, "global/a.md", "2")
    acme.client.delete(url("global/a.md"))
    assert [(e["type"], e["actor"], e["data"]["change"], e["data"]["path"], e["data"]["scope"])
            for e in events(acme)] == [
        ("memory.changed", "app", "created", "/a.md", "global"),
        ("memory.changed", "app", "created", "/a.md", "session"),
        ("memory.changed", "app", "updated", "/a.md", "global"),
        ("memory.changed", "app", "deleted", "/a.md", "global")]


def test_confidence_is_settable_between_0_and_1(acme, globex) -> None:
    assert put_document(acme, "global/a.md", "x").json()["confidence"] == 1.0
    assert put_document(acme, "global/a.md", "x", confidence=0.25).json()["confidence"] == 0.25
    assert put_document(acme, "global/a.md", "y").json()["confidence"] == 0.25
    for bad in (-0.1, 1.5, "high"):
        assert_error(put_document(acme, "global/a.md", "x", confidence=bad), 400)


def test_list_is_metadata_filtered_and_paginated(acme, globex) -> None:
    for where in ("global/notes/a.md", "global/notes/b.md", "global/todo.md",
                  "profile/cooking/r.md", "session/s-1/t.md", "session/s-2/u.md"):
        put_document(acme, where, "x")
    listing = acme.client.get(f"{BASE}/users/alice/documents")
    assert listing.status_code == 200
    documents = listing.json()["documents"]
    assert len(documents) == 6 and all("content" not in d for d in documents)
    assert all(FIELDS - {"content"} <= set(d) for d in documents)

    def paths(**query: str) -> list[str]:
        found = acme.client.get(f"{BASE}/users/alice/documents", query).json()["documents"]
        return sorted(f"{d['scope']}:{d['path']}" for d in found)

    assert paths(scope="session") == ["session:/t.md", "session:/u.md"]
    assert paths(scope="session", session_id="s-1") == ["session:/t.md"]
    assert paths(session_id="s-1", profile="cooking") == [
        "global:/notes/a.md", "global:/notes/b.md", "global:/todo.md", "profile:/r.md",
        "session:/t.md"]
    assert paths(prefix="/notes/") == paths(prefix="/memories/notes/") == [
        "global:/notes/a.md", "global:/notes/b.md"]
    seen: list[str] = []
    cursor = None
    while True:
        query = {"limit": 4, **({"cursor": cursor} if cursor else {})}
        page = acme.client.get(f"{BASE}/users/alice/documents", query).json()
        seen += [f"{d['scope']}:{d['scope_key']}:{d['path']}" for d in page["documents"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) == 6
    assert globex.client.get(f"{BASE}/users/alice/documents").json()["documents"] == []
