"""The daily usage counters behind the dashboard's charts (``memoryhub.models.UsageDay``).

One row per tenant and day. Writes are counted inside the event statement
(``memoryhub.store.events``, the ``WRITES_UPSERT`` fragment below), so a write costs no round
trip more; recalls by :func:`usage_recalls_add`, one upsert for what a process counted since
its last flush (``memoryhub.services.usage``), or by :func:`usage_recall_add` in the recall's
own transaction when flushing is off. Each bumps a counter in place: the row lock is held from
the upsert to the commit, which a caller keeps short by counting last.
"""

from __future__ import annotations

from datetime import date

from django.db import connection

from memoryhub.models import UsageDay
from memoryhub.store._tenancy import tenant_id

TABLE = UsageDay._meta.db_table

# The INSERT of a day's first count, or the bump of an existing one: ``column`` += 1.
_BUMP = """
    INSERT INTO {table} AS u (tenant_id, day, writes, recalls)
    {source}
    ON CONFLICT (tenant_id, day) DO UPDATE SET {column} = u.{column} + 1
"""

# For the event statement: one write counted on the event's day, when ``%(counts)s`` is true
# (memory changes only). Its row source is the statement's ``event`` CTE, so a write whose
# event was not inserted counts nothing.
WRITES_UPSERT = _BUMP.format(
    table=TABLE, column="writes",
    source="SELECT %(tenant)s, %(day)s, 1, 0 FROM event WHERE %(counts)s",
)

# A recall's transaction writes nothing else (the search only reads): its commit need not
# wait for the WAL to reach the disk (synchronous_commit off, for this transaction only), and
# the day's row, which every recall of the tenant bumps, is locked until that commit: with
# the flush (0.6-0.8 ms here) the tenant's concurrent recalls queued behind each other's. A
# crash can lose the last fraction of a second of counts, never anything else: a transaction
# that has written before (it has a transaction id) keeps the synchronous commit.
_RECALLS_UPSERT = _BUMP.format(
    table=TABLE, column="recalls",
    source="""SELECT %s, %s, 0, 1 FROM (
        SELECT CASE WHEN pg_current_xact_id_if_assigned() IS NULL
                    THEN set_config('synchronous_commit', 'off', true) END) AS only_write""",
)

# Several recalls of one tenant and day at once: what a process counted since its last flush
# (``memoryhub.services.usage``), from a transaction of the flusher's own.
_RECALLS_ADD = f"""
    INSERT INTO {TABLE} AS u (tenant_id, day, writes, recalls)
    VALUES (%s, %s, 0, %s)
    ON CONFLICT (tenant_id, day) DO UPDATE SET recalls = u.recalls + EXCLUDED.recalls
"""

_STORED_BYTES_SET = f"""
    INSERT INTO {TABLE} AS u (tenant_id, day, writes, recalls, stored_bytes)
    VALUES (%s, %s, 0, 0, %s)
    ON CONFLICT (tenant_id, day) DO UPDATE SET stored_bytes = EXCLUDED.stored_bytes
"""


def usage_recall_add(*, day: date) -> None:
    """Count one recall of the current tenant on ``day``; when the transaction has written
    nothing before, its commit no longer waits for the disk (``_RECALLS_UPSERT``)."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_RECALLS_UPSERT, [tenant, day])


def usage_recalls_add(*, day: date, count: int) -> None:
    """Count ``count`` recalls of the current tenant on ``day``."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_RECALLS_ADD, [tenant, day, count])


def usage_stored_bytes_set(*, day: date, stored_bytes: int) -> None:
    """Record the current tenant's stored bytes as ``day``'s latest reading."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_STORED_BYTES_SET, [tenant, day, stored_bytes])
