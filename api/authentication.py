"""``Authorization: Bearer mh_...`` authentication for the API.

The key names its tenant, so the lookup runs inside that tenant's context and RLS applies
to it like to any other query: a key cannot even be *looked up* across tenants.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from django.db import connection
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memoryhub.infra.db import model_columns, model_from_row
from memoryhub.models import EndUser
from tenants.context import current_tenant_id, tenant_context
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_parse, hash_secret

# last_used_at is refreshed at most this often, so reads do not all turn into writes.
LAST_USED_RESOLUTION_SECONDS = 60


@dataclass(frozen=True)
class ApiPrincipal:
    """What ``request.user`` is for API requests: a tenant's key, not a person."""

    tenant_id: int
    key_id: int
    lookup_id: str
    permissions: frozenset[str]

    is_authenticated = True

    @property
    def actor_label(self) -> str:
        return f"api-key:{self.lookup_id}"


# The key and its tenant in one statement (views need the tenant's limits on every request),
# and the end user the URL names, if any: most requests read that person next, and a request
# that writes takes the person's write lock first (memoryhub.services.documents), here in the
# same statement. (A locking clause may not touch the nullable side of an outer join, so the
# person comes from a LATERAL subquery that locks.)
# Hand-written: it runs on every request, and the ORM took longer to compile it than to run it.
def _key_query(person_join: str = "") -> str:
    """The key, its tenant and, with ``person_join`` (a join that names the person ``u``), the
    person's columns; ``%s`` parameters: the person's user id if joined, tenant, lookup id."""
    person = f", {model_columns(EndUser, 'u')}" if person_join else ""
    return (
        f"SELECT {model_columns(ApiKey, 'k')}, {model_columns(Tenant, 't')}{person} "  # noqa: S608 - no input
        f'FROM {ApiKey._meta.db_table} k JOIN {Tenant._meta.db_table} t ON t."id" = k."tenant_id" '
        f'{person_join}WHERE k."tenant_id" = %s AND k."lookup_id" = %s'
    )


_KEY_AND_TENANT = _key_query()
_KEY_TENANT_AND_PERSON = _key_query(
    f'LEFT JOIN {EndUser._meta.db_table} u ON u."tenant_id" = k."tenant_id" AND u."user_id" = %s '
)
_KEY_TENANT_AND_LOCKED_PERSON = _key_query(
    f"LEFT JOIN LATERAL (SELECT {model_columns(EndUser, 'person')} "  # noqa: S608 - no input
    f"FROM {EndUser._meta.db_table} person "
    'WHERE person."tenant_id" = k."tenant_id" AND person."user_id" = %s '
    "FOR NO KEY UPDATE) u ON true "
)
_KEY_COLUMNS = len(ApiKey._meta.concrete_fields)
_TENANT_END = _KEY_COLUMNS + len(Tenant._meta.concrete_fields)


def _key_find(
    lookup_id: str, user_id: str | None, *, lock_person: bool = False
) -> tuple[ApiKey | None, EndUser | None]:
    """The current tenant's key with that lookup id, its ``tenant`` loaded, and the tenant's
    end user ``user_id`` when given and known (holding the person's write lock if
    ``lock_person``); (None, None) for an unknown key."""
    with connection.cursor() as cursor:
        if user_id is None:
            cursor.execute(_KEY_AND_TENANT, [current_tenant_id(), lookup_id])
        else:
            sql = _KEY_TENANT_AND_LOCKED_PERSON if lock_person else _KEY_TENANT_AND_PERSON
            cursor.execute(sql, [user_id, current_tenant_id(), lookup_id])
        row = cursor.fetchone()
    if row is None:
        return None, None
    key = model_from_row(ApiKey, row[:_KEY_COLUMNS])
    ApiKey._meta.get_field("tenant").set_cached_value(
        key, model_from_row(Tenant, row[_KEY_COLUMNS:_TENANT_END]))
    person = row[_TENANT_END:]
    return key, (model_from_row(EndUser, person) if person and person[0] is not None else None)


def _bearer_key(request: Request) -> str | None:
    header = authentication.get_authorization_header(request).decode("latin-1")
    scheme, _, raw = header.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        return None
    return raw.strip()


def _url_user_id(request: Request) -> str | None:
    """The end user the URL names (unvalidated: only a query parameter here; views check it)."""
    user_id = (getattr(request, "parser_context", None) or {}).get("kwargs", {}).get("user_id")
    return user_id if isinstance(user_id, str) else None


def _writes(request: Request) -> bool:
    """Whether the view says this request writes the person's memory (``writes_memory``)."""
    view = (getattr(request, "parser_context", None) or {}).get("view")
    writes_memory = getattr(view, "writes_memory", None)
    return bool(writes_memory(request)) if writes_memory is not None else False


def tenant_hint(request: Request) -> int | None:
    """The tenant a well-formed key names (not yet verified), to open its transaction early."""
    raw = _bearer_key(request)
    parsed = api_key_parse(raw) if raw else None
    return parsed.tenant_id if parsed else None


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiKey] | None:
        if not authentication.get_authorization_header(request):
            return None
        raw = _bearer_key(request)
        if raw is None:
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <api key>'.")
        parsed = api_key_parse(raw)
        if parsed is None:
            raise exceptions.AuthenticationFailed("Unknown API key.")
        user_id = _url_user_id(request)
        locked = user_id is not None and _writes(request)
        with tenant_context(parsed.tenant_id):
            key, end_user = _key_find(parsed.lookup_id, user_id, lock_person=locked)
            if key is None or not hmac.compare_digest(key.secret_hash, hash_secret(parsed.secret)):
                raise exceptions.AuthenticationFailed("Unknown API key.")
            if key.revoked_at is not None:
                raise exceptions.AuthenticationFailed("This API key has been revoked.")
            now = timezone.now()
            if key.last_used_at is None or (now - key.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS:
                ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        # Read back by TenantAPIView.initial; DRF's Request declares no such attributes.
        request.prefetched_end_user = end_user  # type: ignore[attr-defined]
        request.prefetched_end_user_locked = locked  # type: ignore[attr-defined]
        principal = ApiPrincipal(
            tenant_id=key.tenant_id, key_id=key.pk, lookup_id=key.lookup_id,
            permissions=frozenset(key.permissions),
        )
        return principal, key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
