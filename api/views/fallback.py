"""Unknown paths under /api/ answer with the contract's error body, not an HTML page.

``/api/v1/`` runs through the API's own handler (api/middleware.py), which gives every error
the JSON body. The rest of ``/api/`` (``/api/schema/``, ``/api/docs/``, unknown paths) runs
through the pages' chain: ``api_not_found`` is the last API route, and ``not_found`` and
``server_error`` (``handler404``/``handler500``, which Django calls when DEBUG is off) answer
JSON for ``/api/`` paths and Django's pages elsewhere.
"""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from api.errors import database_unavailable, error_page, unavailable_headers, unavailable_page


@csrf_exempt  # a POST with no CSRF token (every API client's) is 404 here, not CSRF's 403 page
def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return error_page(404)


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    return error_page(404) if _is_api(request) else defaults.page_not_found(request, exception)


# No template: rendering one may need the database that is away.
_UNAVAILABLE_HTML = (
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>MemoryHub is "
    "briefly unavailable</title></head><body><h1>Briefly unavailable</h1><p>MemoryHub cannot "
    "reach its database for a moment. Nothing was changed; reload the page in a few seconds."
    "</p></body></html>"
)


def server_error(request: HttpRequest) -> HttpResponseBase:
    """Django calls this inside its handling of the exception, so ``sys.exc_info`` holds it:
    an unreachable database is 503 with Retry-After (JSON under /api/, a page elsewhere)."""
    exc = sys.exc_info()[1]
    if database_unavailable(exc):
        if _is_api(request):
            return unavailable_page(exc)
        return HttpResponse(_UNAVAILABLE_HTML, status=503, headers=unavailable_headers())
    return error_page(500) if _is_api(request) else defaults.server_error(request)
