"""Portal sessions: a one-time link signs a visitor in to one end user's memory page only.

A portal session is not a Django login. The session holds a *grant* (tenant id and end user
id) and nothing else; :class:`PortalFenceMiddleware` answers 404 to every view of a portal
session except the views marked with :func:`portal_view` for that same end user, and the
views marked :func:`portal_entry` (redeeming another link, leaving). A signed-in account is
never fenced: a portal link it redeems is *pending* in its session until it chooses, on a
confirmation page, to link the end user to the account or to open the page this time only
(a grant in the account's session, :func:`portal_grant_add`). Nothing links silently: an
admin opening someone's link must not keep reading their memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse

SESSION_KEY = "memoryhub_portal_grant"
PENDING_KEY = "memoryhub_portal_pending"  # a redeemed link awaiting the account's choice
# A portal session lasts this long at most; the person asks the app for a new link after.
SESSION_SECONDS = 2 * 60 * 60

View = TypeVar("View", bound=Callable[..., HttpResponse])


@dataclass(frozen=True)
class PortalGrant:
    tenant_id: int
    end_user_id: int


def _grant_in(raw: Any) -> PortalGrant | None:
    """The grant a session entry holds, unless malformed or past its ``until`` (if any)."""
    if not isinstance(raw, dict):
        return None
    try:
        if "until" in raw and float(raw["until"]) < time.time():
            return None
        return PortalGrant(tenant_id=int(raw["tenant_id"]), end_user_id=int(raw["end_user_id"]))
    except (KeyError, TypeError, ValueError):
        return None


def _entry(grant: PortalGrant, seconds: float, **extra: Any) -> dict[str, Any]:
    return {"tenant_id": grant.tenant_id, "end_user_id": grant.end_user_id,
            "until": time.time() + seconds, **extra}


def portal_grant(request: HttpRequest) -> PortalGrant | None:
    return _grant_in(request.session.get(SESSION_KEY))


def portal_grant_start(request: HttpRequest, *, tenant_id: int, end_user_id: int) -> None:
    """Start a fresh portal session (new session key: no fixation, nothing carried over)."""
    request.session.flush()
    request.session[SESSION_KEY] = {"tenant_id": tenant_id, "end_user_id": end_user_id}
    request.session.set_expiry(SESSION_SECONDS)


def portal_grant_add(request: HttpRequest, grant: PortalGrant) -> None:
    """A signed-in account opens the person's page this time only: the grant joins its
    session (kept signed in) for a portal session's length, and links nothing."""
    request.session[SESSION_KEY] = _entry(grant, SESSION_SECONDS)


def portal_grant_end(request: HttpRequest) -> None:
    """Leave the person's page: a portal session ends; an account drops the grant only."""
    if SESSION_KEY not in request.session:
        return
    if request.user.is_authenticated:
        del request.session[SESSION_KEY]
    else:
        request.session.flush()


def portal_pending_set(request: HttpRequest, *, token: str, grant: PortalGrant) -> None:
    """Hold a link this signed-in session redeemed (used up: nobody else can) until the
    account chooses; reopening the same link shows the choice again, for as long as the
    link itself would have stayed valid."""
    request.session[PENDING_KEY] = _entry(grant, settings.PORTAL_LINK_MAX_AGE, token=token)


def portal_pending(request: HttpRequest, *, token: str) -> PortalGrant | None:
    """The grant this session's pending choice holds for ``token``, else None."""
    raw = request.session.get(PENDING_KEY)
    if not isinstance(raw, dict) or raw.get("token") != token:
        return None
    return _grant_in(raw)


def portal_pending_pop(request: HttpRequest, *, token: str) -> PortalGrant | None:
    """Take the pending choice for ``token`` (once: a second submission finds none)."""
    grant = portal_pending(request, token=token)
    if grant is not None:
        del request.session[PENDING_KEY]
    return grant


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
