"""Keeping recall's passages in step with documents, and giving them vectors.

Contract:
- :func:`document_indexed` is called by every document write, inside its transaction, after
  the row is saved. It makes the document's passages ``split_passages(content)``:
  text, offsets, a ``'simple'`` full-text vector (no stemming, no stop words: memories are in
  any language), the document's version, and its end user, scope and scope key (recall
  filters on those with no join). Lexical recall finds the document as soon as the write
  commits. A passage whose text did not change keeps its vector, so an edit re-embeds only
  what changed. On commit it asks for the document's embedding (``memoryhub.infra.publisher``: a
  background thread sends ``memoryhub.tasks.embed_documents``, several writes per message)
  when some passage is left without a vector of the current provider.
- :func:`document_embed` (the task's service) gives vectors to the passages of one document
  version that lack one, or carry one from another provider. It does nothing when the
  document has moved on to a newer version (that write enqueued its own task) or is gone,
  and nothing the second time: it is idempotent.
- A vector is tagged with :func:`provider_key`; recall only compares vectors of the current
  provider, so after a provider change documents fall back to lexical recall until
  ``manage.py reembed`` (or the next write) gives them new vectors.

The embedding task runs inside one tenant transaction that includes the provider call: it
holds no lock while embedding (plain reads), and at the end stores each vector by primary
key only where the passage still has the text it embedded, so a write that rewrote or
dropped passages meanwhile leaves it nothing to overwrite.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from pathlib import Path

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.models import Q
from django.utils import timezone

from memoryhub.chunking import Passage as Chunk
from memoryhub.chunking import split_passages
from memoryhub.infra.db import halfvec_literal
from memoryhub.infra.embeddings import EmbeddingProvider, get_provider
from memoryhub.infra.publisher import embedding_enqueue
from memoryhub.models import MemoryDocument, Passage
from tenants.context import current_tenant_id

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
    f"SELECT id, ordinal, text, embedding IS NOT NULL AND embedding_provider = %s "  # noqa: S608
    f"FROM {_PASSAGE} WHERE tenant_id = %s AND document_id = %s"
)
_VECTORS = (
    f"SELECT id, embedding::text, embedding_provider FROM {_PASSAGE} "  # noqa: S608 - no input
    "WHERE tenant_id = %s AND id = ANY(%s)"
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
    WHERE p.tenant_id = %(tenant)s AND p.document_id = %(document)s AND p.id = k.id
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

    A passage keeps its row while the document has its ordinal: an unchanged text keeps its
    vector, a changed one is rewritten in place. Rows past the new last ordinal go, new
    ordinals are added. A changed or new passage whose text some old passage had takes that
    passage's vector; only those vectors are read. An embedding task is enqueued only when
    some passage is left without a vector of the current provider.
    """
    current = provider_key(get_provider())
    chunks = split_passages(document.content)
    old = [] if created else _old_passages(document, current)
    by_ordinal = {ordinal: (pk, text, has_vector) for pk, ordinal, text, has_vector in old}
    in_place = [chunk for chunk in chunks if chunk.index in by_ordinal]
    added = [chunk for chunk in chunks if chunk.index not in by_ordinal]
    changed = [c for c in in_place if by_ordinal[c.index][1] != c.text]
    ordinals = {c.index for c in chunks}
    dropped = [pk for pk, ordinal, _, _ in old if ordinal not in ordinals]
    with connection.cursor() as cursor:
        # Read the vectors to reuse before their passages are rewritten or dropped.
        vectors = _vectors_for(cursor, document, old, [c.text for c in (*changed, *added)])
        if in_place:
            cursor.execute(_UPDATE, {
                **_columns(document), **_rewritten(in_place, by_ordinal, vectors),
                "config": SEARCH_CONFIG, "now": timezone.now(),
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
    rewritten = {c.index for c in changed}
    unchanged_without_vector = any(
        not by_ordinal[c.index][2] for c in in_place if c.index not in rewritten)
    new_without_vector = any(
        vectors.get(c.text, (None, ""))[1] != current for c in (*changed, *added))
    if unchanged_without_vector or new_without_vector:
        transaction.on_commit(
            partial(embedding_enqueue, tenant_id=document.tenant_id, document_id=document.pk,
                    version=document.version),
            robust=True,  # a broker outage must not fail a write that has committed
        )


def _rewritten(
    in_place: list[Chunk], by_ordinal: dict[int, tuple[int, str, bool]],
    vectors: dict[str, tuple[str, str]],
) -> dict[str, list]:
    """The _UPDATE arrays: every in-place passage, with text and vector where it changed."""
    changed = [by_ordinal[c.index][1] != c.text for c in in_place]
    reused = [vectors.get(c.text, (None, "")) if ch else (None, "")
              for c, ch in zip(in_place, changed, strict=True)]
    return {
        "ids": [by_ordinal[c.index][0] for c in in_place],
        "starts": [c.start for c in in_place], "ends": [c.end for c in in_place],
        "changed": changed, "texts": [c.text for c in in_place],
        "embeddings": [vector for vector, _ in reused],
        "providers": [provider for _, provider in reused],
    }


def _columns(document: MemoryDocument) -> dict[str, int | str]:
    """What every passage copies from its document (recall filters on these with no join)."""
    return {"tenant": document.tenant_id, "document": document.pk,
            "end_user": document.end_user_id, "scope": document.scope,
            "scope_key": document.scope_key, "version": document.version}


def _old_passages(document: MemoryDocument, current: str) -> list[tuple[int, int, str, bool]]:
    """(id, ordinal, text, has a vector of the ``current`` provider) of the document's
    passages; no vectors travel. An edit read them already when it locked the document
    (``document_resolve(lock=True)`` sets ``indexed_passages``): taken once, else queried."""
    read = document.__dict__.pop("indexed_passages", None)
    if read is not None:
        return [(pk, ordinal, text, has_vector and provider == current)
                for pk, ordinal, text, has_vector, provider in read]
    with connection.cursor() as cursor:
        cursor.execute(_OLD_PASSAGES, [current, document.tenant_id, document.pk])
        rows: list[tuple[int, int, str, bool]] = cursor.fetchall()
        return rows


def _vectors_for(
    cursor: CursorWrapper, document: MemoryDocument, old: list[tuple[int, int, str, bool]],
    texts: list[str],
) -> dict[str, tuple[str, str]]:
    """text -> (vector as text, provider) of old passages with one of ``texts`` and a current
    vector."""
    wanted = set(texts)
    if not wanted:
        return {}
    source = {text: pk for pk, _, text, has_vector in old if has_vector and text in wanted}
    if not source:
        return {}
    cursor.execute(_VECTORS, [document.tenant_id, list(source.values())])
    by_id = {pk: (vector, provider) for pk, vector, provider in cursor.fetchall()}
    return {text: by_id[pk] for text, pk in source.items() if pk in by_id}


def _needs_vector(key: str) -> Q:
    return Q(embedding__isnull=True) | ~Q(embedding_provider=key)


# A write rewrites a changed passage in place, so a vector is stored only while its passage
# still has the text it was computed from (the provider call takes no lock).
_STORE_VECTORS = f"""
    UPDATE {_PASSAGE} p SET embedding = v.embedding::halfvec, embedding_provider = %(key)s
    FROM unnest(%(ids)s::bigint[], %(texts)s::text[], %(embeddings)s::text[])
        AS v(id, text, embedding)
    WHERE p.tenant_id = %(tenant)s AND p.id = v.id AND p.text = v.text
"""  # noqa: S608 - the table name is ours, values are parameters


def passages_embed(*, passages: Sequence[Passage], provider: EmbeddingProvider) -> int:
    """Embed ``passages`` in one provider call and store the vectors; returns how many."""
    if not passages:
        return 0
    vectors = provider.embed([passage.text for passage in passages])
    with connection.cursor() as cursor:
        cursor.execute(_STORE_VECTORS, {
            "tenant": current_tenant_id(), "key": provider_key(provider),
            "ids": [passage.pk for passage in passages],
            "texts": [passage.text for passage in passages],
            "embeddings": [halfvec_literal(vector) for vector in vectors],
        })
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
