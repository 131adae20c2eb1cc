"""A key bound to one end user reaches only that person: on every /api/v1 and /mem0/ route (the
CASES of test_cross_tenant.py), acme's key bound to bob addressing alice gets exactly what it gets
for a person who does not exist (same status, same body), a write for either is 403
``permission_denied``, tenant-wide endpoints are 403, and acme's data is untouched.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import resolve

from tests.isolation.test_cross_tenant import (
    CASES,
    VICTIM,
    Case,
    acme_state,
    normalized,
    seed_acme,
    send,
    target_and_absent,
)

OWNER = "bob"  # the person acme's bound key reaches

# The routes whose URL names no person but that serve a bound key (showing only its person;
# mem0's name the person in the body or query, or find a memory among the key's person's).
SERVES_BOUND_KEYS = {"api:users", "mem0:ping", "mem0:memory", "mem0:history", "mem0:entities",
                     "mem0:batch"}
BOUND_REFUSAL = "This API key is bound to one end user and cannot act for another."


def bound_client(kit, user_id: str = OWNER, permissions=("memory",)):
    response = kit.client.post("/api/v1/keys", {"name": f"{user_id}'s device", "user_id": user_id,
                                                "permissions": list(permissions)}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["user_id"] == user_id
    return kit.client_with(response.json()["api_key"])


def is_read(case: Case) -> bool:
    if case.method == "get":
        return True
    if case.url.endswith(("/recall", "/context")):
        return True
    if case.url.startswith("/mem0/v3/memories/") and case.method == "post":
        return not case.url.endswith("/add/")  # mem0's search and get_all are POSTs
    return case.url.endswith("/memory") and case.body["command"] == "view"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_another_person_looks_absent_to_a_bound_key(acme, case: Case) -> None:
    seeded = seed_acme(acme)
    client = bound_client(acme)
    assert client.get(f"/api/v1/users/{OWNER}").status_code == 200  # last_used_at set now
    before = acme_state(acme)
    target, absent = target_and_absent(case, seeded)
    used = list(target)

    reached = send(client, case, target)
    missed = send(client, case, absent)

    assert normalized(reached, target) == normalized(missed, absent)
    assert acme_state(acme) == before
    shown = reached.content.decode()
    assert "Vegetarian" not in shown and "Lisbon" not in shown
    route = resolve(case.url.format(**{**target, "user": "x"}).split("?")[0]).view_name
    if "user" not in used and route not in SERVES_BOUND_KEYS:
        assert reached.status_code == 403, shown  # tenant-wide: not for a bound key
    elif "user" in used and not is_read(case):
        assert reached.status_code == 403, shown
        if case.url.startswith("/mem0/"):  # mem0's error shape
            assert reached.json() == {"detail": BOUND_REFUSAL}
        else:
            assert reached.json()["error"]["code"] == "permission_denied"
    else:
        assert reached.status_code in (200, 304, 404), shown  # a read: an absent person


def test_a_bound_key_reads_and_writes_its_own_person(acme) -> None:
    seed_acme(acme)
    client = bound_client(acme)
    created = client.post(f"/api/v1/users/{OWNER}/memory", {
        "command": "create", "path": "/memories/notes.md", "file_text": "Likes tea."},
        format="json")
    assert created.json() == {"content": "File created successfully at: /memories/notes.md",
                              "is_error": False}
    assert client.get(f"/api/v1/users/{OWNER}/documents/global/notes.md").json()["content"] == (
        "Likes tea.")
    recalled = client.post(f"/api/v1/users/{OWNER}/recall", {"query": "tea"}, format="json")
    assert recalled.json()["results"][0]["path"] == "/notes.md"
    assert client.get(f"/api/v1/users/{OWNER}").json()["documents"]["total"] == 1
    # The list shows only the key's person, though acme has alice too.
    assert [u["user_id"] for u in client.get("/api/v1/users").json()["users"]] == [OWNER]
    assert {u["user_id"] for u in acme.client.get("/api/v1/users").json()["users"]} == {
        OWNER, VICTIM}
    assert client.delete(f"/api/v1/users/{OWNER}").status_code == 204
    assert client.get(f"/api/v1/users/{OWNER}").json()["documents"]["total"] == 0


def test_the_same_key_unbound_reaches_everyone(acme) -> None:
    """The matrix above would prove nothing if an unbound memory key missed alice as well."""
    seed_acme(acme)
    client = acme.client_with(acme.memory_key)
    assert client.get(f"/api/v1/users/{VICTIM}/documents/global/notes/diet.md").status_code == 200
    assert client.get(f"/api/v1/users/{VICTIM}").json()["documents"]["total"] == 3


def test_a_bound_key_cannot_have_admin_nor_reach_admin_endpoints(acme) -> None:
    refused = acme.client.post("/api/v1/keys", {"name": "x", "user_id": OWNER,
                                                "permissions": ["memory", "admin"]}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_permissions"
    client = bound_client(acme)
    for url in ("/api/v1/tenant", "/api/v1/keys", "/api/v1/events", "/api/v1/profiles"):
        response = client.get(url)
        assert response.status_code == 403, url
        assert response.json()["error"]["code"] == "permission_denied"
    bad = acme.client.post("/api/v1/keys", {"name": "x", "user_id": "bad user"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_user_id"


def test_keys_api_lists_masked_keys_and_revokes(acme, globex) -> None:
    created = acme.client.post("/api/v1/keys", {"name": "phone", "user_id": OWNER},
                               format="json").json()
    assert created["permissions"] == ["memory"]
    listed = acme.client.get("/api/v1/keys").json()["keys"]
    phone = next(k for k in listed if k["id"] == created["id"])
    assert phone["user_id"] == OWNER and phone["masked"].endswith("_…")
    assert created["api_key"] not in json.dumps(listed)
    client = acme.client_with(created["api_key"])
    assert client.get(f"/api/v1/users/{OWNER}").status_code == 200
    assert globex.client.delete(f"/api/v1/keys/{created['id']}").status_code == 404
    assert acme.client.delete(f"/api/v1/keys/{created['id']}").status_code == 204
    assert client.get(f"/api/v1/users/{OWNER}").status_code == 401
    assert acme.client.delete(f"/api/v1/keys/{created['id']}").status_code == 204  # again
    assert acme.client.delete("/api/v1/keys/999999").status_code == 404



def test_a_key_name_of_only_spaces_is_refused_as_on_the_dashboard(acme) -> None:
    # The dashboard's form and create_api_key refuse it; the API listed a key named "   ".
    for name in ("", "   ", "\t\n"):
        response = acme.client.post("/api/v1/keys", {"name": name}, format="json")
        assert response.status_code == 400, name
        assert response.json()["error"]["code"] == "invalid_request"
        assert response.json()["error"]["message"].startswith("name: ")
    assert [k["name"] for k in acme.client.get("/api/v1/keys").json()["keys"]] == ["agent", "full"]

def test_create_api_key_command_binds_a_key(acme) -> None:
    out = io.StringIO()
    call_command("create_api_key", "acme", "--permissions", "memory", "--user", OWNER, stdout=out)
    printed = json.loads(out.getvalue())
    assert printed["user_id"] == OWNER
    client = acme.client_with(printed["api_key"])
    assert [u["user_id"] for u in client.get("/api/v1/users").json()["users"]] == []
    assert client.put(f"/api/v1/users/{VICTIM}/documents/global/a.md", {"content": "x"},
                      format="json").status_code == 403
    with pytest.raises(CommandError, match="admin"):
        call_command("create_api_key", "acme", "--permissions", "memory,admin", "--user", OWNER,
                     stdout=io.StringIO())
    with pytest.raises(CommandError, match="user_id"):
        call_command("create_api_key", "acme", "--user", "no spaces", stdout=io.StringIO())
