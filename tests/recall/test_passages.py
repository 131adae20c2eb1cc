"""Passages follow every document write; vectors follow passages (in-process, no worker here)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.infra.embeddings import get_provider, provider_key
from memoryhub.models import MemoryDocument, Passage
from memoryhub.services.documents import document_remove
from memoryhub.services.passages import document_embed, documents_embed, passages_embed
from memoryhub.services.writer import Writer
from memoryhub.store.events import event_insert_prepared
from memoryhub.store.passages import passages_add_params
from memoryhub.tasks import embed_documents, embeddings_sweep
from tenants.context import tenant_context
from tests.platform.embedding_server import embedding_server
from tests.recall.helpers import embed_all, put

SECTIONS = [f"## Part {i}\n" + f"Sentence number {i} of a long memory. " * 40 for i in range(4)]


def passages(kit) -> list[Passage]:
    with tenant_context(kit.tenant.id):
        return list(Passage.objects.order_by("document_id", "ordinal"))


def test_a_write_builds_passages_with_offsets_search_vector_and_scope(acme, globex) -> None:
    document = put(acme, "alice", "/long.md", "\n\n".join(SECTIONS), scope="session", key="s-9")
    rows = passages(acme)
    assert len(rows) >= 4
    for row in rows:
        assert document.content[row.start:row.end] == row.text
        assert (row.scope, row.scope_key, row.end_user_id) == ("session", "s-9", document.end_user_id)
        assert row.document_version == 1 and row.search and row.embedding is None
    assert passages(globex) == []


def test_an_edit_keeps_the_vectors_of_unchanged_passages(acme, globex) -> None:
    put(acme, "alice", "/long.md", "\n\n".join(SECTIONS))
    assert embed_all(acme) == len(passages(acme))
    put(acme, "alice", "/long.md", "\n\n".join([*SECTIONS[:3], "## Part 3\nRewritten."]))
    rows = passages(acme)
    assert {row.document_version for row in rows} == {2}
    assert [row.embedding is None for row in rows][-1] is True
    assert sum(row.embedding is None for row in rows) == 1
    assert embed_all(acme) == 1  # only what changed goes to the provider


def test_a_changed_passage_is_rewritten_in_place_and_its_old_vector_is_dropped(acme, globex) -> None:
    put(acme, "alice", "/long.md", "\n\n".join(SECTIONS))
    embed_all(acme)
    before = passages(acme)
    put(acme, "alice", "/long.md", "\n\n".join([SECTIONS[0], "## Part 1\nShorter now."]))
    after = passages(acme)
    *kept, last = after
    assert [row.pk for row in after] == [row.pk for row in before[:len(after)]]
    assert last.text == "## Part 1\nShorter now." and last.embedding is None
    assert "shorter" in last.search and last.created_at > before[len(kept)].created_at
    for row, old in zip(kept, before, strict=False):
        assert row.text == old.text and list(row.embedding) == list(old.embedding)


def test_a_vector_is_not_stored_over_text_rewritten_while_it_was_computed(acme, globex) -> None:
    put(acme, "alice", "/a.md", "the first text")
    stale = passages(acme)  # what an embedding task read before the next write
    put(acme, "alice", "/a.md", "the second text")
    with tenant_context(acme.tenant.id):
        passages_embed(passages=stale, provider=get_provider())
    (row,) = passages(acme)
    assert row.pk == stale[0].pk and row.text == "the second text" and row.embedding is None
    assert embed_all(acme) == 1


def test_a_write_that_leaves_no_passage_without_a_vector_enqueues_nothing(
    acme, globex, django_capture_on_commit_callbacks,
) -> None:
    put(acme, "alice", "/long.md", "\n\n".join(SECTIONS))
    embed_all(acme)
    with django_capture_on_commit_callbacks() as callbacks:
        put(acme, "alice", "/long.md", "\n\n".join([*SECTIONS, SECTIONS[1]]))  # a vector reused
    assert callbacks == []
    with django_capture_on_commit_callbacks() as callbacks:
        put(acme, "alice", "/long.md", "\n\n".join([*SECTIONS, "## New\nText."]))
    assert len(callbacks) == 1


def test_passages_that_move_keep_their_vectors_and_new_ones_get_none(acme, globex) -> None:
    put(acme, "alice", "/long.md", "\n\n".join(SECTIONS))
    put(globex, "bob", "/long.md", "\n\n".join(SECTIONS))
    embed_all(acme)
    vectors = {row.text: list(row.embedding) for row in passages(acme)}
    # A new section on top shifts every old passage by one position; one is duplicated.
    put(acme, "alice", "/long.md", "\n\n".join(["## New\nA fresh start.", *SECTIONS, SECTIONS[0]]))
    rows = passages(acme)
    texts = [row.text for row in rows]
    assert texts[1:len(vectors) + 1] == list(vectors)
    assert len(texts) > len(vectors) + 1 and set(texts[len(vectors) + 1:]) <= set(vectors)
    assert rows[0].embedding is None
    for row in rows[1:]:
        assert list(row.embedding) == vectors[row.text]
    assert {row.document_version for row in rows} == {2}
    assert embed_all(acme) == 1  # only the new section goes to the provider
    put(acme, "alice", "/long.md", "")
    assert passages(acme) == []
    assert all(row.embedding is None for row in passages(globex))  # untouched, not embedded


def test_embedding_is_idempotent_and_skips_a_version_that_moved_on(acme, globex) -> None:
    first = put(acme, "alice", "/a.md", "first text")
    put(acme, "alice", "/a.md", "second text")
    with tenant_context(acme.tenant.id):
        assert document_embed(document_id=first.pk, version=1) == 0  # moved on to version 2
        assert document_embed(document_id=first.pk, version=2) == 1
        assert document_embed(document_id=first.pk, version=2) == 0
        row = Passage.objects.get()
    assert row.embedding_provider == provider_key(get_provider()) == "hashing:384"
    assert len(row.embedding) == 384


def test_documents_of_a_message_are_embedded_together_in_few_statements(acme, globex) -> None:
    """One message's documents: one read of the versions, one of the passages, one provider
    call and one update, whatever their number; a version that moved on is left out."""
    documents = [put(acme, "alice", f"/n{i}.md", "\n\n".join(SECTIONS[: i + 1])) for i in range(3)]
    put(acme, "alice", "/n0.md", "rewritten: version 2")
    asked = [(d.pk, 1) for d in documents] + [(documents[2].pk, 1)]  # the sweep and a write
    with tenant_context(acme.tenant.id):
        expected = Passage.objects.filter(document__in=documents[1:]).count()
    with tenant_context(acme.tenant.id), CaptureQueriesContext(connection) as queries:
        assert documents_embed(documents=asked) == expected > 2  # n1's and n2's passages
    assert len(queries) <= 4 + 2  # + the tenant setting and synchronous_commit
    with tenant_context(acme.tenant.id):
        waiting = Passage.objects.filter(embedding__isnull=True)
        assert list(waiting.values_list("document_id", "document_version")) == [(documents[0].pk, 2)]
        assert documents_embed(documents=asked) == 0


def embedded_paths(kit) -> list[str]:
    with tenant_context(kit.tenant.id):
        return sorted(Passage.objects.filter(embedding__isnull=False)
                      .values_list("document__path", flat=True).distinct())


def test_a_task_also_embeds_what_waits_in_its_tenant(acme, globex) -> None:
    """The worker's task for one write catches up on the tenant's others (their messages are
    still queued): the first task after a burst gives the burst its vectors."""
    first, *_ = [put(acme, "alice", f"/n{i}.md", f"note number {i}") for i in range(3)]
    put(globex, "bob", "/g.md", "another tenant's note")
    assert embed_documents(items=[[acme.tenant.id, first.pk, 1]]) == 3
    assert embedded_paths(acme) == ["/n0.md", "/n1.md", "/n2.md"]
    assert embedded_paths(globex) == []
    assert embed_documents(items=[[acme.tenant.id, first.pk, 1]]) == 0  # the queued ones


def test_a_provider_refusing_the_catch_up_leaves_the_task_its_own_rows(acme, settings) -> None:
    """A row the provider refuses must not stop every task of the tenant: the task asks again
    for its own rows alone."""
    with embedding_server(dimension=384) as server:
        settings.MEMORYHUB_EMBEDDINGS = {**settings.MEMORYHUB_EMBEDDINGS, "provider": "openai",
                                         "url": server.url, "model": "mini"}
        server.script.append((400, {}, {"error": {"message": "input rejected"}}))
        mine = put(acme, "alice", "/mine.md", "the task's own note")
        put(acme, "alice", "/waiting.md", "a note the provider refuses")
        assert embed_documents(items=[[acme.tenant.id, mine.pk, 1]]) == 1
    assert [len(request["input"]) for request in server.requests] == [2, 1]
    assert embedded_paths(acme) == ["/mine.md"]


def test_deleting_a_document_deletes_its_passages(acme, globex) -> None:
    document = put(acme, "alice", "/a.md", "some text")
    with tenant_context(acme.tenant.id):
        document_remove(writer=Writer(tenant=acme.tenant, actor="app"),
                        end_user=document.end_user, document=document)
        assert not Passage.objects.exists()


def test_the_commit_enqueues_the_embedding_task(
    acme, globex, django_capture_on_commit_callbacks, eager_tasks,
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        put(acme, "alice", "/a.md", "some text")
    assert len(callbacks) == 1
    assert all(row.embedding is not None for row in passages(acme))


@pytest.mark.parametrize("limit", [None, 3])
def test_reembed_replaces_vectors_of_another_provider_and_resumes(acme, globex, limit) -> None:
    for i in range(4):
        put(acme, "alice", f"/n{i}.md", f"note {i}")
    put(globex, "bob", "/g.md", "globex note")
    embed_all(acme)
    with tenant_context(acme.tenant.id):
        Passage.objects.update(embedding_provider="old-model:384")
    out = StringIO()
    args = ["--batch-size", "2"] + (["--limit", str(limit)] if limit else [])
    call_command("reembed", *args, stdout=out)
    current = provider_key(get_provider())
    with tenant_context(acme.tenant.id):
        done = Passage.objects.filter(embedding_provider=current).count()
    assert done == (limit or 4)
    assert "100%" in out.getvalue()
    if limit:
        call_command("reembed", stdout=StringIO())  # the next run finishes the job
    with tenant_context(acme.tenant.id):
        assert not Passage.objects.exclude(embedding_provider=current).exists()
    with tenant_context(globex.tenant.id):  # globex's passage had no vector: it gets one too
        assert Passage.objects.get().embedding_provider == current


def test_the_sweep_embeds_what_a_lost_message_left_behind(acme, globex, eager_tasks) -> None:
    put(acme, "alice", "/a.md", "written while the broker was down")
    put(globex, "bob", "/b.md", "just written: its own task is still on the way")
    with tenant_context(acme.tenant.id):
        Passage.objects.update(created_at=timezone.now() - timedelta(minutes=5))
    assert embeddings_sweep() == 1
    assert all(row.embedding is not None for row in passages(acme))
    assert all(row.embedding is None for row in passages(globex))


def test_a_new_document_is_saved_with_its_passages_and_its_event_in_one_statement(
    acme, globex,
) -> None:
    """A create's passages and its memory.changed event ride on the document's insert (two
    round trips less per create)."""
    put(acme, "alice", "/first.md", "")  # her first write also inserts her; no passages
    with CaptureQueriesContext(connection) as queries:
        document = put(acme, "alice", "/long.md", "\n\n".join(SECTIONS))
    inserts = [q["sql"] for q in queries.captured_queries if "INSERT INTO" in q["sql"]]
    assert len(inserts) == 1
    assert all(f"INSERT INTO {table}" in inserts[0] for table in (
        "memoryhub_memorydocument", "memoryhub_passage", "memoryhub_memoryevent"))
    events = acme.client.get("/api/v1/events").json()["events"]
    assert [(e["type"], e["data"]["change"], e["data"]["path"]) for e in events] == [
        ("memory.changed", "created", "/first.md"), ("memory.changed", "created", "/long.md")]
    rows = passages(acme)
    assert len(rows) >= 4 and {row.document_id for row in rows} == {document.pk}
    assert [row.text for row in rows] == [document.content[row.start:row.end] for row in rows]
    assert all(row.document_version == 1 and row.embedding is None for row in rows)
    # Empty content: the document alone.
    empty = put(acme, "alice", "/empty.md", "")
    assert empty.pk is not None and not [row for row in passages(acme) if row.document_id == empty.pk]


def test_an_edit_reads_the_old_passages_with_the_document_it_locks(acme, globex) -> None:
    """document_resolve(lock=True) brings them; no statement of their own (one round trip)."""
    put(acme, "alice", "/long.md", "\n\n".join(SECTIONS))
    embed_all(acme)
    with CaptureQueriesContext(connection) as queries:
        put(acme, "alice", "/long.md", "\n\n".join([*SECTIONS[:3], "## Part 3\nRewritten."]))
    assert not [q for q in queries.captured_queries if q["sql"].startswith(
        "SELECT id, ordinal, text, embedding IS NOT NULL")]
    assert sum(row.embedding is None for row in passages(acme)) == 1  # the rest kept theirs


def test_a_creates_statement_shares_only_the_tenant_between_its_parts(acme) -> None:
    """The document, passages and event parameters go in one dict: a name in two of them
    would give one part the other's value."""
    with tenant_context(acme.tenant.id):
        document = MemoryDocument(tenant=acme.tenant, scope="global", scope_key="", path="/a.md")
        passages = passages_add_params(document=document, ordinals=[], starts=[], ends=[],
                                       texts=[], embeddings=[], providers=[])
        event = event_insert_prepared(type="memory.changed", user_id="alice", actor="app",
                                      data={}, now=timezone.now())
    assert set(passages) & set(event.params) == {"tenant"}
    assert passages["tenant"] == event.params["tenant"] == acme.tenant.id
    assert not {name for name in {*passages, *event.params} if name.startswith("document_")}


@pytest.mark.parametrize("args", [["--tenant", "acne"], ["--batch-size", "0"],
                                  ["--batch-size", "-2"], ["--limit", "-1"]])
def test_reembed_refuses_an_unknown_tenant_and_numbers_that_are_not_positive(
    acme, globex, args,
) -> None:
    """A mistyped --tenant re-embedded nothing and said "Done: 0 embedded, 0 left" (exit 0),
    as if that tenant were up to date; --batch-size 0 embedded nothing, -2 was a database
    error (a negative LIMIT), and --limit -1 announced "Re-embedding -1 passages"."""
    put(acme, "alice", "/n.md", "note")
    embed_all(acme)
    with tenant_context(acme.tenant.id):
        Passage.objects.update(embedding_provider="old-model:384")
    out = StringIO()
    with pytest.raises(CommandError, match="No tenant 'acne'|must be a positive whole number"):
        call_command("reembed", *args, stdout=out)
    assert "Re-embedding" not in out.getvalue()
    with tenant_context(acme.tenant.id):
        assert Passage.objects.get().embedding_provider == "old-model:384"
