"""``MemoryHub`` and ``AsyncMemoryHub``: one method per endpoint, declared once.

Each method is an ``endpoint`` over a request builder of ``_calls``: looked up on a
``MemoryHub`` it returns the result, on an ``AsyncMemoryHub`` an awaitable of it, with the
builder's own signature and docstring. The two classes differ only in ``_send``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Generic, ParamSpec, TypeVar, overload

import httpx

from memoryhub_client import _calls
from memoryhub_client._calls import Call
from memoryhub_client.errors import unanswered

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
API_PREFIX = "/api/v1/"


class endpoint(Generic[P, T]):
    """A method of both clients, made from one request builder."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, hub: None, owner: type[Any]) -> endpoint[P, T]: ...
    @overload
    def __get__(self, hub: MemoryHub, owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, hub: AsyncMemoryHub, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, hub: _Hub | None, owner: type[Any]) -> Any:
        if hub is None:
            return self
        build, send = self.build, hub._send

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(build(*args, **kwargs))

        return method


def api_root(base_url: str) -> str:
    """The API's base URL from the server's: ``https://memory.example.com`` (or the same with
    ``/api/v1`` already on it) -> ``https://memory.example.com/api/v1/``."""
    root = base_url.rstrip("/")
    if root.endswith(API_PREFIX.rstrip("/")):
        root = root[: -len(API_PREFIX.rstrip("/"))]
    return root + API_PREFIX


Http = TypeVar("Http", httpx.Client, httpx.AsyncClient)


def _configured(http: Http, base_url: str, api_key: str) -> Http:
    """The HTTP client pointed at the API, with the key."""
    http.base_url = httpx.URL(api_root(base_url))
    http.headers.update(
        {"Authorization": f"Bearer {_key(api_key)}", "User-Agent": "memoryhub-client/0.1"})
    return http


def _key(api_key: str) -> str:
    """The key as a header carries it. A key read from a file or a secret store often ends
    with a newline: sent as it is, httpx refused the header with the whole key in its error
    message (and so in logs and tracebacks). Any other character a header cannot carry is
    refused here, without the key."""
    key = api_key.strip()
    if not key or not key.isascii() or not key.isprintable():
        raise ValueError("api_key must be a MemoryHub API key (mh_...): printable ASCII")
    return key


def _request_args(call: Call[Any]) -> dict[str, Any]:
    args: dict[str, Any] = {"params": call.params, "headers": call.headers}
    if call.body is not None:
        args["json"] = call.body
    return args


class _Hub:
    """The endpoints, shared by both clients."""

    _send: Callable[[Call[Any]], Any]

    # The memory tool, the index and the snapshot.
    memory = endpoint(_calls.memory)
    memory_index = endpoint(_calls.memory_index)
    memory_snapshot = endpoint(_calls.memory_snapshot)
    # Documents.
    documents = endpoint(_calls.documents)
    document_get = endpoint(_calls.document_get)
    document_put = endpoint(_calls.document_put)
    document_delete = endpoint(_calls.document_delete)
    # Recall.
    recall = endpoint(_calls.recall)
    # Facts.
    facts = endpoint(_calls.facts)
    fact_create = endpoint(_calls.fact_create)
    fact = endpoint(_calls.fact)
    fact_update = endpoint(_calls.fact_update)
    fact_delete = endpoint(_calls.fact_delete)
    fact_history = endpoint(_calls.fact_history)
    # End users.
    users = endpoint(_calls.users)
    user = endpoint(_calls.user)
    user_update = endpoint(_calls.user_update)
    user_delete = endpoint(_calls.user_delete)
    session_delete = endpoint(_calls.session_delete)
    export = endpoint(_calls.export)
    portal_link = endpoint(_calls.portal_link)
    # Tenant administration.
    tenant = endpoint(_calls.tenant)
    tenant_update = endpoint(_calls.tenant_update)
    profiles = endpoint(_calls.profiles)
    profile_set = endpoint(_calls.profile_set)
    events = endpoint(_calls.events)
    webhooks = endpoint(_calls.webhooks)
    webhook_create = endpoint(_calls.webhook_create)
    webhook = endpoint(_calls.webhook)
    webhook_update = endpoint(_calls.webhook_update)
    webhook_delete = endpoint(_calls.webhook_delete)
    keys = endpoint(_calls.keys)
    key_create = endpoint(_calls.key_create)
    key_revoke = endpoint(_calls.key_revoke)
    # Conversations.
    capture = endpoint(_calls.capture)
    messages = endpoint(_calls.messages)
    conversations = endpoint(_calls.conversations)
    conversation = endpoint(_calls.conversation)
    conversation_delete = endpoint(_calls.conversation_delete)
    summary_put = endpoint(_calls.summary_put)
    history = endpoint(_calls.history)
    context = endpoint(_calls.context)


class MemoryHub(_Hub):
    """The MemoryHub API, blocking::

        hub = MemoryHub("https://memory.example.com", api_key="mh_...")
        hub.recall("alice", "what does she eat?")["context"]

    ``http_client`` replaces the ``httpx.Client`` it would make (its base URL and headers
    are set here); errors raise ``MemoryHubError``."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
        http_client: httpx.Client | None = None,
    ) -> None:
        self._http = _configured(http_client or httpx.Client(timeout=timeout), base_url, api_key)

    def _send(self, call: Call[T]) -> T:
        try:
            response = self._http.request(call.method, call.path, **_request_args(call))
        except httpx.TransportError as error:
            raise unanswered(error) from error
        return call.result(response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


class AsyncMemoryHub(_Hub):
    """The MemoryHub API for asyncio: the same methods as ``MemoryHub``, awaited."""

    def __init__(
        self, base_url: str, api_key: str, *, timeout: float = DEFAULT_TIMEOUT,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self._http = _configured(http_client or httpx.AsyncClient(timeout=timeout), base_url, api_key)

    async def _send(self, call: Call[T]) -> T:
        try:
            response = await self._http.request(call.method, call.path, **_request_args(call))
        except httpx.TransportError as error:
            raise unanswered(error) from error
        return call.result(response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncMemoryHub:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        trace: TracebackType | None) -> None:
        await self.aclose()
