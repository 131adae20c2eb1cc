"""Requests racing a forget (``DELETE /api/v1/users/{id}``): each answers as if it came wholly
before or wholly after the forget, never with a 500.

The interleavings a stress run found, made to happen with real transactions: the request's
own statements run on the test's connection, and Django's ``execute_wrapper`` commits the
forget on another connection (another thread) just before the statement that lost the race.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from memoryhub.models import Actor, EndUser, MemoryDocument
from memoryhub.services.people import end_user_forget
from tenants.context import tenant_context
from tests.elsewhere import in_thread

pytestmark = pytest.mark.django_db(transaction=True)  # the forget must commit for real



def _forget(kit: Any, user_id: str, done: list[bool]) -> Callable[[], None]:
    def forget() -> None:
        with tenant_context(kit.tenant.id):
            done.append(end_user_forget(tenant=kit.tenant, user_id=user_id, actor=Actor.APP))
    return forget


def test_a_document_delete_that_loses_its_person_to_a_forget_is_a_404(acme, globex) -> None:
    """The view finds the document, then takes the person's write lock: a forget committed in
    between left no person to lock (was EndUser.DoesNotExist, a 500)."""
    url = "/api/v1/users/alice/documents/global/notes/a.md"
    for kit in (acme, globex):
        assert kit.client.put(url, {"content": "x"}, format="json").status_code == 201
    forgotten: list[bool] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "FOR NO KEY UPDATE" in sql and not forgotten:  # the person's lock, after the find
            in_thread(_forget(acme, "alice", forgotten))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between):
        response = acme.client.delete(url)
    assert forgotten == [True]  # it did interleave
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"
    with tenant_context(acme.tenant.id):
        assert not EndUser.objects.exists() and not MemoryDocument.objects.exists()
    assert globex.client.get(url).status_code == 200  # the other tenant's alice is untouched


def test_a_document_write_with_a_person_read_before_a_forget_lands_on_a_new_person(acme) -> None:
    """``document_put`` handed a person read without the lock (the web pages) that is
    forgotten before it locks them: a conditional write finds no such version (412's
    refusal), an unconditional one lands after the forget on a new, empty person."""
    from memoryhub.errors import VersionMismatch
    from memoryhub.services.documents import document_put
    from memoryhub.services.writer import Writer

    assert acme.client.put("/api/v1/users/alice/documents/global/a.md", {"content": "x"},
                           format="json").status_code == 201
    with tenant_context(acme.tenant.id):
        stale = EndUser.objects.get(user_id="alice")
    for expected_version in (1, None):
        assert acme.client.delete("/api/v1/users/alice").status_code == 204
        with tenant_context(acme.tenant.id):
            if expected_version is not None:
                with pytest.raises(VersionMismatch):
                    document_put(writer=Writer(tenant=acme.tenant, actor=Actor.USER),
                                 end_user=stale, scope="global", scope_key="", path="/a.md",
                                 content="y", expected_version=expected_version)
                assert not EndUser.objects.exists()
                continue
            saved, created = document_put(writer=Writer(tenant=acme.tenant, actor=Actor.USER),
                                          end_user=stale, scope="global", scope_key="",
                                          path="/a.md", content="y")
        assert created and saved.version == 1 and saved.end_user_id != stale.pk
