"""Writes for tenants, members, invitations and API keys. Keyword-only, the tenant passed
explicitly, and every admin action leaves an AuditEntry.

Who opens the tenant context follows tenants/context.py: the invitation and member writes
run inside the caller's; :func:`invitation_find` opens the one its token names.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from memoryhub.capture_policy import ROLES, excluded_roles_problem, redact_patterns_problem
from memoryhub.identifiers import USER_ID_RULE, is_one_line, is_user_id
from memoryhub.numbers import parse_natural
from tenants.context import tenant_context
from tenants.models import (
    CONVERSATION_SETTING_FIELDS,
    DEFAULT_LIMITS,
    ApiKey,
    AuditEntry,
    Invitation,
    Membership,
    Permission,
    Role,
    Tenant,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User

KEY_PREFIX = "mh_"
_LOOKUP_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def hash_secret(secret: str) -> str:
    # The secret has 256 bits of entropy, so a fast hash is enough (no salt or KDF needed).
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class ParsedKey:
    tenant_id: int
    lookup_id: str
    secret: str


def api_key_parse(raw: str) -> ParsedKey | None:
    """Split ``mh_<tenant_id>_<lookup_id>_<secret>``; None for anything else."""
    if not raw.startswith(KEY_PREFIX):
        return None
    parts = raw[len(KEY_PREFIX):].split("_", 2)
    if len(parts) != 3:
        return None
    tenant_part, lookup_id, secret = parts
    tenant_id = parse_natural(tenant_part)
    if tenant_id is None or len(lookup_id) != 8 or len(secret) < 32:
        return None
    return ParsedKey(tenant_id, lookup_id, secret)


@dataclass(frozen=True)
class CreatedKey:
    api_key: ApiKey
    plaintext: str  # shown once, never stored


def api_key_create(
    *, tenant: Tenant, name: str, permissions: list[str], actor: str = "system",
    user_id: str | None = None,
) -> CreatedKey:
    """A new key; with ``user_id``, bound to that end user (who need not exist yet): it
    reaches only them, so it cannot have ``admin``. ``ValueError`` says what is wrong."""
    valid = {p.value for p in Permission}
    if not permissions or set(permissions) - valid:
        raise ValueError(f"permissions must be a non-empty subset of {sorted(valid)}")
    if user_id is not None:
        if not is_user_id(user_id):
            raise ValueError(f"user_id must be {USER_ID_RULE}")
        if Permission.ADMIN in permissions:
            raise ValueError("a key bound to one end user cannot have the admin permission")
    lookup_id = "".join(secrets.choice(_LOOKUP_ALPHABET) for _ in range(8))
    secret = secrets.token_urlsafe(32)
    with tenant_context(tenant.id):
        key = ApiKey.objects.create(
            tenant=tenant,
            name=name,
            permissions=sorted(set(permissions)),
            lookup_id=lookup_id,
            secret_hash=hash_secret(secret),
            user_id=user_id,
        )
        data: dict = {"name": name, "permissions": key.permissions}
        if user_id is not None:
            data["user_id"] = user_id
        audit_record(tenant=tenant, actor=actor, action="api_key.created", target=key.masked,
                     data=data)
    return CreatedKey(key, f"{KEY_PREFIX}{tenant.id}_{lookup_id}_{secret}")


def api_key_revoke(*, tenant: Tenant, key: ApiKey, actor: str) -> bool:
    """Revoke ``key``: False, changing and auditing nothing, when it already was. The test is
    the UPDATE's own, so two admins revoking at once leave one audit entry and the first time."""
    with tenant_context(tenant.id):
        now = timezone.now()
        if not ApiKey.objects.filter(pk=key.pk, revoked_at=None).update(revoked_at=now):
            return False
        key.revoked_at = now
        audit_record(tenant=tenant, actor=actor, action="api_key.revoked", target=key.masked)
        return True


def audit_record(*, tenant: Tenant, actor: str, action: str, target: str = "",
                 data: dict | None = None) -> AuditEntry:
    with tenant_context(tenant.id):
        return AuditEntry.objects.create(
            tenant=tenant, actor=actor, action=action, target=target, data=data or {}
        )


@transaction.atomic
def tenant_create(*, slug: str, name: str = "", owner_email: str | None = None,
                  owner_password: str | None = None) -> Tenant:
    tenant = Tenant.objects.create(slug=slug, name=name or slug)
    if owner_email:
        user = account_get_or_create(email=owner_email, password=owner_password)
        membership_set(tenant=tenant, user=user, role=Role.OWNER, actor="system")
    return tenant


def account_get_or_create(*, email: str, password: str | None = None) -> User:
    """A web account by email (allauth logs in by email; the username mirrors it)."""
    user_model = get_user_model()
    user = user_model.objects.filter(email__iexact=email).first()
    if user is None:
        user = user_model.objects.create_user(username=email[:150], email=email, password=password)
        from allauth.account.models import EmailAddress

        EmailAddress.objects.create(user=user, email=email, primary=True, verified=True)
    elif password:
        user.set_password(password)
        user.save(update_fields=["password"])
    return user


def membership_set(*, tenant: Tenant, user: User, role: str, actor: str) -> Membership:
    with tenant_context(tenant.id):
        membership, _ = Membership.objects.update_or_create(
            tenant=tenant, user=user, defaults={"role": role}
        )
        audit_record(tenant=tenant, actor=actor, action="member.role_set", target=user.email,
                     data={"role": role})
    return membership


TENANT_SETTING_FIELDS = frozenset(
    {"name", "memory_enabled", "session_days", "recall_threshold", *DEFAULT_LIMITS,
     *CONVERSATION_SETTING_FIELDS}
)

# Upper bounds the model's validators leave out: the API's schema declares them from here,
# and the settings page and tenant_settings_update check them (tenant_setting_problem).
MAX_CONVERSATION_TIMEOUT_MINUTES = 7 * 24 * 60  # a week
MAX_MESSAGE_BYTES = 1_048_576  # a request body is at most 1 MiB, so a message can be no larger
MAX_CONVERSATION_DAYS = 36_500  # a century; the retention job's date arithmetic needs a bound
MAX_SESSION_DAYS = 36_500  # the same bound for session memory's retention
MAX_COLUMN_INTEGER = 2**31 - 1  # what the integer columns hold


def _at_most(limit: int) -> Callable[[object], str | None]:
    def problem(value: object) -> str | None:
        return f"Must be at most {limit}." if isinstance(value, int) and value > limit else None
    return problem


def _one_line(value: object) -> str | None:
    # A tenant's name goes into one-line places: an invitation mail's subject, where a line
    # break made every invitation a 500 (BadHeaderError), the pages' headings and titles.
    if isinstance(value, str) and not is_one_line(value):
        return "Must be one line, without control characters."
    return None


def _a_share(value: object) -> str | None:
    if isinstance(value, int | float) and not 0.0 <= value <= 1.0:
        return "Must be between 0 and 1."
    return None


# The rules a setting's value must follow beyond its type: one place, called by the API's
# serializer, the settings page's form and tenant_settings_update itself.
_SETTING_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "name": _one_line,
    "capture_excluded_roles": excluded_roles_problem,
    "capture_redact": redact_patterns_problem,
    "conversation_timeout_minutes": _at_most(MAX_CONVERSATION_TIMEOUT_MINUTES),
    "max_message_bytes": _at_most(MAX_MESSAGE_BYTES),
    "max_history_tokens": _at_most(MAX_COLUMN_INTEGER),
    "conversation_days": _at_most(MAX_CONVERSATION_DAYS),
    "session_days": _at_most(MAX_SESSION_DAYS),
    "recall_threshold": _a_share,
}


def tenant_setting_problem(field: str, value: object) -> str | None:
    """Why ``value`` cannot be the tenant's ``field`` (a sentence), or None."""
    check = _SETTING_CHECKS.get(field)
    return check(value) if check is not None else None


def tenant_settings_update(*, tenant_id: int, changes: dict, actor: str) -> Tenant:
    """Apply validated setting changes; the API reads limits per request, so they apply at once.

    A value that breaks a setting's rule (:func:`tenant_setting_problem`) raises Django's
    ValidationError keyed by the field, as ``full_clean`` does, and changes nothing.
    """
    unknown = set(changes) - TENANT_SETTING_FIELDS
    if unknown:
        raise ValueError(f"not tenant settings: {sorted(unknown)}")
    problems = {field: problem for field, value in changes.items()
                if (problem := tenant_setting_problem(field, value)) is not None}
    if problems:
        raise ValidationError(problems)
    if "capture_excluded_roles" in changes:  # a set: one spelling, so reordering is no change
        chosen = set(changes["capture_excluded_roles"])
        changes = {**changes, "capture_excluded_roles": [r for r in ROLES if r in chosen]}
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant_id)
        before = {field: getattr(tenant, field) for field in changes}
        for field, value in changes.items():
            setattr(tenant, field, value)
        tenant.full_clean()
        if changes:
            tenant.save(update_fields=list(changes))
        changed = {f: [before[f], changes[f]] for f in changes if before[f] != changes[f]}
        if changed:
            audit_record(tenant=tenant, actor=actor, action="tenant.settings_changed",
                         data=changed)
    return tenant


# --- Invitations and member roles (the web pages' admin actions) ------------------------------

INVITATION_DAYS = 7


class MembershipRuleError(ValueError):
    """A role change or removal that the tenant's rules forbid; the message says why."""


@dataclass(frozen=True)
class CreatedInvitation:
    invitation: Invitation
    token: str  # "<tenant_id>.<secret>": goes into the link, never stored


def tenant_row_lock(tenant: Tenant) -> None:
    """Order the tenant's check-then-create writes (an invitation, a webhook endpoint under
    its limit): the second waits for the first to commit, then sees what it made. FOR NO KEY
    UPDATE leaves the foreign-key checks of the tenant's other writes alone."""
    Tenant.objects.select_for_update(no_key=True).filter(pk=tenant.pk).first()


def invitation_create(*, tenant: Tenant, email: str, role: str, actor: str) -> CreatedInvitation:
    """Invite an email address; refused (MembershipRuleError) for a member already, the
    inviter included, and while an invitation to it is pending, so none piles up: the
    pending one is cancelled first to send another."""
    email = email.strip().lower()
    with transaction.atomic():
        tenant_row_lock(tenant)  # two admins inviting one address: the second finds the first's
        return _invitation_created(tenant=tenant, email=email, role=role, actor=actor)


def _invitation_created(*, tenant: Tenant, email: str, role: str, actor: str) -> CreatedInvitation:
    if Membership.objects.filter(user__email__iexact=email).exists():
        raise MembershipRuleError(f"{email} is already a member of {tenant.name}.")
    pending = Invitation.objects.filter(email=email, accepted_at=None, revoked_at=None,
                                        expires_at__gt=timezone.now())
    if pending.exists():
        raise MembershipRuleError(
            f"An invitation to {email} is already pending. To send a new link, cancel that "
            "invitation below first.")
    secret = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        tenant=tenant, email=email, role=role,
        token_hash=hash_secret(secret), invited_by=actor,
        expires_at=timezone.now() + timedelta(days=INVITATION_DAYS),
    )
    audit_record(tenant=tenant, actor=actor, action="member.invited", target=invitation.email,
                 data={"role": role})
    return CreatedInvitation(invitation, f"{tenant.pk}.{secret}")


def invitation_find(*, token: str) -> Invitation | None:
    """The pending invitation a link's token names, or None (malformed, used, revoked, expired).

    The token names its tenant, so the lookup itself runs under that tenant's RLS; only the
    token knows the tenant, so this read opens the context itself (tenants/context.py).
    """
    tenant_part, _, secret = token.partition(".")
    tenant_id = parse_natural(tenant_part)
    if tenant_id is None or len(secret) < 32:
        return None
    with tenant_context(tenant_id):
        invitation = (
            Invitation.objects.select_related("tenant")
            .filter(token_hash=hash_secret(secret), accepted_at=None, revoked_at=None,
                    expires_at__gt=timezone.now())
            .first()
        )
    return invitation


def invitation_accept(*, invitation: Invitation, user: User) -> Membership:
    """Make the account a member with the invited role; an existing membership keeps the
    higher of the two roles (an invitation never demotes). Runs in the invitation's tenant
    context, which the caller opens."""
    tenant = invitation.tenant
    with transaction.atomic():
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


@transaction.atomic
def invitation_revoke(*, tenant: Tenant, invitation: Invitation, actor: str) -> bool:
    """Cancel ``invitation``: False, changing and auditing nothing, when it was already
    cancelled or accepted meanwhile (as ``api_key_revoke``)."""
    now = timezone.now()
    if not Invitation.objects.filter(pk=invitation.pk, revoked_at=None,
                                     accepted_at=None).update(revoked_at=now):
        return False
    invitation.revoked_at = now
    audit_record(tenant=tenant, actor=actor, action="member.invitation_revoked",
                 target=invitation.email)
    return True


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
    # The owner locks and the write in one transaction, whoever calls it.
    with transaction.atomic():
        _check_owner_rules(membership=membership, new_role=role, actor_role=actor_role)
        return membership_set(tenant=tenant, user=membership.user, role=role, actor=actor)


def membership_remove(
    *, tenant: Tenant, membership: Membership, actor: str, actor_role: str
) -> None:
    with transaction.atomic():
        _check_owner_rules(membership=membership, new_role=None, actor_role=actor_role)
        email = membership.user.email
        membership.delete()
        audit_record(tenant=tenant, actor=actor, action="member.removed", target=email)
