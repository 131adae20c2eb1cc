"""Middleware of the agent API: its own short chain, and the 1 MiB body limit (411 for a
chunked body the server did not decode: memoryhub/infra/bodies.py).

``ApiRouterMiddleware`` comes first in ``settings.MIDDLEWARE``, after only the request id and
metrics middleware that wraps both chains (memoryhub/infra/observability.py). It hands every
``/api/v1/`` request (and ``/mcp``, and mem0's ``/mem0/``: api/mem0) to a handler built from
``settings.API_MIDDLEWARE`` instead of passing it down the
web chain. Agents send a Bearer key, never cookies: sessions, CSRF, accounts, messages, htmx,
the portal fence and the pages' Content-Security-Policy have nothing to do for them, and the
web chain cost about 0.1 ms of CPU per API request (7% of a ``view``). The API chain keeps the
security headers (SecurityMiddleware, X-Frame-Options), Content-Length (CommonMiddleware) and
the body limit. Every test client and server goes through this router, so the tests exercise
the same chain as production.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.utils.module_loading import import_string

from api.errors import TOO_LARGE_MESSAGE, error_body, error_page_for
from api.mcp.errors import mcp_shaped
from api.mem0.errors import is_mem0, mem0_shaped
from memoryhub.numbers import parse_natural

API_PREFIX = "/api/v1/"
MCP_PATH = "/mcp"  # the MCP server (api/mcp): a Bearer key too, and the same chain


def is_mcp(path: str) -> bool:
    """The MCP endpoint, also with a trailing slash: people copy the URLs of servers the SDK
    builds, whose router sends "/mcp/" on to "/mcp" (here it was the pages' HTML 404, which
    the SDK's client reports as "Not Found")."""
    return path in (MCP_PATH, MCP_PATH + "/")


Handler = Callable[[HttpRequest], HttpResponseBase]


def api_exception_to_response(get_response: Handler) -> Handler:
    """Django's ``convert_exception_to_response`` with the API's error body: an exception no
    view answered (an unknown route, a bug: 500) is still logged and signalled by Django
    (``got_request_exception``: monitoring and the test client see it), but what goes out is
    ``{"error": {...}}`` JSON, never Django's HTML page or, in DEBUG, its debug page."""

    @wraps(get_response)
    def inner(request: HttpRequest) -> HttpResponseBase:
        try:
            return get_response(request)
        except Exception as exc:
            return error_page_for(exc, response_for_exception(request, exc))

    return inner


class ApiHandler(BaseHandler):
    """Django's request handling (URL resolution, the view, exception responses) behind the
    chain of ``settings.API_MIDDLEWARE``, which holds synchronous middleware only; every
    error it answers has the API's JSON body."""

    def load_middleware(self, is_async: bool = False) -> None:
        self._view_middleware: list[Callable[..., Any]] = []
        self._template_response_middleware: list[Callable[..., Any]] = []
        self._exception_middleware: list[Callable[..., Any]] = []
        # django-stubs omit BaseHandler's private _get_response (the URL resolver and view).
        handler = api_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        for path in reversed(settings.API_MIDDLEWARE):
            middleware = import_string(path)(handler)
            if hasattr(middleware, "process_view"):
                self._view_middleware.insert(0, middleware.process_view)
            if hasattr(middleware, "process_template_response"):
                self._template_response_middleware.append(middleware.process_template_response)
            if hasattr(middleware, "process_exception"):
                self._exception_middleware.append(middleware.process_exception)
            handler = api_exception_to_response(middleware)
        self._middleware_chain = handler


class ApiRouterMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        self.api = ApiHandler()
        self.api.load_middleware()

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path_info.startswith(API_PREFIX):
            return self.api.get_response(request)
        if is_mcp(request.path_info):  # the MCP server (api/mcp): JSON-RPC's errors
            return mcp_shaped(self.api.get_response(request))
        if is_mem0(request.path_info):  # mem0's API (api/mem0): the same chain, mem0's errors
            return mem0_shaped(self.api.get_response(request))
        return self.get_response(request)


class ApiBodyLimitMiddleware:
    """Refuse API bodies over 1 MiB with 413 before reading them (spec: Conventions)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/") or is_mcp(request.path) or is_mem0(request.path):
            refusal = body_refusal(request)
            if refusal is not None:
                return refusal
        return self.get_response(request)


def body_refusal(request: HttpRequest) -> HttpResponse | None:
    """The answer to a body the API will not read, judged by its headers; None to read it."""
    if request.META.get("HTTP_TRANSFER_ENCODING") and not request.META.get("CONTENT_LENGTH"):
        # A chunked body the server did not decode for us (memoryhub/infra/bodies.py does
        # under gunicorn): Django would read it as empty.
        return JsonResponse(error_body(
            "length_required", "Send the body with a Content-Length header; this server "
            "does not read chunked request bodies."), status=411)
    length = parse_natural(request.META.get("CONTENT_LENGTH") or "0")
    if length is None:
        # Not a length (RFC 9112, 6.3: an invalid Content-Length is an unrecoverable error).
        # Django would read such a body as empty, and int() reads digits of other scripts.
        return JsonResponse(error_body(
            "invalid_request", "Content-Length must be the body's size in bytes."), status=400)
    if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return JsonResponse(error_body("request_too_large", TOO_LARGE_MESSAGE), status=413)
    return None
