"""Every non-tool error body is ``{"error": {"code": ..., "message": ...}}`` (spec: Conventions)."""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpResponseBase, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from memoryhub.errors import MemoryRefusal
from memoryhub.memory_tool.texts import well_formed

logger = logging.getLogger(__name__)


class ApiError(exceptions.APIException):
    """An error with the contract's snake_case code: ``raise ApiError(400, "invalid_user_id", ...)``."""

    wait: float | None = None  # seconds: DRF's handler sends it as Retry-After

    def __init__(self, status_code: int, code: str, message: str) -> None:
        self.status_code = status_code
        super().__init__(detail=message, code=code)
        self.error_code = code


_CODES = {
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "invalid_api_key",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.ParseError: "invalid_json",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
    exceptions.ValidationError: "invalid_request",
    exceptions.NotAcceptable: "not_acceptable",
}


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def rest_error_of(response: HttpResponseBase) -> dict[str, Any] | None:
    """The ``{"code", "message"}`` of a response with the REST error body, else None (a
    success, a stream, a page, another protocol's JSON)."""
    if response.status_code < 400 or response.streaming:
        return None
    if response.get("Content-Type", "").split(";")[0] != "application/json":
        return None
    try:
        body = json.loads(response.content)  # type: ignore[attr-defined]  # not streaming
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) and "jsonrpc" not in body else None
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        return None
    return error


def body_replaced(response: HttpResponseBase, body: Any) -> HttpResponseBase:
    """``response`` with ``body`` as its JSON; the status and headers stay."""
    response.content = json.dumps(body)  # type: ignore[attr-defined]
    if response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))  # type: ignore[attr-defined]
    return response


def api_message(detail: Any) -> str:
    """A DRF error's detail as the error body's message (``field: problem; ...``).

    DRF's messages end with a full stop; joined, each but the last drops it, so that two
    problems read "a: This field is required; b: ..." rather than "required.; b"."""
    if isinstance(detail, list):
        return _joined([api_message(d) for d in detail])
    if isinstance(detail, dict):
        return _joined([f"{key}: {api_message(value)}" for key, value in detail.items()])
    return str(detail)


def _joined(parts: list[str]) -> str:
    return "; ".join([part.removesuffix(".") for part in parts[:-1]] + parts[-1:])


TOO_LARGE_MESSAGE = "The request body is over 1 MiB. Send less at a time."
NO_SUCH_ENDPOINT = "No such endpoint. See /api/docs/ for the API."
INTERNAL_ERROR_MESSAGE = ("Something went wrong on our side; it has been logged. Try again "
                          "later, and tell the service's operators if it persists.")

# What the API says for the statuses Django gives the exceptions no view answered.
_STATUS_ERRORS = {
    400: ("invalid_request", "The request is malformed."),
    403: ("permission_denied", "Permission denied."),
    404: ("not_found", NO_SUCH_ENDPOINT),
    413: ("request_too_large", TOO_LARGE_MESSAGE),
}


UNAVAILABLE_MESSAGE = ("The service cannot reach its database for a moment. Nothing was "
                       "changed; try again after Retry-After seconds.")
# A transaction PostgreSQL rolled back to let another through (a deadlock or a
# serialization failure, SQLSTATE class 40): the database was there, the timing was not.
CONFLICT_MESSAGE = ("Another change to the same memory got in the way. Nothing was changed; "
                    "try again after Retry-After seconds.")


def unavailable_message(exc: BaseException | None) -> str:
    """What a 503 for ``exc`` says: the database out of reach, or a clash with another change."""
    sqlstate = getattr(exc.__cause__ if exc is not None else None, "sqlstate", None) or ""
    return CONFLICT_MESSAGE if sqlstate.startswith("40") else UNAVAILABLE_MESSAGE


def database_unavailable(exc: BaseException | None) -> bool:
    """The database could not be reached or dropped the connection (it restarts, a failover,
    the pool found no connection in time), or cancelled the statement: the request may
    succeed when sent again, so it is 503 with Retry-After rather than a bug's 500."""
    return isinstance(exc, OperationalError | InterfaceError)


def unavailable_headers() -> dict[str, str]:
    return {"Retry-After": str(settings.DATABASE_RETRY_AFTER)}


def unavailable_page(exc: BaseException | None = None) -> JsonResponse:
    """503 ``service_unavailable`` with Retry-After: what the API says while the database is
    out of reach (or rolled ``exc``'s transaction back for another's)."""
    return JsonResponse(error_body("service_unavailable", unavailable_message(exc)), status=503,
                        headers=unavailable_headers())


def error_page(status: int) -> JsonResponse:
    """The error body for a status, where no view chose a code: 500 ``internal_error``."""
    code, message = _STATUS_ERRORS.get(status, ("internal_error", INTERNAL_ERROR_MESSAGE))
    return JsonResponse(error_body(code, message), status=status)


def error_page_for(exc: Exception, django_page: HttpResponseBase) -> JsonResponse:
    """The API's answer to an exception Django turned into ``django_page`` (HTML, or in DEBUG
    its debug page, which lists every URL pattern). Django chose the status, logged and
    signalled the exception; only the body changes."""
    status = 413 if isinstance(exc, RequestDataTooBig) else django_page.status_code
    if database_unavailable(exc):
        page = unavailable_page(exc)
    else:
        page = error_page(status if status in _STATUS_ERRORS else 500)
    # log_response marks what it logged; without the mark the handler would log it again.
    logged = getattr(django_page, "_has_been_logged", False)
    page._has_been_logged = logged  # type: ignore[attr-defined]
    return page


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, RequestDataTooBig):  # chunked bodies have no Content-Length to check
        return Response(error_body("request_too_large", TOO_LARGE_MESSAGE), status=413)
    if database_unavailable(exc):
        logger.warning("database unavailable: %s: %s", type(exc).__name__, exc)
        set_rollback()
        return Response(error_body("service_unavailable", unavailable_message(exc)), status=503,
                        headers=unavailable_headers())
    if isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found.")
    if isinstance(exc, MemoryRefusal):  # a domain refusal a view lets through: its own code
        exc = ApiError(exc.http_status, exc.code, exc.message)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ApiError):
        code = exc.error_code
    else:
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), "error")
    message = api_message(exc.detail) if isinstance(exc, exceptions.APIException) else str(exc)
    # A message may quote the request (a field's name, a choice), and a lone surrogate (JSON's
    # "\ud800", or what the body parser makes of invalid UTF-8) cannot be written as UTF-8:
    # the response failed to render, a 500 in HTML.
    response.data = error_body(code, well_formed(message))
    return response
