"""Request bodies at the WSGI boundary (memoryhub/infra/bodies.py), under gunicorn.

Bodies sent with ``Transfer-Encoding: chunked`` (issue 17): read up to 1 MiB, 413 above.

Such a body has no Content-Length, and Django reads a body only up to that length: the API
used to see an empty body (a valid command got 400, 2 MiB got 400 instead of 413). Under
gunicorn, the production server, which decodes the chunks and ends ``wsgi.input`` with the
body, the body is read like any other (memoryhub/infra/bodies.py). A server that passes the
chunks through undecoded (Django's development and test servers: ``live_server``) gets 411
Length Required. The requests are raw ``http.client`` ones, chunked by hand.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
VIEW = {"command": "view", "path": "/memories"}
EMPTY_LISTING = ("Here're the files and directories up to 2 levels deep in /memories, "
                 "excluding hidden items:\n4K\t/memories")


def padded(size: int) -> bytes:
    """A view command of exactly ``size`` bytes (an ignored field carries the padding)."""
    shell = json.dumps({**VIEW, "padding": ""}).encode()
    return json.dumps({**VIEW, "padding": "x" * (size - len(shell))}).encode()


def chunks(body: bytes, size: int = 64 * 1024) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start:start + size]


def post_chunked(base_url: str, key: str, body: bytes) -> tuple[int, dict]:
    """POST the memory tool with the body in chunks: no Content-Length header at all."""
    url = urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        try:
            connection.request("POST", "/api/v1/users/alice/memory", body=chunks(body),
                               headers={"Authorization": f"Bearer {key}",
                                        "Content-Type": "application/json"},
                               encode_chunked=True)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused before the whole body was sent: the answer is there to read
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def gunicorn(transactional_db: Any) -> Iterator[str]:
    """The production server (as deploy/run-dev.sh starts it) on the test database."""
    port = free_port()
    env = {**os.environ, "DEBUG": "0", "SECURE_SSL_REDIRECT": "0", "LOG_LEVEL": "WARNING",
           "ALLOWED_HOSTS": "127.0.0.1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "memoryhub.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "1", "--threads", "2", "--log-level", "warning"],
        cwd=ROOT, env=env)
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert server.poll() is None, "gunicorn exited"
            try:
                if httpx.get(f"{base_url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            pytest.fail("gunicorn did not come up within 60 s")
        yield base_url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_under_gunicorn_a_chunked_body_is_read_up_to_1_mib(gunicorn: str, acme: Any) -> None:
    status, body = post_chunked(gunicorn, acme.key, json.dumps(VIEW).encode())
    assert (status, body) == (200, {"content": EMPTY_LISTING, "is_error": False})
    assert post_chunked(gunicorn, acme.key, padded(MIB))[0] == 200
    for size in (MIB + 1, 2 * MIB):
        status, body = post_chunked(gunicorn, acme.key, padded(size))
        assert (status, body["error"]["code"]) == (413, "request_too_large"), size
    # The unread rest of a refused body did not leak into the next request.
    status, body = post_chunked(gunicorn, acme.key, json.dumps(VIEW).encode())
    assert (status, body["content"]) == (200, EMPTY_LISTING)


def test_a_server_that_passes_chunks_through_gets_411(live_server: Any, acme: Any) -> None:
    for body in (json.dumps(VIEW).encode(), padded(2 * MIB)):
        status, answer = post_chunked(live_server.url, acme.key, body)
        assert (status, answer["error"]["code"]) == (411, "length_required")
        assert set(answer["error"]) == {"code", "message"}


def post_on(connection: http.client.HTTPConnection, key: str, body: bytes) -> tuple[int, dict]:
    connection.request("POST", "/api/v1/users/alice/memory", body=body,
                       headers={"Authorization": f"Bearer {key}",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    return response.status, json.loads(response.read())


@pytest.mark.parametrize("refused", ["too large", "wrong key"])
def test_a_body_answered_unread_leaves_the_connection_usable(gunicorn: str, acme: Any,
                                                            refused: str) -> None:
    """A proxy reuses its connections to gunicorn (deploy/nginx: keepalive). gunicorn answers
    an unread body with keep-alive, then closed the connection when more than 64 KiB was left
    unread: the proxy's next request on it failed (502). The rest is drained now."""
    url = urlsplit(gunicorn)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    key, body = ((acme.key, padded(MIB + 1)) if refused == "too large"
                 else ("mh_1_x_wrong", padded(MIB)))
    try:
        for _ in range(3):
            status, answer = post_on(connection, key, body)
            assert status == (413 if refused == "too large" else 401), answer
            # The same socket serves the next request.
            assert post_on(connection, acme.key, json.dumps(VIEW).encode()) == (
                200, {"content": EMPTY_LISTING, "is_error": False})
    finally:
        connection.close()


def test_a_body_far_over_the_limit_is_refused_and_its_connection_closed(gunicorn: str,
                                                                         acme: Any) -> None:
    """Past what is drained (4 MiB) the answer still comes, and the server closes."""
    url = urlsplit(gunicorn)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(b"POST /api/v1/users/alice/memory HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     + f"Authorization: Bearer {acme.key}\r\n".encode()
                     + f"Content-Length: {64 * MIB}\r\n\r\n".encode() + b"x" * (256 * 1024))
        answer = b""
        while piece := sock.recv(65536):
            answer += piece
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert b'"request_too_large"' in answer


def test_a_client_that_announces_a_body_and_sends_none_is_let_go(gunicorn: str) -> None:
    """The drain after a 401 is bounded in time, like gunicorn's own (DRAIN_SECONDS): a
    client that never sends its announced body holds a server thread for seconds, then its
    connection is closed, and the server goes on answering."""
    url = urlsplit(gunicorn)
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(b"POST /api/v1/users/alice/memory HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Authorization: Bearer mh_1_x_wrong\r\n"
                     + f"Content-Length: {MIB}\r\n\r\n".encode())
        answer, started = b"", time.monotonic()
        while piece := sock.recv(65536):  # the 401, then the close
            answer += piece
        assert answer.startswith(b"HTTP/1.1 401 ")
        assert httpx.get(f"{gunicorn}/healthz", timeout=10).status_code == 200
    assert time.monotonic() - started < 25  # 5 s ours, at most 5 s gunicorn's, and slack
