"""Profiles: a disabled profile's sessions get no memory (spec: Tenant administration).

A profile row exists once an admin has set it; a profile name that memory traffic uses
without a row is simply enabled, so there is nothing to create on the hot path.
"""

from __future__ import annotations

from django.db import transaction

from memoryhub.models import Profile
from tenants.models import Tenant
from tenants.services import audit_record


def profile_set(*, tenant: Tenant, name: str, disabled: bool, actor: str) -> tuple[Profile, bool]:
    """Create or update the profile ``name``; returns ``(profile, created)``.

    The caller has validated ``name``. Only an actual change is audited.
    """
    with transaction.atomic():
        # The row is locked while it is compared and changed; get_or_create falls back to a
        # get when a concurrent request inserted the same name first.
        profile, created = Profile.objects.select_for_update().get_or_create(
            tenant=tenant, name=name, defaults={"disabled": disabled}
        )
        changed = created or profile.disabled != disabled
        if not created and changed:
            profile.disabled = disabled
            profile.save(update_fields=["disabled"])
        if changed:
            audit_record(tenant=tenant, actor=actor, action="profile.set", target=name,
                         data={"disabled": disabled, "created": created})
    return profile, created
