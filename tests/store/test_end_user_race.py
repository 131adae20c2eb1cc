"""A write that creates its person while another request forgets them: the write lands on a
new, empty person (``end_user_get_or_create``), never an error. The embedding worker storing
the person's vectors while they are forgotten: one waits for the other, never a deadlock.

The interleaving that once failed, made to happen with real transactions on three
connections: the writer finds no person; another request creates them and commits; the
writer's insert then does nothing (the row exists); a forget deletes the row; the writer's
lock of the row waits for the forget and finds nothing. Django's ``execute_wrapper`` runs the
other requests' steps between the writer's statements.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.db import connection

from memoryhub.models import Actor, EndUser, Fact, Message
from memoryhub.services.documents import end_user_get_or_create
from memoryhub.services.people import end_user_forget
from memoryhub.tasks import embed_records
from tenants.context import tenant_context
from tests.elsewhere import Elsewhere, in_thread

pytestmark = pytest.mark.django_db(transaction=True)  # the three must commit for real



def test_a_person_forgotten_between_insert_and_lock_is_created_again(acme) -> None:
    tenant = acme.tenant
    forget_started, forget_done = threading.Event(), threading.Event()
    statements: list[str] = []

    created: list[int] = []

    def create_elsewhere() -> None:
        with tenant_context(tenant.id):
            created.append(EndUser.objects.create(tenant=tenant, user_id="alice").pk)

    def forget_slowly() -> None:
        """Holds the deleted row's lock until the writer waits on it, then commits."""
        with tenant_context(tenant.id):
            assert end_user_forget(tenant=tenant, user_id="alice", actor=Actor.APP)
            forget_started.set()
            threading.Event().wait(0.5)  # the writer's lock statement is waiting by now
        forget_done.set()

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        if "ON CONFLICT" in sql and not created:  # the person appears just before the insert
            in_thread(create_elsewhere)
        elif len(statements) > 1 and "FOR NO KEY UPDATE" in sql and not forget_started.is_set():
            threading.Thread(target=lambda: in_thread(forget_slowly)).start()
            forget_started.wait(10)
        return execute(sql, params, many, context)

    with tenant_context(tenant.id), connection.execute_wrapper(between):
        person = end_user_get_or_create(tenant=tenant, user_id="alice")
    assert forget_done.wait(10), "the forget never committed"
    assert forget_started.is_set() and len(created) == 1, statements  # it did interleave
    assert person.user_id == "alice" and person.pk != created[0]  # a new, empty person
    with tenant_context(tenant.id):
        assert list(EndUser.objects.values_list("pk", flat=True)) == [person.pk]


def test_a_forget_racing_the_embedding_worker_waits_instead_of_deadlocking(acme) -> None:
    """The worker stores a fact's vector, then the person's messages' vectors, in one
    transaction; a forget deletes the messages, then the facts. Without the person held by the
    worker's first update, each held rows the other needed next: PostgreSQL ended one of them
    ("deadlock detected")."""
    tenant = acme.tenant
    said = acme.client.post("/api/v1/users/alice/sessions/s1/messages", {"messages": [
        {"role": "user", "content": "I moved to Porto."}]}, format="json")
    fact = acme.client.post("/api/v1/users/alice/facts", {"content": "Lives in Porto"},
                            format="json")
    assert said.status_code == 201 and fact.status_code == 201, (said.content, fact.content)
    with tenant_context(tenant.id):  # waiting for vectors, as just written
        Fact.objects.update(embedding=None, embedding_provider="")
        Message.objects.update(embedding=None, embedding_provider="")
    forgotten: list[bool] = []

    def forget() -> None:
        with tenant_context(tenant.id):
            forgotten.append(end_user_forget(tenant=tenant, user_id="alice", actor=Actor.APP))

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        updated = re.search(r"\bUPDATE (\S+) p SET", sql)  # the vectors' statement's table
        if updated and updated[1] == Message._meta.db_table and forgetter.ident is None:
            forgetter.as_far_as_it_gets()  # the facts' vectors are stored: the forget goes first
        return execute(sql, params, many, context)

    forgetter = Elsewhere(forget)
    with connection.execute_wrapper(between):
        stored = embed_records(items=[[tenant.id, "fact", fact.json()["id"]],
                                      [tenant.id, "conversation", said.json()["conversation_id"]]])
    forgetter.join(10)
    assert forgetter.error is None, forgetter.error
    assert stored == 2 and forgotten == [True]
    with tenant_context(tenant.id):
        assert not Fact.objects.exists() and not Message.objects.exists()
