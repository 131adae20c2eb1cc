"""The tenant's event feed: ``memory.changed`` and ``memory.pressure``.

An event is written in the same transaction as the change it describes. Its public id is
the tenant's own event number (``seq``: 1, 2, 3... per tenant, so that ids tell nothing of
other tenants' volume) and the feed's cursor, so numbers must become visible in increasing
order: otherwise a reader that has seen 11 could later miss 10 committed after it. The
tenant's counter row (``EventFeed``), locked by the insert until the commit, makes event
inserts of one tenant commit in number order. Services record the event as their last
statement, so the lock is held only from there to the commit; writers of different tenants
never wait for each other. The statement is ``memoryhub.store.events.event_insert``.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memoryhub.models import EventType, MemoryEvent, Scope
from memoryhub.services.webhooks import deliveries_enqueue
from memoryhub.store.events import EventInsert, event_insert, event_insert_prepared
from tenants.context import current_tenant_id


def event_record(
    *, tenant_id: int, type: str, user_id: str, actor: str, data: dict[str, Any]
) -> MemoryEvent:
    """Append to the feed and queue the webhook deliveries, in the caller's transaction.
    A memory change is also one write of the day in the tenant's usage (the dashboard's
    chart), counted by the same statement.

    ``tenant_id`` must be the current tenant's: the store writes for the tenant context."""
    _check_tenant(tenant_id)
    saved = event_insert(type=type, user_id=user_id, actor=actor, data=data, now=timezone.now(),
                         counts_as_write=type == EventType.CHANGED)
    return event_recorded(tenant_id=tenant_id, saved=saved)


def event_recorded(*, tenant_id: int, saved: tuple[MemoryEvent, list[int]]) -> MemoryEvent:
    """After the statement that inserted an event (``event_record``'s, or a write's own that
    carried ``changed_event_prepared``): its webhook deliveries go out on commit."""
    event, delivery_ids = saved
    deliveries_enqueue(tenant_id=tenant_id, delivery_ids=delivery_ids)
    return event


def _check_tenant(tenant_id: int) -> None:
    if tenant_id != current_tenant_id():
        raise RuntimeError("an event's tenant_id is not the current tenant")


def _public_scope_key(scope: str, scope_key: str) -> str | None:
    """A global document has no scope key: null, as the documents API shows it."""
    return None if scope == Scope.GLOBAL else scope_key


def _changed_data(*, change: str, path: str, scope: str, scope_key: str,
                  **extra: Any) -> dict[str, Any]:
    return {"change": change, "path": path, "scope": scope,
            "scope_key": _public_scope_key(scope, scope_key), **extra}


def changed_event(
    *, tenant_id: int, user_id: str, actor: str, change: str, path: str, scope: str,
    scope_key: str = "", **extra: Any,
) -> MemoryEvent:
    """``change`` is one of created, updated, deleted, renamed (renamed adds ``old_path``)."""
    data = _changed_data(change=change, path=path, scope=scope, scope_key=scope_key, **extra)
    return event_record(
        tenant_id=tenant_id, type=EventType.CHANGED, user_id=user_id, actor=actor, data=data
    )


def changed_event_prepared(
    *, tenant_id: int, user_id: str, actor: str, change: str, path: str, scope: str,
    scope_key: str = "",
) -> EventInsert:
    """``changed_event``'s insert, for the write's own statement to run with it (a new
    document's: memoryhub.store.documents); ``event_recorded`` finishes it."""
    _check_tenant(tenant_id)
    data = _changed_data(change=change, path=path, scope=scope, scope_key=scope_key)
    return event_insert_prepared(type=EventType.CHANGED, user_id=user_id, actor=actor,
                                 data=data, now=timezone.now(), counts_as_write=True)


def pressure_event(
    *, tenant_id: int, user_id: str, actor: str, scope: str, scope_key: str, used_bytes: int,
    limit_bytes: int,
) -> MemoryEvent:
    data = {"scope": scope, "scope_key": _public_scope_key(scope, scope_key),
            "used_bytes": used_bytes, "limit_bytes": limit_bytes}
    return event_record(
        tenant_id=tenant_id, type=EventType.PRESSURE, user_id=user_id, actor=actor, data=data
    )



def conversation_deleted_event(*, tenant_id: int, user_id: str, actor: str,
                               conversation_id: str) -> MemoryEvent:
    """A deleted conversation: ``change`` ``deleted`` with its id; it has no path or scope."""
    data = {"change": "deleted", "path": None, "scope": None, "scope_key": None,
            "conversation_id": conversation_id}
    return event_record(
        tenant_id=tenant_id, type=EventType.CHANGED, user_id=user_id, actor=actor, data=data
    )


def fact_changed_event(*, tenant_id: int, user_id: str, actor: str, change: str,
                       fact_id: str, fact_type: str) -> MemoryEvent:
    """``fact.changed``: ``change`` is created, updated, merged, invalidated or deleted."""
    data = {"change": change, "fact_id": fact_id, "type": fact_type}
    return event_record(
        tenant_id=tenant_id, type=EventType.FACT_CHANGED, user_id=user_id, actor=actor, data=data
    )
