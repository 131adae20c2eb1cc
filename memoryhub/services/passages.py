"""Keeping recall's passages in step with documents, and giving them vectors.

Contract:
- :func:`document_insert_with_passages` saves a new document with its passages and its
  ``memory.changed`` event (one statement); :func:`document_passages_rebuild` is called by
  every other document write, inside its transaction, after the row is saved. Both make the
  document's passages ``split_passages(content)``: text, offsets, a ``'simple'`` full-text
  vector (no stemming, no stop words: memories are in any language), the document's version,
  and its end user, scope and scope key (recall filters on those with no join). Lexical
  recall finds the document as soon as the write commits. A passage whose text did not
  change keeps its vector, so an edit re-embeds only what changed. On commit it asks for the
  document's embedding (``memoryhub.infra.publisher``: a background thread sends
  ``memoryhub.tasks.embed_documents``, several writes per message) when some passage is left
  without a vector of the current provider.
- :func:`documents_embed` (the task's service; :func:`document_embed` for one) gives vectors
  to the passages of given document versions that lack one, or carry one from another provider. It does nothing when the
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

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial

from django.db import transaction
from django.db.models import Q

from memoryhub.chunking import Passage as Chunk
from memoryhub.chunking import split_passages
from memoryhub.infra.db import halfvec_literal
from memoryhub.infra.embeddings import (
    EmbeddingError,
    EmbeddingProvider,
    get_provider,
    provider_key,
)
from memoryhub.infra.jobs import EMBED_DOCUMENTS, EMBED_RECORDS, jobs_run_inline
from memoryhub.infra.publisher import (
    embedding_enqueue,
    job_enqueue_soon,
    record_embedding_enqueue,
)
from memoryhub.models import Fact, MemoryDocument, MemoryEvent, Message, Passage
from memoryhub.store.documents import document_insert
from memoryhub.store.events import EventInsert
from memoryhub.store.passages import (
    embedding_catch_up_claim,
    embedding_claim,
    passage_vectors,
    passage_vectors_store,
    passages_add_params,
    passages_delete,
    passages_insert,
    passages_of_document,
    passages_rewrite,
    vectors_only_commit,
)
from memoryhub.store.recall import record_vectors_store
from tenants.context import current_tenant_id

logger = logging.getLogger(__name__)


def document_insert_with_passages(
    *, document: MemoryDocument, event: EventInsert,
) -> tuple[MemoryEvent, list[int]]:
    """Save a new document, its passages and its ``memory.changed`` event (``event``, from
    ``changed_event_prepared``) in one statement (one round trip of every create), and ask
    for the passages' embedding on commit; call inside the write's transaction. Returns the
    event saved and its deliveries' ids, for ``event_recorded``."""
    chunks = split_passages(document.content)
    saved = document_insert(document=document, event=event, passages=passages_add_params(
        document=document, ordinals=[c.index for c in chunks], starts=[c.start for c in chunks],
        ends=[c.end for c in chunks], texts=[c.text for c in chunks],
        embeddings=[None] * len(chunks), providers=[""] * len(chunks),
    ))
    if chunks:
        _embed_on_commit(document)
    return saved


def _embed_on_commit(document: MemoryDocument) -> None:
    transaction.on_commit(
        partial(embedding_enqueue, tenant_id=document.tenant_id, document_id=document.pk,
                version=document.version),
        robust=True,  # a broker outage must not fail a write that has committed
    )


def document_passages_rebuild(*, document: MemoryDocument) -> None:
    """Bring the saved document's passages in step (see module docstring); call inside the
    write's transaction.

    A passage keeps its row while the document has its ordinal: an unchanged text keeps its
    vector, a changed one is rewritten in place. Rows past the new last ordinal go, new
    ordinals are added. A changed or new passage whose text some old passage had takes that
    passage's vector; only those vectors are read. An embedding task is enqueued only when
    some passage is left without a vector of the current provider.
    """
    current = provider_key(get_provider())
    chunks = split_passages(document.content)
    old = _old_passages(document, current)
    by_ordinal = {ordinal: (pk, text, has_vector) for pk, ordinal, text, has_vector in old}
    in_place = [chunk for chunk in chunks if chunk.index in by_ordinal]
    added = [chunk for chunk in chunks if chunk.index not in by_ordinal]
    changed = [c for c in in_place if by_ordinal[c.index][1] != c.text]
    ordinals = {c.index for c in chunks}
    dropped = [pk for pk, ordinal, _, _ in old if ordinal not in ordinals]
    # Read the vectors to reuse before their passages are rewritten or dropped.
    vectors = _vectors_for(old, [c.text for c in (*changed, *added)])
    if in_place:
        passages_rewrite(document=document, **_rewritten(in_place, by_ordinal, vectors))
    if dropped:
        passages_delete(ids=dropped)
    if added:
        passages_insert(
            document=document, ordinals=[c.index for c in added],
            starts=[c.start for c in added], ends=[c.end for c in added],
            texts=[c.text for c in added],
            embeddings=[vectors.get(c.text, (None, ""))[0] for c in added],
            providers=[vectors.get(c.text, (None, ""))[1] for c in added],
        )
    rewritten = {c.index for c in changed}
    unchanged_without_vector = any(
        not by_ordinal[c.index][2] for c in in_place if c.index not in rewritten)
    new_without_vector = any(
        vectors.get(c.text, (None, ""))[1] != current for c in (*changed, *added))
    if unchanged_without_vector or new_without_vector:
        _embed_on_commit(document)


def _rewritten(
    in_place: list[Chunk], by_ordinal: dict[int, tuple[int, str, bool]],
    vectors: dict[str, tuple[str, str]],
) -> dict[str, list]:
    """``passages_rewrite``'s arrays: every in-place passage, with text and vector where it
    changed."""
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


def _old_passages(document: MemoryDocument, current: str) -> list[tuple[int, int, str, bool]]:
    """(id, ordinal, text, has a vector of the ``current`` provider) of the document's
    passages; no vectors travel. An edit read them already when it locked the document
    (``document_resolve(lock=True)`` sets ``indexed_passages``): taken once, else queried."""
    read = document.__dict__.pop("indexed_passages", None)
    if read is not None:
        return [(pk, ordinal, text, has_vector and provider == current)
                for pk, ordinal, text, has_vector, provider in read]
    return passages_of_document(document=document, provider=current)


def _vectors_for(
    old: list[tuple[int, int, str, bool]], texts: list[str]
) -> dict[str, tuple[str, str]]:
    """text -> (vector as text, provider) of old passages with one of ``texts`` and a current
    vector."""
    wanted = set(texts)
    if not wanted:
        return {}
    source = {text: pk for pk, _, text, has_vector in old if has_vector and text in wanted}
    if not source:
        return {}
    by_id = passage_vectors(ids=list(source.values()))
    return {text: by_id[pk] for text, pk in source.items() if pk in by_id}


def _needs_vector(key: str) -> Q:
    return Q(embedding__isnull=True) | ~Q(embedding_provider=key)


def passages_embed(passages: Sequence[Passage], *, provider: EmbeddingProvider) -> int:
    """Embed ``passages`` in one provider call and store the vectors; returns how many."""
    if not passages:
        return 0
    vectors = provider.embed([passage.text for passage in passages])
    passage_vectors_store(
        provider=provider_key(provider), ids=[passage.pk for passage in passages],
        texts=[passage.text for passage in passages],
        embeddings=[halfvec_literal(vector) for vector in vectors],
    )
    return len(passages)


def document_embed(*, document_id: int, version: int) -> int:
    """Give vectors to that version's passages that lack a current one; returns how many."""
    return documents_embed(documents=[(document_id, version)])


def documents_embed(*, documents: Sequence[tuple[int, int]], catch_up: bool = False) -> int:
    """:func:`document_embed` for several (document id, version) of the tenant in one provider
    call and one statement of each kind: a worker's message carries several writes, and a
    query, a provider call and a commit per document cost it ten times the embedding itself.
    A document whose version moved on or that is gone is left out.

    ``catch_up`` (the tasks): also up to CATCH_UP other passages of the tenant still without
    a vector, written by writes whose own message is still queued (see "Catching up")."""
    versions: dict[int, int] = {}
    for pk, version in documents:  # the newest asked for: an older one is no longer current
        versions[pk] = max(version, versions.get(pk, version))
    current = dict(MemoryDocument.objects.filter(pk__in=versions).values_list("pk", "version"))
    wanted = {pk: version for pk, version in versions.items() if current.get(pk) == version}
    claimed = embedding_claim(kind="document", ids=list(wanted))
    _ask_again(EMBED_DOCUMENTS, [[pk, version] for pk, version in wanted.items()
                                 if pk not in claimed])
    provider = get_provider()
    candidates = (
        Passage.objects.filter(document_id__in=claimed)
        .filter(_needs_vector(provider_key(provider)))
        .order_by("document_id", "ordinal")
        .only("id", "text", "document_id", "document_version")
    ) if claimed else []
    own = [p for p in candidates if wanted[p.document_id] == p.document_version]
    others: list[Passage] = []
    if catch_up and embedding_catch_up_claim(kind="passages"):
        waiting = list(Passage.objects.filter(embedding__isnull=True)
                       .exclude(document_id__in=claimed).order_by("id")
                       .only("id", "text", "document_id")[:CATCH_UP])
        mine = embedding_claim(kind="document", ids=[p.document_id for p in waiting])
        others = [p for p in waiting if p.document_id in mine]
    if own or others:
        vectors_only_commit()
    return _own_and_waiting_embed(own, others, partial(passages_embed, provider=provider))


def _ask_again(task: str, busy: list[list]) -> None:
    """Send ``task`` again, a little later, for the items (without the tenant) whose claim
    another transaction holds: it embeds what it read, and the task then finds nothing left,
    or the rows of an edit that came after that read."""
    if not busy or jobs_run_inline():  # inline, nothing else can hold a claim meanwhile
        return
    items = [[current_tenant_id(), *item] for item in busy]
    transaction.on_commit(partial(job_enqueue_soon, name=task, kwargs={"items": items},
                                  countdown=CLAIM_RETRY_SECONDS), robust=True)


# --- Catching up -------------------------------------------------------------------------------
#
# A worker's cost is mostly per message (a task, a transaction), so a burst of writes can
# enqueue messages faster than it takes them; each write's vector would then wait for the
# messages ahead of its own. So an embedding task also takes what is waiting in its tenant
# (rows without a vector, through the partial indexes ``*_unembedded``), up to CATCH_UP a
# kind: the first task the worker runs after a write commits gives it its vector, and the
# messages behind find little left to do. One task per tenant and kind catches up at a time
# (a transaction-level advisory lock). A document, a fact or a conversation's messages are
# embedded by one transaction at a time too: a task claims each one it takes, its own and
# the waiting ones, without waiting (``embedding_claim``), leaves the ones another task holds
# to it, and asks for them again CLAIM_RETRY_SECONDS later. Without the claims, a catch-up
# and the same writes' own tasks in the other worker process embedded the same rows at once
# (make bench-embed with the local model: 1,179 vectors computed for 800 writes).
# A provider that refuses the batch is asked again for the task's own rows alone: a row it
# always refuses keeps failing only its own task, as before.

CATCH_UP = 500
CLAIM_RETRY_SECONDS = 1.0


def _own_and_waiting_embed(own: list, others: list, embed: Callable[..., int]) -> int:
    if others:
        try:
            return embed([*own, *others])
        except EmbeddingError as error:
            logger.warning("embedding %d waiting rows with a task's own %d failed (%s); "
                           "the task's own alone", len(others), len(own), error)
    return embed(own)


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


# --- facts and messages (recall over them) -----------------------------------------------------
#
# A fact or a message is embedded whole (a message up to MESSAGE_EMBED_CHARS: a provider
# reads a bounded input anyway). Facts: on commit of an API write, or of an edit that changed
# the content (which clears the vector); augmentation embeds what it learns in its own run.
# Messages: on commit of a capture, the conversation's messages still without a vector.
# The sweep below finds what a lost message left behind, and ``reembed`` what another
# provider embedded.

MESSAGE_EMBED_CHARS = 8000


def record_embedding_schedule(*, tenant_id: int, kind: str, record_id: object) -> None:
    """On commit, ask for the vectors of a fact (``kind`` "fact") or of a conversation's
    messages ("conversation")."""
    transaction.on_commit(
        partial(record_embedding_enqueue, tenant_id=tenant_id, kind=kind, record_id=str(record_id)),
        robust=True,
    )


def _records_embed(
    kind: str, rows: Sequence[tuple[object, str]], *, provider: EmbeddingProvider,
) -> int:
    if not rows:
        return 0
    texts = [text if kind == "fact" else text[:MESSAGE_EMBED_CHARS] for _, text in rows]
    vectors = provider.embed(texts)
    stored, busy = record_vectors_store(
        kind=kind, provider=provider_key(provider), ids=[str(pk) for pk, _ in rows],
        texts=texts, embeddings=[halfvec_literal(vector) for vector in vectors])
    # Rows another transaction held were skipped rather than waited for (a deadlock with
    # a request locking them in its own order, memoryhub.store._locks). A message is held
    # only by its deletion; a fact also by edits that keep its text (a merge, an
    # invalidation, a duplicate found), which ask for no vector: ask again for those.
    if kind == "fact":
        _ask_again(EMBED_RECORDS, [["fact", record] for record in busy])
    return stored


def record_embed(*, kind: str, record_id: str) -> int:
    """The vectors a fact or a conversation's messages lack (of the current provider);
    returns how many were stored. Idempotent: a second run finds nothing to do."""
    return records_embed(items=[(kind, record_id)])


def records_embed(*, items: Sequence[tuple[str, str]], catch_up: bool = False) -> int:
    """:func:`record_embed` for several ("fact" or "conversation", id) of the tenant: one
    query and one provider call per kind, as :func:`documents_embed` does for documents, and
    with ``catch_up`` the facts and messages still waiting in the tenant too."""
    provider = get_provider()
    stale = _needs_vector(provider_key(provider))
    facts = embedding_claim(kind="fact", ids=[pk for kind, pk in items if kind == "fact"])
    conversations = embedding_claim(kind="conversation",
                                    ids=[pk for kind, pk in items if kind != "fact"])
    _ask_again(EMBED_RECORDS, [[kind, pk] for kind, pk in items
                               if pk not in (facts if kind == "fact" else conversations)])
    own_facts = list(Fact.objects.filter(stale, id__in=facts).order_by("id")
                     .values_list("id", "content")) if facts else []
    own_messages = list(Message.objects.filter(stale, conversation_id__in=conversations)
                        .order_by("conversation_id", "seq")
                        .values_list("id", "content")) if conversations else []
    waiting_facts: list = []
    waiting_messages: list = []
    if catch_up and embedding_catch_up_claim(kind="records"):
        found_facts = list(Fact.objects.filter(embedding__isnull=True).exclude(id__in=facts)
                           .order_by("id").values_list("id", "content")[:CATCH_UP])
        mine = embedding_claim(kind="fact", ids=[pk for pk, _ in found_facts])
        waiting_facts = [(pk, text) for pk, text in found_facts if pk in mine]
        found_messages = list(Message.objects.filter(embedding__isnull=True)
                              .exclude(conversation_id__in=conversations).order_by("id")
                              .values_list("id", "content", "conversation_id")[:CATCH_UP])
        mine = embedding_claim(kind="conversation", ids=[c for _, _, c in found_messages])
        waiting_messages = [(pk, text) for pk, text, c in found_messages if c in mine]
    if own_facts or own_messages or waiting_facts or waiting_messages:
        vectors_only_commit()
    return (
        _own_and_waiting_embed(own_facts, waiting_facts,
                               partial(_records_embed, "fact", provider=provider))
        + _own_and_waiting_embed(own_messages, waiting_messages,
                                 partial(_records_embed, "message", provider=provider))
    )


def records_awaiting_vectors(*, created_before: datetime, limit: int) -> list[tuple[str, str]]:
    """("fact", id) and ("conversation", id) of facts and messages still without a vector,
    written before a moment (the embeddings sweep)."""
    facts = (Fact.objects.filter(embedding__isnull=True, updated_at__lt=created_before)
             .order_by("id").values_list("id", flat=True)[:limit])
    conversations = (Message.objects.filter(embedding__isnull=True, captured_at__lt=created_before)
                     .order_by("conversation_id").values_list("conversation_id", flat=True)
                     .distinct()[:limit])
    return [("fact", str(pk)) for pk in facts] + [("conversation", str(pk)) for pk in conversations]


def records_stale_count(*, provider: EmbeddingProvider) -> int:
    """How many of the tenant's facts and messages have no vector of this provider."""
    stale = _needs_vector(provider_key(provider))
    return Fact.objects.filter(stale).count() + Message.objects.filter(stale).count()


def records_reembed_batch(*, provider: EmbeddingProvider, batch_size: int) -> int:
    """Embed the next ``batch_size`` stale facts, else messages, of the tenant (``reembed``)."""
    stale = _needs_vector(provider_key(provider))
    facts = list(Fact.objects.filter(stale).order_by("id").values_list("id", "content")[:batch_size])
    if facts:
        return _records_embed("fact", facts, provider=provider)
    messages = list(Message.objects.filter(stale).order_by("id")
                    .values_list("id", "content")[:batch_size])
    return _records_embed("message", messages, provider=provider)
