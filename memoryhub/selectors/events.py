"""Reads of the tenant's event feed (``GET /api/v1/events``).

The feed's cursor is the event's public id, its ``seq`` (the tenant's own event number).
Numbers become visible in increasing order (see memoryhub/services/events.py), so
"everything after N, oldest first" never skips an event that commits later.
"""

from __future__ import annotations

from memoryhub.models import MemoryEvent


def events_after(*, after: int | None, limit: int) -> list[MemoryEvent]:
    """Up to ``limit`` events after ``after``, oldest first."""
    events = MemoryEvent.objects.order_by("seq")
    if after is not None:
        events = events.filter(seq__gt=after)
    return list(events[:limit])


def events_of_person(*, user_id: str) -> list[MemoryEvent]:
    """Every event naming the person, oldest first (their export)."""
    return list(MemoryEvent.objects.filter(user_id=user_id).order_by("seq"))
