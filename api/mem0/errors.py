"""mem0's error shape, ``{"detail": "<message>"}``, with the REST API's status codes.

Every request under ``/mem0/`` runs through the API's own chain (api/middleware.py), whose
every error (a view's refusal, the body limit, an unknown method, a rate limit, a bug) has the
REST body ``{"error": {"code", "message"}}``. ``mem0_shaped`` rewrites that body, and only
the body, at the end of the chain: the status and the headers (``Retry-After``,
``WWW-Authenticate``) stay. mem0's client reads ``detail`` into its exceptions' message.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase, JsonResponse

from api.errors import body_replaced, rest_error_of

MEM0_PREFIX = "/mem0/"
NO_SUCH_ENDPOINT = ("No such endpoint in MemoryHub's mem0 API: see \"Moving from mem0\" in "
                    "MemoryHub's README for what it serves.")


def is_mem0(path: str) -> bool:
    return path.startswith(MEM0_PREFIX)


def mem0_shaped(response: HttpResponseBase) -> HttpResponseBase:
    """``response`` with a REST error body as ``{"detail": message}``; anything else as is."""
    error = rest_error_of(response)
    if error is None:
        return response
    return body_replaced(response, {"detail": error.get("message", "")})


def mem0_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Every path under /mem0/ that no view serves (mem0's projects, webhooks, exports...)."""
    return JsonResponse({"detail": NO_SUCH_ENDPOINT}, status=404)
