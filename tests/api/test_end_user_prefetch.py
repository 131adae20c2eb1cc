"""The end user a URL names is read with the API key, in one statement (api/authentication.py)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.models import EndUser
from memoryhub.selectors.documents import enduser_find, enduser_prefetched
from tenants.context import tenant_context
from tests.contract.api_client import ok

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
