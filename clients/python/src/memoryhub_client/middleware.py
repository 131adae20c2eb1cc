"""The chat middleware: recall before each model call, capture after it.

::

    client = with_memory(anthropic.Anthropic(), hub, user_id="alice", session_id="s-1")
    client.messages.create(model=..., max_tokens=1024, messages=[...])  # as before

``with_memory`` wraps an ``anthropic`` client (``Anthropic``, ``AsyncAnthropic``:
``messages.create``, ``parse`` and the ``messages.stream()`` helper, and the same under
``beta.messages``, called with ``betas=[...]``) or an ``openai`` one (``OpenAI``,
``AsyncOpenAI``: ``chat.completions.create``, ``parse`` and the ``stream()`` helper, under
``chat`` and ``beta.chat``), with a ``MemoryHub`` for a sync client and an
``AsyncMemoryHub`` for an async one. Other calls are the SDK's own, without memory (OpenAI's
Responses API among them: its server-held conversations send only the new turn, where
capture counts on the request holding the history). Each call:

1. recalls for the last user message and injects the ``<memori_context>`` block where
   ``inject`` says (nothing is injected when nothing passes the recall threshold):
   ``before_history`` (default) its own user message before the conversation's first message
   (after OpenAI's leading system messages); ``after_system`` its own system entry right
   after the system prompt (Anthropic: one more ``system`` text block; OpenAI: a system
   message after the leading ones); ``append`` at the end of the last user message;
   ``merge_into_system`` added to the system prompt's text (one is made when there is none);
   ``disabled`` no recall at all;
2. calls the model with everything else unchanged;
3. captures the request's new messages and the reply (a streamed reply when the stream has
   been read to its end, reassembled, OpenAI's ``stream()`` helper's too; Anthropic's
   ``messages.stream()``'s final message when its block ends without an exception) into the
   session, with the provider's response metadata (``provider``, ``id``, ``model``, stop or
   finish reason, token ``usage``, tool calls) on the captured reply's ``metadata``. The
   injected context is never captured.

"New" messages: every message gets an id from its role, its text and the messages before it,
so a conversation resent whole on the next call adds only what is new (the server also drops
an id it has seen, so a restarted process adds nothing twice). Per call,
``memory={"recall": False}`` or ``{"capture": False}`` switches one side off; a call made with
capture off stays off the record, also when a later call's history repeats it.

A MemoryHub error never fails the model call: it is logged on the ``memoryhub_client``
logger and the call goes on without context or capture (``strict=True`` raises it instead).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import TracebackType
from typing import Any, Literal, NamedTuple, Protocol, TypeVar

import httpx

from memoryhub_client import _calls
from memoryhub_client._calls import Call
from memoryhub_client._hub import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import MemoryHubError
from memoryhub_client.types import MessageIn

Inject = Literal["before_history", "after_system", "append", "merge_into_system", "disabled"]
INJECT_PLACES = ("before_history", "after_system", "append", "merge_into_system", "disabled")
CAPTURE_BATCH = 100  # messages a capture request takes at most
# A capture request's body is at most 1 MiB; a batch is cut before its messages' JSON (as
# ASCII, its longest spelling) passes this, leaving room for the rest of the body.
CAPTURE_BATCH_BYTES = 900_000
# What the server answers for a batch whose messages it will never take as they are (one over
# the tenant's max_message_bytes, a body over 1 MiB, a text it cannot store): unlike an
# outage, or a user_id or session_id it refuses (every batch alike), sending them again on
# the next call would fail again.
REFUSED_AS_SENT = frozenset({"message_too_large", "request_too_large", "invalid_message",
                             "invalid_role", "not_text"})
METADATA_BYTES = 4096  # the server's limit for a message's metadata, as compact JSON
RECALL_QUERY_CHARS = 10_000  # the longest query recall takes: a longer message is cut, not lost
T = TypeVar("T")
C = TypeVar("C")

log = logging.getLogger("memoryhub_client")


@dataclass(frozen=True)
class Said:
    """One message as captured: role, text and metadata."""

    role: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _get(item: Any, key: str) -> Any:
    """A field of a message or block, a dict or an SDK object alike."""
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _usage(usage: Any) -> dict[str, int]:
    if usage is None:
        return {}
    raw = usage.model_dump() if hasattr(usage, "model_dump") else dict(usage)
    return {name: value for name, value in raw.items() if isinstance(value, int)}


def _metadata(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value not in (None, {}, [])}


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(
        "utf-8", "replace"))


def _fitted(metadata: dict[str, Any]) -> dict[str, Any]:
    """``metadata`` within the server's 4 KiB: a reply with many tool calls (or a turn with
    many tool results) keeps the first that fit, and counts the rest in ``<list>_omitted``.
    Refused whole, the message would be left out of the capture."""
    if _json_bytes(metadata) <= METADATA_BYTES:
        return metadata
    fitted = {name: list(v) if isinstance(v, list) else v for name, v in metadata.items()}
    omitted: dict[str, int] = {}
    while _json_bytes({**fitted, **omitted}) > METADATA_BYTES:
        lists = [name for name, value in fitted.items() if isinstance(value, list) and value]
        if not lists:
            return {"provider": metadata["provider"]} if "provider" in metadata else {}
        longest = max(lists, key=lambda name: len(fitted[name]))
        fitted[longest].pop()
        omitted[f"{longest}_omitted"] = omitted.get(f"{longest}_omitted", 0) + 1
    return {**fitted, **omitted}


def _storable(text: str) -> str:
    """Text as the server stores it: PostgreSQL's text holds no NUL (a model or a paste may),
    and UTF-8 no lone surrogate (a reply's JSON may escape half an emoji, "\\ud83d"), which
    failed the request's encoding, that capture and every later one of the session."""
    text = text.replace("\x00", "")
    if not text.isascii():  # the common case costs nothing more
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _joined(text: str, context: str) -> str:
    return f"{text}\n\n{context}" if text else context


# --- What each provider's requests and replies look like ------------------------------------


class Accumulator(Protocol):
    def feed(self, event: Any) -> None: ...
    def said(self) -> Said: ...
    def complete(self) -> bool:
        """Whether the stream ended as the provider ends a reply (a stream cut short by the
        connection ends the SDK's loop quietly: its text is no reply to capture)."""


class Provider(Protocol):
    name: str

    def conversation(self, request: Mapping[str, Any]) -> list[Said]: ...
    def inject(self, request: dict[str, Any], context: str, where: str) -> None: ...
    def reply(self, response: Any) -> Said: ...
    def accumulator(self) -> Accumulator: ...


def _last_user_text(said: list[Said]) -> str | None:
    for message in reversed(said):
        if message.role == "user" and message.content.strip():
            return message.content
    return None


def _with_text(content: Any, context: str) -> Any:
    """A message's content with the context added at its end (text or a list of parts)."""
    if isinstance(content, str):
        return _joined(content, context)
    return [*content, {"type": "text", "text": context}]


def _append_to_last_user(messages: list[Any], context: str) -> list[Any]:
    for index in range(len(messages) - 1, -1, -1):
        if _get(messages[index], "role") == "user":
            message = dict(messages[index])
            message["content"] = _with_text(message.get("content") or "", context)
            return [*messages[:index], message, *messages[index + 1:]]
    return [*messages, {"role": "user", "content": context}]


class AnthropicMessages:
    """``messages.create``: ``system`` apart, messages of text, tool_use and tool_result."""

    name = "anthropic"

    def conversation(self, request: Mapping[str, Any]) -> list[Said]:
        said = [s for m in request.get("messages") or [] for s in self._turn(m)]
        system = request.get("system")
        if system:
            said.insert(0, Said("system", self._text(system)))
        return said

    @staticmethod
    def _text(content: Any) -> str:
        if isinstance(content, str):
            return content
        return "\n".join(_get(b, "text") or "" for b in content if _get(b, "type") == "text")

    def _turn(self, message: Any) -> list[Said]:
        """A message as captured: a user turn's tool results are a tool message (OpenAI's
        shape), followed by the user's own text when the turn also holds some."""
        content = _get(message, "content") or ""
        results = [] if isinstance(content, str) else [
            b for b in content if _get(b, "type") == "tool_result"]
        if _get(message, "role") != "user" or not results:
            return [self._message(message)]
        tool = Said("tool", "\n".join(self._text(_get(b, "content") or "") for b in results),
                    {"tool_use_ids": [_get(b, "tool_use_id") for b in results]})
        said = self._text(content)
        return [tool, Said("user", said)] if said else [tool]

    def _message(self, message: Any) -> Said:
        role, content = _get(message, "role"), _get(message, "content") or ""
        calls = [{"id": _get(b, "id"), "name": _get(b, "name")}
                 for b in ([] if isinstance(content, str) else content)
                 if _get(b, "type") == "tool_use"]
        return Said(str(role), self._text(content), _metadata(tool_calls=calls))

    def inject(self, request: dict[str, Any], context: str, where: str) -> None:
        system, messages = request.get("system"), list(request.get("messages") or [])
        if where == "before_history":
            request["messages"] = [{"role": "user", "content": context}, *messages]
        elif where == "append":
            request["messages"] = _append_to_last_user(messages, context)
        elif where == "after_system":
            blocks = [{"type": "text", "text": system}] if isinstance(system, str) else list(
                system or [])
            request["system"] = [*blocks, {"type": "text", "text": context}]
        elif isinstance(system, str) or not system:  # merge_into_system
            request["system"] = _joined(system or "", context)
        else:
            blocks = list(system)
            last = dict(blocks[-1])
            last["text"] = _joined(str(last.get("text", "")), context)
            request["system"] = [*blocks[:-1], last]

    def reply(self, response: Any) -> Said:
        said = self._message({"role": "assistant", "content": response.content})
        return Said("assistant", said.content, _metadata(
            provider=self.name, id=response.id, model=response.model,
            stop_reason=response.stop_reason, usage=_usage(response.usage), **said.metadata))

    def accumulator(self) -> Accumulator:
        return _AnthropicStream(self)


class _AnthropicStream:
    """A streamed message, reassembled from its events."""

    def __init__(self, provider: AnthropicMessages) -> None:
        self.provider = provider
        self.blocks: dict[int, dict[str, Any]] = {}
        self.message: dict[str, Any] = {}
        self.usage: dict[str, int] = {}
        self.stopped = False

    def feed(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start":
            self.message = {"id": event.message.id, "model": event.message.model}
            self.usage.update(_usage(event.message.usage))
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = {"type": block.type, "text": getattr(block, "text", ""),
                                        "id": getattr(block, "id", None),
                                        "name": getattr(block, "name", None)}
        elif kind == "content_block_delta" and event.delta.type == "text_delta":
            self.blocks[event.index]["text"] += event.delta.text
        elif kind == "message_delta":
            self.message["stop_reason"] = event.delta.stop_reason
            self.usage.update(_usage(event.usage))
        elif kind == "message_stop":
            self.stopped = True

    def complete(self) -> bool:
        return self.stopped

    def said(self) -> Said:
        message = _Message(content=[self.blocks[i] for i in sorted(self.blocks)],
                           usage=self.usage, **self.message)
        return self.provider.reply(message)


@dataclass
class _Message:
    """A reassembled reply, with the fields ``reply`` reads."""

    content: list[Any]
    usage: dict[str, int]
    id: str | None = None
    model: str | None = None
    stop_reason: str | None = None


class OpenAIChat:
    """``chat.completions.create``: system and developer messages first, tool calls apart."""

    name = "openai"
    HEAD = ("system", "developer")

    def conversation(self, request: Mapping[str, Any]) -> list[Said]:
        return [self._message(m) for m in request.get("messages") or []]

    @staticmethod
    def _text(content: Any) -> str:
        if content is None or isinstance(content, str):
            return content or ""
        return "\n".join(_get(p, "text") or "" for p in content if _get(p, "type") == "text")

    def _message(self, message: Any) -> Said:
        role = _get(message, "role")
        calls = [{"id": _get(c, "id"), "name": _get(_get(c, "function"), "name")}
                 for c in _get(message, "tool_calls") or []]
        metadata = _metadata(tool_calls=calls, tool_call_id=_get(message, "tool_call_id"))
        return Said("tool" if role == "function" else str(role),
                    self._text(_get(message, "content")), metadata)

    def inject(self, request: dict[str, Any], context: str, where: str) -> None:
        messages = list(request.get("messages") or [])
        head = 0
        while head < len(messages) and _get(messages[head], "role") in self.HEAD:
            head += 1
        if where == "append":
            messages = _append_to_last_user(messages, context)
        elif where == "merge_into_system" and head:
            first = dict(messages[0])
            first["content"] = _with_text(first.get("content") or "", context)
            messages[0] = first
        else:
            role = "user" if where == "before_history" else "system"
            messages.insert(0 if where == "merge_into_system" else head,
                            {"role": role, "content": context})
        request["messages"] = messages

    def reply(self, response: Any) -> Said:
        if not response.choices:  # no answer at all (Azure's content filter): nothing said
            return Said("assistant", "", _metadata(
                provider=self.name, id=response.id, model=response.model,
                usage=_usage(response.usage)))
        choice = response.choices[0]
        said = self._message(choice.message)
        return Said("assistant", said.content, _metadata(
            provider=self.name, id=response.id, model=response.model,
            finish_reason=choice.finish_reason, usage=_usage(response.usage),
            system_fingerprint=getattr(response, "system_fingerprint", None), **said.metadata))

    def accumulator(self) -> Accumulator:
        return _OpenAIStream(self)


class _OpenAIStream:
    """A streamed completion, reassembled from its chunks (the first choice)."""

    def __init__(self, provider: OpenAIChat) -> None:
        self.provider = provider
        self.head: dict[str, Any] = {}
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Any = None

    def feed(self, chunk: Any) -> None:
        # Azure's content filter annotates a stream with chunks of an empty id and model, and
        # choices without a delta: they are not the reply's, and no text.
        fields = {"id": chunk.id, "model": chunk.model,
                  "system_fingerprint": getattr(chunk, "system_fingerprint", None)}
        self.head.update({name: value for name, value in fields.items() if value})
        self.usage = getattr(chunk, "usage", None) or self.usage
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            self.finish_reason = choice.finish_reason or self.finish_reason
            if choice.delta is None:
                continue
            self.text.append(choice.delta.content or "")
            for call in choice.delta.tool_calls or []:
                known = self.calls.setdefault(call.index, {"id": None, "function": {}})
                known["id"] = call.id or known["id"]
                if call.function is not None and call.function.name:
                    known["function"] = {"name": call.function.name}

    def complete(self) -> bool:
        return self.finish_reason is not None

    def said(self) -> Said:
        message = {"role": "assistant", "content": "".join(self.text),
                   "tool_calls": [self.calls[i] for i in sorted(self.calls)]}
        choice = _Choice(message=message, finish_reason=self.finish_reason)
        return self.provider.reply(_Completion(choices=[choice], usage=self.usage, **self.head))


@dataclass
class _Choice:
    message: dict[str, Any]
    finish_reason: str | None


@dataclass
class _Completion:
    choices: list[_Choice]
    usage: Any
    id: str | None = None
    model: str | None = None
    system_fingerprint: str | None = None


# --- One call, the same for sync and async clients --------------------------------------------


class IO(Protocol):
    """How a flow reaches MemoryHub and the model: awaited, whether or not they block."""

    async def hub(self, call: Call[T]) -> T: ...
    async def model(self, request: dict[str, Any]) -> Any: ...
    def stream(self, stream: Any, accumulator: Accumulator,
               finish: Callable[[Said], Coroutine[Any, Any, None]]) -> Any: ...
    def manager(self, manager: Any, finish: Callable[[Any], Coroutine[Any, Any, None]]) -> Any: ...


UNCHAINED = ("system", "developer")  # prompts, not turns: they leave the chain of ids alone


class Link(NamedTuple):
    """A message of a conversation as the chain of ids knows it."""

    role: str
    content: str
    id: str
    previous: str  # the id it follows ("" for the first)


def message_id(previous: str, said: Said) -> str:
    """A message's id: its role and text after the ids before it (system prompts aside, so a
    system prompt that changes leaves the conversation's ids as they were)."""
    # surrogatepass: a lone surrogate (see _storable) is part of the text, not an error.
    raw = "\x1f".join((previous, said.role, said.content)).encode("utf-8", "surrogatepass")
    return "mh-" + hashlib.sha256(raw).hexdigest()[:40]


@dataclass
class Memory:
    """The settings of one wrapped client and the ids it has captured."""

    provider: Provider
    user_id: str
    session_id: str
    inject: str
    profile: str | None
    process: str | None
    recall_limit: int | None
    threshold: float | None
    strict: bool
    captured: set[str] = field(default_factory=set)
    # The last message of each call made with capture off: the reply that follows it in a
    # later call's history is that call's reply, and stays uncaptured with it.
    off_record: set[str] = field(default_factory=set)
    # The last call's conversation, system prompts aside: a history sent as a sliding window
    # (its oldest messages dropped) continues it, with the same ids.
    last_chain: list[Link] = field(default_factory=list)

    def failed(self, what: str, error: Exception) -> None:
        if self.strict:
            raise error
        log.warning("memoryhub: %s failed, the call goes on without it: %s", what, error)

    async def call(self, io: IO, kwargs: dict[str, Any], *, helper: bool = False) -> Any:
        """One model call; ``helper``: Anthropic's ``messages.stream()``, a context manager
        whose final message is captured when its block ends without an exception."""
        options = _switches(kwargs.pop("memory", None))
        request = dict(kwargs)
        for name in ("messages", "system"):  # what the SDKs take as any iterable and this
            if isinstance(request.get(name), Iterator):  # reads first: a generator, read once
                request[name] = list(request[name])
        said = self.provider.conversation(request)
        query = _last_user_text(said)
        if options.get("recall", True) and self.inject != "disabled" and query:
            context = await self._recall(io, query)
            if context:
                self.provider.inject(request, context, self.inject)
        response = await io.model(request)
        if not options.get("capture", True):
            self.keep_off_record(said)
            return response
        if helper:
            return io.manager(response, lambda message: self.capture(
                io, [*said, self.provider.reply(message)]))
        if request.get("stream"):
            return io.stream(response, self.provider.accumulator(),
                             lambda reply: self.capture(io, [*said, reply]))
        await self.capture(io, [*said, self.provider.reply(response)])
        return response

    async def _recall(self, io: IO, query: str) -> str:
        try:
            found = await io.hub(_calls.recall(
                self.user_id, _storable(query)[:RECALL_QUERY_CHARS], limit=self.recall_limit,
                threshold=self.threshold, session_id=self.session_id, profile=self.profile))
            context = found.get("context") if isinstance(found, dict) else None
            if not isinstance(context, str):
                raise ValueError("the recall answer holds no context")
        except (MemoryHubError, httpx.HTTPError, ValueError) as error:
            # ValueError: JSON that is no recall answer (a proxy's page is a MemoryHubError).
            self.failed("recall", error)
            return ""
        return context

    def keep_off_record(self, said: list[Said]) -> None:
        """A call with ``capture`` off is never captured, by this call or by a later one whose
        history repeats it: its messages (the system prompt aside) count as captured, and so
        does the reply that a later history has after them."""
        ids = [identifier for _, identifier, message in self.identified(said)
               if message.role not in UNCHAINED]
        self.captured.update(ids)
        if ids:
            self.off_record.add(ids[-1])

    def new_messages(self, said: list[Said]) -> list[MessageIn]:
        messages: list[MessageIn] = []
        for previous, identifier, message in self.identified(said):
            if identifier in self.captured or (
                    previous in self.off_record and message.role == "assistant"):
                continue
            messages.append({"role": message.role, "content": _storable(message.content),  # type: ignore[typeddict-item]
                             "id": identifier, "metadata": _fitted(message.metadata)})
        return messages

    def identified(self, said: list[Said]) -> list[tuple[str, str, Said]]:
        """``said`` with ids (:func:`_identified`), the first message following what it
        followed in the last call when ``said`` is a sliding window of that conversation;
        remembered as the conversation the next call may continue."""
        told = list(_identified(said, _window_start(self.last_chain, said)))
        self.last_chain = [Link(message.role, message.content, identifier, previous)
                           for previous, identifier, message in told
                           if message.role not in UNCHAINED]
        return told

    async def capture(self, io: IO, said: list[Said]) -> None:
        for batch in _batches(self.new_messages(said)):
            if not await self._capture_batch(io, batch):
                return  # MemoryHub is unreachable or refuses the key: the next call retries

    async def _capture_batch(self, io: IO, batch: list[MessageIn]) -> bool:
        """Capture ``batch``; False when it failed and later batches should wait. A batch the
        server refuses for what it holds is sent again in halves, down to the message it
        refuses, which is left out (logged): kept, it would fail every later capture of the
        session."""
        try:
            await io.hub(_calls.capture(self.user_id, self.session_id, batch,
                                        profile=self.profile, process=self.process))
        except MemoryHubError as error:
            if error.code not in REFUSED_AS_SENT or self.strict:
                self.failed("capture", error)
                return False
            if len(batch) > 1:
                half = len(batch) // 2
                return (await self._capture_batch(io, batch[:half])
                        and await self._capture_batch(io, batch[half:]))
            log.warning("memoryhub: a %s message of %d characters was left out of the "
                        "capture: %s", batch[0]["role"], len(batch[0]["content"]), error)
        except (httpx.HTTPError, ValueError) as error:
            self.failed("capture", error)
            return False
        self.captured.update(m["id"] for m in batch if "id" in m)
        return True


def _switches(options: object) -> Mapping[str, object]:
    """A call's ``memory=``: ``recall`` and ``capture`` switches. Anything else is refused
    before the model is called: ``{"captrue": False}``, ``{"capture": "false"}`` or
    ``memory=False`` read as no switch at all, so a call meant to stay off the record was
    captured."""
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not set(options) <= {"recall", "capture"} or not all(
            isinstance(value, bool) for value in options.values()):
        raise ValueError("memory= takes a dict of recall and capture switches, such as "
                         f"{{'capture': False}}; not {options!r}")
    return options


def _batches(messages: list[MessageIn]) -> Iterator[list[MessageIn]]:
    """``messages`` in order, in batches a capture request takes (count and body size)."""
    batch: list[MessageIn] = []
    size = 0
    for message in messages:
        length = len(json.dumps(message))
        if batch and (len(batch) == CAPTURE_BATCH or size + length > CAPTURE_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(message)
        size += length
    if batch:
        yield batch


def _identified(said: list[Said], previous: str = "") -> Iterator[tuple[str, str, Said]]:
    """Each message with its id and the id it follows (system prompts aside, see
    :func:`message_id`); ``previous``: the id the first one follows ("" at the start)."""
    for message in said:
        identifier = message_id(previous, message)
        yield previous, identifier, message
        if message.role not in UNCHAINED:
            previous = identifier


def _window_start(known: list[Link], said: list[Said]) -> str:
    """The id that ``said``'s first message follows. An app that sends the model only its
    last messages (a sliding window) begins each history with a later message of the
    conversation ``known`` (the last call's): chained from "" again, every message in the
    window got a new id and was captured a second time, each call. A history that begins
    with the end of ``known`` (the longest such run: the whole of it when the history goes on
    from it) follows what that run followed; else one that begins as ``known`` did (a reply
    asked for again, an edited message) begins where it began; any other starts at ""."""
    told = [(m.role, m.content) for m in said if m.role not in UNCHAINED]
    seen = [(link.role, link.content) for link in known]
    for overlap in range(min(len(told), len(seen)), 0, -1):
        if told[:overlap] == seen[-overlap:]:
            return known[-overlap].previous
    if told and seen and told[0] == seen[0]:
        return known[0].previous
    return ""


def run_now(flow: Coroutine[Any, Any, T]) -> T:
    """Run a flow whose every await completes at once (the sync IO's): no event loop."""
    try:
        flow.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    flow.close()
    raise RuntimeError("a sync memory flow waited on something")


# --- Sync and async transports, and the streams they hand back ---------------------------------


class SyncIO:
    def __init__(self, hub: MemoryHub, create: Callable[..., Any]) -> None:
        self._hub, self._create = hub, create

    async def hub(self, call: Call[T]) -> T:
        return self._hub._send(call)

    async def model(self, request: dict[str, Any]) -> Any:
        return self._create(**request)

    def stream(self, stream: Any, accumulator: Accumulator,
               finish: Callable[[Said], Coroutine[Any, Any, None]]) -> Any:
        return CapturingStream(stream, accumulator, lambda said: run_now(finish(said)))

    def manager(self, manager: Any, finish: Callable[[Any], Coroutine[Any, Any, None]]) -> Any:
        return CapturingManager(manager, lambda message: run_now(finish(message)))


class AsyncIO:
    def __init__(self, hub: AsyncMemoryHub, create: Callable[..., Awaitable[Any]]) -> None:
        self._hub, self._create = hub, create

    async def hub(self, call: Call[T]) -> T:
        return await self._hub._send(call)

    async def model(self, request: dict[str, Any]) -> Any:
        return await self._create(**request)

    def stream(self, stream: Any, accumulator: Accumulator,
               finish: Callable[[Said], Coroutine[Any, Any, None]]) -> Any:
        return AsyncCapturingStream(stream, accumulator, finish)

    def manager(self, manager: Any, finish: Callable[[Any], Coroutine[Any, Any, None]]) -> Any:
        return AsyncCapturingManager(manager, finish)


class _StreamProxy:
    """The SDK's stream, as it is (``response``, ``close``...), read through ``events``."""

    def __init__(self, stream: Any, accumulator: Accumulator) -> None:
        self._stream, self._accumulator = stream, accumulator

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class CapturingStream(_StreamProxy):
    """A sync stream that captures the reassembled reply once it has been read to its end."""

    def __init__(self, stream: Any, accumulator: Accumulator,
                 finish: Callable[[Said], None]) -> None:
        super().__init__(stream, accumulator)
        self._events = self._read(finish)

    def _read(self, finish: Callable[[Said], None]) -> Iterator[Any]:
        for event in self._stream:
            self._accumulator.feed(event)
            yield event
        if self._accumulator.complete():
            finish(self._accumulator.said())

    def __iter__(self) -> Iterator[Any]:
        return self._events

    def __next__(self) -> Any:
        return next(self._events)

    def __enter__(self) -> CapturingStream:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stream.close()


class AsyncCapturingStream(_StreamProxy):
    """``CapturingStream`` for an async client's stream."""

    def __init__(self, stream: Any, accumulator: Accumulator,
                 finish: Callable[[Said], Awaitable[None]]) -> None:
        super().__init__(stream, accumulator)
        self._events = self._read(finish)

    async def _read(self, finish: Callable[[Said], Awaitable[None]]) -> AsyncIterator[Any]:
        async for event in self._stream:
            self._accumulator.feed(event)
            yield event
        if self._accumulator.complete():
            await finish(self._accumulator.said())

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._events

    async def __anext__(self) -> Any:
        return await self._events.__anext__()

    async def __aenter__(self) -> AsyncCapturingStream:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self._stream.close()


class CapturingManager:
    """``messages.stream()``'s manager: the final message is captured as the block ends."""

    def __init__(self, manager: Any, finish: Callable[[Any], None]) -> None:
        self._manager, self._finish = manager, finish

    def __enter__(self) -> Any:
        self._stream = self._manager.__enter__()
        return self._stream

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        try:
            if kind is None:
                self._finish(self._stream.get_final_message())
        finally:
            self._manager.__exit__(kind, error, trace)


class AsyncCapturingManager:
    """``CapturingManager`` for the async client's ``messages.stream()``."""

    def __init__(self, manager: Any, finish: Callable[[Any], Awaitable[None]]) -> None:
        self._manager, self._finish = manager, finish

    async def __aenter__(self) -> Any:
        self._stream = await self._manager.__aenter__()
        return self._stream

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        try:
            if kind is None:
                await self._finish(await self._stream.get_final_message())
        finally:
            await self._manager.__aexit__(kind, error, trace)


class _AsyncStreamCall:
    """The async ``messages.stream()``: recall needs awaiting, so the call is made as the
    ``async with`` block starts."""

    def __init__(self, memory: Memory, io: AsyncIO, kwargs: dict[str, Any]) -> None:
        self._memory, self._io, self._kwargs = memory, io, kwargs

    async def __aenter__(self) -> Any:
        self._managed = await self._memory.call(self._io, self._kwargs, helper=True)
        return await self._managed.__aenter__()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self._managed.__aexit__(kind, error, trace)


def _now(call: Callable[..., T]) -> Callable[..., Awaitable[T]]:
    """A sync SDK call, awaitable."""

    async def awaited(**kwargs: Any) -> T:
        return call(**kwargs)

    return awaited


# --- The wrapper ---------------------------------------------------------------------------


class Wrapped:
    """An SDK object with some attributes replaced; everything else is the SDK's own."""

    def __init__(self, inner: Any, **replaced: Any) -> None:
        self.__wrapped__ = inner
        self._replaced = replaced

    def __getattr__(self, name: str) -> Any:
        if name in self._replaced:
            return self._replaced[name]
        return getattr(self.__wrapped__, name)


class WrappedClient(Wrapped):
    """The wrapped client, also as the SDKs' clients are used: ``with Anthropic() as client``
    (or ``async with``) gives this object, memory on, and closes the SDK's client at the end.
    Python looks these methods up on the type, never through ``__getattr__``."""

    def __enter__(self) -> WrappedClient:
        self.__wrapped__.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.__wrapped__.__exit__(kind, error, trace)

    async def __aenter__(self) -> WrappedClient:
        await self.__wrapped__.__aenter__()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.__wrapped__.__aexit__(kind, error, trace)


def provider_of(client: Any) -> tuple[Provider, bool]:
    """The provider of a client and whether it is async. Any client of the SDK's with its
    model calls where this module wraps them (Anthropic's on Bedrock, Vertex, Foundry, AWS;
    OpenAI's on Azure): only ``Anthropic`` and ``OpenAI`` by name were taken."""
    module = type(client).__module__.split(".")[0]
    name = type(client).__name__
    if module == "anthropic" and hasattr(client, "messages"):
        return AnthropicMessages(), name.startswith("Async")
    if module == "openai" and hasattr(client, "chat"):
        return OpenAIChat(), name.startswith("Async")
    raise TypeError(f"with_memory wraps an anthropic or openai client, not {name}")


def with_memory(
    client: C, hub: MemoryHub | AsyncMemoryHub, *, user_id: str, session_id: str,
    inject: Inject = "before_history", profile: str | None = None, process: str | None = None,
    recall_limit: int | None = None, threshold: float | None = None, strict: bool = False,
) -> C:
    """``client`` with memory: the same object for every use, its model calls recalling
    before and capturing after (see the module's docstring). ``profile`` and ``process`` are
    passed to recall and capture; ``recall_limit`` and ``threshold`` to recall."""
    if inject not in INJECT_PLACES:
        raise ValueError(f"inject must be one of {', '.join(INJECT_PLACES)}")
    provider, is_async = provider_of(client)
    if is_async != isinstance(hub, AsyncMemoryHub):
        raise TypeError("an async client needs an AsyncMemoryHub, a sync one a MemoryHub")
    memory = Memory(provider=provider, user_id=user_id, session_id=session_id, inject=inject,
                    profile=profile, process=process, recall_limit=recall_limit,
                    threshold=threshold, strict=strict)
    return _wrapped(client, memory, hub, is_async)


def _wrapped(client: C, memory: Memory, hub: MemoryHub | AsyncMemoryHub, is_async: bool) -> C:
    """``client`` with its model calls going through ``memory``; so are the clients its
    ``with_options`` and ``copy`` make (a per-call timeout must not switch memory off)."""
    target: Any = client

    def derived(make: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *args, **kwargs: _wrapped(make(*args, **kwargs), memory, hub, is_async)

    options = {"with_options": derived(target.with_options), "copy": derived(target.copy)}
    # The model calls are under the client's ``messages`` (Anthropic) or ``chat`` (OpenAI),
    # and the same again under its ``beta``.
    name, remembering = (("messages", _messages) if memory.provider.name == "anthropic"
                         else ("chat", _chat))
    beta = Wrapped(target.beta, **{name: remembering(getattr(target.beta, name), memory, hub,
                                                    is_async)})
    return WrappedClient(client, beta=beta, **options,  # type: ignore[return-value]
                         **{name: remembering(getattr(target, name), memory, hub, is_async)})


def _messages(messages: Any, memory: Memory, hub: MemoryHub | AsyncMemoryHub,
              is_async: bool) -> Wrapped:
    """Anthropic's ``messages``: ``create``, ``parse`` and the ``stream()`` helper."""
    return Wrapped(messages, create=_create(memory, hub, messages.create, is_async),
                   parse=_create(memory, hub, messages.parse, is_async),
                   stream=_create(memory, hub, messages.stream, is_async, helper=True))


def _chat(chat: Any, memory: Memory, hub: MemoryHub | AsyncMemoryHub, is_async: bool) -> Wrapped:
    """OpenAI's ``chat``: ``completions.create``, ``parse`` and the ``stream()`` helper."""
    completions = chat.completions
    create = _create(memory, hub, completions.create, is_async)

    def stream(**kwargs: Any) -> Any:
        # The SDK's helper makes its request with ``create(stream=True)``: given this
        # ``create``, its stream is captured as that call's is, once read to its end.
        options = kwargs.pop("memory", None)
        through = Wrapped(completions, create=partial(create, memory=options))
        return type(completions).stream(through, **kwargs)

    return Wrapped(chat, completions=Wrapped(
        completions, create=create, stream=stream,
        parse=_create(memory, hub, completions.parse, is_async)))


def _create(memory: Memory, hub: MemoryHub | AsyncMemoryHub, original: Callable[..., Any],
            is_async: bool, *, helper: bool = False) -> Callable[..., Any]:
    if is_async and not helper:
        io = AsyncIO(hub, original)  # type: ignore[arg-type]

        async def acreate(**kwargs: Any) -> Any:
            return await memory.call(io, kwargs)

        return acreate
    if is_async:  # the async messages.stream() is not awaited: its manager is
        return lambda **kwargs: _AsyncStreamCall(memory, AsyncIO(hub, _now(original)), kwargs)  # type: ignore[arg-type]
    sync_io = SyncIO(hub, original)  # type: ignore[arg-type]

    def create(**kwargs: Any) -> Any:
        return run_now(memory.call(sync_io, kwargs, helper=helper))

    return create
