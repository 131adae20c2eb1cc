"""The end user a URL names is read with the API key, in one statement (api/authentication.py),
and handed to the services by the view (api/base.py: ``TenantAPIView.end_user``)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memoryhub.errors import MemoryDisabled
from memoryhub.memory_tool.commands import tool_run
from memoryhub.models import EndUser
from memoryhub.services.documents import document_put
from memoryhub.services.writer import Writer
from tenants.context import tenant_context
from tests.spec.api_client import ok

PERSON_ALONE = 'FROM memoryhub_enduser u WHERE'  # end_user_find's own statement


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


def test_a_person_read_without_the_lock_is_read_again_by_a_write_and_only_then(acme) -> None:
    """The memory tool and the documents service trust a person handed to them read with the
    write lock; one read without it (an unlocked read is never good for a write) they read
    again, locked, and so see the person as they are now."""
    create = {"command": "create", "path": "/memories/a.md", "file_text": "hello\n"}
    with tenant_context(acme.tenant.id):
        alice = EndUser.objects.create(tenant=acme.tenant, user_id="alice")
        stale = EndUser.objects.get(pk=alice.pk)
        EndUser.objects.filter(pk=alice.pk).update(memory_enabled=False)  # changed since
        with CaptureQueriesContext(connection) as queries:
            content, is_error = tool_run(tenant=acme.tenant, user_id="alice", end_user=stale,
                                         end_user_locked=False, payload=create)
        assert is_error and "memory is disabled by the user" in content
        assert [q for q in queries.captured_queries
                if PERSON_ALONE in q["sql"] and "FOR NO KEY UPDATE" in q["sql"]]
        with pytest.raises(MemoryDisabled):
            document_put(writer=Writer(tenant=acme.tenant, actor="app"), end_user=stale,
                         scope="global", scope_key="", path="/a.md", content="x")
        # A read takes the person as handed over: no statement of its own, nothing locked.
        with CaptureQueriesContext(connection) as queries:
            content, is_error = tool_run(
                tenant=acme.tenant, user_id="alice", end_user=stale, end_user_locked=False,
                payload={"command": "view", "path": "/memories"},
            )
        assert not is_error
        assert not [q for q in queries.captured_queries if PERSON_ALONE in q["sql"]]
        # Read with the lock: trusted as it is, not read again.
        EndUser.objects.filter(pk=alice.pk).update(memory_enabled=True)
        locked = EndUser.objects.select_for_update(no_key=True).get(pk=alice.pk)
        with CaptureQueriesContext(connection) as queries:
            content, is_error = tool_run(tenant=acme.tenant, user_id="alice", end_user=locked,
                                         end_user_locked=True, payload=create)
        assert not is_error, content
        assert not [q for q in queries.captured_queries if PERSON_ALONE in q["sql"]]


def test_reads_of_a_known_or_unknown_person_take_them_from_the_key_statement(acme) -> None:
    ok(acme, command="create", path="/memories/a.md", file_text="hello\n")
    for user_id in ("alice", "nobody"):
        base = f"/api/v1/users/{user_id}"
        for request in (
            lambda: acme.client.post(f"{base}/memory", {"command": "view", "path": "/memories"},
                                     format="json"),
            lambda: acme.client.get(f"{base}/memory/index"),
            lambda: acme.client.get(f"{base}/memory/snapshot"),
            lambda: acme.client.get(f"{base}/documents/global/a.md"),
            lambda: acme.client.post(f"{base}/recall", {"query": "hello"}, format="json"),
        ):
            with CaptureQueriesContext(connection) as queries:
                response = request()
            assert response.status_code in (200, 404), response.content
            statements = [q["sql"] for q in queries.captured_queries]
            assert not [s for s in statements if PERSON_ALONE in s], (user_id, statements)
            assert [s for s in statements if "LEFT JOIN memoryhub_enduser u" in s]


def test_a_documents_put_locks_its_person_once_with_the_key(acme) -> None:
    url = "/api/v1/users/alice/documents/global/notes/a.md"
    assert acme.client.put(url, {"content": "one\n"}, format="json").status_code == 201
    with CaptureQueriesContext(connection) as queries:
        response = acme.client.put(url, {"content": "two\n"}, format="json")
    assert response.status_code == 200 and response.json()["version"] == 2
    person_locks = [q["sql"] for q in queries.captured_queries
                    if "memoryhub_enduser" in q["sql"] and "FOR NO KEY UPDATE" in q["sql"]]
    assert len(person_locks) == 1 and 'k."lookup_id"' in person_locks[0]
