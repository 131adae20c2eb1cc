"""Celery tasks: thin, keyword-only ids, each in its own tenant context, each idempotent.

A task loads what it needs by id inside ``tenant_context`` (RLS applies to the worker like
to any request) and calls one service. Running a task twice changes nothing the second
time: the embedding task skips a document whose version moved on and passages that already
have a vector; a delivery is sent only while its row is pending and due, under a row lock.

Beat (``CELERY_BEAT_SCHEDULE`` in settings) runs the sweeps. They iterate tenants (the
Tenant table is platform data, readable without a tenant) and work for each one inside its
own context: retention fans out one task per tenant; the webhook and embedding sweeps only
re-enqueue work a lost message left behind.

Every task has an explicit ``name=``: services and the publisher enqueue by that name
(memoryhub/infra/jobs.py), so they need not import this module, which imports them; and
queued messages and the beat schedule keep finding their task if this module moves.

Webhook deliveries and their sweep go to a queue of their own, which a worker of its own
takes (the routes in memoryhub/infra/queues.py): an endpoint that hangs holds up only them.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from celery import Task, shared_task
from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from memoryhub.augmentation.base import ExtractionFailed
from memoryhub.augmentation.providers import UnknownProvider
from memoryhub.infra.embeddings import EmbeddingError
from memoryhub.services.augmentation import (
    AUGMENT_BATCH,
    augmentation_apply,
    augmentation_batch,
    augmentation_failure_record,
    conversations_awaiting_augmentation,
)
from memoryhub.services.conversations import conversations_expired_purge
from memoryhub.services.passages import (
    documents_awaiting_vectors,
    documents_embed,
    records_awaiting_vectors,
    records_embed,
)
from memoryhub.services.retention import RETENTION_BATCH, retention_purge_batch, write_tallies_purge
from memoryhub.services.usage import usage_stored_bytes_record
from memoryhub.services.webhooks import deliveries_due, webhook_deliver
from tenants.context import tenant_context
from tenants.models import Tenant

logger = logging.getLogger(__name__)

SWEEP_LIMIT = 1000  # per tenant and run; the next run takes the rest


@shared_task(
    name="memoryhub.tasks.embed_documents",
    autoretry_for=(EmbeddingError,), retry_backoff=5, retry_backoff_max=600, max_retries=8,
)
def embed_documents(*, items: list[list[int]]) -> int:
    """Several documents' embeddings in one message (memoryhub/infra/publisher.py, the sweep):
    [tenant, document, version] each; each tenant's in one transaction of its own context,
    with what else waits in that tenant (memoryhub/services/passages.py, "Catching up").
    A retry redoes only what is missing."""
    embedded = 0
    for tenant_id, documents in _by_tenant(items).items():
        with tenant_context(tenant_id):
            embedded += documents_embed(documents=documents, catch_up=True)
    return embedded


def _by_tenant(items: list[list]) -> dict[int, list[tuple]]:
    """Each tenant's items, without the tenant: [[1, a, b], [2, c, d]] -> {1: [(a, b)], ...}."""
    grouped: dict[int, list[tuple]] = {}
    for tenant_id, *rest in items:
        grouped.setdefault(tenant_id, []).append(tuple(rest))
    return grouped


@shared_task(
    name="memoryhub.tasks.embed_document",
    autoretry_for=(EmbeddingError,), retry_backoff=5, retry_backoff_max=600, max_retries=8,
)
def embed_document(*, tenant_id: int, document_id: int, version: int) -> int:
    """One document: what earlier releases enqueued, kept for messages still in the queue."""
    return embed_documents(items=[[tenant_id, document_id, version]])


@shared_task(
    name="memoryhub.tasks.embed_records",
    autoretry_for=(EmbeddingError,), retry_backoff=5, retry_backoff_max=600, max_retries=8,
)
def embed_records(*, items: list[list]) -> int:
    """Facts' and conversations' messages' vectors (recall over facts and messages):
    [tenant, "fact" or "conversation", id] each; each tenant's in its own context."""
    embedded = 0
    for tenant_id, records in _by_tenant(items).items():
        with tenant_context(tenant_id):
            embedded += records_embed(items=records, catch_up=True)
    return embedded


@shared_task(name="memoryhub.tasks.deliver_webhook")
def deliver_webhook(*, tenant_id: int, delivery_id: int) -> str:
    return webhook_deliver(tenant_id=tenant_id, delivery_id=delivery_id)  # its transactions


@shared_task(name="memoryhub.tasks.retention_purge")
def retention_purge(*, tenant_id: int) -> int:
    """Purge the tenant's expired sessions, then its expired conversations, one short
    transaction per batch, then the write tallies whose turn or minute is long over.
    Returns how many sessions and conversations went."""
    total = 0
    while True:
        with tenant_context(tenant_id):
            tenant = Tenant.objects.get(pk=tenant_id)
            purged = retention_purge_batch(tenant=tenant, now=timezone.now())
        total += purged
        if purged < RETENTION_BATCH:
            break
    # Until a batch finds none: one that skipped rows a capture holds may come back short.
    while conversations := _conversations_batch_purge(tenant_id):
        total += conversations
    with tenant_context(tenant_id):
        write_tallies_purge()
    return total


def _conversations_batch_purge(tenant_id: int) -> int:
    with tenant_context(tenant_id):
        tenant = Tenant.objects.get(pk=tenant_id)
        return conversations_expired_purge(tenant=tenant, now=timezone.now())


@shared_task(name="memoryhub.tasks.retention_purge_all")
def retention_purge_all() -> int:
    # Every tenant, even one that keeps sessions forever: its write tallies still expire.
    tenant_ids = list(Tenant.objects.values_list("id", flat=True))
    for tenant_id in tenant_ids:
        retention_purge.delay(tenant_id=tenant_id)
    return len(tenant_ids)


@shared_task(name="memoryhub.tasks.webhooks_sweep")
def webhooks_sweep() -> int:
    """Re-enqueue deliveries that are due but whose message was lost."""
    enqueued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with tenant_context(tenant_id):
            due = deliveries_due(now=timezone.now(), limit=SWEEP_LIMIT)
        for delivery_id in due:
            deliver_webhook.delay(tenant_id=tenant_id, delivery_id=delivery_id)
        enqueued += len(due)
    return enqueued


@shared_task(name="memoryhub.tasks.usage_snapshot_all")
def usage_snapshot_all() -> int:
    """Hourly: every tenant's stored bytes, as today's reading for the dashboard's usage chart
    (the last reading of a day stands for that day). One aggregate per tenant, each in its own
    short transaction."""
    tenant_ids = list(Tenant.objects.values_list("id", flat=True))
    for tenant_id in tenant_ids:
        with tenant_context(tenant_id):
            usage_stored_bytes_record()
    return len(tenant_ids)


@shared_task(name="memoryhub.tasks.embeddings_sweep")
def embeddings_sweep() -> int:
    """Re-enqueue embedding of documents, facts and messages whose on-commit task was lost."""
    enqueued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with tenant_context(tenant_id):
            # Younger rows are still in the normal path (their on-commit task).
            before = timezone.now() - timedelta(seconds=settings.EMBEDDINGS_SWEEP_GRACE)
            waiting = documents_awaiting_vectors(created_before=before, limit=SWEEP_LIMIT)
            records = records_awaiting_vectors(created_before=before, limit=SWEEP_LIMIT)
        if waiting:
            embed_documents.delay(items=[[tenant_id, pk, version] for pk, version in waiting])
        if records:
            embed_records.delay(items=[[tenant_id, kind, pk] for kind, pk in records])
        enqueued += len(waiting) + len(records)
    return enqueued


@shared_task(name="memoryhub.tasks.augmentation_sweep")
def augmentation_sweep() -> int:
    """Enqueue the run of conversations whose cursor has stayed behind their messages for
    longer than AUGMENTATION_SWEEP_GRACE: their run's message was lost (the broker was away,
    or the web process died before its publisher thread sent it). A run is idempotent (the
    cursor), so one that was only late costs a run that writes nothing."""
    enqueued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        before = timezone.now() - timedelta(seconds=settings.AUGMENTATION_SWEEP_GRACE)
        with tenant_context(tenant_id):
            waiting = conversations_awaiting_augmentation(last_message_before=before,
                                                          limit=SWEEP_LIMIT)
        for conversation_id in waiting:
            augment_conversation.delay(tenant_id=tenant_id, conversation_id=str(conversation_id))
        enqueued += len(waiting)
    return enqueued


@shared_task(name="memoryhub.tasks.augment_conversation", bind=True, max_retries=None)
def augment_conversation(self: Task[Any, Any], *, tenant_id: int, conversation_id: str) -> int:
    """Learn facts from the conversation's messages after its cursor, a batch at a time
    (memoryhub/services/augmentation.py): read in one transaction, extract outside any, write
    and move the cursor in another. A failure (the database, the extractor's provider, an
    answer that is not an extraction) is retried with backoff from the cursor, up to
    AUGMENTATION_RUN_RETRIES times; after the last it is recorded for the dashboard
    (AugmentationFailure) and the cursor stays, so the next run reads those messages again."""
    total = 0
    while True:
        batch = None
        try:
            with tenant_context(tenant_id):
                batch = augmentation_batch(conversation_id=conversation_id)
            if batch is None:
                return total
            extraction = batch.extract()
            with tenant_context(tenant_id):
                total += augmentation_apply(batch, extraction)
        except (DatabaseError, ExtractionFailed, UnknownProvider) as error:
            malformed = isinstance(error, ExtractionFailed) and error.malformed
            logger.warning("augmentation of conversation %s failed (attempt %d): %s",
                           conversation_id, self.request.retries + 1, error)
            if self.request.retries < settings.AUGMENTATION_RUN_RETRIES:
                countdown = min(300, 2 ** (self.request.retries + 1))
                raise self.retry(exc=error, countdown=countdown,
                                 max_retries=settings.AUGMENTATION_RUN_RETRIES) from error
            with tenant_context(tenant_id):
                augmentation_failure_record(
                    batch=batch, conversation_id=conversation_id,
                    error=f"{type(error).__name__}: {error}", malformed=malformed,
                    attempts=self.request.retries + 1)
            return total
        if len(batch.messages) < AUGMENT_BATCH:
            return total
