"""Everything the current tenant holds, read one record at a time (``manage.py export_tenant``).

Records come kind by kind, each in a stable order, streamed from the database in chunks so
that a big tenant never sits in memory whole: the tenant's settings, then its profiles,
members, invitations, API keys, webhook endpoints and their deliveries, audit log, usage
days and augmentation failures, then each end user with everything stored for them (the
person's own export, ``end_user_export``), then the events that name no end user still held
(a forgotten person's last event, say): every event is written once.

:data:`KINDS` says where each tenant table goes and :data:`LEFT_OUT` which are not exported
and why; tests/operations/test_export_tenant.py checks that the two cover every tenant table
the models declare, so a new table needs a decision here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Model, QuerySet

from memoryhub.models import (
    AugmentationFailure,
    Conversation,
    EndUser,
    EventFeed,
    Fact,
    FactSourceKey,
    FactVersion,
    MemoryDocument,
    MemoryEvent,
    Message,
    Passage,
    PortalLink,
    Profile,
    UsageDay,
    WebhookDelivery,
    WebhookEndpoint,
    WriteTally,
)
from memoryhub.selectors.people import end_user_export
from tenants.models import ApiKey, AuditEntry, Invitation, Membership

# Each tenant table, and the kind of record that carries its rows.
KINDS: dict[type[Model], str] = {
    Profile: "profile",
    Membership: "member",
    Invitation: "invitation",
    ApiKey: "api_key",
    WebhookEndpoint: "webhook",
    WebhookDelivery: "webhook_delivery",
    AuditEntry: "audit",
    UsageDay: "usage",
    AugmentationFailure: "augmentation_failure",
    EndUser: "end_user",
    MemoryDocument: "end_user",
    Conversation: "end_user",
    Message: "end_user",
    Fact: "end_user",
    FactVersion: "end_user",
    PortalLink: "end_user",
    MemoryEvent: "end_user",  # and "event" for those that name no end user held
}
LEFT_OUT: dict[type[Model], str] = {
    Passage: "copies of the documents' text (and their vectors), rebuilt from the documents",
    WriteTally: "counters of the current turn or minute for max_writes_per_turn",
    FactSourceKey: "augmentation's keys of what it already learnt from which message",
    EventFeed: "the tenant's last event and delivery numbers, which the events carry",
}


@dataclass(frozen=True)
class Record:
    kind: str
    row: Any  # the model instance; for "end_user", the person's EndUserExport


def _orphan_events() -> QuerySet[MemoryEvent]:
    return MemoryEvent.objects.exclude(user_id__in=EndUser.objects.values("user_id"))


def _streams() -> list[tuple[str, QuerySet[Any]]]:
    return [
        ("profile", Profile.objects.order_by("name")),
        ("member", Membership.objects.select_related("user").order_by("created_at", "id")),
        ("invitation", Invitation.objects.order_by("created_at", "id")),
        ("api_key", ApiKey.objects.order_by("created_at", "id")),
        ("webhook", WebhookEndpoint.objects.order_by("created_at", "id")),
        ("webhook_delivery", WebhookDelivery.objects.order_by("id")),
        ("audit", AuditEntry.objects.order_by("id")),
        ("usage", UsageDay.objects.order_by("day")),
        ("augmentation_failure", AugmentationFailure.objects.order_by("id")),
        ("end_user", EndUser.objects.select_related("account").order_by("id")),
        ("event", _orphan_events().order_by("id")),
    ]


def tenant_export_counts() -> dict[str, int]:
    """How many records of each kind :func:`tenant_export_records` yields."""
    return {kind: rows.count() for kind, rows in _streams()}


def tenant_export_records(*, chunk_size: int = 500) -> Iterator[Record]:
    """Every record of the current tenant, kind by kind (see the module's docstring)."""
    for kind, rows in _streams():
        for row in rows.iterator(chunk_size=chunk_size):
            if kind == "end_user":
                row = end_user_export(user_id=row.user_id, end_user=row)
            yield Record(kind, row)
