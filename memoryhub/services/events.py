"""The tenant's event feed: ``memory.changed`` and ``memory.pressure``.

An event is written in the same transaction as the change it describes. Its id is the
feed's cursor, so ids must become visible in increasing order: otherwise a reader that has
seen id 11 could later miss id 10 committed after it. A per-tenant transaction-level
advisory lock, taken just before the insert, makes event inserts of one tenant commit in
id order. Services record the event as their last statement, so the lock is held only from
there to the commit; writers of different tenants never wait for each other.
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from memoryhub.models import EventType, MemoryEvent, Scope
from memoryhub.services.webhooks import deliveries_create

# First key of the two-key advisory lock: a namespace number for "event feed of tenant N".
_EVENT_LOCK_NAMESPACE = 7_001


def event_record(
    *, tenant_id: int, type: str, user_id: str, actor: str, data: dict[str, Any]
) -> MemoryEvent:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_EVENT_LOCK_NAMESPACE, tenant_id])
    event = MemoryEvent.objects.create(
        tenant_id=tenant_id, type=type, user_id=user_id, actor=actor, data=data
    )
    _notify_subscribers(event)
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


def _notify_subscribers(event: MemoryEvent) -> None:
    """Queue webhook deliveries in this transaction; they are enqueued when it commits."""
    deliveries_create(event=event)
