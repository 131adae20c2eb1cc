"""The tenant's event feed: ``memory.changed`` and ``memory.pressure``.

An event is written in the same transaction as the change it describes. Its id is the
feed's cursor, so ids must become visible in increasing order: otherwise a reader that has
seen id 11 could later miss id 10 committed after it. A per-tenant transaction-level
advisory lock, taken just before the insert, makes event inserts of one tenant commit in
id order. Services record the event as their last statement, so the lock is held only from
there to the commit; writers of different tenants never wait for each other.
"""

from __future__ import annotations

import json
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection
from django.utils import timezone

from memoryhub.models import (
    DeliveryStatus,
    EventType,
    MemoryEvent,
    Scope,
    WebhookDelivery,
    WebhookEndpoint,
)
from memoryhub.services.webhooks import deliveries_enqueue

# First key of the two-key advisory lock: a namespace number for "event feed of tenant N".
_EVENT_LOCK_NAMESPACE = 7_001

# Every write records an event, so it is one statement (one round trip, no ORM compilation):
# take the tenant's feed lock, insert the event (the lock CTE is its row source, so the id is
# drawn after the lock is held), and queue a delivery for every enabled endpoint subscribed to
# the type (the outbox, see memoryhub.services.webhooks).
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
        WHERE endpoint.tenant_id = %(tenant)s AND endpoint.enabled
            AND endpoint.event_types @> %(types)s::jsonb
        RETURNING id
    )
    SELECT event.id, ARRAY(SELECT id FROM delivery ORDER BY id) FROM event
"""  # noqa: S608 - table names are ours, values are parameters


def event_record(
    *, tenant_id: int, type: str, user_id: str, actor: str, data: dict[str, Any]
) -> MemoryEvent:
    """Append to the feed and queue the webhook deliveries, in the caller's transaction."""
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(_RECORD, {
            "namespace": _EVENT_LOCK_NAMESPACE, "tenant": tenant_id, "type": type,
            "user_id": user_id, "actor": actor, "data": json.dumps(data), "now": now,
            "pending": DeliveryStatus.PENDING.value, "types": json.dumps([type]),
        })
        event_id, delivery_ids = cursor.fetchone()
    event = MemoryEvent(id=event_id, tenant_id=tenant_id, type=type, user_id=user_id,
                        actor=actor, data=data, created_at=now)
    event._state.adding, event._state.db = False, DEFAULT_DB_ALIAS
    deliveries_enqueue(tenant_id=tenant_id, delivery_ids=delivery_ids)
    return event


def _public_scope_key(scope: str, scope_key: str) -> str | None:
    """A global document has no scope key: null, as the documents API shows it."""
    return None if scope == Scope.GLOBAL else scope_key


def changed_event(
    *, tenant_id: int, user_id: str, actor: str, change: str, path: str, scope: str,
    scope_key: str = "", **extra: Any,
) -> MemoryEvent:
    """``change`` is one of created, updated, deleted, renamed (renamed adds ``old_path``)."""
    data = {"change": change, "path": path, "scope": scope,
            "scope_key": _public_scope_key(scope, scope_key), **extra}
    return event_record(
        tenant_id=tenant_id, type=EventType.CHANGED, user_id=user_id, actor=actor, data=data
    )


def pressure_event(
    *, tenant_id: int, user_id: str, actor: str, scope: str, scope_key: str, used_bytes: int,
    limit_bytes: int,
) -> MemoryEvent:
    data = {"scope": scope, "scope_key": _public_scope_key(scope, scope_key),
            "used_bytes": used_bytes, "limit_bytes": limit_bytes}
    return event_record(
        tenant_id=tenant_id, type=EventType.PRESSURE, user_id=user_id, actor=actor, data=data
    )

