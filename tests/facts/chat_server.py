"""A local HTTP server that speaks OpenAI's chat completions protocol, for the ``openai``
extractor's tests: it answers each POST with the next scripted reply (status, headers,
the message's text or a raw body, and an optional delay) and keeps what it was sent."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = None  # the assistant message's text (a completion)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # instead of a completion
    delay: float = 0.0


def completion(content: str) -> bytes:
    return json.dumps({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    }).encode()


@dataclass
class ChatServer:
    url: str = ""
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    authorization: list[str | None] = field(default_factory=list)

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def next_reply(self) -> Reply:
        if not self.replies:
            return Reply(status=500, raw=b'{"error": {"message": "no reply scripted"}}')
        return self.replies.pop(0)


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    state = ChatServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            state.paths.append(self.path)
            state.authorization.append(self.headers.get("Authorization"))
            state.requests.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            reply = state.next_reply()
            time.sleep(reply.delay)
            body = reply.raw if reply.raw is not None else completion(reply.content or "")
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client timed out and left

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
