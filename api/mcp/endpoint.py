"""``/mcp``: the MCP server (streamable HTTP, stateless, JSON responses) on the API's host and port.

The project is served by WSGI (gunicorn's threads); the SDK is ASGI. The view below is a
Django view like any other: it authenticates the Bearer key (401 before any tool runs, 403
without ``memory``), applies the API's rate limit (429 with ``Retry-After``), then hands the
request to the SDK's ASGI app through ``a2wsgi``'s ``ASGIMiddleware``, which runs one asyncio
loop per process in a background thread (started on the first request, so after gunicorn's
fork). The SDK answers each POST with one JSON body; its tools run in the SDK's worker
threads (``api.mcp.tools``). Why not the whole project under an ASGI server: README, "MCP".

DNS-rebinding protection is on, with Django's own reading of ``ALLOWED_HOSTS`` (and
``CSRF_TRUSTED_ORIGINS``): see ``origin_allowed``. The SDK's copy of that check is off.
"""

from __future__ import annotations

import asyncio
import io
import threading
from contextlib import AsyncExitStack
from typing import Any
from urllib.parse import urlsplit

from a2wsgi import ASGIMiddleware
from django.conf import settings
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
)
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain
from django.views.decorators.csrf import csrf_exempt
from mcp.server.transport_security import TransportSecuritySettings
from rest_framework import exceptions

from api.authentication import key_authenticate, request_key
from api.errors import error_body
from api.mcp.tools import KEY_ENVIRON, RequestKey, build_server
from api.middleware import MCP_PATH
from api.throttling import key_retry_after
from tenants.models import Permission


def origin_allowed(request: HttpRequest) -> bool:
    """Whether a browser page of this ``Origin`` may call /mcp: one of ``ALLOWED_HOSTS`` (on any
    port, its ``.example.com`` and ``*`` entries read as Django reads them, except that ``*``
    names no origin), the server's own origin, or one of ``CSRF_TRUSTED_ORIGINS``
    (``https://*.example.com`` included). A request without an ``Origin`` is not a page's, and
    every MCP client sends none.

    Django has already refused a ``Host`` that ``ALLOWED_HOSTS`` does not allow (400, in
    ``CommonMiddleware``); the SDK's own protection, which compares names exactly, is off:
    it refused ``*``'s and ``.example.com``'s hosts with 421, so /mcp was unusable where the
    REST API served."""
    origin = request.headers.get("Origin")
    if not origin:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return False
    domain, _port = split_domain_port(parts.netloc)
    named = [host for host in settings.ALLOWED_HOSTS if host != "*"]
    if domain and validate_host(domain, named):
        return True
    if origin == f"{request.scheme}://{request.get_host()}":
        return True
    return any(_trusted(origin, parts.scheme, parts.netloc, trusted)
               for trusted in settings.CSRF_TRUSTED_ORIGINS)


def _trusted(origin: str, scheme: str, netloc: str, trusted: str) -> bool:
    """``trusted`` as ``CsrfViewMiddleware`` reads a ``CSRF_TRUSTED_ORIGINS`` entry."""
    if "*" not in trusted:
        return origin == trusted
    pattern = urlsplit(trusted)
    return scheme == pattern.scheme and is_same_domain(netloc, pattern.netloc.replace("*", ""))


# Host and Origin are checked as Django reads its settings (origin_allowed); the SDK still
# checks the Content-Type of each POST.
TRANSPORT_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


class _Server:
    """The SDK's app and its session manager, run on one loop per process."""

    def __init__(self) -> None:
        self.mcp = build_server()
        self.app = self.mcp.streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
            transport_security=TRANSPORT_SECURITY,
            max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        )
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="mcp-loop", daemon=True).start()
        # The stateless manager's task group lives as long as the process (Starlette's
        # lifespan would open it; a2wsgi runs none).
        self._running = AsyncExitStack()
        asyncio.run_coroutine_threadsafe(
            self._running.enter_async_context(self.mcp.session_manager.run()), self.loop
        ).result(timeout=30)
        # The request's key goes in its environ; the tools read it from the scope's
        # "wsgi_environ" (api.mcp.tools.request_key_of).
        self.wsgi = ASGIMiddleware(self.app, loop=self.loop)  # type: ignore[arg-type]


_server: _Server | None = None
_server_lock = threading.Lock()


def mcp_server() -> _Server:
    global _server
    with _server_lock:
        if _server is None:
            _server = _Server()
        return _server


def _refusal(exc: exceptions.APIException, code: str) -> JsonResponse:
    response = JsonResponse(error_body(code, str(exc.detail)), status=exc.status_code)
    if exc.status_code == 401:
        response["WWW-Authenticate"] = 'Bearer realm="mcp"'
    return response


def _authenticate(request: HttpRequest) -> RequestKey | JsonResponse:
    try:
        parsed = request_key(request)
        if parsed is None:
            raise exceptions.NotAuthenticated("Send 'Authorization: Bearer <api key>'.")
        found = key_authenticate(parsed)
    except exceptions.AuthenticationFailed as exc:
        return _refusal(exc, "invalid_api_key")
    except exceptions.NotAuthenticated as exc:
        return _refusal(exc, "not_authenticated")
    if Permission.MEMORY not in found.principal.permissions:
        return _refusal(exceptions.PermissionDenied("This API key lacks the 'memory' permission."),
                        "permission_denied")
    return RequestKey(parsed=parsed, principal=found.principal)


# Stateless and in JSON mode, the server answers POST only (each with one JSON body), which
# the transport allows: it may refuse GET's stream and DELETE's end of a session with 405.
_REFUSED_METHODS = {
    # A GET asks for a stream of the server's own messages. Stateless, the server has none
    # to send, but the SDK held the stream open (pings only) and with it one of the web
    # server's few threads for as long as the client stayed: four clients stopped the service.
    "GET": "This MCP server sends no stream of its own: POST requests to /mcp, each answered "
           "with one JSON body.",
    "DELETE": "This MCP server keeps no sessions, so there is none to end: POST requests to "
              "/mcp, each answered with one JSON body.",
}


def _method_refused(method: str) -> JsonResponse:
    """405 for anything but POST, saying so in ``Allow``: the SDK's own answers to DELETE (no
    ``Allow``) and to the rest (``Allow: GET, POST, DELETE``) named methods it refuses."""
    refused = JsonResponse(error_body("method_not_allowed", _REFUSED_METHODS.get(
        method, "POST requests to /mcp, each answered with one JSON body.")), status=405)
    refused["Allow"] = "POST"
    return refused


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponseBase:
    if not origin_allowed(request):
        # The SDK's answer and text, which its clients know.
        return HttpResponse("Invalid Origin header", status=403, content_type="text/plain")
    key = _authenticate(request)
    if isinstance(key, JsonResponse):
        return key
    retry_after = key_retry_after(key.principal)
    if retry_after is not None:
        limited = JsonResponse(error_body("rate_limited", "Too many requests for this API key."),
                               status=429)
        limited["Retry-After"] = str(max(1, round(retry_after)))
        return limited
    if request.method != "POST":
        return _method_refused(request.method or "")
    environ = dict(request.META)  # a WSGI request's META is its environ
    body = request.body  # within DATA_UPLOAD_MAX_MEMORY_SIZE (the API's body limit)
    # PATH_INFO: the SDK's route, for "/mcp/" too (api.middleware.is_mcp).
    environ.update({"wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)),
                    "PATH_INFO": MCP_PATH, KEY_ENVIRON: key})
    started: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        started.update(status=int(status.split(" ", 1)[0]), headers=headers)

    # Every answer, stateless and in JSON mode without GET's stream, is one JSON body (or
    # none): read whole, it is sent with its length.
    body = b"".join(mcp_server().wsgi(environ, start_response))  # type: ignore[arg-type]
    headers = {name.lower(): value for name, value in started["headers"]}
    response = HttpResponse(body, status=started["status"])
    if "content-type" not in headers:  # a 202 for a notification: no body, no type
        del response["Content-Type"]
    for name, value in started["headers"]:
        if name.lower() != "content-length":
            response[name] = value
    return response

