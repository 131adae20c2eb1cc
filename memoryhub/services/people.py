"""Writes about a whole person: their switch, forgetting them, one session, portal links.

Forgetting (``end_user_forget``) removes every row about the person in one transaction:
documents, passages, conversations and their messages, facts with their history and
augmentation's keys, write tallies, portal links, the EndUser row, and every event naming
them (events hold paths, and paths can say as much as content: ``/health/diagnosis.md``).
What is left is one ``memory.changed`` event with ``{"change": "forgotten"}`` and the
``user_id``, without path or scope: the feed's readers keep copies of documents and need to
hear that they must drop them. The ``user_id`` is the tenant's own identifier for the person,
which the tenant already holds.

Portal links: the token is ``django.core.signing`` over (tenant id, end user id, nonce), with
its own salt, so it cannot be forged and names its tenant (redeeming reads nothing across
tenants); the ``PortalLink`` row with that nonce makes it single-use.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core import signing
from django.db import transaction
from django.utils import timezone

from memoryhub.models import (
    AugmentationFailure,
    Conversation,
    EndUser,
    EventType,
    Fact,
    FactSourceKey,
    FactVersion,
    MemoryDocument,
    MemoryEvent,
    Message,
    Passage,
    PortalLink,
    Scope,
    WriteTally,
)
from memoryhub.selectors.documents import end_user_find
from memoryhub.services.documents import end_user_get_or_create
from memoryhub.services.events import changed_event, event_record
from memoryhub.store.webhooks import webhook_endpoints_hold
from tenants.context import tenant_context
from tenants.models import Tenant

PORTAL_LINK_SALT = "memoryhub.services.people.portal-link"
FORGOTTEN = "forgotten"


def end_user_memory_set(*, tenant: Tenant, user_id: str, enabled: bool) -> EndUser:
    """The person's own switch. Setting it is a write, so it creates the end user."""
    end_user = end_user_get_or_create(tenant=tenant, user_id=user_id)
    if end_user.memory_enabled != enabled:
        end_user.memory_enabled = enabled
        end_user.save(update_fields=["memory_enabled"])
    return end_user


def end_user_forget(*, tenant: Tenant, user_id: str, actor: str) -> bool:
    """Delete everything stored about the person; False when there was nothing (no event)."""
    with transaction.atomic():
        # FOR UPDATE conflicts with the person's write lock (FOR NO KEY UPDATE, see
        # memoryhub.services.documents): a racing write lands before the forget, or after it
        # on a new, empty person.
        end_user = EndUser.objects.select_for_update().filter(user_id=user_id).first()
        if end_user is None:
            return False
        # Children first, each in one statement, so the final delete finds nothing to collect.
        Passage.objects.filter(end_user=end_user).delete()
        MemoryDocument.objects.filter(end_user=end_user).delete()
        Message.objects.filter(end_user=end_user).delete()
        Conversation.objects.filter(end_user=end_user).delete()
        WriteTally.objects.filter(end_user=end_user).delete()
        PortalLink.objects.filter(end_user=end_user).delete()
        Fact.objects.filter(end_user=end_user).delete()
        FactVersion.objects.filter(end_user=end_user).delete()
        FactSourceKey.objects.filter(end_user=end_user).delete()
        # The events' webhook deliveries go with them: the endpoints' rows first, as every
        # writer of deliveries takes them (memoryhub.store.webhooks), so an endpoint's
        # deletion and this forget wait for each other instead of deadlocking.
        webhook_endpoints_hold()
        MemoryEvent.objects.filter(user_id=user_id).delete()
        AugmentationFailure.objects.filter(user_id=user_id).delete()
        end_user.delete()
        event_record(
            tenant_id=tenant.id, type=EventType.CHANGED, user_id=user_id, actor=actor,
            data={"change": FORGOTTEN, "path": None, "scope": None, "scope_key": None},
        )
    return True


def session_forget(*, tenant: Tenant, user_id: str, session_id: str, actor: str,
                   idle_before: datetime | None = None) -> int:
    """Delete one session's documents, one ``deleted`` event each; returns how many.

    Takes the person's write lock like every document write (memoryhub.services.documents),
    so a memory tool write racing with it lands before or after, never half-way.
    ``idle_before`` (retention): delete nothing if a document of the session changed since.
    """
    with transaction.atomic():
        end_user = end_user_find(user_id=user_id, for_update=True)
        if end_user is None:
            return 0
        doomed = list(
            MemoryDocument.objects.select_for_update()
            .filter(end_user=end_user, scope=Scope.SESSION, scope_key=session_id)
            .order_by("path")
            .values_list("id", "path", "updated_at")
        )
        if not doomed or (idle_before is not None
                          and any(changed >= idle_before for _, _, changed in doomed)):
            return 0
        ids = [pk for pk, _, _ in doomed]
        Passage.objects.filter(document_id__in=ids).delete()
        MemoryDocument.objects.filter(id__in=ids).delete()
        for _, path, _ in doomed:
            changed_event(
                tenant_id=tenant.id, user_id=user_id, actor=actor, change="deleted", path=path,
                scope=Scope.SESSION, scope_key=session_id,
            )
    return len(doomed)


def end_user_account_link(*, end_user: EndUser, user: User) -> EndUser:
    """Link the person to the signed-in account that redeemed their portal link and chose to
    link it (never silently: memoryhub/web/portal.py), so they come back with their password. A link to another account is replaced: the one-time link
    proves the holder is this person now. Runs in the person's tenant context."""
    if end_user.account_id != user.pk:
        end_user.account = user
        end_user.save(update_fields=["account"])
    return end_user


# --- Portal links ----------------------------------------------------------------------------


@dataclass(frozen=True)
class MintedPortalLink:
    token: str
    expires_at: datetime


def portal_link_create(*, tenant: Tenant, user_id: str) -> MintedPortalLink:
    """A one-time link token for the person (created if new), valid PORTAL_LINK_MAX_AGE s."""
    end_user = end_user_get_or_create(tenant=tenant, user_id=user_id)
    nonce = secrets.token_urlsafe(24)
    expires_at = timezone.now() + timedelta(seconds=settings.PORTAL_LINK_MAX_AGE)
    PortalLink.objects.create(tenant=tenant, end_user=end_user, nonce=nonce, expires_at=expires_at)
    token = signing.dumps({"t": tenant.id, "u": end_user.id, "n": nonce}, salt=PORTAL_LINK_SALT)
    return MintedPortalLink(token=token, expires_at=expires_at)


def _portal_payload(token: str) -> tuple[int, int, str] | None:
    try:
        payload: Any = signing.loads(
            token, salt=PORTAL_LINK_SALT, max_age=settings.PORTAL_LINK_MAX_AGE
        )
    except signing.BadSignature:  # also SignatureExpired
        return None
    if not isinstance(payload, dict):
        return None
    tenant_id, end_user_id, nonce = payload.get("t"), payload.get("u"), payload.get("n")
    if not (type(tenant_id) is int and type(end_user_id) is int and isinstance(nonce, str)):
        return None
    return tenant_id, end_user_id, nonce


def portal_link_redeem(*, token: str) -> EndUser | None:
    """The end user a valid, unused, unexpired link names; None for anything else.

    Marks the link used in the same statement that checks it, so of two concurrent uses
    only one wins. Call it outside any tenant context (it sets its own) and outside an
    outer transaction that might roll back, which would make the link usable again.
    """
    payload = _portal_payload(token)
    if payload is None:
        return None
    tenant_id, end_user_id, nonce = payload
    with tenant_context(tenant_id):
        now = timezone.now()
        used = PortalLink.objects.filter(
            nonce=nonce, end_user_id=end_user_id, used_at__isnull=True, expires_at__gt=now
        ).update(used_at=now)
        if used != 1:
            return None
        return EndUser.objects.filter(pk=end_user_id).first()
