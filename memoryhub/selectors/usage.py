"""The tenant's usage per day (UTC), for the dashboard's charts (``memoryhub.models.UsageDay``).

Writes and recalls are counters kept as they happen; stored bytes are readings (the hourly
``usage_snapshot_all`` task, ``memoryhub.services.usage``), so a day without a reading has
none (None), except today, which is read live.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from django.db.models import Sum

from memoryhub.models import MemoryDocument, UsageDay


def usage_day(moment: datetime) -> date:
    """The day ``moment`` counts for: days are UTC days."""
    return moment.astimezone(UTC).date()


@dataclass(frozen=True)
class DayUsage:
    day: date
    writes: int
    recalls: int
    stored_bytes: int | None  # None: no reading that day


def stored_bytes() -> int:
    """The size of every document of the current tenant: what "Stored" means on the
    dashboard (conversations are history, not memory, and are not counted)."""
    return MemoryDocument.objects.aggregate(total=Sum("bytes"))["total"] or 0


def usage_days(*, last: date, days: int, stored_today: int | None = None) -> list[DayUsage]:
    """``days`` days ending with ``last``, oldest first, every day present (zeros where
    nothing was counted). ``stored_today``: the live reading to show for ``last``."""
    first = last - timedelta(days=days - 1)
    rows = {row.day: row for row in UsageDay.objects.filter(day__gte=first, day__lte=last)}
    series = []
    for offset in range(days):
        day = first + timedelta(days=offset)
        row = rows.get(day)
        stored = row.stored_bytes if row is not None else None
        if day == last and stored_today is not None:
            stored = stored_today
        series.append(DayUsage(day=day, writes=row.writes if row else 0,
                               recalls=row.recalls if row else 0, stored_bytes=stored))
    return series
