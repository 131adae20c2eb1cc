"""Write tallies: the counts behind ``max_writes_per_turn`` (``memoryhub.services.limits``).

Each take is one statement that counts the write and says whether it was allowed, so a
refused write leaves nothing behind. The caller holds the person's write lock, so counting
and then inserting cannot race.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from memoryhub.models import EndUser, WriteTally
from memoryhub.store._tenancy import tenant_id, tenant_is

_TABLE = WriteTally._meta.db_table

# A turn's count is one row, only bumped while under the limit, so a refused write leaves the
# count at the limit (no RETURNING row).
_TURN_UPSERT = f"""
    INSERT INTO {_TABLE} AS t (tenant_id, end_user_id, key, count, created_at)
    VALUES (%s, %s, %s, 1, now())
    ON CONFLICT (tenant_id, end_user_id, key) DO UPDATE SET count = t.count + 1
    WHERE t.count < %s
    RETURNING t.count
"""

# The sliding window: one row per write, counted over the window; the row is inserted only
# while under the limit (a row back: allowed).
_WINDOW_TAKE = f"""
    INSERT INTO {_TABLE} (tenant_id, end_user_id, key, count, created_at)
    SELECT %(tenant)s, %(end_user)s, %(key)s, 1, %(now)s
    WHERE (SELECT count(*) FROM {_TABLE}
           WHERE {tenant_is(param="%(tenant)s")} AND end_user_id = %(end_user)s
             AND starts_with(key, %(prefix)s) AND created_at > %(since)s) < %(limit)s
    RETURNING 1
"""


def write_tally_turn_take(*, end_user: EndUser, key: str, limit: int) -> bool:
    """Count one write under ``key`` (a turn's), unless ``limit`` writes were counted there
    already; whether it was counted."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_TURN_UPSERT, [tenant, end_user.pk, key, limit])
        return cursor.fetchone() is not None


def write_tally_window_take(
    *, end_user: EndUser, prefix: str, key: str, now: datetime, since: datetime, limit: int
) -> bool:
    """Record one write as ``key`` at ``now``, unless ``limit`` writes with keys starting with
    ``prefix`` were recorded after ``since``; whether it was recorded."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_WINDOW_TAKE, {
            "tenant": tenant, "end_user": end_user.pk, "key": key, "now": now,
            "prefix": prefix, "since": since, "limit": limit,
        })
        return cursor.fetchone() is not None
