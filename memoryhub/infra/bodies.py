"""Request bodies at the WSGI boundary, before Django runs and after it answered.

**Chunked bodies.** A request sent with ``Transfer-Encoding: chunked`` has no
``Content-Length``, and Django reads a body only up to that length (PEP 3333 forbids reading
``wsgi.input`` past it), so the API saw an empty body: a valid command got 400, and 2 MiB got
400 instead of 413. A server that decodes the chunks itself and ends ``wsgi.input`` with the
body says so with ``wsgi.input_terminated`` (gunicorn does). ``with_request_bodies`` then reads
at most ``limit + 1`` bytes and gives Django those bytes with their ``Content-Length``: what is
over the limit gets the API's 413 like any large body. On a server that does not decode chunks
(Django's development and test servers) the request is left as it came, and the API answers 411.

**Bodies left unread.** The API answers some requests without reading their body: 413 from the
``Content-Length`` alone, 401 before a body is parsed. gunicorn answers such a request with
``Connection: keep-alive`` and only then drains the rest, at most 64 KiB; past that it closes
the connection. A proxy that keeps connections to gunicorn open (nginx's ``keepalive``,
deploy/nginx) may send its next request on that connection before it sees the close, and
answers 502 for a request that never reached us: a 1 MiB + 1 body made the next POST fail 16
times in 40 (tests/platform/test_deploy_check.py). So after the answer has gone out, the
unread rest of a body of at most ``drain_limit`` bytes is read and dropped here, a piece at a
time, and the connection stays usable. Over that, gunicorn closes it as before: such a client
sent far more than any request of ours may hold. The drain takes at most ``DRAIN_SECONDS``,
like gunicorn's own (reads on its socket time out): a client that announces a body and sends
none, after a 401, holds a server thread no longer than it did before.
"""

from __future__ import annotations

import io
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

PIECE = 64 * 1024
DRAIN_SECONDS = 5.0


def with_request_bodies(app: WSGIApplication, *, limit: int, drain_limit: int,
                        parse_length: Callable[[str], int | None]) -> WSGIApplication:
    """``parse_length`` reads a Content-Length (the project's one parser of numbers from text,
    which this infrastructure layer may not import)."""

    def application(environ: WSGIEnvironment,
                    start_response: StartResponse) -> Iterable[bytes]:
        sent: IO[bytes] = environ["wsgi.input"]
        length = parse_length(environ.get("CONTENT_LENGTH") or "0")
        if (environ.get("HTTP_TRANSFER_ENCODING") and not environ.get("CONTENT_LENGTH")
                and environ.get("wsgi.input_terminated")):
            body = sent.read(limit + 1)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            length = drain_limit  # unknown: whatever of it is left, up to the limit
        answer = app(environ, start_response)
        if not length or length > drain_limit:
            return answer  # nothing to drain (a file answer keeps the server's sendfile)
        return _DrainedAfter(answer, sent, drain_limit, environ.get("gunicorn.socket"))

    return application


class _DrainedAfter:
    """The application's answer, then the request body's unread rest read and dropped."""

    def __init__(self, answer: Iterable[bytes], body: IO[bytes], limit: int,
                 sock: socket.socket | None) -> None:
        self.answer, self.body, self.limit, self.sock = answer, body, limit, sock

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.answer)

    def close(self) -> None:
        try:
            close = getattr(self.answer, "close", None)
            if close is not None:
                close()
        finally:
            self._drain()

    def _drain(self) -> None:
        deadline = time.monotonic() + DRAIN_SECONDS
        before = self.sock.gettimeout() if self.sock is not None else None
        drained = 0
        try:
            while drained < self.limit and time.monotonic() < deadline:
                if self.sock is not None:
                    self.sock.settimeout(max(deadline - time.monotonic(), 0.001))
                if not (piece := self.body.read(PIECE)):
                    break
                drained += len(piece)
        except Exception:  # noqa: S110 - best effort: the server's own drain then decides
            # Out of time, a client gone, or a malformed chunk (the server's own error class):
            # the server finds the body unfinished too and closes the connection, as without
            # this.
            pass
        finally:
            if self.sock is not None:
                try:
                    self.sock.settimeout(before)
                except OSError:  # closed meanwhile
                    pass
