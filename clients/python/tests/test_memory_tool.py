"""Claude's memory tool on MemoryHub, run by the real Anthropic SDK's tool runner.

The model's turns are scripted on loopback (``llm_servers.ScriptedModel``); the SDK, its
runner and MemoryHub (``live_server``) are real, so what the tests read is what the model
would read.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import pytest
from llm_servers import ScriptedModel, claude, text, tool_use
from memoryhub_client import AsyncMemoryHub, MemoryHub
from memoryhub_client.memory_tool import AsyncMemoryHubMemoryTool, MemoryHubMemoryTool

pytestmark = pytest.mark.django_db(transaction=True)

CREATE = {"command": "create", "path": "/memories/notes/diet.md", "file_text": "Vegetarian\n"}
MISSING = {"command": "str_replace", "path": "/memories/notes/diet.md", "old_str": "meat",
           "new_str": "fish"}
VIEW_TODO = {"command": "view", "path": "/memories/todo.md"}
SCRIPT = [claude(text("Let me note that."), tool_use("toolu_1", CREATE)),
          claude(tool_use("toolu_2", MISSING)),
          claude(tool_use("toolu_3", VIEW_TODO)),
          claude(text("Noted: vegetarian."))]
ASK = [{"role": "user", "content": "I'm vegetarian, remember that."}]


def tool_results(model: ScriptedModel) -> list[dict[str, Any]]:
    """The tool_result blocks the runner sent back, one per scripted tool call."""
    return [request["messages"][-1]["content"][0] for request in model.requests[1:]]


def assert_the_model_read_the_rest_tools_texts(model: ScriptedModel, hub: MemoryHub) -> None:
    assert model.requests[0]["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    created, refused, viewed = tool_results(model)
    assert created == {"type": "tool_result", "tool_use_id": "toolu_1",
                       "content": "File created successfully at: /memories/notes/diet.md"}
    # The error reaches the model as an error, with the REST tool's text byte for byte.
    rest = hub.memory("alice", MISSING, session_id="s-1")
    assert rest["is_error"] is True
    assert refused == {"type": "tool_result", "tool_use_id": "toolu_2",
                       "content": rest["content"], "is_error": True}
    assert "did not appear verbatim" in rest["content"]
    # The session's document was visible: the adapter passes its session_id.
    assert viewed["content"] == hub.memory("alice", VIEW_TODO, session_id="s-1")["content"]
    assert viewed["content"].endswith("1\tbuy figs")
    stored = hub.document_get("alice", "/notes/diet.md")
    assert (stored["content"], stored["updated_by"]) == ("Vegetarian\n", "assistant")


def test_the_sdks_tool_runner_works_on_memoryhub(hub: MemoryHub) -> None:
    hub.document_put("alice", "/todo.md", "buy figs", session_id="s-1")
    tool = MemoryHubMemoryTool(hub, user_id="alice", session_id="s-1")
    with ScriptedModel(list(SCRIPT)) as model:
        client = anthropic.Anthropic(base_url=model.url, api_key="test", max_retries=0)
        final = client.beta.messages.tool_runner(
            model="claude-scripted", max_tokens=1024, tools=[tool], messages=ASK).until_done()
    assert [block.type for block in final.content] == ["text"]
    assert_the_model_read_the_rest_tools_texts(model, hub)


def test_the_async_tool_runner_works_on_memoryhub(hub: MemoryHub, live_server: Any,
                                                  acme: Any) -> None:
    hub.document_put("alice", "/todo.md", "buy figs", session_id="s-1")

    async def run(model: ScriptedModel) -> None:
        async with AsyncMemoryHub(live_server.url, acme.key) as async_hub:
            tool = AsyncMemoryHubMemoryTool(async_hub, user_id="alice", session_id="s-1")
            client = anthropic.AsyncAnthropic(base_url=model.url, api_key="test", max_retries=0)
            await client.beta.messages.tool_runner(
                model="claude-scripted", max_tokens=1024, tools=[tool], messages=ASK
            ).until_done()

    with ScriptedModel(list(SCRIPT)) as model:
        asyncio.run(run(model))
    assert_the_model_read_the_rest_tools_texts(model, hub)


def test_the_hub_must_match_the_tool(hub: MemoryHub, live_server: Any, acme: Any) -> None:
    """A sync tool on an AsyncMemoryHub (or the reverse) failed each command in the runner,
    and the model read a TypeError about coroutines."""
    with pytest.raises(TypeError, match="AsyncMemoryHub"):
        MemoryHubMemoryTool(AsyncMemoryHub(live_server.url, acme.key), user_id="alice")
    with pytest.raises(TypeError, match="AsyncMemoryHub"):
        AsyncMemoryHubMemoryTool(hub, user_id="alice")  # type: ignore[arg-type]


def test_scope_and_profile_pin_where_the_tool_writes(hub: MemoryHub) -> None:
    pinned = MemoryHubMemoryTool(hub, user_id="alice", session_id="s-9", scope="session")
    assert pinned.call({"command": "create", "path": "/memories/a.md", "file_text": "x"})
    assert hub.document_get("alice", "/a.md", session_id="s-9")["scope"] == "session"
    cooking = MemoryHubMemoryTool(hub, user_id="alice", profile="cooking", scope="profile")
    command = anthropic.types.beta.BetaMemoryTool20250818CreateCommand(
        command="create", path="/memories/b.md", file_text="y")
    assert cooking.execute(command) == "File created successfully at: /memories/b.md"
    assert hub.document_get("alice", "/b.md", profile="cooking")["scope"] == "profile"


def test_the_model_cannot_choose_another_session_or_profile(hub: MemoryHub) -> None:
    """The binding says what the commands see: a context field the model adds to its input
    (a prompt injected into it, say) reached the API, which read it as the app's."""
    hub.document_put("alice", "/diary.md", "private", profile="personal")
    hub.document_put("alice", "/todo.md", "other chat", session_id="s-2")
    hops = [{**VIEW_TODO, "session_id": "s-2"},
            {"command": "view", "path": "/memories/diary.md", "profile": "personal"},
            {"command": "create", "path": "/memories/x.md", "file_text": "x", "scope": "session",
             "session_id": "s-2"}]
    tool = MemoryHubMemoryTool(hub, user_id="alice", session_id="s-1", profile="work")
    with ScriptedModel([claude(tool_use(f"toolu_{i}", hop)) for i, hop in enumerate(hops)]
                       + [claude(text("Done."))]) as model:
        client = anthropic.Anthropic(base_url=model.url, api_key="test", max_retries=0)
        client.beta.messages.tool_runner(model="claude-scripted", max_tokens=1024,
                                         tools=[tool], messages=ASK).until_done()
    session, profile, created = tool_results(model)
    assert "does not exist" in session["content"] and "does not exist" in profile["content"]
    assert created["content"] == "File created successfully at: /memories/x.md"
    assert hub.document_get("alice", "/x.md")["scope"] == "global"  # create's default
    assert [d["path"] for d in hub.documents("alice", scope="session")["documents"]] == [
        "/todo.md"]


def test_a_request_memoryhub_refuses_reaches_the_model_as_its_message(hub: MemoryHub) -> None:
    """A file over the 1 MiB body limit: the API's 413 text as an error tool_result, not the
    Python exception's repr."""
    huge = {"command": "create", "path": "/memories/huge.md", "file_text": "x" * 1_100_000}
    tool = MemoryHubMemoryTool(hub, user_id="alice")
    with ScriptedModel([claude(tool_use("toolu_1", huge)), claude(text("Too big."))]) as model:
        client = anthropic.Anthropic(base_url=model.url, api_key="test", max_retries=0)
        client.beta.messages.tool_runner(model="claude-scripted", max_tokens=1024,
                                         tools=[tool], messages=ASK).until_done()
    assert tool_results(model) == [{
        "type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
        "content": "Error: The request body is over 1 MiB. Send less at a time."}]
