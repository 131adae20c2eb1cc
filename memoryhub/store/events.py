"""The event feed's insert: the event, under the tenant's feed lock, and its deliveries.

An event's id is the feed's cursor, so ids must become visible in increasing order: a
per-tenant transaction-level advisory lock, taken by the insert itself, makes the event
inserts of one tenant commit in id order (``memoryhub.services.events``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection

from memoryhub.models import DeliveryStatus, MemoryEvent, WebhookDelivery, WebhookEndpoint
from memoryhub.store._tenancy import tenant_id, tenant_is
from memoryhub.store.usage import WRITES_UPSERT

# First key of the two-key advisory lock: a namespace number for "event feed of tenant N".
_EVENT_LOCK_NAMESPACE = 7_001

# Every write records an event, so it is one statement (one round trip, no ORM compilation):
# take the tenant's feed lock, insert the event (the lock CTE is its row source, so the id is
# drawn after the lock is held), and queue a delivery for every enabled endpoint subscribed to
# the type (the outbox, see memoryhub.services.webhooks); a memory change also counts as one
# write of the day for the dashboard's usage chart (memoryhub.store.usage).
_RECORD = f"""
    WITH feed_lock AS (SELECT pg_advisory_xact_lock(%(namespace)s, %(tenant)s)),
    event AS (
        INSERT INTO {MemoryEvent._meta.db_table}
            (tenant_id, type, user_id, actor, data, created_at)
        SELECT %(tenant)s, %(type)s, %(user_id)s, %(actor)s, %(data)s::jsonb, %(now)s
        FROM feed_lock
        RETURNING id
    ),
    delivery AS (
        INSERT INTO {WebhookDelivery._meta.db_table}
            (tenant_id, endpoint_id, event_id, status, attempts, next_attempt_at, last_error,
             created_at)
        SELECT endpoint.tenant_id, endpoint.id, event.id, %(pending)s, 0, %(now)s, '', %(now)s
        FROM {WebhookEndpoint._meta.db_table} endpoint, event
        WHERE {tenant_is("endpoint", param="%(tenant)s")} AND endpoint.enabled
            AND endpoint.event_types @> %(types)s::jsonb
        RETURNING id
    ),
    usage AS ({WRITES_UPSERT})
    SELECT event.id, ARRAY(SELECT id FROM delivery ORDER BY id) FROM event
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
            "namespace": _EVENT_LOCK_NAMESPACE, "tenant": tenant, "type": type,
            "user_id": user_id, "actor": actor, "data": json.dumps(data), "now": now,
            "pending": DeliveryStatus.PENDING.value, "types": json.dumps([type]),
            "counts": counts_as_write, "day": now.astimezone(UTC).date(),
        })
        event_id, delivery_ids = cursor.fetchone()
    event = MemoryEvent(id=event_id, tenant_id=tenant, type=type, user_id=user_id,
                        actor=actor, data=data, created_at=now)
    event._state.adding, event._state.db = False, DEFAULT_DB_ALIAS
    return event, delivery_ids
