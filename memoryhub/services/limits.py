"""The tenant's limits, checked on every write (API v1, "Limits").

Each limit is read from the ``Tenant`` row the caller loaded for this request, so an admin's
``PATCH /api/v1/tenant`` applies from the next request on; ``None`` switches a limit off.

- ``max_document_bytes``: the UTF-8 size of one document after the write.
- ``max_scope_bytes``: all documents of one end user in one (scope, scope_key). Only a write
  that *grows* the scope is refused, so a model can still condense a scope that went over
  because the limit was lowered. The refusal records a ``memory.pressure`` event.
- ``max_writes_per_turn``: writes of the memory tool with one ``turn_id``, or without one,
  within any 60 seconds (a sliding window) per end user and session. App and web writes
  are not in a turn and are not counted (a bulk import through the documents API is not an
  agent's runaway loop).

Callers hold the end user's write lock (see ``memoryhub.services.documents``), so the scope
total read here cannot change before the write lands.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils import timezone

from memoryhub.errors import DocumentTooLarge, ScopeFull, TooManyWrites
from memoryhub.models import EndUser, WriteTally
from memoryhub.selectors.documents import location_bytes
from memoryhub.services.events import pressure_event
from tenants.models import Tenant

WINDOW_SECONDS = 60


def document_size_check(*, tenant: Tenant, label: str, size: int) -> None:
    """Refuse a document over ``max_document_bytes``; ``label`` is the path as the caller wrote it."""
    limit = tenant.max_document_bytes
    if limit is not None and size > limit:
        raise DocumentTooLarge(
            f"Error: {label} would be {size} bytes, over the limit of {limit} bytes for one "
            "document; condense it first."
        )


def scope_bytes_check(
    *, tenant: Tenant, end_user: EndUser, scope: str, scope_key: str, old_bytes: int,
    new_bytes: int, actor: str, used: int | None = None,
) -> None:
    """Refuse a write that would take the scope over ``max_scope_bytes``, and record the pressure.

    The ``memory.pressure`` event is written *before* raising and before anything else is
    modified: the caller's transaction commits it when the refusal becomes a reply (the memory
    tool answers 200), and nothing of the refused write exists to roll back. ``used``, when the
    caller already read the location's total under the person's lock, saves the query.
    """
    limit = tenant.max_scope_bytes
    if limit is None or new_bytes <= old_bytes:
        return
    if used is None:
        used = location_bytes(end_user=end_user, location=(scope, scope_key))
    after = used - old_bytes + new_bytes
    if after <= limit:
        return
    pressure_event(
        tenant_id=tenant.id, user_id=end_user.user_id, actor=actor, scope=scope,
        scope_key=scope_key, used_bytes=used, limit_bytes=limit,
    )
    where = "global" if scope == "global" else f"{scope} {scope_key!r}"
    raise ScopeFull(
        f"Error: this write would take the {where} memory to {after} bytes, over its limit of "
        f"{limit} bytes; delete or condense documents that matter less, then try again."
    )


# One statement counts a turn's write and tells whether it was allowed: the row is only bumped
# while under the limit, so a refused write leaves the count at the limit (no RETURNING row).
_TURN_UPSERT = f"""
    INSERT INTO {WriteTally._meta.db_table} AS t (tenant_id, end_user_id, key, count, created_at)
    VALUES (%s, %s, %s, 1, now())
    ON CONFLICT (tenant_id, end_user_id, key) DO UPDATE SET count = t.count + 1
    WHERE t.count < %s
    RETURNING t.count
"""  # noqa: S608 - the table name is ours, values are parameters

# Without a turn_id the limit is a sliding window ("within 60 seconds"): one row per write,
# counted over the last 60 seconds. A fixed minute would let 2 x limit writes through around
# a minute boundary, and refuse or allow the same burst depending on the clock. One statement
# counts and inserts only while under the limit (a row back: allowed). The caller holds the
# person's write lock, so counting and then inserting cannot race.
_WINDOW_TAKE = f"""
    INSERT INTO {WriteTally._meta.db_table} (tenant_id, end_user_id, key, count, created_at)
    SELECT %(tenant)s, %(end_user)s, %(key)s, 1, %(now)s
    WHERE (SELECT count(*) FROM {WriteTally._meta.db_table}
           WHERE tenant_id = %(tenant)s AND end_user_id = %(end_user)s
             AND starts_with(key, %(prefix)s) AND created_at > %(since)s) < %(limit)s
    RETURNING 1
"""  # noqa: S608 - the table name is ours, values are parameters


def _window_prefix(session_id: str | None) -> str:
    """``/`` cannot occur in a session_id, so one session's prefix never matches another's."""
    return f"window/{session_id or ''}/"


def _turn_take(*, tenant: Tenant, end_user: EndUser, turn_id: str, limit: int) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(_TURN_UPSERT, [tenant.id, end_user.pk, f"turn:{turn_id}", limit])
        return cursor.fetchone() is not None


def _window_take(*, tenant: Tenant, end_user: EndUser, session_id: str | None, limit: int,
                 now: datetime) -> bool:
    prefix = _window_prefix(session_id)
    with connection.cursor() as cursor:
        cursor.execute(_WINDOW_TAKE, {
            "tenant": tenant.id, "end_user": end_user.pk, "key": prefix + uuid.uuid4().hex,
            "now": now, "prefix": prefix, "since": now - timedelta(seconds=WINDOW_SECONDS),
            "limit": limit,
        })
        return cursor.fetchone() is not None


def write_tally_take(
    *, tenant: Tenant, end_user: EndUser, turn_id: str | None, session_id: str | None,
    now: float | None = None,
) -> None:
    """Count one memory-tool write, or raise ``TooManyWrites`` past ``max_writes_per_turn``.

    With ``turn_id``: at most ``limit`` writes of that turn. Without: at most ``limit`` writes
    of the person and session in any 60 seconds. ``now`` (epoch seconds) is for tests.
    Call it last among the checks, right before the write, so refused writes are not counted.
    """
    limit = tenant.max_writes_per_turn
    if limit is None:
        return
    if turn_id:
        allowed = _turn_take(tenant=tenant, end_user=end_user, turn_id=turn_id, limit=limit)
    else:
        moment = timezone.now() if now is None else datetime.fromtimestamp(now, UTC)
        allowed = _window_take(tenant=tenant, end_user=end_user, session_id=session_id,
                               limit=limit, now=moment)
    if allowed:
        return
    when = "in this turn" if turn_id else "in the last minute"
    raise TooManyWrites(
        f"Error: too many memory writes {when} (at most {limit}); keep only what matters most "
        "and continue the conversation without saving more for now."
    )


def write_tallies_purge(*, older_than_seconds: int = 24 * 3600) -> int:
    """Delete the current tenant's tallies older than a day; returns how many.

    A tally only matters during its turn or minute. For the retention sweep, which runs it
    inside ``tenant_context`` for each tenant; ``created_at`` is the tally's first write.
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    deleted, _ = WriteTally.objects.filter(created_at__lt=cutoff).delete()
    return deleted
