"""Retention: session-scope memory is purged ``tenant.session_days`` after its last change.

The unit is the session, as for ``DELETE /api/v1/users/{u}/sessions/{s}``: a session whose
newest document changed before the cutoff loses all its documents (and their passages);
a session still being written to keeps its older documents. Profile and global memory are
never purged by age. ``session_days = null`` keeps sessions forever.

Each purged document records a ``memory.changed`` ``deleted`` event, so the feed and the
webhooks tell the tenant's app what went. The actor is ``app``: the deletion follows the
tenant's own retention setting, set by its admins for their app, and the contract's actors
are ``assistant``, ``user`` and ``app`` only (no fourth value for consumers to learn).

Conversations have their own setting, ``tenant.conversation_days``: the same hourly task
(``memoryhub.tasks.retention_purge``) deletes each conversation whose last message is older
(``memoryhub.services.conversations.conversations_expired_purge``, a ``deleted`` event with
its ``conversation_id`` each, actor ``app`` as here); ``null`` keeps them.

The write tallies behind ``max_writes_per_turn`` (``memoryhub.services.limits``) only matter
during their turn or minute; :func:`write_tallies_purge` drops them a day later.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Max
from django.utils import timezone

from memoryhub.models import Actor, MemoryDocument, Scope, WriteTally
from memoryhub.services.people import session_forget
from memoryhub.store.end_users import end_users_lock
from tenants.models import Tenant

RETENTION_BATCH = 200  # sessions per transaction


def sessions_expired(*, cutoff: datetime, limit: int) -> list[tuple[str, str]]:
    """(user_id, session_id) of sessions whose last change is before ``cutoff``."""
    rows = (
        MemoryDocument.objects.filter(scope=Scope.SESSION)
        .values("end_user__user_id", "scope_key")
        .annotate(last_change=Max("updated_at"))
        .filter(last_change__lt=cutoff)
        .order_by("last_change")[:limit]
    )
    return [(row["end_user__user_id"], row["scope_key"]) for row in rows]


def retention_purge_batch(*, tenant: Tenant, now: datetime) -> int:
    """Purge up to RETENTION_BATCH expired sessions of the tenant; returns how many.

    One transaction records an event per purged document, person after person, so it takes
    every person of the batch first, in user_id order (``end_users_lock``): a writer holds
    its person, then the tenant's feed lock, and taking the next person after this batch's
    first event would wait for a writer that waits for this batch (a deadlock). Under the
    locks each session is checked again: one written to since it was chosen is kept.
    """
    if tenant.session_days is None:
        return 0
    cutoff = now - timedelta(days=tenant.session_days)
    expired = sessions_expired(cutoff=cutoff, limit=RETENTION_BATCH)
    end_users_lock(user_ids=[user_id for user_id, _ in expired])
    purged = 0
    for user_id, session_id in expired:
        if session_forget(tenant=tenant, user_id=user_id, session_id=session_id,
                          actor=Actor.APP, idle_before=cutoff):
            purged += 1
    return purged


def write_tallies_purge(*, older_than_seconds: int = 24 * 3600) -> int:
    """Delete the current tenant's tallies older than a day; returns how many.

    A tally only matters during its turn or minute. For the retention sweep, which runs it
    inside ``tenant_context`` for each tenant; ``created_at`` is the tally's first write.
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    deleted, _ = WriteTally.objects.filter(created_at__lt=cutoff).delete()
    return deleted
