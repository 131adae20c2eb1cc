"""The request type page views receive: what the middleware stack added, for readers and
type checkers (django-htmx's example app does the same)."""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails  # django_htmx.middleware.HtmxMiddleware
    user: User | AnonymousUser  # AuthenticationMiddleware


def actor_label(request: HttpRequest) -> str:
    """How an account appears in the audit log: its email (API keys appear as api-key:...)."""
    return getattr(request.user, "email", "") or f"account:{request.user.pk}"
