"""Template context for the page chrome: whether this is a portal session, and where its
person page is (the header shows "Leave" instead of the account menu)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from memoryhub.web.portal import portal_grant


def page_chrome(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    grant = portal_grant(request) if hasattr(request, "session") else None
    if grant is None or (user is not None and user.is_authenticated):
        return {"portal_url": None}
    return {"portal_url": reverse("web:person", kwargs={"tenant_id": grant.tenant_id,
                                                       "end_user_id": grant.end_user_id})}
