"""Profiles: the switch every memory call and recall that names a profile asks."""

from __future__ import annotations

from django.db import connection

from memoryhub.models import Profile
from memoryhub.store._tenancy import tenant_id, tenant_is

_PROFILE_DISABLED = (
    f"SELECT EXISTS (SELECT FROM {Profile._meta.db_table} "
    f'WHERE {tenant_is()} AND "name" = %s AND "disabled")'
)


def profile_disabled(name: str) -> bool:
    """Whether an admin switched the current tenant's profile ``name`` off (an unknown
    profile is on)."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_PROFILE_DISABLED, [tenant, name])
        disabled: bool = cursor.fetchone()[0]
    return disabled
