"""A Content-Security-Policy header on every page: scripts and styles only from our origin.

No page has inline script or style (htmx's own indicator style is switched off through its
meta config), so ``'self'`` is the whole policy. ``data:`` images are for the TOTP QR code
that allauth.mfa draws. The Swagger UI at /api/docs/ is exempt: drf-spectacular renders it
with an inline bootstrap script.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
EXEMPT_PREFIXES = ("/api/docs/",)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(EXEMPT_PREFIXES):
            response.headers.setdefault("Content-Security-Policy", POLICY)
        return response
