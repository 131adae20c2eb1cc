"""A tenant's webhook receiver on 127.0.0.1: records what arrives, answers scripted statuses
(or, held, nothing until the test releases it: an endpoint that hangs), and checks signatures
as a receiver would, from the README's formula alone; and, for tests elsewhere that need one,
a fixture allowing such private URLs."""

from __future__ import annotations

import hashlib
import hmac
import math
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

# README, "Recall, workers and webhooks": X-MemoryHub-Timestamp, and X-MemoryHub-Signature:
# sha256=<HMAC-SHA256 of "<timestamp>.<body>" with the endpoint's secret>. Written out here
# rather than imported, so that a change of the product's formula breaks the tests.
TIMESTAMP = "X-MemoryHub-Timestamp"
SIGNATURE = "X-MemoryHub-Signature"


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    arrived_at: float  # time.time() when the request was read

    def signed_by(self, secret: str) -> bool:
        """The signature header is the documented HMAC of this timestamp and body."""
        timestamp = self.headers.get(TIMESTAMP, "")
        digest = hmac.new(secret.encode(), timestamp.encode() + b"." + self.body, hashlib.sha256)
        return hmac.compare_digest(self.headers.get(SIGNATURE, ""), f"sha256={digest.hexdigest()}")

    def signed_between(self, earliest: float) -> bool:
        """The timestamp is Unix seconds, no earlier than ``earliest`` (when the test started
        what sent it) and no later than the request's arrival: signed for this attempt."""
        timestamp = self.headers.get(TIMESTAMP, "")
        return (timestamp.isascii() and timestamp.isdigit()
                and math.floor(earliest) <= int(timestamp) <= self.arrived_at)


@dataclass
class Receiver:
    url: str
    statuses: list[int]  # answered in order; 200 once they run out
    received: list[Received] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)  # held ones answer


# How long a held request waits for its release at most: longer than any test's patience.
HOLD_LIMIT = 60.0


@contextmanager
def webhook_receiver(statuses: list[int] | None = None, *, held: bool = False,
                     tls: ssl.SSLContext | None = None) -> Iterator[Receiver]:
    """``held``: each request is recorded as it arrives, then answered only once
    ``receiver.released`` is set (the block's end sets it), as an endpoint that hangs.
    ``tls``: served over https with that (server) context, at ``https://localhost:PORT``."""
    receiver = Receiver(url="", statuses=list(statuses or []))
    if not held:
        receiver.released.set()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.received.append(Received(dict(self.headers.items()), body, time.time()))
            receiver.released.wait(HOLD_LIMIT)
            status = receiver.statuses.pop(0) if receiver.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()
            receiver.arrived.set()

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
        origin = f"https://localhost:{server.server_address[1]}"
    receiver.url = f"{origin}/hooks/memory"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def private_urls_allowed(settings: Any) -> None:
    """Webhook URLs on 127.0.0.1 (the receiver's) are allowed, as with WEBHOOK_ALLOW_PRIVATE_URLS."""
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
