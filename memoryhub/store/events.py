"""The event feed's insert: the event, numbered under the tenant's feed lock, and its deliveries.

An event's public id is its ``seq``, the tenant's own number (``EventFeed``), and it is the
feed's cursor, so numbers must become visible in increasing order: the insert updates the
tenant's ``EventFeed`` row, whose row lock (held until the transaction ends) makes the event
inserts of one tenant commit in ``seq`` order (``memoryhub.services.events``). Webhook
deliveries are numbered from the same row.
"""

from __future__ import annotations

import json
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
# The subscribed endpoints (the outbox, see memoryhub.services.webhooks) are read first, then
# the tenant's counters move on by one event and one delivery per endpoint: that upsert waits
# for the row lock of any other transaction numbering this tenant's events, and then counts
# on from its committed numbers (ON CONFLICT DO UPDATE updates the latest row version). The
# event and its deliveries take the numbers the upsert returns; a memory change also counts
# as one write of the day for the dashboard's usage chart (memoryhub.store.usage).
_RECORD = f"""
    WITH endpoint AS (
        SELECT endpoint.id, row_number() OVER (ORDER BY endpoint.id) AS n
        FROM {WebhookEndpoint._meta.db_table} endpoint
        WHERE {tenant_is("endpoint", param="%(tenant)s")} AND endpoint.enabled
            AND endpoint.event_types @> %(types)s::jsonb
    ),
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
            %(now)s
        FROM feed
        RETURNING id, seq
    ),
    delivery AS (
        INSERT INTO {WebhookDelivery._meta.db_table}
            (tenant_id, seq, endpoint_id, event_id, status, attempts, next_attempt_at,
             last_error, created_at)
        SELECT %(tenant)s, feed.last_delivery - subscribed.count + endpoint.n, endpoint.id,
            event.id, %(pending)s, 0, %(now)s, '', %(now)s
        FROM endpoint, subscribed, feed, event
        RETURNING id
    ),
    usage AS ({WRITES_UPSERT})
    SELECT event.id, event.seq, ARRAY(SELECT id FROM delivery ORDER BY id) FROM event
"""


def event_insert(
    *, type: str, user_id: str, actor: str, data: dict[str, Any], now: datetime,
    counts_as_write: bool = False,
) -> tuple[MemoryEvent, list[int]]:
    """Append an event to the current tenant's feed and queue a pending delivery for every
    enabled endpoint subscribed to ``type``: (the event, the deliveries' ids). One statement;
    the feed lock it takes is held until the transaction ends. ``counts_as_write``: count one
    write on ``now``'s day (UTC) as well."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_RECORD, {
            "tenant": tenant, "type": type, "user_id": user_id, "actor": actor,
            "data": json.dumps(data), "now": now, "pending": DeliveryStatus.PENDING.value,
            "types": json.dumps([type]),
            "counts": counts_as_write, "day": now.astimezone(UTC).date(),
        })
        event_id, seq, delivery_ids = cursor.fetchone()
    event = MemoryEvent(id=event_id, seq=seq, tenant_id=tenant, type=type, user_id=user_id,
                        actor=actor, data=data, created_at=now)
    event._state.adding, event._state.db = False, DEFAULT_DB_ALIAS
    return event, delivery_ids
