"""Writes behind the web pages that no other service covers: invitations, member roles,
linking an end user to an account. Keyword-only, the tenant passed explicitly, and every
admin action leaves an AuditEntry.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memoryhub.models import EndUser
from tenants.context import tenant_context
from tenants.models import Invitation, Membership, Role, Tenant
from tenants.services import audit_record, hash_secret, membership_set

INVITATION_DAYS = 7


class MembershipRuleError(ValueError):
    """A role change or removal that the tenant's rules forbid; the message says why."""


@dataclass(frozen=True)
class CreatedInvitation:
    invitation: Invitation
    token: str  # "<tenant_id>.<secret>": goes into the link, never stored


def invitation_create(*, tenant: Tenant, email: str, role: str, actor: str) -> CreatedInvitation:
    secret = secrets.token_urlsafe(32)
    with tenant_context(tenant.pk):
        invitation = Invitation.objects.create(
            tenant=tenant, email=email.strip().lower(), role=role,
            token_hash=hash_secret(secret), invited_by=actor,
            expires_at=timezone.now() + timedelta(days=INVITATION_DAYS),
        )
        audit_record(tenant=tenant, actor=actor, action="member.invited", target=invitation.email,
                     data={"role": role})
    return CreatedInvitation(invitation, f"{tenant.pk}.{secret}")


def invitation_find(*, token: str) -> Invitation | None:
    """The pending invitation a link's token names, or None (malformed, used, revoked, expired).

    The token names its tenant, so the lookup itself runs under that tenant's RLS.
    """
    tenant_part, _, secret = token.partition(".")
    if not tenant_part.isdigit() or len(tenant_part) > 18 or len(secret) < 32:
        return None
    with tenant_context(int(tenant_part)):
        invitation = (
            Invitation.objects.select_related("tenant")
            .filter(token_hash=hash_secret(secret), accepted_at=None, revoked_at=None,
                    expires_at__gt=timezone.now())
            .first()
        )
    return invitation


def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    """Make the account a member with the invited role; an existing membership keeps the
    higher of the two roles (an invitation never demotes)."""
    tenant = invitation.tenant
    with tenant_context(tenant.pk), transaction.atomic():
        locked = Invitation.objects.select_for_update().get(pk=invitation.pk)
        if locked.accepted_at is not None or locked.revoked_at is not None:
            raise MembershipRuleError("This invitation has already been used.")
        locked.accepted_at = timezone.now()
        locked.save(update_fields=["accepted_at"])
        current = Membership.objects.filter(user=user).first()
        rank: list[str] = [Role.MEMBER, Role.ADMIN, Role.OWNER]
        if current is not None and rank.index(current.role) >= rank.index(locked.role):
            return current
        return membership_set(tenant=tenant, user=user, role=locked.role, actor=user.email)


def invitation_revoke(*, tenant: Tenant, invitation: Invitation, actor: str) -> None:
    with tenant_context(tenant.pk):
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        audit_record(tenant=tenant, actor=actor, action="member.invitation_revoked",
                     target=invitation.email)


def _other_owners(membership: Membership) -> bool:
    # Locks the other owners' rows: two admins demoting the last two owners at once cannot
    # both see "one more owner left".
    others = (
        Membership.objects.select_for_update()
        .filter(role=Role.OWNER)
        .exclude(pk=membership.pk)
        .values_list("pk", flat=True)
    )
    return bool(list(others[:1]))


def _check_owner_rules(*, membership: Membership, new_role: str | None, actor_role: str) -> None:
    """Only owners grant, change or remove the owner role, and the last owner stays one."""
    touches_owner = membership.role == Role.OWNER or new_role == Role.OWNER
    if touches_owner and actor_role != Role.OWNER:
        raise MembershipRuleError("Only an owner can change an owner or make someone owner.")
    if membership.role == Role.OWNER and new_role != Role.OWNER and not _other_owners(membership):
        raise MembershipRuleError(
            "This is the last owner: make someone else owner first, so the tenant keeps one."
        )


def membership_role_change(
    *, tenant: Tenant, membership: Membership, role: str, actor: str, actor_role: str
) -> Membership:
    with tenant_context(tenant.pk), transaction.atomic():
        _check_owner_rules(membership=membership, new_role=role, actor_role=actor_role)
        return membership_set(tenant=tenant, user=membership.user, role=role, actor=actor)


def membership_remove(
    *, tenant: Tenant, membership: Membership, actor: str, actor_role: str
) -> None:
    with tenant_context(tenant.pk), transaction.atomic():
        _check_owner_rules(membership=membership, new_role=None, actor_role=actor_role)
        email = membership.user.email
        membership.delete()
        audit_record(tenant=tenant, actor=actor, action="member.removed", target=email)


def enduser_account_link(*, end_user: EndUser, user: User) -> EndUser:
    """Link the person to the signed-in account that redeemed their portal link, so they come
    back with their password. A link to another account is replaced: the one-time link
    proves the holder is this person now."""
    with tenant_context(end_user.tenant_id):
        if end_user.account_id != user.pk:
            end_user.account = user
            end_user.save(update_fields=["account"])
    return end_user
