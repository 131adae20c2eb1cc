"""Who may open which page: the two access decorators every page view goes through.

- :func:`tenant_page` resolves ``/t/<slug>/`` only through the signed-in account's own
  Membership (read under ``web_user_context``, so RLS itself limits the lookup to the
  account's rows). Another tenant's slug, or an unknown one, is 404: exactly "not found".
  A plain member of the tenant gets 403 on admin pages. The view then runs inside
  ``tenant_context`` (one transaction).
- :func:`person_page` opens one end user's memory page for a portal session holding that
  end user's grant, or for the account the end user is linked to; anyone else gets 404.
  Its answers are never cached (``Cache-Control: no-store``).

Both render inside the tenant's transaction, so views return ``render()`` results (already
rendered), never lazy TemplateResponses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.http import urlencode
from django_htmx.http import HttpResponseClientRedirect

from memoryhub.models import EndUser
from memoryhub.web.http import HtmxHttpRequest
from memoryhub.web.portal import PortalGrant, portal_grant, portal_view
from tenants.context import tenant_context, web_user_context
from tenants.models import Membership, Role, Tenant

ADMIN_ROLES = frozenset({Role.OWNER, Role.ADMIN})


@dataclass(frozen=True)
class TenantAccess:
    tenant: Tenant
    membership: Membership

    @property
    def role(self) -> str:
        return self.membership.role

    @property
    def is_admin(self) -> bool:
        return self.membership.role in ADMIN_ROLES

    @property
    def is_owner(self) -> bool:
        return self.membership.role == Role.OWNER


def tenant_access(*, user_id: int, slug: str) -> TenantAccess | None:
    """The account's membership of the tenant named ``slug``, or None (unknown or not theirs)."""
    with web_user_context(user_id):
        membership = (
            Membership.unscoped_objects.select_related("tenant")
            .filter(user_id=user_id, tenant__slug=slug)
            .first()
        )
    if membership is None:
        return None
    return TenantAccess(tenant=membership.tenant, membership=membership)


TenantView = Callable[..., HttpResponse]


def _signed_out(request: HtmxHttpRequest, *, ended_page: str | None = None) -> HttpResponse:
    """The answer to a request without a session: the sign-in page (then back here).

    htmx follows a 302 itself and would swap the whole sign-in page into the fragment it
    targets (a document's Save, losing the typed text), so an htmx request gets
    ``HX-Redirect`` instead: the browser leaves the page, back to the page the person was on
    once signed in. ``ended_page`` replaces the sign-in page for an htmx request (a person's
    page says the link's session ended: there may be no account to sign in to)."""
    if not request.htmx:
        return redirect_to_login(request.get_full_path())
    back = request.htmx.current_url_abs_path or request.get_full_path()
    if ended_page is None:
        ended_page = reverse("account_login")
    return HttpResponseClientRedirect(f"{ended_page}?{urlencode({'next': back})}")


def tenant_page(*, admin: bool = True) -> Callable[[TenantView], TenantView]:
    """Decorate ``view(request, access, **kwargs)`` served at ``/t/<slug>/...``."""

    def decorate(view: TenantView) -> TenantView:
        @wraps(view)
        def wrapper(request: HtmxHttpRequest, slug: str, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                return _signed_out(request)
            access = tenant_access(user_id=request.user.pk, slug=slug)
            if access is None:
                raise Http404("No such tenant")
            if admin and not access.is_admin:
                raise PermissionDenied("Only the tenant's owners and admins can open this page.")
            with tenant_context(access.tenant.pk):
                return view(request, access, **kwargs)

        return wrapper

    return decorate


@dataclass(frozen=True)
class PersonAccess:
    tenant: Tenant
    end_user: EndUser
    by_portal: bool  # a portal session, not an account


def person_page(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Decorate ``view(request, access, **kwargs)`` served at ``/memory/<tenant_id>/<end_user_id>/...``."""

    @wraps(view)
    def wrapper(
        request: HtmxHttpRequest, tenant_id: int, end_user_id: int, **kwargs: Any
    ) -> HttpResponse:
        by_portal = portal_grant(request) == PortalGrant(tenant_id, end_user_id)
        if not by_portal and not request.user.is_authenticated:
            return _signed_out(request, ended_page=reverse("web:portal_ended"))
        with tenant_context(tenant_id):
            end_user = EndUser.objects.filter(pk=end_user_id).first()
            linked = (
                end_user is not None
                and request.user.is_authenticated
                and end_user.account_id == request.user.pk
            )
            if end_user is None or not (by_portal or linked):
                raise Http404("No such person")
            tenant = Tenant.objects.get(pk=tenant_id)
            response = view(request, PersonAccess(tenant, end_user, by_portal and not linked),
                            **kwargs)
        # Kept by no browser: Back would show the copy first loaded (notes deleted on the
        # page since, or everything after a forget) from the cache without asking again.
        add_never_cache_headers(response)
        return response

    return portal_view(wrapper)
