"""Keeping recall's passages in step with documents, and giving them vectors.

Contract:
- :func:`document_indexed` is called by every document write, inside its transaction, after
  the row is saved. It makes the document's passages ``split_passages(content)``:
  text, offsets, a ``'simple'`` full-text vector (no stemming, no stop words: memories are in
  any language), the document's version, and its end user, scope and scope key (recall
  filters on those with no join). Lexical recall finds the document as soon as the write
  commits. A passage whose text did not change keeps its vector, so an edit re-embeds only
  what changed. On commit it enqueues ``memoryhub.tasks.embed_document``.
- :func:`document_embed` (the task's service) gives vectors to the passages of one document
  version that lack one, or carry one from another provider. It does nothing when the
  document has moved on to a newer version (that write enqueued its own task) or is gone,
  and nothing the second time: it is idempotent.
- A vector is tagged with :func:`provider_key`; recall only compares vectors of the current
  provider, so after a provider change documents fall back to lexical recall until
  ``manage.py reembed`` (or the next write) gives them new vectors.

The embedding task runs inside one tenant transaction that includes the provider call: it
holds no lock while embedding (plain reads), and updates by primary key at the end, so a
write that replaces the passages meanwhile simply leaves it nothing to update.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from pathlib import Path

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Q
from django.utils import timezone

from memoryhub.chunking import split_passages
from memoryhub.embeddings import EmbeddingProvider, get_provider
from memoryhub.models import MemoryDocument, Passage

logger = logging.getLogger(__name__)

# The full-text configuration of Passage.search; recall's queries must use the same one.
SEARCH_CONFIG = "simple"
_PROVIDER_KEY_MAX = 64  # Passage.embedding_provider's max_length


def provider_key(provider: EmbeddingProvider) -> str:
    """What produced a vector: provider, model and dimension (vectors of two keys don't mix)."""
    model = getattr(provider, "model", None) or getattr(provider, "model_dir", None) or ""
    if isinstance(model, Path):
        model = "/".join(model.parts[-2:])
    key = ":".join(str(part) for part in (provider.name, model, provider.dimension) if part)
    if len(key) <= _PROVIDER_KEY_MAX:
        return key
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return f"{key[: _PROVIDER_KEY_MAX - 17]}:{digest}"


# Statements of document_indexed. Hand-written: a write re-indexes its document every time, and
# the ORM's compilation of these (a SearchVector per row) cost more than running them.
_PASSAGE = Passage._meta.db_table
_OLD_PASSAGES = (
    f'SELECT id, ordinal, text, embedding IS NOT NULL FROM {_PASSAGE} '  # noqa: S608 - no input
    "WHERE tenant_id = %s AND document_id = %s"
)
_VECTORS = (
    f"SELECT id, embedding::text, embedding_provider FROM {_PASSAGE} "  # noqa: S608 - no input
    "WHERE tenant_id = %s AND id = ANY(%s)"
)
_KEEP = f"""
    UPDATE {_PASSAGE} p SET document_version = %(version)s, start = k.start, "end" = k."end",
        end_user_id = %(end_user)s, scope = %(scope)s, scope_key = %(scope_key)s
    FROM unnest(%(ids)s::bigint[], %(starts)s::int[], %(ends)s::int[]) AS k(id, start, "end")
    WHERE p.tenant_id = %(tenant)s AND p.id = k.id
"""  # noqa: S608 - the table name is ours, values are parameters
_DROP = f"DELETE FROM {_PASSAGE} WHERE tenant_id = %s AND id = ANY(%s)"  # noqa: S608
_ADD = f"""
    INSERT INTO {_PASSAGE} (tenant_id, document_id, end_user_id, scope, scope_key,
        document_version, ordinal, start, "end", text, search, embedding, embedding_provider,
        created_at)
    SELECT %(tenant)s, %(document)s, %(end_user)s, %(scope)s, %(scope_key)s, %(version)s,
        c.ordinal, c.start, c."end", c.text, to_tsvector(%(config)s::regconfig, c.text),
        c.embedding::halfvec, c.provider, %(now)s
    FROM unnest(%(ordinals)s::int[], %(starts)s::int[], %(ends)s::int[], %(texts)s::text[],
                %(embeddings)s::text[], %(providers)s::text[])
        AS c(ordinal, start, "end", text, embedding, provider)
"""  # noqa: S608 - the table name is ours, values are parameters


def document_indexed(*, document: MemoryDocument, created: bool = False) -> None:
    """Bring the document's passages in step (see module docstring); call inside the write's
    transaction. ``created``: the document is new, so it has no passages yet.

    A passage whose text is unchanged at the same position stays in place (its row, its
    vector), so an edit rewrites only the passages it changed. A new passage whose text some
    old passage had takes that passage's vector; only those vectors are read.
    """
    chunks = split_passages(document.content)
    old = [] if created else _old_passages(document)
    at = {(ordinal, text): (pk, has_vector) for pk, ordinal, text, has_vector in old}
    kept = [chunk for chunk in chunks if (chunk.index, chunk.text) in at]
    added = [chunk for chunk in chunks if (chunk.index, chunk.text) not in at]
    kept_ids = {at[(chunk.index, chunk.text)][0] for chunk in kept}
    dropped = [pk for pk, _, _, _ in old if pk not in kept_ids]
    with connection.cursor() as cursor:
        # Read the vectors to reuse before their passages are dropped.
        vectors = _vectors_for(cursor, document, old, [chunk.text for chunk in added])
        if kept:
            cursor.execute(_KEEP, {
                **_columns(document), "ids": [at[(c.index, c.text)][0] for c in kept],
                "starts": [c.start for c in kept], "ends": [c.end for c in kept],
            })
        if dropped:
            cursor.execute(_DROP, [document.tenant_id, dropped])
        if added:
            cursor.execute(_ADD, {
                **_columns(document), "config": SEARCH_CONFIG, "now": timezone.now(),
                "ordinals": [c.index for c in added], "starts": [c.start for c in added],
                "ends": [c.end for c in added], "texts": [c.text for c in added],
                "embeddings": [vectors.get(c.text, (None, ""))[0] for c in added],
                "providers": [vectors.get(c.text, (None, ""))[1] for c in added],
            })
    if chunks:
        # The worker also re-embeds reused vectors of an older provider, so enqueue whenever
        # the document has passages; it is cheap when there is nothing to do.
        transaction.on_commit(
            partial(_enqueue_embedding, tenant_id=document.tenant_id, document_id=document.pk,
                    version=document.version),
            robust=True,  # a broker outage must not fail a write that has committed
        )


def _columns(document: MemoryDocument) -> dict[str, object]:
    """What every passage copies from its document (recall filters on these with no join)."""
    return {"tenant": document.tenant_id, "document": document.pk,
            "end_user": document.end_user_id, "scope": document.scope,
            "scope_key": document.scope_key, "version": document.version}


def _old_passages(document: MemoryDocument) -> list[tuple[int, int, str, bool]]:
    """(id, ordinal, text, has a vector) of the document's passages; no vectors travel."""
    with connection.cursor() as cursor:
        cursor.execute(_OLD_PASSAGES, [document.tenant_id, document.pk])
        return cursor.fetchall()


def _vectors_for(
    cursor: CursorWrapper, document: MemoryDocument, old: list[tuple[int, int, str, bool]],
    texts: list[str],
) -> dict[str, tuple[str, str]]:
    """text -> (vector as text, provider) of old passages with one of ``texts`` and a vector."""
    wanted = set(texts)
    if not wanted:
        return {}
    source = {text: pk for pk, _, text, has_vector in old if has_vector and text in wanted}
    if not source:
        return {}
    cursor.execute(_VECTORS, [document.tenant_id, list(source.values())])
    by_id = {pk: (vector, provider) for pk, vector, provider in cursor.fetchall()}
    return {text: by_id[pk] for text, pk in source.items() if pk in by_id}


def _enqueue_embedding(*, tenant_id: int, document_id: int, version: int) -> None:
    from memoryhub.tasks import embed_document  # tasks import this module

    try:
        embed_document.delay(tenant_id=tenant_id, document_id=document_id, version=version)
    except Exception:
        # The embeddings sweep (beat) finds passages left without a vector.
        logger.exception("could not enqueue embedding of document %s", document_id)


def _needs_vector(key: str) -> Q:
    return Q(embedding__isnull=True) | ~Q(embedding_provider=key)


def passages_embed(*, passages: Sequence[Passage], provider: EmbeddingProvider) -> int:
    """Embed ``passages`` in one provider call and store the vectors; returns how many."""
    if not passages:
        return 0
    vectors = provider.embed([passage.text for passage in passages])
    key = provider_key(provider)
    for passage, vector in zip(passages, vectors, strict=True):
        passage.embedding = vector
        passage.embedding_provider = key
    Passage.objects.bulk_update(passages, ["embedding", "embedding_provider"])
    return len(passages)


def document_embed(*, document_id: int, version: int) -> int:
    """Give vectors to that version's passages that lack a current one; returns how many."""
    current = MemoryDocument.objects.filter(pk=document_id).values_list("version", flat=True)
    if list(current) != [version]:
        return 0  # deleted, or rewritten: the newer write enqueued its own task
    provider = get_provider()
    pending = list(
        Passage.objects.filter(document_id=document_id, document_version=version)
        .filter(_needs_vector(provider_key(provider)))
        .order_by("ordinal")
        .only("id", "text")
    )
    return passages_embed(passages=pending, provider=provider)


def passages_stale_count(*, provider: EmbeddingProvider) -> int:
    """How many of the tenant's passages have no vector of this provider."""
    return Passage.objects.filter(_needs_vector(provider_key(provider))).count()


def passages_reembed_batch(*, provider: EmbeddingProvider, batch_size: int) -> int:
    """Embed the next ``batch_size`` stale passages of the tenant (``reembed``); 0 when done.

    Resumable by construction: it picks whatever is still stale, so an interrupted run
    loses at most the batch in flight.
    """
    stale = list(
        Passage.objects.filter(_needs_vector(provider_key(provider)))
        .order_by("id")
        .only("id", "text")[:batch_size]
    )
    return passages_embed(passages=stale, provider=provider)


def documents_awaiting_vectors(*, created_before: datetime, limit: int) -> list[tuple[int, int]]:
    """(document id, version) of passages still without a vector, written before a moment.

    For the embeddings sweep: the normal path is the task enqueued on commit; this finds
    what a lost message (broker outage, worker crash) left behind.
    """
    rows = (
        Passage.objects.filter(embedding__isnull=True, created_at__lt=created_before)
        .values_list("document_id", "document_version")
        .distinct()
        .order_by("document_id")[:limit]
    )
    return list(rows)
