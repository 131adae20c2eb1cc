"""The tenant's limits, checked on every write (API v1, "Limits").

Each limit is read from the ``Tenant`` row the caller loaded for this request, so an admin's
``PATCH /api/v1/tenant`` applies from the next request on; ``None`` switches a limit off.

- ``max_document_bytes``: the UTF-8 size of one document after the write.
- ``max_scope_bytes``: all documents of one end user in one (scope, scope_key). Only a write
  that *grows* the scope is refused, so a model can still condense a scope that went over
  because the limit was lowered. The refusal (:class:`ScopeOverLimit`) carries what the
  ``memory.pressure`` event reports; the service that catches it records the event.
- ``max_writes_per_turn``: writes of the memory tool with one ``turn_id``, or without one,
  within any 60 seconds (a sliding window) per end user and session. App and web writes
  are not in a turn and are not counted (a bulk import through the documents API is not an
  agent's runaway loop).

Callers hold the end user's write lock (see ``memoryhub.services.documents``), so the scope
total read here cannot change before the write lands.

These are checks: they write nothing but the tally a memory-tool write takes
(``memoryhub.store.write_tallies``), and they import no service, so every writer can use them.
The purge of old tallies is part of retention (``memoryhub.services.retention``).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from memoryhub.errors import DocumentTooLarge, ScopeFull, TooManyWrites
from memoryhub.models import EndUser
from memoryhub.store.documents import location_bytes
from memoryhub.store.write_tallies import write_tally_turn_take, write_tally_window_take
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


class ScopeOverLimit(ScopeFull):
    """``ScopeFull`` with what the ``memory.pressure`` event of the refusal reports."""

    def __init__(
        self, message: str, *, scope: str, scope_key: str, used_bytes: int, limit_bytes: int
    ) -> None:
        super().__init__(message)
        self.scope = scope
        self.scope_key = scope_key
        self.used_bytes = used_bytes
        self.limit_bytes = limit_bytes


def scope_bytes_check(
    *, tenant: Tenant, end_user: EndUser, scope: str, scope_key: str, old_bytes: int,
    new_bytes: int, used: int | None = None,
) -> None:
    """Refuse a write that would take the scope over ``max_scope_bytes`` (``ScopeOverLimit``).

    ``used``, when the caller already read the location's total under the person's lock,
    saves the query. The caller records the refusal's ``memory.pressure`` event before
    anything else is modified (``memoryhub.services.documents``).
    """
    limit = tenant.max_scope_bytes
    if limit is None or new_bytes <= old_bytes:
        return
    if used is None:
        used = location_bytes(end_user=end_user, location=(scope, scope_key))
    after = used - old_bytes + new_bytes
    if after <= limit:
        return
    where = "global" if scope == "global" else f"{scope} {scope_key!r}"
    raise ScopeOverLimit(
        f"Error: this write would take the {where} memory to {after} bytes, over its limit of "
        f"{limit} bytes; delete or condense documents that matter less, then try again.",
        scope=scope, scope_key=scope_key, used_bytes=used, limit_bytes=limit,
    )


# Without a turn_id the limit is a sliding window ("within 60 seconds"): one row per write,
# counted over the last 60 seconds. A fixed minute would let 2 x limit writes through around
# a minute boundary, and refuse or allow the same burst depending on the clock.
def _window_prefix(session_id: str | None) -> str:
    """``/`` cannot occur in a session_id, so one session's prefix never matches another's."""
    return f"window/{session_id or ''}/"


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
        allowed = write_tally_turn_take(end_user=end_user, key=f"turn:{turn_id}", limit=limit)
    else:
        moment = timezone.now() if now is None else datetime.fromtimestamp(now, UTC)
        prefix = _window_prefix(session_id)
        allowed = write_tally_window_take(
            end_user=end_user, prefix=prefix, key=prefix + uuid.uuid4().hex, now=moment,
            since=moment - timedelta(seconds=WINDOW_SECONDS), limit=limit,
        )
    if allowed:
        return
    when = "in this turn" if turn_id else "in the last minute"
    raise TooManyWrites(
        f"Error: too many memory writes {when} (at most {limit}); keep only what matters most "
        "and continue the conversation without saving more for now."
    )
