"""Request ids, structured logs and the request metrics, for every request of both chains.

``RequestObservabilityMiddleware`` comes first in ``settings.MIDDLEWARE``, ahead of the API
router (api/middleware.py), so it wraps the web chain and the API's alike. For each request:

- **Request id**: a sane incoming ``X-Request-ID`` (a proxy's or the client's; untrusted, so
  only 1-128 of ``A-Z a-z 0-9 . _ : -``) is kept, anything else is replaced by a new one. It
  goes back in the response's ``X-Request-ID`` and, through :class:`RequestIdLogFilter`, on
  every log line written while the request runs (a ContextVar: gthread workers serve one
  request per thread).
- **Metrics** (prometheus_client): requests by route, method and status, and a latency
  histogram by route and method. The route is the URL pattern's name (``api:memory-tool``),
  never the raw path, and an unknown method counts as ``other``: what a client sends cannot
  grow the number of series. Under gunicorn with ``PROMETHEUS_MULTIPROC_DIR`` set
  (deploy/gunicorn.conf.py) each worker writes its samples to that folder and
  :func:`exposition` adds up every worker's.
- **Access log**: one line per request on the ``memoryhub.request`` logger, with the route
  rather than the path (paths carry people's identifiers and document names).
"""

from __future__ import annotations

import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Iterable
from contextvars import ContextVar

from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

REQUEST_ID_HEADER = "X-Request-ID"
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_request_id: ContextVar[str | None] = ContextVar("memoryhub_request_id", default=None)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED_ROUTE = "unmatched"  # no URL pattern matched (404s, static files)

REQUESTS = Counter(
    "memoryhub_http_requests", "HTTP requests answered, by URL pattern name and status.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "memoryhub_http_request_duration_seconds",
    "Time from the request entering Django to the response leaving it, by URL pattern name.",
    ["route", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)

access_log = logging.getLogger("memoryhub.request")


def request_id_from(incoming: str | None) -> str:
    """The incoming id when it is sane, else a fresh one (32 hex digits)."""
    if incoming and _SANE_REQUEST_ID.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    return _request_id.get()


class RequestIdLogFilter(logging.Filter):
    """Put the current request's id on every record written during a request (``request_id``;
    outside one the record has none: the text format shows ``-``, JSON leaves it out)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = _request_id.get()
        if request_id is not None:
            record.request_id = request_id
        return True


class ExpectedRefusalLogFilter(logging.Filter):
    """On ``django.request`` and ``django.security``: a 4xx answer to an exception raised on
    purpose (PermissionDenied for a plain member on an admin page, Http404, a Host header not
    in ALLOWED_HOSTS, which scanners send all day) is logged as one warning line, without the
    traceback Django attaches; a 5xx keeps it (a bug to read).

    Every such line names the URL pattern, not the path, as ``memoryhub.request`` does: Django
    writes the path ("Not Found: /api/v1/users/alice/documents/global/diet.md"), and the JSON
    formatter the request itself (its repr holds the path), and paths carry people's ids,
    document names and live secrets (an invitation link opened by another account is 403,
    a portal link POSTed without its CSRF token 403)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request = getattr(record, "request", None)
        if isinstance(request, HttpRequest):
            route = route_of(request)
            if isinstance(record.args, tuple):
                record.args = tuple(route if isinstance(arg, str) and arg == request.path
                                    else arg for arg in record.args)
            record.request = f"{request.method} {route}"
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = record.exc_text = None
            if record.levelno > logging.WARNING:  # the client's mistake, not the service's
                record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def route_of(request: HttpRequest) -> str:
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNMATCHED_ROUTE
    # A pattern without a name (the API's catch-all) is known by its view's dotted path.
    return match.view_name or match.route or UNMATCHED_ROUTE


class RequestObservabilityMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        request_id = request_id_from(request.headers.get(REQUEST_ID_HEADER))
        request.request_id = request_id  # type: ignore[attr-defined]
        # Cleared when the response is closed (below), not on the way out of here: Django
        # logs a 4xx or 5xx answer ("Forbidden: ...") after the middleware has returned.
        _request_id.set(request_id)
        started = time.perf_counter()
        response = self.get_response(request)
        elapsed = time.perf_counter() - started
        response[REQUEST_ID_HEADER] = request_id
        self._record(request, response.status_code, elapsed)
        return response

    @staticmethod
    def _record(request: HttpRequest, status: int, elapsed: float) -> None:
        route = route_of(request)
        method = request.method if request.method in METHODS else "other"
        REQUESTS.labels(route=route, method=method, status=str(status)).inc()
        LATENCY.labels(route=route, method=method).observe(elapsed)
        access_log.info(
            "%s %s %s", method, route, status,
            extra={"route": route, "method": method, "status": status,
                   "duration_ms": round(elapsed * 1000, 3)},
        )


@receiver(request_finished, dispatch_uid="memoryhub.request_id.clear")
def _request_done(**kwargs: object) -> None:
    _request_id.set(None)


def exposition(extra: Iterable[Collector] = ()) -> tuple[bytes, str]:
    """The text exposition of this process's metrics (every gunicorn worker's, in
    multi-process mode) followed by ``extra`` collectors, and its content type."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        source = CollectorRegistry()
        MultiProcessCollector(source)
    else:
        source = REGISTRY
    return b"".join(generate_latest(c) for c in (source, *extra)), CONTENT_TYPE_LATEST
