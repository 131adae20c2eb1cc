"""``Authorization: Bearer mh_...`` authentication for the API.

The key names its tenant, so the lookup runs inside that tenant's context and RLS applies
to it like to any other query: a key cannot even be *looked up* across tenants.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memoryhub.store.api_keys import api_key_find as _key_find  # the key's one statement
from tenants.context import tenant_context
from tenants.models import ApiKey
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
        request.prefetched_end_user = end_user  # see TenantAPIView.initial
        request.prefetched_end_user_locked = locked
        principal = ApiPrincipal(
            tenant_id=key.tenant_id, key_id=key.pk, lookup_id=key.lookup_id,
            permissions=frozenset(key.permissions),
        )
        return principal, key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
