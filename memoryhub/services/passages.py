"""Keeping recall's passages in step with documents, and giving them vectors.

Contract:
- :func:`document_indexed` is called by every document write, inside its transaction, after
  the row is saved. It replaces the document's passages with ``split_passages(content)``:
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

from django.contrib.postgres.search import SearchVector
from django.db import transaction
from django.db.models import Q, Value

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


def document_indexed(*, document: MemoryDocument) -> None:
    """Rebuild the document's passages (see module docstring); call inside the write's transaction."""
    reusable = {
        text: (embedding, provider)
        for text, embedding, provider in Passage.objects.filter(
            document_id=document.pk, embedding__isnull=False
        ).values_list("text", "embedding", "embedding_provider")
    }
    Passage.objects.filter(document_id=document.pk).delete()
    rows = []
    for chunk in split_passages(document.content):
        embedding, provider = reusable.get(chunk.text, (None, ""))
        rows.append(Passage(
            tenant_id=document.tenant_id, document_id=document.pk,
            end_user_id=document.end_user_id, scope=document.scope, scope_key=document.scope_key,
            document_version=document.version, ordinal=chunk.index, start=chunk.start,
            end=chunk.end, text=chunk.text,
            search=SearchVector(Value(chunk.text), config=SEARCH_CONFIG),
            embedding=embedding, embedding_provider=provider,
        ))
    Passage.objects.bulk_create(rows)
    if rows:
        # The worker also re-embeds reused vectors of an older provider, so enqueue whenever
        # anything was written; it is cheap when there is nothing to do.
        transaction.on_commit(
            partial(_enqueue_embedding, tenant_id=document.tenant_id, document_id=document.pk,
                    version=document.version),
            robust=True,  # a broker outage must not fail a write that has committed
        )


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
