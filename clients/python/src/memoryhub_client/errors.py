"""``MemoryHubError``: every HTTP error the API answers, with its stable ``code``, and the
network's failures (no answer at all)."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx


class MemoryHubError(Exception):
    """An HTTP error from MemoryHub: ``status`` (e.g. 404), ``code`` (snake_case, stable: branch
    on it, e.g. ``"not_found"``, ``"precondition_failed"``, ``"rate_limited"``) and ``message``
    (for people). A 429 carries ``retry_after``, the seconds to wait (``Retry-After``).

    No answer at all (MemoryHub unreachable, a timeout) is one too, with ``status`` 0 and
    ``code`` ``"connection_error"`` or ``"timeout"``; it is also the httpx exception it was
    (``httpx.ConnectError``, ``httpx.ReadTimeout``...), so ``except httpx.HTTPError`` still
    catches it.

    A memory tool command that fails is not an HTTP error: it is a result with ``is_error``
    (see ``MemoryHub.memory``), meant for the model."""

    def __init__(
        self, status: int, code: str, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[type[MemoryHubError], tuple[int, str, str], dict[str, object]]:
        """Pickled from its fields: Exception pickles its ``args`` (here the one text), which
        ``__init__`` cannot take back, so the error of a call made in a worker process
        (multiprocessing, concurrent.futures, Celery) failed to reach the caller. The
        network's errors come back as a plain ``MemoryHubError``."""
        return MemoryHubError, (self.status, self.code, self.message), {
            "retry_after": self.retry_after}

    @classmethod
    def from_response(cls, response: httpx.Response) -> MemoryHubError:
        """The API's error body ``{"error": {"code", "message"}}``; anything else (a proxy's
        page, say) as ``http_<status>`` with the body's text, a redirect with where it leads."""
        code, message = f"http_{response.status_code}", response.text[:500]
        if response.is_redirect:
            # http:// behind a proxy that sends it to https:// (deploy/nginx does). Followed,
            # a POST would arrive as a GET and a DELETE would look done.
            message = (f"redirected to {response.headers['Location']}: give the client the "
                       "address it redirects to")
        try:
            error = response.json()["error"]
            code, message = str(error["code"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            pass
        return cls(response.status_code, code, message,
                   retry_after=_seconds(response.headers.get("Retry-After")))


def unanswered(error: httpx.TransportError) -> MemoryHubError:
    """The network's failure as a ``MemoryHubError`` that is still ``error``'s httpx class."""
    code = "timeout" if isinstance(error, httpx.TimeoutException) else "connection_error"
    try:
        request: httpx.Request | None = error.request
    except RuntimeError:  # httpx sets it on what its clients raise; not on every error
        request = None
    # The address without its query or any user:password: the call it was, nothing secret.
    where = "" if request is None else (
        f" ({request.method} {request.url.scheme}://{request.url.netloc.decode()}"
        f"{request.url.path})")
    raised = _unanswered_class(type(error))(0, code, f"no answer from MemoryHub{where}: {error}")
    if request is not None:
        raised.request = request  # type: ignore[attr-defined]
    return raised


_UNANSWERED: dict[type[httpx.TransportError], type[MemoryHubError]] = {}


def _unanswered_class(kind: type[httpx.TransportError]) -> type[MemoryHubError]:
    """``MemoryHubError`` and ``kind`` in one class, made once per httpx exception class."""
    if kind not in _UNANSWERED:
        _UNANSWERED[kind] = type(kind.__name__, (MemoryHubError, kind), {"__module__": __name__})
    return _UNANSWERED[kind]


def unreadable(response: httpx.Response) -> MemoryHubError:
    """A successful status whose body is not the API's JSON: a proxy's page in MemoryHub's
    place, not an answer to read."""
    return MemoryHubError(response.status_code, "invalid_response",
                          f"the answer is not MemoryHub's JSON: {response.text[:200]}")


def _seconds(raw: str | None) -> float | None:
    """``Retry-After`` in seconds: this API sends seconds, a proxy in front of it may send an
    HTTP date instead (RFC 9110 allows both), which read as no retry information at all."""
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # "-0000": UTC all the same
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())
