"""Writes for tenants, members and API keys. Keyword-only, the tenant passed explicitly."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from tenants.context import tenant_context
from tenants.models import DEFAULT_LIMITS, ApiKey, AuditEntry, Membership, Permission, Role, Tenant

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
    if not tenant_part.isdigit() or len(tenant_part) > 18 or len(lookup_id) != 8 or len(secret) < 32:
        return None
    return ParsedKey(int(tenant_part), lookup_id, secret)


@dataclass(frozen=True)
class CreatedKey:
    api_key: ApiKey
    plaintext: str  # shown once, never stored


def api_key_create(
    *, tenant: Tenant, name: str, permissions: list[str], actor: str = "system"
) -> CreatedKey:
    valid = {p.value for p in Permission}
    if not permissions or set(permissions) - valid:
        raise ValueError(f"permissions must be a non-empty subset of {sorted(valid)}")
    lookup_id = "".join(secrets.choice(_LOOKUP_ALPHABET) for _ in range(8))
    secret = secrets.token_urlsafe(32)
    with tenant_context(tenant.id):
        key = ApiKey.objects.create(
            tenant=tenant,
            name=name,
            permissions=sorted(set(permissions)),
            lookup_id=lookup_id,
            secret_hash=hash_secret(secret),
        )
        audit_record(tenant=tenant, actor=actor, action="api_key.created", target=key.masked,
                     data={"name": name, "permissions": key.permissions})
    return CreatedKey(key, f"{KEY_PREFIX}{tenant.id}_{lookup_id}_{secret}")


def api_key_revoke(*, tenant: Tenant, key: ApiKey, actor: str) -> None:
    with tenant_context(tenant.id):
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
        audit_record(tenant=tenant, actor=actor, action="api_key.revoked", target=key.masked)


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
    {"name", "memory_enabled", "session_days", "recall_threshold", *DEFAULT_LIMITS}
)


def tenant_settings_update(*, tenant_id: int, changes: dict, actor: str) -> Tenant:
    """Apply validated setting changes; the API reads limits per request, so they apply at once."""
    unknown = set(changes) - TENANT_SETTING_FIELDS
    if unknown:
        raise ValueError(f"not tenant settings: {sorted(unknown)}")
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
