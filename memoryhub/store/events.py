"""The event feed's insert: the event, numbered under the tenant's feed lock, and its deliveries.

An event's public id is its ``seq``, the tenant's own number (``EventFeed``), and it is the
feed's cursor, so numbers must become visible in increasing order: the insert updates the
tenant's ``EventFeed`` row, whose row lock (held until the transaction ends) makes the event
inserts of one tenant commit in ``seq`` order (``memoryhub.services.events``). Webhook
deliveries are numbered from the same row.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection

from memoryhub.models import (
    DeliveryStatus,
    EventFeed,
    MemoryEvent,
    WebhookDelivery,
    WebhookEndpoint,
)
from memoryhub.store._tenancy import tenant_id, tenant_is
from memoryhub.store.usage import WRITES_UPSERT

# Every write records an event, so it is one statement (one round trip, no ORM compilation).
# The subscribed endpoints (the outbox, see memoryhub.services.webhooks) are read first, with
# a key-share lock (memoryhub.store.webhooks: an endpoint's lock comes before its deliveries'
# rows): an endpoint being deleted is waited for and then left out, instead of getting a
# delivery whose foreign key fails at this transaction's commit, or at the deletion's. Then
# the tenant's counters move on by one event and one delivery per endpoint: that upsert waits
# for the row lock of any other transaction numbering this tenant's events, and then counts
# on from its committed numbers (ON CONFLICT DO UPDATE updates the latest row version). The
# event and its deliveries take the numbers the upsert returns; a memory change also counts
# as one write of the day for the dashboard's usage chart (memoryhub.store.usage).
EVENT_CTES = f"""
    endpoint_held AS (
        SELECT endpoint.id FROM {WebhookEndpoint._meta.db_table} endpoint
        WHERE {tenant_is("endpoint", param="%(tenant)s")} AND endpoint.enabled
            AND endpoint.event_types @> %(types)s::jsonb
        ORDER BY endpoint.id FOR KEY SHARE
    ),
    endpoint AS (SELECT id, row_number() OVER (ORDER BY id) AS n FROM endpoint_held),
    subscribed AS (SELECT count(*) AS count FROM endpoint),
    feed AS (
        INSERT INTO {EventFeed._meta.db_table} AS feed (tenant_id, last_event, last_delivery)
        SELECT %(tenant)s, 1, subscribed.count FROM subscribed
        ON CONFLICT (tenant_id) DO UPDATE SET last_event = feed.last_event + 1,
            last_delivery = feed.last_delivery + EXCLUDED.last_delivery
        RETURNING last_event, last_delivery
    ),
    event AS (
        INSERT INTO {MemoryEvent._meta.db_table}
            (tenant_id, seq, type, user_id, actor, data, created_at)
        SELECT %(tenant)s, feed.last_event, %(type)s, %(user_id)s, %(actor)s, %(data)s::jsonb,
            %(at)s
        FROM feed
        RETURNING id, seq
    ),
    delivery AS (
        INSERT INTO {WebhookDelivery._meta.db_table}
            (tenant_id, seq, endpoint_id, event_id, status, attempts, next_attempt_at,
             last_error, created_at)
        SELECT %(tenant)s, feed.last_delivery - subscribed.count + endpoint.n, endpoint.id,
            event.id, %(pending)s, 0, %(at)s, '', %(at)s
        FROM endpoint, subscribed, feed, event
        RETURNING id
    ),
    usage AS ({WRITES_UPSERT})
"""
# What the event's statement returns, in ``EventInsert.built``'s order: a statement that
# writes something else first (a new document, memoryhub.store.documents) puts EVENT_CTES
# after its own and these columns after its own.
EVENT_COLUMNS = (
    "(SELECT id FROM event), (SELECT seq FROM event), ARRAY(SELECT id FROM delivery ORDER BY id)"
)
_RECORD = f"WITH {EVENT_CTES} SELECT {EVENT_COLUMNS}"


@dataclass(frozen=True)
class EventInsert:
    """One event ready to insert: the parameters of ``EVENT_CTES`` (whose names a statement
    that embeds them must not use for anything else) and what the event will be."""

    params: dict[str, Any]
    event: MemoryEvent

    def built(self, row: Sequence[Any]) -> tuple[MemoryEvent, list[int]]:
        """The event saved, from ``EVENT_COLUMNS``' values: (the event, its deliveries' ids)."""
        event_id, seq, delivery_ids = row
        self.event.id, self.event.seq = event_id, seq
        self.event._state.adding, self.event._state.db = False, DEFAULT_DB_ALIAS
        return self.event, delivery_ids


def event_insert_prepared(
    *, type: str, user_id: str, actor: str, data: dict[str, Any], now: datetime,
    counts_as_write: bool = False,
) -> EventInsert:
    """The insert ``event_insert`` runs, for a statement that runs it with a write of its
    own (one round trip for both); the feed lock is then taken by that statement."""
    tenant = tenant_id()
    return EventInsert(
        params={
            "tenant": tenant, "type": type, "user_id": user_id, "actor": actor,
            "data": json.dumps(data), "at": now, "pending": DeliveryStatus.PENDING.value,
            "types": json.dumps([type]),
            "counts": counts_as_write, "day": now.astimezone(UTC).date(),
        },
        event=MemoryEvent(tenant_id=tenant, type=type, user_id=user_id, actor=actor, data=data,
                          created_at=now),
    )


def event_insert(
    *, type: str, user_id: str, actor: str, data: dict[str, Any], now: datetime,
    counts_as_write: bool = False,
) -> tuple[MemoryEvent, list[int]]:
    """Append an event to the current tenant's feed and queue a pending delivery for every
    enabled endpoint subscribed to ``type``: (the event, the deliveries' ids). One statement;
    the feed lock it takes is held until the transaction ends. ``counts_as_write``: count one
    write on ``now``'s day (UTC) as well."""
    prepared = event_insert_prepared(type=type, user_id=user_id, actor=actor, data=data,
                                     now=now, counts_as_write=counts_as_write)
    with connection.cursor() as cursor:
        cursor.execute(_RECORD, prepared.params)
        return prepared.built(cursor.fetchone())
