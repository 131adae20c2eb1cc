"""Portal sessions: a one-time link signs a visitor in to one end user's memory page only.

A portal session is not a Django login. The session holds a *grant* (tenant id and end user
id) and nothing else; :class:`PortalFenceMiddleware` answers 404 to every view of a portal
session except the views marked with :func:`portal_view` for that same end user, and the
views marked :func:`portal_entry` (redeeming another link, leaving). A signed-in account is
never fenced: a portal link it redeems links the end user to the account instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.http import Http404, HttpRequest, HttpResponse

SESSION_KEY = "memoryhub_portal_grant"
# A portal session lasts this long at most; the person asks the app for a new link after.
SESSION_SECONDS = 2 * 60 * 60

View = TypeVar("View", bound=Callable[..., HttpResponse])


@dataclass(frozen=True)
class PortalGrant:
    tenant_id: int
    end_user_id: int


def portal_grant(request: HttpRequest) -> PortalGrant | None:
    raw = request.session.get(SESSION_KEY)
    if not isinstance(raw, dict):
        return None
    try:
        return PortalGrant(tenant_id=int(raw["tenant_id"]), end_user_id=int(raw["end_user_id"]))
    except (KeyError, TypeError, ValueError):
        return None


def portal_grant_start(request: HttpRequest, *, tenant_id: int, end_user_id: int) -> None:
    """Start a fresh portal session (new session key: no fixation, nothing carried over)."""
    request.session.flush()
    request.session[SESSION_KEY] = {"tenant_id": tenant_id, "end_user_id": end_user_id}
    request.session.set_expiry(SESSION_SECONDS)


def portal_grant_end(request: HttpRequest) -> None:
    if SESSION_KEY in request.session:
        request.session.flush()


def portal_view(view: View) -> View:
    """Mark a view that a portal session may reach for its own end user (URL kwargs
    ``tenant_id`` and ``end_user_id``)."""
    view.portal_allowed = True  # type: ignore[attr-defined]
    return view


def portal_entry(view: View) -> View:
    """Mark a view that any portal session may reach (redeem a link, leave)."""
    view.portal_entry = True  # type: ignore[attr-defined]
    return view


class PortalFenceMiddleware:
    """Everything but the grant's own pages is 404 for a portal session (after auth)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: tuple,
        view_kwargs: dict[str, Any],
    ) -> None:
        if request.user.is_authenticated:
            return None
        grant = portal_grant(request)
        if grant is None or getattr(view_func, "portal_entry", False):
            return None
        own = (view_kwargs.get("tenant_id"), view_kwargs.get("end_user_id")) == (
            grant.tenant_id, grant.end_user_id,
        )
        if getattr(view_func, "portal_allowed", False) and own:
            return None
        raise Http404("Not found")
