"""Augmentation (spec: Facts): a cold path that learns facts from captured conversations.

After a capture commits, ``augmentation_schedule`` enqueues one run for the conversation,
``AUGMENTATION_DEBOUNCE_SECONDS`` later; a capture that finds a run already scheduled (and
not yet due: its key in the cache holds the time it is due) enqueues nothing, so a burst of
captures makes one run. Capture never waits for it: the process's
publisher thread enqueues (``run_publisher``), and the augmentation sweep
(``memoryhub.tasks``) enqueues a run that was lost on the way.

A run reads in one transaction (``augmentation_batch``: the messages after the
conversation's durable cursor, ``augmented_seq``, its rolling summary and, for the ``openai``
extractor, the person's facts most like the new messages), calls the extractor that
``AUGMENTATION_PROVIDER`` names (``memoryhub.augmentation``) outside any transaction, so no
lock waits for a model, then writes in another (``augmentation_apply``): it takes the
person's write lock, then the conversation's row, applies each candidate
(``memoryhub.services.facts.fact_learn``: stable keys, merges, near-duplicate merges by
embedding, invalidation; the candidates are embedded with the configured provider first,
in one call), stores the
rolling summary unless the app or the person set one (theirs wins: ``Conversation.summary_by``)
and moves the cursor. If the cursor moved meanwhile (another run read those messages), it
writes nothing. A run that fails changes nothing and leaves the cursor where it was, for the
retry; after the last retry the failure is recorded (``augmentation_failure_record``) for
the dashboard.

Off (the tenant's ``augmentation_enabled``, provider ``none``, memory off for the person or
the conversation's profile): the cursor moves on and nothing is learnt, so switching it on
later does not mine what was said while it was off.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from uuid import UUID

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from memoryhub.augmentation.base import Extraction, ExtractionContext, Extractor, SourceMessage
from memoryhub.augmentation.providers import extractor_for
from memoryhub.infra.embeddings import EmbeddingError, get_provider, provider_key
from memoryhub.infra.jobs import AUGMENT_CONVERSATION, job_enqueue, jobs_run_inline
from memoryhub.infra.publisher import Publisher
from memoryhub.models import RECALL_COLUMNS, Actor, AugmentationFailure, Conversation, Message
from memoryhub.selectors.documents import end_user_find, memory_disabled_reason
from memoryhub.selectors.facts import facts_like
from memoryhub.services.facts import fact_learn
from tenants.context import current_tenant_id
from tenants.models import Tenant

logger = logging.getLogger(__name__)
AUGMENT_BATCH = 200  # messages per run's transaction; the task loops until fewer remain
KNOWN_FACTS = 30  # of the person's facts most like the new messages, in the openai prompt
KEPT_FAILURES = 200  # the tenant's latest failures kept for the dashboard
MAX_ERROR_CHARS = 1000
SUMMARY_WRITERS = (Actor.APP, Actor.USER)  # whose summary augmentation leaves as it is


def augmentation_schedule(*, tenant_id: int, conversation_id: UUID) -> None:
    """Enqueue the conversation's run when the capture's transaction commits."""
    transaction.on_commit(partial(_enqueue, tenant_id=tenant_id,
                                  conversation_id=str(conversation_id)), robust=True)


def _enqueue(*, tenant_id: int, conversation_id: str) -> None:
    """On commit: hand the run to this process's publisher thread, so that the request waits
    neither for the cache's debounce key nor for the broker (inline in eager mode)."""
    if jobs_run_inline():
        _runs_schedule([(tenant_id, conversation_id)])
    else:
        run_publisher.submit((tenant_id, conversation_id))


def _runs_schedule(runs: list[tuple[int, str]]) -> None:
    """Enqueue each conversation's run ``AUGMENTATION_DEBOUNCE_SECONDS`` from now, unless
    one is scheduled and has not started (its key in the cache holds the time it is due):
    a burst of captures makes one run. The key lives whole seconds (Django's Redis cache
    truncates a timeout to them: 0.5 s was no key at all), so its value, not its life, says
    whether the run is still to come."""
    delay = 0 if jobs_run_inline() else settings.AUGMENTATION_DEBOUNCE_SECONDS
    for tenant_id, conversation_id in dict.fromkeys(runs):
        key = f"augment:{tenant_id}:{conversation_id}"
        if delay > 0:
            due, lives = time.time() + delay, math.ceil(delay)
            if not cache.add(key, due, timeout=lives):
                scheduled = cache.get(key)
                if isinstance(scheduled, float) and scheduled > time.time():
                    continue  # the scheduled run will read these messages too
                cache.set(key, due, timeout=lives)  # that run may be reading already
        try:
            job_enqueue(name=AUGMENT_CONVERSATION, countdown=delay,
                        kwargs={"tenant_id": tenant_id, "conversation_id": conversation_id})
        except Exception:
            cache.delete(key)  # the next capture schedules it again; else the sweep does
            logger.exception("could not enqueue augmentation of conversation %s",
                             conversation_id)


# What a process loses before sending (killed without exiting normally) or could not send,
# the augmentation sweep (memoryhub.tasks) enqueues once AUGMENTATION_SWEEP_GRACE has passed.
run_publisher: Publisher[tuple[int, str]] = Publisher(
    _runs_schedule, linger=0.0, batch=100, what="augmentation runs",
    lost="the augmentation sweep will find them",
)


def conversations_awaiting_augmentation(*, last_message_before: datetime,
                                        limit: int) -> list[UUID]:
    """The current tenant's conversations whose cursor is behind their messages, the last
    one older than ``last_message_before``, oldest first: their run's message was lost. Not
    those whose run failed after their last message (the dashboard shows the failure; the
    next capture tries again), which would otherwise be retried at every sweep."""
    failed = AugmentationFailure.objects.filter(conversation_id=OuterRef("id"),
                                                created_at__gte=OuterRef("last_message_at"))
    waiting = (Conversation.objects
               .filter(message_count__gt=F("augmented_seq"),
                       last_message_at__lt=last_message_before)
               .exclude(Exists(failed)).order_by("last_message_at"))
    return list(waiting.values_list("id", flat=True)[:limit])


@dataclass(frozen=True)
class Batch:
    """What one run reads (``augmentation_batch``) before its extractor runs outside any
    transaction: the messages after the cursor, what is known, and where the cursor was."""

    conversation_id: str
    after_seq: int
    last_seq: int
    user_id: str
    messages: list[SourceMessage]
    context: ExtractionContext
    extractor: Extractor | None  # None: augmentation is off; the cursor moves on

    @property
    def provider(self) -> str:
        return self.extractor.name if self.extractor is not None else "none"

    def extract(self) -> Extraction:
        """The extractor's answer (``ExtractionFailed`` when it has none). No database: a
        model may take seconds, and no lock or transaction waits for it."""
        if self.extractor is None:
            return Extraction(candidates=[])
        return self.extractor.extract(self.messages, self.context)


def configured_extractor() -> Extractor | None:
    return extractor_for(
        settings.AUGMENTATION_PROVIDER, url=settings.AUGMENTATION_URL,
        api_key=settings.AUGMENTATION_API_KEY, model=settings.AUGMENTATION_MODEL,
        timeout=settings.AUGMENTATION_TIMEOUT, max_retries=settings.AUGMENTATION_MAX_RETRIES,
    )


def augmentation_batch(*, conversation_id: str) -> Batch | None:
    """Up to AUGMENT_BATCH messages after the cursor, or None when there are none (or the
    conversation is gone)."""
    conversation = (Conversation.objects.filter(id=conversation_id)
                    .select_related("end_user").first())
    if conversation is None:
        return None  # deleted since
    rows = list(Message.objects.defer(*RECALL_COLUMNS)
                .filter(conversation=conversation, seq__gt=conversation.augmented_seq)
                .order_by("seq")[:AUGMENT_BATCH])
    if not rows:
        return None
    end_user = conversation.end_user
    tenant = Tenant.objects.get(pk=current_tenant_id())
    off = (not tenant.augmentation_enabled
           or memory_disabled_reason(tenant=tenant, end_user=end_user,
                                     profile=conversation.profile or None) is not None)
    extractor = None if off else configured_extractor()
    messages = [SourceMessage(id=str(m.id), seq=m.seq, role=m.role, content=m.content,
                              created_at=m.created_at) for m in rows]
    known = (facts_like(end_user=end_user, texts=[m.content for m in messages], limit=KNOWN_FACTS)
             if extractor is not None and extractor.wants_known_facts else [])
    return Batch(conversation_id=conversation_id, after_seq=conversation.augmented_seq,
                 last_seq=rows[-1].seq, user_id=end_user.user_id, messages=messages,
                 context=ExtractionContext(previous_summary=conversation.summary,
                                           known_facts=known),
                 extractor=extractor)


def augmentation_apply(batch: Batch, extraction: Extraction) -> int:
    """Write what the extractor found and move the cursor, in the caller's transaction,
    under the person's write lock; returns how many messages were read (0 when another run
    moved the cursor meanwhile: it read them)."""
    end_user = end_user_find(user_id=batch.user_id, for_update=True)  # the person's write lock
    conversation = Conversation.objects.select_for_update().filter(id=batch.conversation_id).first()
    if end_user is None or conversation is None or conversation.augmented_seq != batch.after_seq:
        return 0
    vectors = _candidate_vectors([candidate.content for candidate in extraction.candidates])
    for candidate, vector in zip(extraction.candidates, vectors, strict=True):
        fact_learn(end_user=end_user, candidate=candidate, vector=vector,
                   conversation_id=str(conversation.id), process=conversation.process)
    changed = ["augmented_seq"]
    if (extraction.summary is not None and conversation.summary_by not in SUMMARY_WRITERS
            and extraction.summary != conversation.summary):
        # An app's or the person's summary wins: augmentation writes its own only until
        # either sets one.
        # The same text again (the same messages read twice) changes nothing, its time included.
        conversation.summary = extraction.summary
        conversation.summary_by = Actor.AUGMENTATION
        conversation.summary_updated_at = timezone.now()
        changed += ["summary", "summary_by", "summary_updated_at"]
    conversation.augmented_seq = batch.last_seq
    conversation.save(update_fields=changed)
    return len(batch.messages)


def augmentation_failure_record(*, batch: Batch | None, conversation_id: str, error: str,
                                malformed: bool, attempts: int) -> None:
    """A run that failed after its last retry, for the dashboard; the cursor stays. Under
    the person's write lock, and only while the conversation exists: a run whose person was
    forgotten (or whose conversation was deleted) while its model failed records nothing, so
    no row naming them outlives the forget, and a forget that comes after removes this one."""
    user_id = (Conversation.objects.filter(id=conversation_id)
               .values_list("end_user__user_id", flat=True).first())
    if (user_id is None or end_user_find(user_id=user_id, for_update=True) is None
            or not Conversation.objects.filter(id=conversation_id).exists()):
        return
    provider = batch.provider if batch is not None else settings.AUGMENTATION_PROVIDER
    AugmentationFailure.objects.create(
        tenant_id=current_tenant_id(), conversation_id=conversation_id, user_id=user_id,
        provider=provider, error=error[:MAX_ERROR_CHARS], malformed=malformed, attempts=attempts,
    )
    stale = (AugmentationFailure.objects.order_by("-created_at", "-id")
             .values_list("id", flat=True)[KEPT_FAILURES:KEPT_FAILURES + 100])
    AugmentationFailure.objects.filter(id__in=list(stale)).delete()


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
