"""Claude's memory tool, stored in MemoryHub: ``MemoryHubMemoryTool`` for the Anthropic SDK.

::

    tool = MemoryHubMemoryTool(hub, user_id="alice", session_id="s-1")
    runner = client.beta.messages.tool_runner(model=..., max_tokens=1024, tools=[tool],
                                              messages=[...])

The model's command goes to ``POST /api/v1/users/{user_id}/memory`` as the model sent it
(with the adapter's ``session_id``, ``profile``, ``scope`` and ``turn_id``), so the model reads
exactly the REST tool's text; a result with ``is_error`` is raised as the SDK's ``ToolError``,
which the runner sends back as an error ``tool_result`` with that same text. A request that
MemoryHub refuses (a body over 1 MiB, a rate limit, another person's memory for a bound key)
is a ``ToolError`` too, with the API's message, never a Python traceback in the model's turn;
so is no answer at all (MemoryHub unreachable, a timeout).
Needs the ``anthropic`` extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import BetaCacheControlEphemeralParam, BetaMemoryTool20250818Command

from memoryhub_client._calls import model_command
from memoryhub_client._hub import AsyncMemoryHub, MemoryHub
from memoryhub_client.errors import MemoryHubError
from memoryhub_client.types import Scope, ToolResult


def tool_text(result: ToolResult) -> str:
    """The text for the model; a failed command raises it as ``ToolError``."""
    if result["is_error"]:
        raise ToolError(result["content"])
    return result["content"]


@contextmanager
def refusals_as_tool_errors() -> Iterator[None]:
    """MemoryHub's refusal of the request, as the text the model reads in the tool result."""
    try:
        yield
    except MemoryHubError as error:
        raise ToolError(f"Error: {error.message}") from error


def command_input(command: BetaMemoryTool20250818Command) -> dict[str, Any]:
    """A typed command (``execute``) as the input the model sent."""
    return command.model_dump(mode="json", exclude_none=True)


H = TypeVar("H", MemoryHub, AsyncMemoryHub)


class _Binding(Generic[H]):
    """Whose memory the tool works on, and in which context (the first base of both tools:
    ``super().__init__`` is the SDK's memory tool)."""

    def __init__(
        self, hub: H, *, user_id: str, session_id: str | None = None,
        profile: str | None = None, scope: Scope | None = None, turn_id: str | None = None,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        if isinstance(hub, AsyncMemoryHub) != isinstance(self, BetaAsyncAbstractMemoryTool):
            # Else each command failed inside the runner: an un-awaited coroutine read as a
            # result, or a result awaited, and the model read the TypeError.
            raise TypeError("AsyncMemoryHubMemoryTool takes an AsyncMemoryHub, "
                            "MemoryHubMemoryTool a MemoryHub")
        super().__init__(cache_control=cache_control)  # type: ignore[call-arg]
        self.hub: H = hub
        self.user_id = user_id
        self.context: dict[str, Any] = {
            "session_id": session_id, "profile": profile, "scope": scope, "turn_id": turn_id}

    @staticmethod
    def tool_input(input: object) -> dict[str, Any]:
        if not isinstance(input, dict):
            raise ToolError("Error: the memory tool's input must be a JSON object")
        return model_command(input)


class MemoryHubMemoryTool(_Binding[MemoryHub], BetaAbstractMemoryTool):
    """The memory tool (``memory_20250818``) for one end user, on a ``MemoryHub``:
    ``MemoryHubMemoryTool(hub, user_id=, session_id=, profile=, scope=, turn_id=)``.

    ``session_id`` and ``profile`` choose what the commands see (the session's documents, the
    profile's, then global); ``scope`` pins every command to one scope; ``turn_id`` counts the
    writes of one turn against the tenant's ``max_writes_per_turn``."""

    def call(self, input: object) -> str:
        with refusals_as_tool_errors():
            result = self.hub.memory(self.user_id, self.tool_input(input), **self.context)
        return tool_text(result)

    def _command(self, command: BetaMemoryTool20250818Command) -> str:
        return self.call(command_input(command))

    view = create = str_replace = insert = delete = rename = execute = _command


class AsyncMemoryHubMemoryTool(_Binding[AsyncMemoryHub], BetaAsyncAbstractMemoryTool):
    """``MemoryHubMemoryTool`` on an ``AsyncMemoryHub``, for the async client's tool runner."""

    async def call(self, input: object) -> str:
        with refusals_as_tool_errors():
            result = await self.hub.memory(self.user_id, self.tool_input(input), **self.context)
        return tool_text(result)

    async def _command(self, command: BetaMemoryTool20250818Command) -> str:
        return await self.call(command_input(command))

    view = create = str_replace = insert = delete = rename = execute = _command
