"""A real HTTP server speaking OpenAI's ``POST /v1/embeddings`` whose answers are scripted per
request (the OpenAI-compatible provider's tests, and the worker's when it must fail or wait)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = tuple[int, dict[str, str], Any]  # status, headers, JSON body (or raw bytes)


@dataclass
class FakeEmbeddingServer:
    """A real HTTP server whose answers are scripted per request."""

    url: str
    dimension: int = 4
    script: list[Callable[[dict[str, Any]], Reply] | Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> Reply:
        if self.script:
            step = self.script.pop(0)
            return step(body) if callable(step) else step
        return self.embeddings(body)

    def embeddings(self, body: dict[str, Any]) -> Reply:
        """Vectors [len(text), 1, 0, ...], listed in reverse to exercise index ordering."""
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [float(len(text)), 1.0] + [0.0] * (self.dimension - 2),
            }
            for i, text in enumerate(body["input"])
        ]
        return 200, {}, {"object": "list", "data": data[::-1], "model": body["model"]}



@contextmanager
def embedding_server(dimension: int = 4) -> Iterator[FakeEmbeddingServer]:
    """A FakeEmbeddingServer on an ephemeral port of 127.0.0.1, for the block."""
    fake = FakeEmbeddingServer(url="", dimension=dimension)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(body)
            fake.headers.append(dict(self.headers))
            fake.paths.append(self.path)
            status, headers, payload = fake.answer(body)
            raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except (BrokenPipeError, ConnectionResetError):
                pass  # The client gave up (timeout test); nothing to answer.

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()
