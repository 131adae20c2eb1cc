"""API v1, "Conventions": auth (401 vs 403), the error body, identifiers, 413, unknown users.

Black-box: every request goes through HTTP, as the external suite's would.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from tests.spec.api_client import BASE, anonymous, assert_error, err, ok, put_document

# One request per operation of the contract: (method, url, body).
MEMORY_OPERATIONS = [
    ("post", "/users/alice/memory", {"command": "view", "path": "/memories"}),
    ("get", "/users/alice/memory/index", None),
    ("get", "/users/alice/memory/snapshot", None),
    ("get", "/users/alice/documents", None),
    ("get", "/users/alice/documents/global/notes/a.md", None),
    ("put", "/users/alice/documents/global/notes/a.md", {"content": "x"}),
    ("delete", "/users/alice/documents/global/notes/a.md", None),
    ("get", "/users/alice/documents/profile/cooking/a.md", None),
    ("get", "/users/alice/documents/session/s-1/a.md", None),
    ("post", "/users/alice/recall", {"query": "diet"}),
    ("get", "/users", None),
    ("get", "/users/alice", None),
    ("patch", "/users/alice", {"memory_enabled": True}),
    ("delete", "/users/alice", None),
    ("delete", "/users/alice/sessions/s-1", None),
    ("get", "/users/alice/export", None),
    ("post", "/users/alice/portal-link", None),
]
ADMIN_OPERATIONS = [
    ("get", "/tenant", None),
    ("patch", "/tenant", {"name": "Acme"}),
    ("get", "/profiles", None),
    ("put", "/profiles/cooking", {"disabled": False}),
    ("get", "/events", None),
]


def send(client: Any, method: str, url: str, body: Any = None, **extra: Any) -> Any:
    return getattr(client, method)(BASE + url, body, format="json", **extra)


def key_with(kit: Any, permissions: str) -> str:
    """A key made the way an operator makes one: ``manage.py create_api_key``."""
    out = io.StringIO()
    call_command("create_api_key", kit.tenant.slug, permissions=permissions, stdout=out)
    return json.loads(out.getvalue())["api_key"]


# --- Auth ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "url", "body"), MEMORY_OPERATIONS + ADMIN_OPERATIONS)
def test_missing_or_unknown_key_is_401_with_the_error_body(acme, globex, method, url,
                                                           body) -> None:
    forged = acme.key[:-4] + ("AAAA" if not acme.key.endswith("AAAA") else "BBBB")
    headers = [None, "Bearer ", f"Bearer {forged}", "Bearer not-a-key", f"Basic {acme.key}",
               acme.key]
    for header in headers:
        client = anonymous()
        if header is not None:
            client.credentials(HTTP_AUTHORIZATION=header)
        response = send(client, method, url, body)
        assert_error(response, 401)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_a_key_without_the_permission_is_403(acme, globex) -> None:
    admin_only = acme.client_with(key_with(acme, "admin"))
    for method, url, body in MEMORY_OPERATIONS:
        assert_error(send(admin_only, method, url, body), 403)
    memory_only = acme.client_with(acme.memory_key)
    for method, url, body in ADMIN_OPERATIONS:
        assert_error(send(memory_only, method, url, body), 403)
    # ... and each key is enough for its own side.
    assert send(memory_only, "get", "/users/alice/memory/index").status_code == 200
    assert send(admin_only, "get", "/events").status_code == 200


def test_a_key_made_by_the_cli_works_and_names_one_tenant(acme, globex) -> None:
    key = key_with(acme, "memory,admin")
    client = acme.client_with(key)
    ok(acme, command="create", path="/memories/a.md", file_text="acme's")
    assert client.get(f"{BASE}/users/alice/documents/global/a.md").json()["content"] == "acme's"
    assert client.get(f"{BASE}/tenant").json()["slug"] == "acme"
    assert_error(globex.client.get(f"{BASE}/users/alice/documents/global/a.md"), 404)


# --- The error body --------------------------------------------------------------------------


def test_every_non_tool_error_has_the_error_body(acme, globex) -> None:
    c = acme.client
    assert_error(c.get(f"{BASE}/no-such-endpoint"), 404)
    assert_error(c.delete(f"{BASE}/tenant"), 405)
    assert_error(c.post(f"{BASE}/users/alice/memory", "{oops", content_type="application/json"),
                 400)
    assert_error(c.post(f"{BASE}/users/alice/memory", "command=view",
                        content_type="application/x-www-form-urlencoded"), 415)
    assert_error(c.get(f"{BASE}/users/alice/documents/global/absent.md"), 404, "not_found")
    assert_error(put_document(acme, "global/a.md", "x", headers={"If-Match": '"9"'}), 412)
    assert_error(put_document(acme, "global/%25.md", "x"), 422, "invalid_path")


# --- Identifiers ---------------------------------------------------------------------------

GOOD_USER_IDS = ["a", "A-Z.a_z@0:9+|-", "x" * 128, "user@example.com", "tenant:42|7"]
BAD_USER_IDS = ["x" * 129, "has space", "slash%2Fin", "é", "semi;colon", "quote'", "star*",
                "percent%25", "tilde~", "hash%23", "nul%00", "tab%09"]


def user_urls(user_id: str) -> list[tuple[str, str, Any]]:
    return [(m, u.replace("/users/alice", f"/users/{user_id}", 1), b)
            for m, u, b in MEMORY_OPERATIONS if u.startswith("/users/alice")]


@pytest.mark.parametrize("user_id", BAD_USER_IDS)
def test_an_invalid_user_id_is_400_invalid_user_id_everywhere(acme, globex, user_id) -> None:
    for method, url, body in user_urls(user_id):
        response = send(acme.client, method, url, body)
        if user_id == "slash%2Fin" and response.status_code == 404:
            continue  # %2F is a path separator once decoded: no such route
        assert_error(response, 400, "invalid_user_id")


def test_invalid_user_id_wins_over_other_bad_parts(acme, globex) -> None:
    bad = "bad user"
    for url in (f"/users/{bad}/documents/global/%25.md", f"/users/{bad}/documents/profile/BAD/a",
                f"/users/{bad}/documents/session/bad%20s/a", f"/users/{bad}/sessions/bad%20s",
                f"/users/{bad}/memory/index?session_id=bad%20s&profile=BAD"):
        method = "put" if "documents" in url else ("delete" if "sessions" in url else "get")
        body = {"content": "x"} if method == "put" else None
        assert_error(send(acme.client, method, url, body), 400, "invalid_user_id")
    assert_error(send(acme.client, "post", f"/users/{bad}/memory", "not an object"), 400,
                 "invalid_user_id")


@pytest.mark.parametrize("user_id", GOOD_USER_IDS)
def test_every_allowed_user_id_character_works(acme, globex, user_id) -> None:
    assert ok(acme, user_id, command="create", path="/memories/a.md", file_text="hi") == (
        "File created successfully at: /memories/a.md")
    response = acme.client.get(f"{BASE}/users/{user_id}")
    assert response.status_code == 200 and response.json()["user_id"] == user_id
    assert response.json()["documents"]["total"] == 1
    listed = acme.client.get(f"{BASE}/users", {"limit": 1000}).json()["users"]
    assert user_id in [u["user_id"] for u in listed]


def test_session_id_and_profile_rules(acme, globex) -> None:
    url = f"{BASE}/users/alice/memory/index"
    for session_id in ["s", "S-1.2_3@x:y+z|w", "s" * 128]:
        assert acme.client.get(url, {"session_id": session_id}).status_code == 200
    for session_id in ["s" * 129, "a b", "s/1", "é"]:
        assert acme.client.get(url, {"session_id": session_id}).status_code == 400
    for profile in ["p", "a-z_0-9", "p" * 64]:
        assert acme.client.get(url, {"profile": profile}).status_code == 200
    for profile in ["p" * 65, "Cooking", "a.b", "a b", "a@b", "a:b"]:
        assert acme.client.get(url, {"profile": profile}).status_code == 400
    # In the memory tool they are context fields: a bad one is a tool error, never HTTP 4xx.
    content, is_error = acme.client.post(f"{BASE}/users/alice/memory", {
        "command": "view", "path": "/memories", "profile": "Cooking"}, format="json").json(
    ).values()
    assert is_error is True and content.startswith("Error: ")


# --- Sizes ---------------------------------------------------------------------------------

MIB = 1024 * 1024


@pytest.mark.parametrize(("method", "url"), [
    ("post", "/users/alice/memory"), ("put", "/users/alice/documents/global/a.md"),
    ("post", "/users/alice/recall"), ("patch", "/tenant"), ("patch", "/users/alice"),
])
def test_a_body_over_1_mib_is_413(acme, globex, method, url) -> None:
    field = "file_text" if url.endswith("memory") else ("query" if "recall" in url else "content")
    padding = "x" * (MIB + 1 - len(json.dumps({field: ""})))
    body = json.dumps({field: padding})
    assert len(body.encode()) == MIB + 1
    response = getattr(acme.client, method)(BASE + url, body, content_type="application/json")
    assert_error(response, 413)


def test_a_body_of_exactly_1_mib_is_not_413(acme, globex) -> None:
    prefix = {"command": "create", "path": "/memories/big.md"}
    shell = json.dumps({**prefix, "file_text": ""})
    body = json.dumps({**prefix, "file_text": "x" * (MIB - len(shell))})
    assert len(body.encode()) == MIB
    response = acme.client.post(f"{BASE}/users/alice/memory", body,
                                content_type="application/json")
    assert response.status_code == 200
    content = response.json()["content"]  # refused by max_document_bytes, as a tool error
    assert response.json()["is_error"] is True and "condense it first" in content


# --- Unknown users and other tenants -----------------------------------------------------------


def test_reading_an_unknown_user_gives_empty_memory_not_404(acme, globex) -> None:
    c = acme.client
    assert c.get(f"{BASE}/users/nobody/memory/index").json() == {
        "enabled": True, "text": "", "entries": [], "omitted": 0}
    assert c.get(f"{BASE}/users/nobody/memory/snapshot").json() == {"text": ""}
    assert c.get(f"{BASE}/users/nobody/documents").json()["documents"] == []
    assert c.post(f"{BASE}/users/nobody/recall", {"query": "anything"}, format="json").json() == {
        "results": [], "context": ""}
    person = c.get(f"{BASE}/users/nobody").json()
    assert person["user_id"] == "nobody" and person["documents"]["total"] == 0
    assert c.get(f"{BASE}/users/nobody/export").status_code == 200
    assert ok(acme, "nobody", command="view", path="/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden "
        "items:\n4K\t/memories")
    # ... and reading created nobody.
    assert "nobody" not in [u["user_id"] for u in c.get(f"{BASE}/users").json()["users"]]


def test_another_tenants_person_reads_like_an_unknown_one(acme, globex) -> None:
    ok(acme, command="create", path="/memories/secret.md", file_text="acme only")
    put_document(acme, "session/s-1/s.md", "acme session")
    for url in ("/users/alice/memory/index?session_id=s-1", "/users/alice/memory/snapshot",
                "/users/alice/documents", "/users/alice", "/users/alice/export"):
        theirs = globex.client.get(BASE + url)
        unknown = globex.client.get(BASE + url.replace("alice", "zed"))
        assert theirs.status_code == unknown.status_code == 200
        assert json.dumps(theirs.json()).replace("alice", "zed") == json.dumps(unknown.json())
    assert err(globex, command="view", path="/memories/secret.md") == (
        "The path /memories/secret.md does not exist. Please provide a valid path.")
    assert err(globex, command="delete", path="/memories/secret.md") == (
        "The path /memories/secret.md does not exist")
    assert ok(acme, command="view", path="/memories/secret.md").endswith("1\tacme only")
