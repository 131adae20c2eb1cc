"""The embedding worker storing vectors while a request holds some of the same rows: the
worker leaves those rows for later instead of waiting for them, so the two never deadlock.

The worker stores several facts' vectors in one UPDATE, locking them in the order it lists
them (its own, then others still waiting); a request locks a person's facts in its own
order (mem0's add, for each message, the valid fact it duplicates). A stress run caught
the worker holding one fact and waiting for the other while the request held the other and
waited for the first: PostgreSQL ended the worker's task ("deadlock detected"). The worker
now takes its rows FOR NO KEY UPDATE SKIP LOCKED, and asks again for what it skipped.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memoryhub.models import Fact, MemoryDocument, Passage
from memoryhub.tasks import embed_documents, embed_records
from tenants.context import tenant_context
from tests.elsewhere import Elsewhere

pytestmark = pytest.mark.django_db(transaction=True)  # both sides must commit for real



def test_the_worker_storing_vectors_and_a_request_locking_the_same_facts_do_not_deadlock(
        acme, globex) -> None:
    ids = []
    for content in ("Likes tea", "Lives in Porto"):
        created = acme.client.post("/api/v1/users/alice/facts", {"content": content},
                                   format="json")
        assert created.status_code == 201
        ids.append(created.json()["id"])
    first, second = ids  # first < second (UUID v7), and first in the table
    with tenant_context(acme.tenant.id):  # both wait for their vectors
        Fact.objects.update(embedding=None, embedding_provider="")
    worker: list[Elsewhere] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if Fact._meta.db_table in sql and "FOR UPDATE" in sql and not worker:
            # The add holds the second fact (the duplicate of its first message); the worker
            # stores both vectors, the first's first.
            worker.append(Elsewhere(lambda: embed_records(
                items=[[acme.tenant.id, "fact", first], [acme.tenant.id, "fact", second]])
            ).as_far_as_it_gets())
        return result

    with connection.execute_wrapper(between):
        added = acme.client.post("/mem0/v3/memories/add/", {"user_id": "alice", "infer": False,
                                 "messages": [{"role": "user", "content": "Lives in Porto"},
                                              {"role": "user", "content": "Likes tea"}]},
                                 format="json")
    assert worker, "the add locked no fact"
    worker[0].join(10)
    assert added.status_code == 200, added.content
    assert [r["event"] for r in added.json()["results"]] == ["NONE", "NONE"]  # duplicates
    assert worker[0].error is None, worker[0].error
    with tenant_context(acme.tenant.id):
        vectors = {str(pk): key for pk, key in Fact.objects.values_list("id", "embedding_provider")}
    assert vectors[first] != ""  # stored; the second, held by the add, is left for later
    assert worker[0].result == 1
    # Asked for again, the second gets its vector now that nobody holds it.
    assert embed_records(items=[[acme.tenant.id, "fact", second]]) == 1


def test_the_worker_leaves_a_passage_a_write_holds_instead_of_waiting_for_it(acme) -> None:
    """The same for documents: a write of the document (a directory rename, an edit) holds its
    passages in its own order while the worker stores their vectors in another. The worker
    skips what the write holds; the write asks for its passages' vectors when it commits."""
    text = "\n\n".join(f"Paragraph {n}: " + "the garden needs water. " * 40 for n in range(4))
    created = acme.client.put("/api/v1/users/alice/documents/global/notes/garden.md",
                              {"content": text}, format="json")
    assert created.status_code in (200, 201), created.content
    with tenant_context(acme.tenant.id):
        document = MemoryDocument.objects.get()
        Passage.objects.update(embedding=None, embedding_provider="")
        ids = list(Passage.objects.order_by("ordinal").values_list("pk", flat=True))
    assert len(ids) > 1, "one passage: nothing to interleave"
    with tenant_context(acme.tenant.id):  # a write holding the first passage, uncommitted
        Passage.objects.select_for_update(no_key=True).filter(pk=ids[0]).get()
        worker = Elsewhere(lambda: embed_documents(
            items=[[acme.tenant.id, document.pk, document.version]])).as_far_as_it_gets()
        assert not worker.is_alive(), "the worker waited for the write's passage"
    assert worker.error is None, worker.error
    with tenant_context(acme.tenant.id):
        stored = dict(Passage.objects.values_list("pk", "embedding_provider"))
    assert stored[ids[0]] == "" and all(stored[pk] for pk in ids[1:])
