"""Augmentation (spec: Facts): a cold path that learns facts from captured conversations.

After a capture commits, ``augmentation_schedule`` enqueues one run for the conversation,
``AUGMENTATION_DEBOUNCE_SECONDS`` later; a capture that finds a run already scheduled (and
not yet started: its key in the cache lives exactly as long as the countdown) enqueues
nothing, so a burst of captures makes one run. Capture never waits for it.

A run (``conversation_augment``) takes the person's write lock, then the conversation's row,
reads the messages after the conversation's durable cursor (``augmented_seq``), hands them to
the extractor ``AUGMENTATION_PROVIDER`` names (``memoryhub.augmentation``), applies each
candidate (``memoryhub.services.facts.fact_learn``: stable keys, merges, near-duplicate
merges by embedding, invalidation; the candidates are embedded with the configured provider
first, in one call) and moves the cursor, all in one transaction: a run that fails changes nothing and leaves the
cursor where it was, for the retry. Two runs of one conversation take turns on the lock; the
second finds nothing after the cursor.

Off (the tenant's ``augmentation_enabled``, provider ``none``, memory off for the person or
the conversation's profile): the cursor moves on and nothing is learnt, so switching it on
later does not mine what was said while it was off.
"""

from __future__ import annotations

import logging
from functools import partial
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from memoryhub.augmentation.base import SourceMessage
from memoryhub.augmentation.providers import extractor_for
from memoryhub.infra.embeddings import EmbeddingError, get_provider, provider_key
from memoryhub.infra.jobs import AUGMENT_CONVERSATION, job_enqueue, jobs_run_inline
from memoryhub.models import RECALL_COLUMNS, Conversation, Message
from memoryhub.selectors.documents import end_user_find, memory_disabled_reason
from memoryhub.services.facts import fact_learn
from tenants.context import current_tenant_id
from tenants.models import Tenant

logger = logging.getLogger(__name__)
AUGMENT_BATCH = 200  # messages per run's transaction; the task loops until fewer remain


def augmentation_schedule(*, tenant_id: int, conversation_id: UUID) -> None:
    """Enqueue the conversation's run when the capture's transaction commits."""
    transaction.on_commit(partial(_enqueue, tenant_id=tenant_id,
                                  conversation_id=str(conversation_id)), robust=True)


def _enqueue(*, tenant_id: int, conversation_id: str) -> None:
    delay = 0 if jobs_run_inline() else settings.AUGMENTATION_DEBOUNCE_SECONDS
    key = f"augment:{tenant_id}:{conversation_id}"
    if delay > 0 and not cache.add(key, 1, timeout=delay):
        return  # a run is scheduled and has not started: it will read these messages too
    try:
        job_enqueue(name=AUGMENT_CONVERSATION, countdown=delay,
                    kwargs={"tenant_id": tenant_id, "conversation_id": conversation_id})
    except Exception:
        cache.delete(key)
        logger.exception("could not enqueue augmentation of conversation %s", conversation_id)


def conversation_augment(*, conversation_id: str) -> int:
    """Learn from up to AUGMENT_BATCH messages after the cursor; returns how many were read."""
    owner = (Conversation.objects.filter(id=conversation_id)
             .values_list("end_user__user_id", flat=True).first())
    if owner is None:
        return 0  # deleted since
    end_user = end_user_find(user_id=owner, for_update=True)  # the person's write lock
    conversation = Conversation.objects.select_for_update().filter(id=conversation_id).first()
    if end_user is None or conversation is None:
        return 0
    messages = list(Message.objects.defer(*RECALL_COLUMNS).filter(conversation=conversation,
                                           seq__gt=conversation.augmented_seq)
                    .order_by("seq")[:AUGMENT_BATCH])
    if not messages:
        return 0
    tenant = Tenant.objects.get(pk=current_tenant_id())
    off = (not tenant.augmentation_enabled
           or memory_disabled_reason(tenant=tenant, end_user=end_user,
                                     profile=conversation.profile or None) is not None)
    extractor = None if off else extractor_for(settings.AUGMENTATION_PROVIDER)
    if extractor is not None:
        candidates = extractor.extract([
            SourceMessage(id=str(m.id), seq=m.seq, role=m.role, content=m.content,
                          created_at=m.created_at) for m in messages
        ])
        vectors = _candidate_vectors([candidate.content for candidate in candidates])
        for candidate, vector in zip(candidates, vectors, strict=True):
            fact_learn(end_user=end_user, candidate=candidate, vector=vector,
                       conversation_id=str(conversation.id), process=conversation.process)
    conversation.augmented_seq = messages[-1].seq
    conversation.save(update_fields=["augmented_seq"])
    return len(messages)


def _candidate_vectors(texts: list[str]) -> list[tuple[list[float], str] | None]:
    """The candidates' embeddings with the configured provider, in one call, inside the run:
    the near-duplicate merge compares them, and a new fact is stored with its vector, so it
    is found by vector as soon as the run commits. A provider failure learns without them
    (no near-duplicate merge; the embedding worker gives the new facts their vectors)."""
    if not texts:
        return []
    provider = get_provider()
    try:
        vectors = provider.embed(texts)
    except EmbeddingError:
        logger.warning("augmentation: could not embed %d candidates; learning without vectors",
                       len(texts), exc_info=True)
        return [None] * len(texts)
    key = provider_key(provider)
    return [(vector, key) if any(vector) else None for vector in vectors]
