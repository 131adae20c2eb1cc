"""The end user a URL names is read with the API key, in one statement (api/authentication.py)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memoryhub.models import EndUser
from memoryhub.selectors.documents import enduser_find, enduser_prefetched
from tenants.context import tenant_context
from tests.spec.api_client import ok

PERSON_ALONE = 'FROM memoryhub_enduser u WHERE'  # enduser_find's own statement


def test_a_read_finds_its_person_with_the_key_not_in_a_query_of_its_own(acme, globex) -> None:
    ok(acme, command="create", path="/memories/a.md", file_text="hello\n")
    with CaptureQueriesContext(connection) as queries:
        assert "hello" in ok(acme, command="view", path="/memories/a.md")
    statements = [q["sql"] for q in queries.captured_queries]
    assert not [s for s in statements if PERSON_ALONE in s]
    assert [s for s in statements if "LEFT JOIN memoryhub_enduser u" in s]
    # Another tenant's key, same person's name: nobody there, and nothing of acme's leaks.
    assert ok(globex, command="view", path="/memories").startswith(
        "Here're the files and directories up to 2 levels deep in /memories")
    assert "a.md" not in ok(globex, command="view", path="/memories")


def test_a_write_locks_its_person_in_the_key_statement_and_a_view_does_not(acme) -> None:
    ok(acme, command="create", path="/memories/a.md", file_text="hello\n")
    for command, locks in (
        ({"command": "str_replace", "path": "/memories/a.md", "old_str": "hello",
          "new_str": "hi"}, True),
        ({"command": "view", "path": "/memories/a.md"}, False),
        ({"command": "nonsense"}, False),
    ):
        with CaptureQueriesContext(connection) as queries:
            response = acme.client.post("/api/v1/users/alice/memory", command, format="json")
        assert response.status_code == 200
        assert response.json()["is_error"] is (command["command"] == "nonsense")
        statements = [q["sql"] for q in queries.captured_queries]
        key_statement = next(s for s in statements if 'k."lookup_id"' in s)
        assert ("FOR NO KEY UPDATE" in key_statement) is locks, command
        assert not [s for s in statements if PERSON_ALONE in s], command


def test_a_body_that_does_not_parse_still_answers_401_for_a_bad_key_then_400(acme) -> None:
    bad_key = APIClient()
    bad_key.credentials(HTTP_AUTHORIZATION="Bearer mh_nope")
    for client, status in ((bad_key, 401), (acme.client, 400)):
        response = client.post("/api/v1/users/alice/memory", data="{nope",
                               content_type="application/json")
        assert response.status_code == status
    assert response.json()["error"]["code"] == "invalid_json"


def test_the_prefetched_person_is_taken_once_and_never_by_a_locking_find(acme) -> None:
    with tenant_context(acme.tenant.id):
        alice = EndUser.objects.create(tenant=acme.tenant, user_id="alice")
        stale = EndUser.objects.get(pk=alice.pk)
        EndUser.objects.filter(pk=alice.pk).update(memory_enabled=False)  # changed since
        with enduser_prefetched(stale):
            assert enduser_find(user_id="bob") is None  # another person: dropped, queried
            assert enduser_find(user_id="alice").memory_enabled is False
        with enduser_prefetched(stale):
            assert enduser_find(user_id="alice") is stale  # the offer, once
            assert enduser_find(user_id="alice").memory_enabled is False  # then the database
        with enduser_prefetched(stale):
            assert enduser_find(user_id="alice", for_update=True).memory_enabled is False
            assert enduser_find(user_id="alice") is not stale
        with enduser_prefetched(stale, locked=True):  # read with the lock: good for a write
            assert enduser_find(user_id="alice", for_update=True) is stale


def test_a_documents_put_locks_its_person_once_with_the_key(acme) -> None:
    url = "/api/v1/users/alice/documents/global/notes/a.md"
    assert acme.client.put(url, {"content": "one\n"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        response = acme.client.put(url, {"content": "two\n"}, format="json")
    assert response.status_code == 200 and response.json()["version"] == 2
    person_locks = [q["sql"] for q in queries.captured_queries
                    if "memoryhub_enduser" in q["sql"] and "FOR NO KEY UPDATE" in q["sql"]]
    assert len(person_locks) == 1 and 'k."lookup_id"' in person_locks[0]
