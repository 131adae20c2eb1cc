"""The app-facing documents API: GET/PUT/DELETE one document, and the paginated list."""

from __future__ import annotations

import json

import pytest

from memoryhub.models import MemoryEvent
from tenants.context import tenant_context
from tests.api.helpers import DOCUMENTS as BASE
from tests.api.helpers import doc_url, put_doc

# Authentication (key lookup, last_used_at), the tenant context's savepoint and settings,
# and the list's own query: a constant, whatever the number of rows.
LIST_QUERIES = 12


def events(kit) -> list[tuple[str, dict]]:
    with tenant_context(kit.tenant.id):
        return [(e.actor, e.data) for e in MemoryEvent.objects.order_by("id")]


# --- one document ----------------------------------------------------------------------------


def test_put_creates_then_replaces_with_versions_and_etags(acme, globex) -> None:
    url = doc_url("alice", "global/notes/diet.md")
    created = acme.client.put(url, {"content": "Vegetarian.", "description": "Diet"}, format="json")
    assert created.status_code == 201
    assert created["ETag"] == '"1"'
    assert created["Location"].endswith(url)
    body = created.json()
    assert body["path"] == "/notes/diet.md"
    assert (body["scope"], body["scope_key"]) == ("global", None)
    assert body["content"] == "Vegetarian." and body["description"] == "Diet"
    assert (body["bytes"], body["version"], body["updated_by"]) == (11, 1, "app")
    assert body["confidence"] == 1.0
    assert set(body) == {"path", "scope", "scope_key", "description", "content", "bytes",
                         "version", "updated_by", "confidence", "created_at", "updated_at"}

    replaced = acme.client.put(url, {"content": "Végétarien.", "confidence": 0.5}, format="json")
    assert replaced.status_code == 200
    assert replaced["ETag"] == '"2"'
    again = replaced.json()
    assert (again["version"], again["bytes"], again["confidence"]) == (2, 13, 0.5)
    assert again["description"] == "Diet"  # omitted: kept
    assert again["created_at"] == body["created_at"]

    fetched = acme.client.get(url)
    assert fetched.status_code == 200 and fetched["ETag"] == '"2"'
    assert fetched.json() == again
    assert [d["change"] for _, d in events(acme)] == ["created", "updated"]
    assert {actor for actor, _ in events(acme)} == {"app"}
    assert events(globex) == []


def test_the_path_is_echoed_as_the_caller_wrote_it(acme, globex) -> None:
    put_doc(acme, "alice", "global/memories/notes/a.md", "one")
    # The same document, spelled without the root prefix.
    short = acme.client.get(doc_url("alice", "global/notes/a.md"))
    assert short.json()["path"] == "/notes/a.md" and short.json()["content"] == "one"
    long = acme.client.get(doc_url("alice", "global/memories/notes/a.md"))
    assert long.json()["path"] == "/memories/notes/a.md"
    replaced = put_doc(acme, "alice", "global/notes/a.md", "two")
    assert replaced.status_code == 200 and replaced.json()["version"] == 2


@pytest.mark.parametrize(("written", "path"), [
    ("what%3F.md", "/what?.md"), ("a%23b.md", "/a#b.md"), ("caf%C3%A9%20au%20lait.md",
                                                          "/café au lait.md"),
])
def test_the_location_of_a_created_document_reads_it(acme, globex, written, path) -> None:
    """The Location was built from the decoded path: "?" and "#" began a query string or a
    fragment, and following it read /what or /a, not the document."""
    put_doc(acme, "alice", "global/what", "another document")
    created = acme.client.put(doc_url("alice", f"session/s1/{written}"), {"content": "it"},
                              format="json")
    assert created.status_code == 201
    location = created["Location"]
    assert location.endswith(doc_url("alice", f"session/s1/{written}"))
    followed = acme.client.get(location.removeprefix("http://testserver"))
    assert followed.status_code == 200, followed.content
    assert (followed.json()["path"], followed.json()["content"]) == (path, "it")
    assert globex.client.get(location.removeprefix("http://testserver")).status_code == 404


def test_scopes_are_separate_documents(acme, globex) -> None:
    put_doc(acme, "alice", "global/todo.md", "g")
    put_doc(acme, "alice", "profile/cooking/todo.md", "p")
    put_doc(acme, "alice", "session/s-1/todo.md", "s")
    put_doc(acme, "alice", "session/s-2/todo.md", "s2")
    for where, content, key in (("global/todo.md", "g", None),
                                ("profile/cooking/todo.md", "p", "cooking"),
                                ("session/s-1/todo.md", "s", "s-1"),
                                ("session/s-2/todo.md", "s2", "s-2")):
        body = acme.client.get(doc_url("alice", where)).json()
        assert (body["content"], body["scope_key"]) == (content, key)
    assert acme.client.get(doc_url("alice", "profile/other/todo.md")).status_code == 404


def test_if_match_replaces_only_that_version(acme, globex) -> None:
    url = doc_url("alice", "global/a.md")
    put_doc(acme, "alice", "global/a.md", "v1")
    stale = acme.client.put(url, {"content": "x"}, format="json", HTTP_IF_MATCH='"7"')
    assert stale.status_code == 412
    assert stale.json()["error"]["code"] == "precondition_failed"
    ok = acme.client.put(url, {"content": "v2"}, format="json", HTTP_IF_MATCH='"1"')
    assert ok.status_code == 200 and ok.json()["version"] == 2
    assert acme.client.put(url, {"content": "v3"}, format="json",
                           HTTP_IF_MATCH='"1"').status_code == 412
    assert acme.client.put(url, {"content": "v3"}, format="json",
                           HTTP_IF_MATCH='"1", "2"').status_code == 200
    assert acme.client.put(url, {"content": "v4"}, format="json",
                           HTTP_IF_MATCH="*").status_code == 200
    assert acme.client.get(url).json()["content"] == "v4"
    # If-Match on a document that does not exist: nothing is created.
    missing = doc_url("alice", "global/missing.md")
    for tag in ('"1"', "*"):
        response = acme.client.put(missing, {"content": "x"}, format="json", HTTP_IF_MATCH=tag)
        assert response.status_code == 412
    assert acme.client.get(missing).status_code == 404
    newcomer = acme.client.put(doc_url("bob", "global/a.md"), {"content": "x"}, format="json",
                               HTTP_IF_MATCH='"1"')
    assert newcomer.status_code == 412
    assert acme.client.get("/api/v1/users/bob").json()["created_at"] is None


def test_if_none_match_star_creates_only(acme, globex) -> None:
    url = doc_url("alice", "session/s1/a.md")
    first = acme.client.put(url, {"content": "1"}, format="json", HTTP_IF_NONE_MATCH="*")
    assert first.status_code == 201
    second = acme.client.put(url, {"content": "2"}, format="json", HTTP_IF_NONE_MATCH="*")
    assert second.status_code == 412
    assert second.json()["error"]["code"] == "precondition_failed"
    assert acme.client.get(url).json()["content"] == "1"
    weird = acme.client.put(url, {"content": "2"}, format="json", HTTP_IF_NONE_MATCH='"1"')
    assert weird.status_code == 400


def test_get_with_if_none_match_is_304_while_current(acme, globex) -> None:
    url = doc_url("alice", "global/a.md")
    put_doc(acme, "alice", "global/a.md")
    cached = acme.client.get(url, HTTP_IF_NONE_MATCH='"1"')
    assert cached.status_code == 304 and cached["ETag"] == '"1"'
    put_doc(acme, "alice", "global/a.md", "changed")
    assert acme.client.get(url, HTTP_IF_NONE_MATCH='"1"').status_code == 200


def test_delete_is_204_honours_if_match_and_records_an_event(acme, globex) -> None:
    url = doc_url("alice", "profile/cooking/a.md")
    put_doc(acme, "alice", "profile/cooking/a.md")
    put_doc(acme, "alice", "profile/cooking/a.md", "v2")
    assert acme.client.delete(url, HTTP_IF_MATCH='"1"').status_code == 412
    assert acme.client.get(url).status_code == 200
    assert acme.client.delete(url, HTTP_IF_MATCH='"2"').status_code == 204
    gone = acme.client.get(url)
    assert gone.status_code == 404
    assert gone.json() == {"error": {"code": "not_found", "message": "No document at this path."}}
    again = acme.client.delete(url)
    assert again.status_code == 404 and again.json() == gone.json()
    assert events(acme)[-1] == ("app", {"change": "deleted", "path": "/a.md", "scope": "profile",
                                        "scope_key": "cooking"})


def test_missing_documents_and_people_are_404_with_the_error_body(acme, globex) -> None:
    put_doc(acme, "alice", "global/a.md")
    for user, where in (("alice", "global/b.md"), ("nobody", "global/a.md"),
                        ("alice", "session/s1/a.md")):
        response = acme.client.get(doc_url(user, where))
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize("where", [
    "global/", "global/memories", "global/notes/", "global/a//b.md", "global/.hidden",
    "global/a/../b.md", "global/a%5Cb.md", "global/a%25b.md", "global/a:b.md",
    "global/a%00b.md", "global/" + "x/" * 16 + "y.md", "global/" + "x" * 256,
    "global/memories/memories/a.md",
])
def test_invalid_paths_are_422_invalid_path(acme, globex, where) -> None:
    for method in ("get", "put", "delete"):
        response = getattr(acme.client, method)(doc_url("alice", where), {"content": "x"},
                                                format="json")
        assert response.status_code == 422, (method, where)
        error = response.json()["error"]
        assert error["code"] == "invalid_path"
        assert error["message"].endswith("is not an allowed path"), error


@pytest.mark.parametrize(("content", "code"), [
    ("x" * 16385, "document_too_large"),
    ("my key is sk-ant-api03-" + "a1B2" * 20, "credential_detected"),
    ("postgres://admin:hunter2secret@db.internal:5432/app", "credential_detected"),
    ("before\x00after", "not_text"),
    ("lone \ud800 surrogate", "not_text"),
])
def test_broken_content_rules_are_422_with_a_code(acme, globex, content, code) -> None:
    body = json.dumps({"content": content})  # ASCII-escaped: a lone surrogate travels as \ud800
    response = acme.client.put(doc_url("alice", "global/a.md"), body,
                               content_type="application/json")
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == code
    assert acme.client.get(doc_url("alice", "global/a.md")).status_code == 404
    # A refused first write creates nobody.
    assert acme.client.get("/api/v1/users/alice").json()["created_at"] is None


def test_full_scope_is_422_and_records_a_pressure_event(acme, globex) -> None:
    acme.client.patch("/api/v1/tenant", {"limits": {"max_scope_bytes": 10}}, format="json")
    put_doc(acme, "alice", "session/s1/a.md", "12345678")
    response = acme.client.put(doc_url("alice", "session/s1/b.md"), {"content": "abc"},
                               format="json")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "scope_full"
    assert acme.client.get(doc_url("alice", "session/s1/b.md")).status_code == 404
    feed = acme.client.get("/api/v1/events").json()["events"]
    assert feed[-1]["type"] == "memory.pressure"
    assert feed[-1]["data"] == {"scope": "session", "scope_key": "s1", "used_bytes": 8,
                                "limit_bytes": 10} | {k: v for k, v in feed[-1]["data"].items()
                                                      if k not in {"scope", "scope_key",
                                                                   "used_bytes", "limit_bytes"}}
    # Another scope of the same person is not full.
    put_doc(acme, "alice", "session/s2/b.md", "abc")


def test_a_document_cannot_sit_under_another_document(acme, globex) -> None:
    put_doc(acme, "alice", "global/notes", "a file")
    response = acme.client.put(doc_url("alice", "global/notes/a.md"), {"content": "x"},
                               format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (422, "invalid_path")


@pytest.mark.parametrize("body", [
    {}, {"content": 5}, {"content": None}, {"content": "x", "description": 5},
    {"content": "x", "confidence": 1.5},
    {"content": "x", "confidence": "high"}, {"content": "x", "confidence": True},
    {"content": "x", "descripton": "typo"}, ["content"],
])
def test_malformed_bodies_are_400(acme, globex, body) -> None:
    response = acme.client.put(doc_url("alice", "global/a.md"), body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("description", [
    "two\nlines", "carriage\rreturn", "tab\there", "d" * 201, "\U0001f600" * 201, "nul\x00",
])
def test_a_description_that_breaks_the_one_line_rule_is_422_not_text(acme, globex,
                                                                     description) -> None:
    """A document's description is one line of at most 200 characters (the contract's
    "Memory documents"); breaking it is a content rule broken: 422 ``not_text``, whichever
    character or length breaks it, as the memory tool refuses it. A newline or a 201st
    character was 400 ``invalid_request`` (the serializer's check), a tab 422."""
    url = doc_url("alice", "global/a.md")
    response = acme.client.put(url, {"content": "x", "description": description},
                               format="json")
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "not_text"
    assert acme.client.get(url).status_code == 404
    fits = acme.client.put(url, {"content": "x", "description": "\U0001f600" * 200},
                           format="json")
    assert (fits.status_code, fits.json()["description"]) == (201, "\U0001f600" * 200)


def test_invalid_identifiers_in_the_url_are_400(acme, globex) -> None:
    cases = ((f"{BASE.format(user='bad%20user')}/global/a.md", "invalid_user_id"),
             (f"{BASE.format(user='x' * 129)}/global/a.md", "invalid_user_id"),
             (doc_url("alice", "profile/Cooking/a.md"), "invalid_profile"),
             (doc_url("alice", "session/s%20 1/a.md"), "invalid_session_id"))
    for url, code in cases:
        for method in ("get", "put", "delete"):
            response = getattr(acme.client, method)(url, {"content": "x"}, format="json")
            assert (response.status_code, response.json()["error"]["code"]) == (400, code), url


def test_a_body_over_1_mib_is_413(acme, globex) -> None:
    response = acme.client.put(doc_url("alice", "global/a.md"),
                               {"content": "x" * (1024 * 1024 + 1)}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"
    assert acme.client.get(doc_url("alice", "global/a.md")).status_code == 404


def test_memory_turned_off_refuses_writes_but_not_reads_or_deletes(acme, globex) -> None:
    put_doc(acme, "alice", "global/a.md")
    acme.client.patch("/api/v1/users/alice", {"memory_enabled": False}, format="json")
    refused = acme.client.put(doc_url("alice", "global/a.md"), {"content": "new"}, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "memory_disabled")
    assert acme.client.get(doc_url("alice", "global/a.md")).json()["content"] == "hello"
    assert acme.client.delete(doc_url("alice", "global/a.md")).status_code == 204
    # Globex's own alice is not affected by acme's switch.
    put_doc(globex, "alice", "global/a.md")


def test_documents_need_the_memory_permission(acme, globex) -> None:
    from tests.factories import ApiKeyFactory

    admin_only = ApiKeyFactory(tenant=acme.tenant, name="admin", permissions=["admin"])
    client = acme.client_with(admin_only.plaintext)
    assert client.get(doc_url("alice", "global/a.md")).status_code == 403
    assert client.put(doc_url("alice", "global/a.md"), {"content": "x"},
                      format="json").status_code == 403
    assert client.get(BASE.format(user="alice")).status_code == 403
    assert acme.client_with(acme.memory_key).get(doc_url("alice", "global/a.md")).status_code == 404


# --- the list ------------------------------------------------------------------------------


def seed_documents(kit, user: str = "alice") -> None:
    for where in ("global/b.md", "global/notes/a.md", "global/notes-old/x.md",
                  "profile/cooking/r.md", "profile/travel/t.md",
                  "session/s1/one.md", "session/s2/two.md"):
        put_doc(kit, user, where, f"content of {where}")


def listed(kit, user: str = "alice", **query) -> list[tuple[str, str | None, str]]:
    response = kit.client.get(BASE.format(user=user), {"limit": 1000, **query})
    assert response.status_code == 200, response.content
    return [(d["scope"], d["scope_key"], d["path"]) for d in response.json()["documents"]]


def test_list_shows_metadata_in_a_stable_order(acme, globex) -> None:
    seed_documents(acme)
    seed_documents(globex, "bob")
    body = acme.client.get(BASE.format(user="alice")).json()
    assert [(d["scope"], d["scope_key"], d["path"]) for d in body["documents"]] == [
        ("global", None, "/b.md"), ("global", None, "/notes-old/x.md"),
        ("global", None, "/notes/a.md"), ("profile", "cooking", "/r.md"),
        ("profile", "travel", "/t.md"), ("session", "s1", "/one.md"),
        ("session", "s2", "/two.md"),
    ]  # code-point order whatever the database's locale: "-" sorts before "/"
    assert body["next_cursor"] is None
    first = body["documents"][0]
    assert "content" not in first
    assert {"path", "scope", "scope_key", "description", "bytes", "version", "updated_by",
            "confidence", "created_at", "updated_at"} <= set(first)
    assert listed(globex, "alice") == []


def test_list_filters(acme, globex) -> None:
    seed_documents(acme)
    assert {p for _, _, p in listed(acme, scope="global")} == {
        "/b.md", "/notes/a.md", "/notes-old/x.md"}
    assert listed(acme, scope="session", session_id="s1") == [("session", "s1", "/one.md")]
    assert {k for _, k, _ in listed(acme, scope="session")} == {"s1", "s2"}
    assert listed(acme, scope="profile", profile="travel") == [("profile", "travel", "/t.md")]
    # A conversation's view: its session, its profile, and global.
    seen = listed(acme, session_id="s1", profile="cooking")
    assert {(s, k) for s, k, _ in seen} == {("global", None), ("profile", "cooking"),
                                           ("session", "s1")}
    assert {(s, k) for s, k, _ in listed(acme, session_id="s2")} == {("global", None),
                                                                     ("session", "s2")}
    assert {p for _, _, p in listed(acme, prefix="/notes/")} == {"/notes/a.md"}
    assert {p for _, _, p in listed(acme, prefix="/memories/notes")} == {
        "/notes/a.md", "/notes-old/x.md"}
    assert len(listed(acme, prefix="/memories")) == 7
    assert listed(acme, prefix="/zzz") == []
    assert listed(acme, "nobody") == []


@pytest.mark.parametrize(("query", "code"), [
    ({"scope": "world"}, "invalid_scope"), ({"session_id": "a b"}, "invalid_session_id"),
    ({"profile": "UP"}, "invalid_profile"), ({"prefix": "notes"}, "invalid_prefix"),
    ({"prefix": "/notes/\x00"}, "invalid_prefix"),  # PostgreSQL's error was a 500
    ({"limit": "0"}, "invalid_limit"), ({"cursor": "!!"}, "invalid_cursor"),
])
def test_list_refuses_bad_parameters(acme, globex, query, code) -> None:
    response = acme.client.get(BASE.format(user="alice"), query)
    assert (response.status_code, response.json()["error"]["code"]) == (400, code)


def test_list_pages_with_a_cursor_in_bounded_queries(acme, globex,
                                                     django_assert_max_num_queries) -> None:
    seed_documents(acme)
    seed_documents(globex, "alice")
    pages, cursor = [], None
    while True:
        query = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        with django_assert_max_num_queries(LIST_QUERIES):
            body = acme.client.get(BASE.format(user="alice"), query).json()
        pages.append([(d["scope"], d["scope_key"], d["path"]) for d in body["documents"]])
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [row for page in pages for row in page] == listed(acme)
    # A document added behind the cursor does not shift the next page.
    first = acme.client.get(BASE.format(user="alice"), {"limit": 3}).json()
    put_doc(acme, "alice", "global/a.md")
    second = acme.client.get(BASE.format(user="alice"),
                             {"limit": 3, "cursor": first["next_cursor"]}).json()
    assert [d["path"] for d in second["documents"]] == [p for _, _, p in pages[1]]
