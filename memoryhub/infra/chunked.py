"""Request bodies sent with ``Transfer-Encoding: chunked``, made ordinary before Django runs.

A chunked request has no ``Content-Length``, and Django reads a body only up to that length
(PEP 3333 forbids reading ``wsgi.input`` past it), so the API saw an empty body: a valid
command got 400, and 2 MiB got 400 instead of 413. A server that decodes the chunks itself and
ends ``wsgi.input`` with the body says so with ``wsgi.input_terminated`` (gunicorn does).
``with_chunked_bodies`` then reads at most ``limit + 1`` bytes and gives Django those bytes with
their ``Content-Length``: what is over the limit gets the API's 413 like any large body, and
gunicorn discards the unread rest. On a server that does not decode chunks (Django's
development and test servers) the request is left as it came, and the API answers 411.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment


def with_chunked_bodies(app: WSGIApplication, *, limit: int) -> WSGIApplication:
    def application(environ: WSGIEnvironment,
                    start_response: StartResponse) -> Iterable[bytes]:
        if (environ.get("HTTP_TRANSFER_ENCODING") and not environ.get("CONTENT_LENGTH")
                and environ.get("wsgi.input_terminated")):
            body = environ["wsgi.input"].read(limit + 1)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return application
