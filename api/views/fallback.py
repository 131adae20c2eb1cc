"""Unknown paths under /api/ answer with the contract's error body, not an HTML page.

``/api/v1/`` runs through the API's own handler (api/middleware.py), which gives every error
the JSON body. The rest of ``/api/`` (``/api/schema/``, ``/api/docs/``, unknown paths) runs
through the pages' chain: ``api_not_found`` is the last API route, and ``not_found`` and
``server_error`` (``handler404``/``handler500``, which Django calls when DEBUG is off) answer
JSON for ``/api/`` paths and Django's pages elsewhere.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.views import defaults

from api.errors import error_page


def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return error_page(404)


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponseBase:
    return error_page(404) if _is_api(request) else defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponseBase:
    return error_page(500) if _is_api(request) else defaults.server_error(request)
