"""Usage for the dashboard's charts: recalls counted as they happen, stored bytes read hourly.

Writes need nothing here: the event statement counts them (``memoryhub.services.events``).
A recall is counted by the interface that ran it (the REST recall and context views, the MCP
tool) after the search, as the request's last statement, so the day's row is locked only
until the commit that follows. Days are UTC days.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from memoryhub.selectors.usage import stored_bytes, usage_day
from memoryhub.store.usage import usage_recall_add, usage_stored_bytes_set


def usage_recall_count(*, now: datetime | None = None) -> None:
    """Count one recall of the current tenant."""
    usage_recall_add(day=usage_day(now or timezone.now()))


def usage_stored_bytes_record(*, now: datetime | None = None) -> int:
    """Take the current tenant's stored-bytes reading for today; returns it."""
    total = stored_bytes()
    usage_stored_bytes_set(day=usage_day(now or timezone.now()), stored_bytes=total)
    return total
