"""Recall's passages: the statements that keep them in step with their document, and store
their vectors (``memoryhub.services.passages`` decides what changes).

Hand-written: a write re-indexes its document every time, and the ORM's compilation of these
(a SearchVector per row) cost more than running them. Rows travel as parallel arrays
(``unnest``), so a document of any size is one statement per kind of change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.db import connection
from django.utils import timezone

from memoryhub.models import MemoryDocument, Passage
from memoryhub.store._locks import people_of_rows_held
from memoryhub.store._tenancy import tenant_id, tenant_is

# The full-text configuration of Passage.search; recall's queries must use the same one.
SEARCH_CONFIG = "simple"

_PASSAGE = Passage._meta.db_table
_OLD_PASSAGES = (
    "SELECT id, ordinal, text, embedding IS NOT NULL AND embedding_provider = %s "
    f"FROM {_PASSAGE} WHERE {tenant_is()} AND document_id = %s"
)
_VECTORS = (
    f"SELECT id, embedding::text, embedding_provider FROM {_PASSAGE} "
    f"WHERE {tenant_is()} AND id = ANY(%s)"
)
# Passages at an ordinal the document still has, in place: offsets for all; text, full-text
# vector and vector (a reused one, else none) where the text changed. The document_id test
# is redundant with the ids, but it lets PostgreSQL keep one generic plan for the prepared
# statement: without it, the unknown length of the arrays made the generic plan look dearer
# and every execution was planned again (0.1 ms of the database's CPU per write).
_UPDATE = f"""
    UPDATE {_PASSAGE} p SET document_version = %(version)s, start = k.start, "end" = k."end",
        end_user_id = %(end_user)s, scope = %(scope)s, scope_key = %(scope_key)s,
        text = CASE WHEN k.changed THEN k.text ELSE p.text END,
        search = CASE WHEN k.changed THEN to_tsvector(%(config)s::regconfig, k.text)
                      ELSE p.search END,
        embedding = CASE WHEN k.changed THEN k.embedding::halfvec ELSE p.embedding END,
        embedding_provider = CASE WHEN k.changed THEN k.provider ELSE p.embedding_provider END,
        created_at = CASE WHEN k.changed THEN %(now)s ELSE p.created_at END
    FROM unnest(%(ids)s::bigint[], %(starts)s::int[], %(ends)s::int[], %(changed)s::bool[],
                %(texts)s::text[], %(embeddings)s::text[], %(providers)s::text[])
        AS k(id, start, "end", changed, text, embedding, provider)
    WHERE {tenant_is("p", param="%(tenant)s")} AND p.document_id = %(document)s AND p.id = k.id
"""
_DROP = f"DELETE FROM {_PASSAGE} WHERE {tenant_is()} AND id = ANY(%s)"


def _add_sql(document_id: str) -> str:
    """The insert of a document's new passages (``passages_add_params``), the document's id
    given by the SQL expression ``document_id``."""
    return f"""
    INSERT INTO {_PASSAGE} (tenant_id, document_id, end_user_id, scope, scope_key,
        document_version, ordinal, start, "end", text, search, embedding, embedding_provider,
        created_at)
    SELECT %(tenant)s, {document_id}, %(end_user)s, %(scope)s, %(scope_key)s, %(version)s,
        c.ordinal, c.start, c."end", c.text, to_tsvector(%(config)s::regconfig, c.text),
        c.embedding::halfvec, c.provider, %(now)s
    FROM unnest(%(ordinals)s::int[], %(starts)s::int[], %(ends)s::int[], %(texts)s::text[],
                %(embeddings)s::text[], %(providers)s::text[])
        AS c(ordinal, start, "end", text, embedding, provider)
"""


_ADD = _add_sql("%(document)s")
# The same insert inside a statement that inserts the document first, as its CTE ``document``
# (memoryhub.store.documents): the passages take the id that insert returns.
ADD_TO_INSERTED_DOCUMENT = _add_sql("(SELECT id FROM document)")
# A write rewrites a changed passage in place, so a vector is stored only while its passage
# still has the text it was computed from (the provider call takes no lock).
# Rows another transaction holds are skipped (memoryhub.store._locks): only a write of their
# document holds them, and it asks for the vectors its passages lack when it commits.
_STORE_VECTORS = people_of_rows_held(table=_PASSAGE, ids="%(ids)s::bigint[]") + f"""
    UPDATE {_PASSAGE} p SET embedding = v.embedding::halfvec, embedding_provider = %(key)s
    FROM unnest(%(ids)s::bigint[], %(texts)s::text[], %(embeddings)s::text[])
        AS v(id, text, embedding)
    WHERE {tenant_is("p", param="%(tenant)s")} AND p.id = v.id AND p.text = v.text
        AND p.id IN (SELECT id FROM free)
"""


def _copied(document: MemoryDocument) -> dict[str, Any]:
    """What every passage copies from its document (recall filters on these with no join),
    and the current tenant."""
    return {"tenant": tenant_id(), "document": document.pk,
            "end_user": document.end_user_id, "scope": document.scope,
            "scope_key": document.scope_key, "version": document.version,
            "config": SEARCH_CONFIG, "now": timezone.now()}


def passages_of_document(
    *, document: MemoryDocument, provider: str
) -> list[tuple[int, int, str, bool]]:
    """(id, ordinal, text, has a vector of ``provider``) of the document's passages; no
    vectors travel."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_OLD_PASSAGES, [provider, tenant, document.pk])
        rows: list[tuple[int, int, str, bool]] = cursor.fetchall()
    return rows


def passage_vectors(*, ids: Sequence[int]) -> dict[int, tuple[str, str]]:
    """id -> (vector as pgvector's text, provider) of those passages."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_VECTORS, [tenant, list(ids)])
        return {pk: (vector, provider) for pk, vector, provider in cursor.fetchall()}


def passages_rewrite(
    *, document: MemoryDocument, ids: list[int], starts: list[int], ends: list[int],
    changed: list[bool], texts: list[str], embeddings: list[str | None], providers: list[str],
) -> None:
    """Bring the document's passages ``ids`` in step, in place: every one gets its offsets and
    the document's version, person and location; where ``changed``, also its text, full-text
    vector and vector (``embeddings``, None for none) with its provider."""
    params = {
        **_copied(document), "ids": ids, "starts": starts, "ends": ends,
        "changed": changed, "texts": texts, "embeddings": embeddings, "providers": providers,
    }
    with connection.cursor() as cursor:
        cursor.execute(_UPDATE, params)


def passages_delete(*, ids: list[int]) -> None:
    """Delete the current tenant's passages ``ids``."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_DROP, [tenant, ids])


def passages_insert(
    *, document: MemoryDocument, ordinals: list[int], starts: list[int], ends: list[int],
    texts: list[str], embeddings: list[str | None], providers: list[str],
) -> None:
    """Add passages to the document: one per ordinal, with its full-text vector and, where
    ``embeddings`` has one, its vector and provider."""
    params = passages_add_params(
        document=document, ordinals=ordinals, starts=starts, ends=ends, texts=texts,
        embeddings=embeddings, providers=providers)
    with connection.cursor() as cursor:
        cursor.execute(_ADD, params)


def passages_add_params(
    *, document: MemoryDocument, ordinals: list[int], starts: list[int], ends: list[int],
    texts: list[str], embeddings: list[str | None], providers: list[str],
) -> dict[str, Any]:
    """The parameters of the passages' insert (``passages_insert``, ``ADD_TO_INSERTED_DOCUMENT``
    with ``document`` not yet saved)."""
    return {
        **_copied(document), "ordinals": ordinals, "starts": starts, "ends": ends,
        "texts": texts, "embeddings": embeddings, "providers": providers,
    }


def passage_vectors_store(
    *, provider: str, ids: list[int], texts: list[str], embeddings: list[str]
) -> None:
    """Store each vector (pgvector's text) on its passage, tagged with ``provider``, only
    where the passage still has the text it was computed from."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_STORE_VECTORS, {
            "tenant": tenant, "key": provider, "ids": ids, "texts": texts,
            "embeddings": embeddings,
        })


def vectors_only_commit() -> None:
    """Let the current transaction's commit return before its WAL is on disk.

    Only for a transaction that writes vectors and nothing else (the embedding tasks): the
    flush cost the worker more than the statements, and a crash can lose only the last
    vectors, whose passages, facts and messages the embeddings sweep finds again. Never a
    write of the service's own data: the setting ends with the transaction.
    """
    tenant_id()  # inside a tenant's transaction, like every statement here
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL synchronous_commit TO off")


# First keys of the two-key advisory locks (the embedding claims below have 7_004-7_006):
# one embedding task per tenant and kind catches up on what waits (services.passages).
_CATCH_UP_NAMESPACES = {"passages": 7_002, "records": 7_003}


# Embedding claims, one per document, fact or conversation (its messages): the two-key
# advisory lock (the kind's first key, the id's hashtext). Two ids of one hash share a claim,
# which only delays one of them.
_CLAIM_NAMESPACES = {"document": 7_004, "fact": 7_005, "conversation": 7_006}
T = TypeVar("T")  # an id's own type: a document's int, a fact's or conversation's UUID or text


def embedding_claim(*, kind: str, ids: Sequence[T]) -> set[T]:
    """Of the tenant's ``ids`` of ``kind`` ("document", "fact" or "conversation"), those whose
    embedding claim this transaction holds now, until it ends (taken without waiting):
    another transaction is embedding the rest."""
    tenant_id()  # fails closed without a tenant, like every statement here
    by_text = {str(pk): pk for pk in ids}
    if not by_text:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM unnest(%s::text[]) AS id "
            "WHERE pg_try_advisory_xact_lock(%s, hashtext(id))",
            [sorted(by_text), _CLAIM_NAMESPACES[kind]],
        )
        return {by_text[row[0]] for row in cursor.fetchall()}


def embedding_catch_up_claim(*, kind: str) -> bool:
    """Take the tenant's catch-up lock for ``kind`` ("passages" or "records") until the
    transaction ends; False, at once, when another transaction holds it."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)",
                       [_CATCH_UP_NAMESPACES[kind], tenant])
        return bool(cursor.fetchone()[0])
