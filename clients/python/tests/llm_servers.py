"""Local HTTP servers that speak the model providers' protocols, with scripted turns, and
one that answers as a proxy may in MemoryHub's place (``Canned``).

``ScriptedModel`` answers the Anthropic Messages API (``POST /v1/messages``) and OpenAI chat
completions (``POST /v1/chat/completions``) on 127.0.0.1, JSON or server-sent events when the
request says ``stream``. Each request takes the next scripted turn (a reply, or a function of
the request body returning one) and is recorded, so a test sees exactly what the real SDK
sent. Only the model is scripted: the SDKs, their parsing and their streaming are real.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Turn = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


# --- Replies -------------------------------------------------------------------------------


def claude(*content: dict[str, Any], stop_reason: str | None = None) -> dict[str, Any]:
    """An Anthropic message with these content blocks."""
    tool_use = any(block["type"] == "tool_use" for block in content)
    return {
        "id": "msg_scripted", "type": "message", "role": "assistant",
        "model": "claude-scripted", "content": list(content),
        "stop_reason": stop_reason or ("tool_use" if tool_use else "end_turn"),
        "stop_sequence": None, "usage": {"input_tokens": 42, "output_tokens": 7},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(use_id: str, input: dict[str, Any], name: str = "memory") -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": input}


def gpt(content: str | None, *, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """An OpenAI chat completion with one choice."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 1_800_000_000,
        "model": "gpt-scripted", "system_fingerprint": "fp_scripted",
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
    }


def function_call(call_id: str, arguments: dict[str, Any], name: str = "memory") -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def azure_filtered(reply: dict[str, Any]) -> dict[str, Any]:
    """``reply`` streamed as Azure OpenAI's asynchronous content filter streams it: with an
    annotation chunk that has no ``delta``, and empty ``id`` and ``model``."""
    return {**reply, "_azure_filter": True}


def cut(reply: dict[str, Any], events: int) -> dict[str, Any]:
    """``reply`` streamed as a dropped connection leaves it: its first ``events`` only."""
    return {**reply, "_cut": events}


# --- Streams -------------------------------------------------------------------------------


def _pieces(value: str) -> list[str]:
    """Text split in small deltas, as a model streams it."""
    return [value[i:i + 4] for i in range(0, len(value), 4)] or [""]


def claude_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None,
             "usage": {"input_tokens": message["usage"]["input_tokens"], "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _pieces(block["text"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {**block, "input": {}}}
            yield "content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": message["usage"]["output_tokens"]}}
    yield "message_stop", {"type": "message_stop"}


def gpt_chunks(completion: dict[str, Any], *, usage: bool) -> Iterator[dict[str, Any]]:
    head = {key: completion[key] for key in ("id", "created", "model", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"
    message = completion["choices"][0]["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                     "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(message["content"] or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"],
                                                  "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": index, "function": {
            "arguments": call["function"]["arguments"]}}]})
    if completion.get("_azure_filter"):
        yield {"id": "", "object": "", "created": 0, "model": "", "choices": [{
            "index": 0, "finish_reason": None,
            "content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": 9},
            "content_filter_results": {"hate": {"filtered": False, "severity": "safe"}}}]}
    yield chunk({}, completion["choices"][0]["finish_reason"])
    if usage:
        yield {**head, "choices": [], "usage": completion["usage"]}


# --- The server ----------------------------------------------------------------------------


class ScriptedModel:
    """``with ScriptedModel([turn, ...]) as model:`` then point an SDK at ``model.url``."""

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if not self.turns:
                raise AssertionError(f"no scripted turn left for request {len(self.requests)}")
            turn = self.turns.pop(0)
        return turn(body) if callable(turn) else turn

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                reply = dict(model._next(body, dict(self.headers)))
                kept = reply.pop("_cut", None)
                if self.path.endswith("/messages"):
                    events = (f"event: {name}\ndata: {json.dumps(data)}\n\n"
                              for name, data in claude_events(reply))
                elif self.path.endswith("/chat/completions"):
                    usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    events = itertools.chain(  # lazily: a reply is streamed only if asked
                        (f"data: {json.dumps(c)}\n\n" for c in gpt_chunks(reply, usage=usage)),
                        ["data: [DONE]\n\n"])
                else:
                    self.send_error(404)
                    return
                if body.get("stream"):
                    self._answer("".join(list(events)[:kept]).encode(), "text/event-stream")
                else:
                    self._answer(json.dumps(reply).encode(), "application/json")

            def _answer(self, raw: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        return Handler


class Canned:
    """``with Canned(301, headers={"Location": ...}) as proxy:`` a server on loopback that
    answers every request with the same reply, as a proxy in front of MemoryHub may (nginx's
    redirect to https, its welcome page); ``proxy.url`` is its address."""

    def __init__(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None
                 ) -> None:
        reply = (status, body, headers or {})

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def answer(self) -> None:
                status, body, headers = reply
                self.send_response(status)
                for name, value in {"Content-Length": str(len(body)), **headers}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Canned:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
