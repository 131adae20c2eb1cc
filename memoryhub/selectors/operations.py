"""What the worker still has to do and what failed, for one tenant: the gauges of /metrics.

Counts only, never a row's content. The embedding backlogs are read through the partial
indexes of rows still without a vector (``passage_unembedded``, ``message_unembedded``,
``fact_unembedded``), so they cost what is waiting, not what is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from django.db.models import Count, F, Q

from memoryhub.models import (
    AugmentationFailure,
    Conversation,
    DeliveryStatus,
    Fact,
    Message,
    Passage,
    WebhookDelivery,
    WebhookEndpoint,
)


@dataclass(frozen=True)
class OperationsCounts:
    passages_unembedded: int = 0
    messages_unembedded: int = 0
    facts_unembedded: int = 0
    conversations_unaugmented: int = 0  # messages after augmentation's cursor
    augmentation_failures: int = 0  # runs recorded as failed after their last retry
    deliveries_pending: int = 0  # not yet attempted
    deliveries_retrying: int = 0  # pending after at least one failed attempt
    deliveries_abandoned: int = 0
    endpoints_failing: int = 0  # enabled, with failures since their last success
    endpoints_disabled: int = 0

    def __add__(self, other: OperationsCounts) -> OperationsCounts:
        return OperationsCounts(**{
            f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)
        })


def operations_counts(*, augmenting: bool) -> OperationsCounts:
    """The current tenant's backlogs and failures; ``augmenting`` is whether augmentation
    runs for it at all (a switched-off tenant's conversations are not waiting)."""
    pending = Q(status=DeliveryStatus.PENDING)
    deliveries = WebhookDelivery.objects.aggregate(
        pending=Count("id", filter=pending & Q(attempts=0)),
        retrying=Count("id", filter=pending & Q(attempts__gt=0)),
        abandoned=Count("id", filter=Q(status=DeliveryStatus.ABANDONED)),
    )
    endpoints = WebhookEndpoint.objects.aggregate(
        failing=Count("id", filter=Q(enabled=True, failing_since__isnull=False)),
        disabled=Count("id", filter=Q(enabled=False)),
    )
    unaugmented = (
        Conversation.objects.filter(message_count__gt=F("augmented_seq")).count()
        if augmenting else 0
    )
    return OperationsCounts(
        passages_unembedded=Passage.objects.filter(embedding__isnull=True).count(),
        messages_unembedded=Message.objects.filter(embedding__isnull=True).count(),
        facts_unembedded=Fact.objects.filter(embedding__isnull=True).count(),
        conversations_unaugmented=unaugmented,
        augmentation_failures=AugmentationFailure.objects.count(),
        deliveries_pending=deliveries["pending"],
        deliveries_retrying=deliveries["retrying"],
        deliveries_abandoned=deliveries["abandoned"],
        endpoints_failing=endpoints["failing"],
        endpoints_disabled=endpoints["disabled"],
    )
