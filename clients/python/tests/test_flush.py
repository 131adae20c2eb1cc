"""``flush_to_memory``: one silent request with the memory tool, then the summary stored."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest
from llm_servers import ScriptedModel, claude, function_call, gpt, text, tool_use
from memoryhub_client import AsyncMemoryHub, MemoryHub
from memoryhub_client.flush import FLUSH_PROMPT, OPENAI_MEMORY_TOOL, flush_to_memory
from memoryhub_client.middleware import with_memory

pytestmark = pytest.mark.django_db(transaction=True)

TALK = [{"role": "user", "content": "I moved to Lisbon last week."},
        {"role": "assistant", "content": "Welcome to Lisbon!"}]
SAVE = {"command": "create", "path": "/memories/home.md", "file_text": "Lives in Lisbon\n"}


def captured(hub: MemoryHub, session_id: str) -> str:
    result = hub.capture("alice", session_id, TALK)  # type: ignore[arg-type]
    assert result["conversation_id"] is not None
    return result["conversation_id"]


def test_claude_saves_through_the_tool_runner_then_the_summary_is_stored(hub: MemoryHub) -> None:
    conversation_id = captured(hub, "s-1")
    with ScriptedModel([claude(tool_use("toolu_1", SAVE)), claude(text("DONE"))]) as model:
        client = with_memory(anthropic.Anthropic(base_url=model.url, api_key="t", max_retries=0),
                             hub, user_id="alice", session_id="s-1")
        flushed = flush_to_memory(client, hub, TALK, user_id="alice", session_id="s-1",
                                  summary="They moved to Lisbon.", model="claude-x",
                                  system="You are a travel agent.")
    assert (flushed.tool_calls, flushed.reply) == (1, "DONE")
    assert flushed.conversation is not None and flushed.conversation["id"] == conversation_id
    assert hub.conversation("alice", conversation_id)["summary"] == "They moved to Lisbon."
    first, second = model.requests
    assert first["messages"] == [*TALK, {"role": "user", "content": FLUSH_PROMPT}]
    assert first["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert first["system"] == "You are a travel agent."
    assert second["messages"][-1]["content"][0]["content"] == (
        "File created successfully at: /memories/home.md")
    assert hub.document_get("alice", "/home.md")["content"] == "Lives in Lisbon\n"
    # Silent: the flush exchange is not captured, even through a with_memory client.
    assert [m["content"] for m in hub.messages("alice", "s-1")["messages"]] == [
        m["content"] for m in TALK]


def test_openai_async_runs_the_memory_function_then_stores_the_summary(
        hub: MemoryHub, live_server: Any, acme: Any) -> None:
    conversation_id = captured(hub, "s-1")
    later = captured(hub, "s-2")  # the latest conversation, not the one named
    broken = function_call("call_2", {"command": "view", "path": "/memories/none.md"})
    replies = [gpt(None, tool_calls=[function_call("call_1", SAVE), broken]), gpt("DONE")]

    async def run(model: ScriptedModel) -> Any:
        async with AsyncMemoryHub(live_server.url, acme.key) as async_hub:
            client = openai.AsyncOpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0)
            return await flush_to_memory(client, async_hub, TALK, user_id="alice",
                                         session_id="s-1", conversation_id=conversation_id,
                                         summary="Moved to Lisbon.", model="gpt-x")

    with ScriptedModel(replies) as model:
        flushed = asyncio.run(run(model))
    assert (flushed.tool_calls, flushed.reply) == (2, "DONE")
    assert model.requests[0]["tools"] == [OPENAI_MEMORY_TOOL]
    assert model.requests[0]["messages"][-1] == {"role": "user", "content": FLUSH_PROMPT}
    results = [m for m in model.requests[1]["messages"] if m["role"] == "tool"]
    assert results == [
        {"role": "tool", "tool_call_id": "call_1",
         "content": "File created successfully at: /memories/home.md"},
        {"role": "tool", "tool_call_id": "call_2",
         "content": hub.memory("alice", broken_input(broken))["content"]}]
    assert hub.conversation("alice", conversation_id)["summary"] == "Moved to Lisbon."
    assert hub.conversation("alice", later)["summary"] is None


def broken_input(call: dict[str, Any]) -> dict[str, Any]:
    return json.loads(call["function"]["arguments"])


def test_without_a_conversation_or_a_summary_nothing_is_stored(hub: MemoryHub) -> None:
    with ScriptedModel([gpt("DONE"), gpt("DONE")]) as model:
        client = openai.OpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0)
        assert flush_to_memory(client, hub, TALK, user_id="alice", session_id="s-9",
                               summary="x", model="gpt-x").conversation is None
        conversation_id = captured(hub, "s-9")
        assert flush_to_memory(client, hub, TALK, user_id="alice", session_id="s-9",
                               model="gpt-x").conversation is None
    assert hub.conversation("alice", conversation_id)["summary"] is None


def test_the_gpt_model_cannot_choose_another_profile(hub: MemoryHub) -> None:
    """As with Claude's tool (test_memory_tool): what the flush sees is the app's to say."""
    hub.document_put("alice", "/diary.md", "private", profile="personal")
    hop = function_call("call_1", {"command": "view", "path": "/memories/diary.md",
                                   "profile": "personal"})
    with ScriptedModel([gpt(None, tool_calls=[hop]), gpt("DONE")]) as model:
        client = openai.OpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0)
        flush_to_memory(client, hub, TALK, user_id="alice", session_id="s-1", model="gpt-x")
    result = next(m for m in model.requests[1]["messages"] if m["role"] == "tool")
    assert "does not exist" in result["content"]


def test_the_system_prompt_reaches_either_model(hub: MemoryHub) -> None:
    """``system=`` was sent to Claude only: an openai client's flush went without it."""
    with ScriptedModel([claude(text("DONE")), gpt("DONE")]) as model:
        claude_client = anthropic.Anthropic(base_url=model.url, api_key="t", max_retries=0)
        gpt_client = openai.OpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0)
        for client in (claude_client, gpt_client):
            flush_to_memory(client, hub, TALK, user_id="alice", session_id="s-1",
                            system="You are Ada, a travel agent.", model="any")
    to_claude, to_gpt = model.requests
    assert to_claude["system"] == "You are Ada, a travel agent."
    assert to_gpt["messages"] == [{"role": "system", "content": "You are Ada, a travel agent."},
                                  *TALK, {"role": "user", "content": FLUSH_PROMPT}]


def test_a_summary_needs_to_know_whose_conversation_it_is(hub: MemoryHub) -> None:
    """Without conversation_id or session_id, "the latest" may be another chat's: refused
    before the model is asked anything."""
    elsewhere = captured(hub, "s-other")
    with ScriptedModel([]) as model:
        client = openai.OpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0)
        with pytest.raises(ValueError, match="conversation_id or the session_id"):
            flush_to_memory(client, hub, TALK, user_id="alice", summary="x", model="gpt-x")
    assert model.requests == [] and hub.conversation("alice", elsewhere)["summary"] is None


def test_a_command_memoryhub_refuses_reaches_the_gpt_model_as_its_message(hub: MemoryHub) -> None:
    """As through Claude's tool runner (test_memory_tool): a memory command MemoryHub refuses
    (here a file over the 1 MiB body limit) is the API's message in the tool result, and the
    flush goes on to store the summary, where it raised and stored nothing."""
    conversation_id = captured(hub, "s-1")
    huge = function_call("call_1", {"command": "create", "path": "/memories/huge.md",
                                    "file_text": "x" * 1_100_000})
    with ScriptedModel([gpt(None, tool_calls=[huge]), gpt("DONE")]) as model:
        client = openai.OpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0)
        flushed = flush_to_memory(client, hub, TALK, user_id="alice", session_id="s-1",
                                  summary="Moved to Lisbon.", model="gpt-x")
    assert (flushed.tool_calls, flushed.reply) == (1, "DONE")
    assert model.requests[1]["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_1",
        "content": "Error: The request body is over 1 MiB. Send less at a time."}
    assert hub.conversation("alice", conversation_id)["summary"] == "Moved to Lisbon."
