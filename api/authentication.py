"""``Authorization: Bearer mh_...`` authentication for the API.

The key names its tenant, so the lookup runs inside that tenant's context and RLS applies
to it like to any other query: a key cannot even be *looked up* across tenants.

Two steps, called by ``api.base.TenantAPIView`` (and by the MCP tools, api/mcp):
``request_key`` reads the header, ``key_authenticate`` checks the key and loads, in the same
statement, whatever the view asks for besides (the end user its URL names, locked for a
write). Authentication asks the view nothing: what to load is passed in.

A key bound to one end user (``ApiKey.user_id``) reaches only that person, and this is the
one place that decides it: for any other ``user_id`` the person is not loaded, so a read
sees exactly what it sees for a person who does not exist, and a write is refused with 403
``permission_denied`` whether or not that person exists (``OtherPersonRefused``).
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from django.http import HttpRequest
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from memoryhub.models import EndUser
from memoryhub.store.api_keys import api_key_find, api_key_touch
from tenants.context import tenant_context
from tenants.models import ApiKey
from tenants.services import ParsedKey, api_key_parse, hash_secret

# last_used_at is refreshed at most this often, so reads do not all turn into writes.
LAST_USED_RESOLUTION_SECONDS = 60


@dataclass(frozen=True)
class ApiPrincipal:
    """What ``request.user`` is for API requests: a tenant's key, not a person."""

    tenant_id: int
    key_id: int
    lookup_id: str
    permissions: frozenset[str]
    user_id: str | None = None  # the end user a bound key reaches; None: every one

    is_authenticated = True

    @property
    def actor_label(self) -> str:
        return f"api-key:{self.lookup_id}"


def _authorization(request: HttpRequest | Request) -> str:
    """The ``Authorization`` header (DRF's ``get_authorization_header``, for any request)."""
    header = request.META.get("HTTP_AUTHORIZATION", "")
    return header.decode("latin-1") if isinstance(header, bytes) else str(header)


# The schemes of the ``Authorization`` header a key may come with: the API's, and what a
# surface speaking another service's protocol accepts too (mem0's client sends ``Token``).
BEARER = ("bearer",)


def _bearer_key(request: HttpRequest | Request, schemes: tuple[str, ...] = BEARER) -> str | None:
    header = _authorization(request)
    scheme, _, raw = header.partition(" ")
    if scheme.lower() not in schemes or not raw.strip():
        return None
    return raw.strip()


def tenant_hint(request: Request, schemes: tuple[str, ...] = BEARER) -> int | None:
    """The tenant a well-formed key names (not yet verified), to open its transaction early."""
    raw = _bearer_key(request, schemes)
    parsed = api_key_parse(raw) if raw else None
    return parsed.tenant_id if parsed else None


@dataclass(frozen=True)
class Authenticated:
    """What a valid key brings: who calls, the key (its ``tenant`` loaded), and the end user
    asked for with it (None when not asked for or unknown)."""

    principal: ApiPrincipal
    key: ApiKey
    end_user: EndUser | None


def request_key(request: HttpRequest | Request, schemes: tuple[str, ...] = BEARER) -> ParsedKey | None:
    """The key the request's ``Authorization`` header holds, not yet checked; ``None`` without
    the header; ``AuthenticationFailed`` for anything but a well-formed key in one of
    ``schemes`` (the first is the one the refusal names)."""
    if not _authorization(request):
        return None
    raw = _bearer_key(request, schemes)
    if raw is None:
        raise exceptions.AuthenticationFailed(f"Use 'Authorization: {schemes[0].title()} <api key>'.")
    parsed = api_key_parse(raw)
    if parsed is None:
        raise exceptions.AuthenticationFailed("Unknown API key.")
    return parsed


class OtherPersonRefused(exceptions.PermissionDenied):
    """A key bound to one end user asked to change another (or the tenant)."""

    default_detail = "This API key is bound to one end user and cannot act for another."


def key_authenticate(
    parsed: ParsedKey, *, user_id: str | None = None, lock_person: bool = False,
    writes: bool = False,
) -> Authenticated:
    """Check the key, and read in the same statement the tenant's end user ``user_id`` when
    given (with the person's write lock if ``lock_person``: the caller is about to write
    them). ``AuthenticationFailed`` for an unknown or revoked key.

    ``writes``: the caller may change the person ``user_id`` names. A key bound to another
    person gets ``end_user`` None (the person looks absent) and, when ``writes``,
    ``OtherPersonRefused``, the same whether or not that person exists."""
    with tenant_context(parsed.tenant_id):
        key, end_user = api_key_find(parsed.lookup_id, user_id, lock_person=lock_person)
        if key is None or not hmac.compare_digest(key.secret_hash, hash_secret(parsed.secret)):
            raise exceptions.AuthenticationFailed("Unknown API key.")
        if key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS:
            api_key_touch(key_id=key.pk, at=now)  # skips a row another request refreshes
    principal = ApiPrincipal(
        tenant_id=key.tenant_id, key_id=key.pk, lookup_id=key.lookup_id,
        permissions=frozenset(key.permissions), user_id=key.user_id,
    )
    if key.user_id is not None and user_id is not None and user_id != key.user_id:
        if writes:
            raise OtherPersonRefused()
        end_user = None  # another person: exactly what a person who does not exist shows
    return Authenticated(principal=principal, key=key, end_user=end_user)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF's authentication class for the key alone (the schema views, the 401 header).

    Tenant views do not come here: ``TenantAPIView.perform_authentication`` calls
    ``key_authenticate`` itself, saying which person to load with the key and whether to lock
    them."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiKey] | None:
        parsed = request_key(request)
        if parsed is None:
            return None
        found = key_authenticate(parsed)
        return found.principal, found.key

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
