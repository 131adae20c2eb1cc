"""``with_memory`` on the real anthropic and openai SDKs, against local servers speaking their
protocols (JSON and server-sent events) and a live MemoryHub."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anthropic
import httpx
import openai
import pydantic
import pytest
from llm_servers import (
    Canned,
    ScriptedModel,
    azure_filtered,
    claude,
    cut,
    function_call,
    gpt,
    text,
    tool_use,
)
from memoryhub_client import AsyncMemoryHub, MemoryHub, MemoryHubError
from memoryhub_client.middleware import with_memory

pytestmark = pytest.mark.django_db(transaction=True)

ASK = "Any dinner idea? I'm vegetarian."
CLAUDE_META = {"provider": "anthropic", "id": "msg_scripted", "model": "claude-scripted",
               "stop_reason": "end_turn", "usage": {"input_tokens": 42, "output_tokens": 7}}
GPT_META = {"provider": "openai", "id": "chatcmpl-scripted", "model": "gpt-scripted",
            "finish_reason": "stop", "system_fingerprint": "fp_scripted",
            "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}


@pytest.fixture
def remembered(hub: MemoryHub) -> str:
    """Alice's diet in MemoryHub; the context recall gives for ``ASK``."""
    hub.document_put("alice", "/diet.md", "Vegetarian since 2019, loves mushrooms")
    context = hub.recall("alice", ASK, session_id="s-1")["context"]
    assert context.startswith("<memori_context>") and "Vegetarian since 2019" in context
    return context


def stored(hub: MemoryHub, session_id: str = "s-1") -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in hub.messages("alice", session_id)["messages"]]


def claude_client(model: ScriptedModel) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=model.url, api_key="test", max_retries=0)


def gpt_client(model: ScriptedModel) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{model.url}/v1", api_key="test", max_retries=0)


class Dish(pydantic.BaseModel):
    dish: str


def test_anthropic_recalls_before_and_captures_after(hub: MemoryHub, remembered: str) -> None:
    replies = [claude(text("Mushroom risotto.")), claude(text("Enjoy!")),
               claude(text("Bye."))]
    with ScriptedModel(replies) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        first = client.messages.create(model="claude-x", max_tokens=100, system="Be brief.",
                                       messages=[{"role": "user", "content": ASK}])
        assert first.content[0].text == "Mushroom risotto."  # the SDK's own object
        history = [{"role": "user", "content": ASK},
                   {"role": "assistant", "content": first.content},
                   {"role": "user", "content": "Thanks!"}]
        client.messages.create(model="claude-x", max_tokens=100, system="Be brief.",
                               messages=history, memory={"recall": False})
        client.messages.create(model="claude-x", max_tokens=100, memory={"capture": False},
                               messages=[*history, {"role": "user", "content": ASK}])
    # before_history: the context is its own first message; the rest is as the app sent it.
    assert model.requests[0]["messages"] == [{"role": "user", "content": remembered},
                                             {"role": "user", "content": ASK}]
    assert model.requests[0]["system"] == "Be brief."
    assert model.requests[1]["messages"][0] == {"role": "user", "content": ASK}
    assert model.requests[2]["messages"][0]["content"] == remembered
    # Captured: each message once (the resent history adds nothing), never the context,
    # never the system prompt (the tenant's policy drops it), not the uncaptured call.
    assert stored(hub) == [("user", ASK), ("assistant", "Mushroom risotto."),
                           ("user", "Thanks!"), ("assistant", "Enjoy!")]
    messages = hub.messages("alice", "s-1")["messages"]
    assert messages[1]["metadata"] == CLAUDE_META
    assert messages[0]["metadata"] == {}
    assert len({m["conversation_id"] for m in messages}) == 1


def test_messages_given_as_an_iterator_reach_the_model(hub: MemoryHub, remembered: str) -> None:
    """The SDKs take ``messages`` (and Anthropic's ``system``) as any iterable: a generator,
    read once, is read by the middleware into the list the model gets, whole, and that is
    captured."""
    asked, brief = {"role": "user", "content": ASK}, {"type": "text", "text": "Be brief."}
    with ScriptedModel([claude(text("Risotto.")), gpt("Soup.")]) as model:
        claude_side = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        claude_side.messages.create(model="claude-x", max_tokens=10, system=iter([brief]),
                                    messages=(message for message in [asked]))
        gpt_side = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-2",
                               inject="disabled")
        gpt_side.chat.completions.create(model="gpt-x", messages=iter([asked]))
    assert [r["messages"] for r in model.requests] == [
        [{"role": "user", "content": remembered}, asked], [asked]]
    assert model.requests[0]["system"] == [brief]
    assert stored(hub) == [("user", ASK), ("assistant", "Risotto.")]
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Soup.")]


def test_a_call_with_capture_off_stays_off_the_record(hub: MemoryHub) -> None:
    """Its messages and its reply are not captured later either, when the next call resends
    the history that holds them (streamed or not)."""
    secret, said = "My PIN hint is my cat's name.", "Noted, I won't keep it."
    with ScriptedModel([claude(text("Hello!")), claude(text(said)),
                        claude(text("Risotto.")), claude(text("Enjoy."))]) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        history: list[dict[str, Any]] = [{"role": "user", "content": "Hi"}]
        first = client.messages.create(model="claude-x", max_tokens=10, messages=history)
        history += [{"role": "assistant", "content": first.content},
                    {"role": "user", "content": secret}]
        with client.messages.create(model="claude-x", max_tokens=10, stream=True,
                                    messages=history, memory={"capture": False}) as stream:
            list(stream)
        history += [{"role": "assistant", "content": said},
                    {"role": "user", "content": ASK}]
        third = client.messages.create(model="claude-x", max_tokens=10, messages=history)
        history += [{"role": "assistant", "content": third.content},
                    {"role": "user", "content": "Thanks"}]
        client.messages.create(model="claude-x", max_tokens=10, messages=history)
    assert stored(hub) == [("user", "Hi"), ("assistant", "Hello!"), ("user", ASK),
                           ("assistant", "Risotto."), ("user", "Thanks"),
                           ("assistant", "Enjoy.")]


def test_a_memory_switch_it_cannot_read_is_refused_before_the_call(hub: MemoryHub) -> None:
    """A misspelt switch, or memory=False, read as none: the call was captured."""
    with ScriptedModel([]) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        for switches in ({"captrue": False}, False, {"recall": False, "store": False},
                         {"capture": "false"}):
            with pytest.raises(ValueError, match="recall and capture"):
                client.messages.create(model="claude-x", max_tokens=10, memory=switches,
                                       messages=[{"role": "user", "content": "My PIN is 4711"}])
    assert model.requests == [] and stored(hub) == []


def test_a_sliding_window_of_history_is_captured_once(hub: MemoryHub) -> None:
    """An app that sends the model only its last messages (a sliding window of the history)
    began each history with a message chained from nothing: every message in the window got
    a new id, and was captured again each call. Each is captured once, with the id the whole
    history gives it, so a reply asked for again adds only itself, and sending the whole
    history later adds only what is new."""
    brief = {"role": "system", "content": "Be brief."}
    replies = [*(gpt(f"A{n}") for n in range(1, 5)), gpt("A4 again"), gpt("A5")]
    with ScriptedModel(replies) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1",
                             inject="disabled")
        history: list[dict[str, Any]] = []
        for n in range(1, 5):
            history.append({"role": "user", "content": f"Q{n}"})
            reply = client.chat.completions.create(model="gpt-x", messages=[brief, *history[-3:]])
            history.append({"role": "assistant", "content": reply.choices[0].message.content})
        client.chat.completions.create(model="gpt-x", messages=[brief, *history[-4:-1]])
        history.append({"role": "user", "content": "Q5"})
        client.chat.completions.create(model="gpt-x", messages=[brief, *history])
    assert [r["messages"][1:] for r in model.requests[2:4]] == [history[2:5], history[4:7]]
    said = [(role, f"{letter}{n}") for n in range(1, 5)
            for role, letter in (("user", "Q"), ("assistant", "A"))]
    assert stored(hub) == [*said, ("assistant", "A4 again"), ("user", "Q5"), ("assistant", "A5")]


def test_a_message_the_hub_refuses_is_left_out_not_retried_forever(
        hub: MemoryHub, caplog: Any) -> None:
    """A pasted text over the tenant's max_message_bytes (64 KiB by default) is 422 for any
    batch that holds it: it is left out, the rest of the conversation is captured."""
    pasted = "lorem ipsum " * 6_000  # 72,000 bytes
    replies = [claude(text("Summarised.")), claude(text("Yes.")), claude(text("Bye."))]
    with ScriptedModel(replies) as model, caplog.at_level(logging.WARNING, "memoryhub_client"):
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        history: list[dict[str, Any]] = [{"role": "user", "content": "Hi"},
                                         {"role": "assistant", "content": "Hello!"},
                                         {"role": "user", "content": pasted}]
        client.messages.create(model="claude-x", max_tokens=10, messages=history)
        for question, answer in (("Is it long?", "Summarised."), ("Thanks", "Yes.")):
            history += [{"role": "assistant", "content": answer},
                        {"role": "user", "content": question}]
            client.messages.create(model="claude-x", max_tokens=10, messages=history)
    assert stored(hub) == [("user", "Hi"), ("assistant", "Hello!"), ("assistant", "Summarised."),
                           ("user", "Is it long?"), ("assistant", "Yes."), ("user", "Thanks"),
                           ("assistant", "Bye.")]
    assert [r.message[:60] for r in caplog.records if r.name == "memoryhub_client"] == [
        "memoryhub: a user message of 72000 characters was left out o"]


def test_a_stream_cut_short_is_not_captured_as_a_reply(hub: MemoryHub) -> None:
    """The connection dropped mid-reply: the SDKs end their loop quietly, but the text so far
    is no reply; the question is captured by the next call, as after a failed call."""
    with ScriptedModel([cut(claude(text("Try lentils with rice.")), events=4),
                        cut(gpt("Try lentils with rice."), events=3),
                        claude(text("Lentil soup."))]) as model:
        claude_side = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        asked = [{"role": "user", "content": "Dinner?"}]
        with claude_side.messages.create(model="claude-x", max_tokens=10, stream=True,
                                         messages=asked) as stream:
            assert "".join(e.delta.text for e in stream if e.type == "content_block_delta")
        gpt_side = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-2")
        pieces = [chunk.choices[0].delta.content for chunk in gpt_side.chat.completions.create(
            model="gpt-x", messages=asked, stream=True)]
        assert pieces[-1] and len(pieces) == 3
        claude_side.messages.create(model="claude-x", max_tokens=10, messages=asked)
    assert stored(hub) == [("user", "Dinner?"), ("assistant", "Lentil soup.")]
    assert stored(hub, "s-2") == []


def test_a_session_id_the_hub_refuses_fails_the_capture_and_drops_nothing(
        hub: MemoryHub, caplog: Any) -> None:
    """Every batch is refused alike (400 invalid_session_id): an error to fix, logged as the
    capture failing, not each message left out for good."""
    with ScriptedModel([claude(text("Hello!"))]) as model, caplog.at_level(
            logging.WARNING, "memoryhub_client"):
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s 1",
                             inject="disabled")
        client.messages.create(model="claude-x", max_tokens=10, messages=[
            {"role": "user", "content": "Hi"}])
    said = [r.message for r in caplog.records if r.name == "memoryhub_client"]
    assert len(said) == 1 and said[0].startswith("memoryhub: capture failed")
    assert "invalid_session_id" in said[0]


def test_what_the_server_cannot_store_as_sent_is_made_storable(hub: MemoryHub) -> None:
    """A NUL (PostgreSQL's text has none) is dropped from the message and the recall query;
    a reply's 150 tool calls are more than metadata's 4 KiB: the first that fit are kept and
    the rest counted, where the reply was refused whole."""
    calls = [function_call(f"call_{i:02}", {"n": i}, name=f"lookup_{i:02}") for i in range(150)]
    with ScriptedModel([gpt("Looking up.", tool_calls=calls)]) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1")
        client.chat.completions.create(model="gpt-x", messages=[
            {"role": "user", "content": "hello\x00world"}])
    assert model.requests[0]["messages"][-1]["content"] == "hello\x00world"  # as the app sent it
    user, reply = hub.messages("alice", "s-1")["messages"]
    assert user["content"] == "helloworld" and reply["content"] == "Looking up."
    kept = reply["metadata"]["tool_calls"]
    assert kept == [{"id": f"call_{i:02}", "name": f"lookup_{i:02}"} for i in range(len(kept))]
    assert len(kept) > 60 and reply["metadata"]["tool_calls_omitted"] == 150 - len(kept)
    assert reply["metadata"]["finish_reason"] == "tool_calls"


def test_a_reply_with_half_an_emoji_is_returned_and_captured(hub: MemoryHub) -> None:
    """A lone surrogate (JSON's "\\ud83d" without its pair) is no UTF-8: the message's id
    raised UnicodeEncodeError, which failed the model call after the model had answered."""
    with ScriptedModel([claude(text("Cheers \ud83d"))]) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        reply = client.messages.create(model="claude-x", max_tokens=10,
                                       messages=[{"role": "user", "content": "Hi"}])
    assert reply.content[0].text == "Cheers \ud83d"  # the app gets the reply as it came
    assert stored(hub) == [("user", "Hi"), ("assistant", "Cheers \ufffd")]


def test_clients_made_by_with_options_and_copy_keep_memory(hub: MemoryHub,
                                                          remembered: str) -> None:
    with ScriptedModel([claude(text("Risotto.")), gpt("Soup.")]) as model:
        claude_side = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        claude_side.with_options(timeout=20).messages.create(
            model="claude-x", max_tokens=10, messages=[{"role": "user", "content": ASK}])
        gpt_side = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-2")
        gpt_side.copy(max_retries=0).chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": ASK}])
    assert [r["messages"][0]["content"] for r in model.requests] == [remembered, remembered]
    assert stored(hub) == [("user", ASK), ("assistant", "Risotto.")]
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Soup.")]


def test_anthropic_streaming_is_reassembled_and_tool_calls_kept(hub: MemoryHub) -> None:
    replies = [claude(text("Let me check."), tool_use("toolu_1", {"command": "view",
                                                                  "path": "/memories"})),
               claude(text("You have no notes yet, but here is a long answer."))]
    with ScriptedModel(replies) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        with client.messages.create(model="claude-x", max_tokens=100, stream=True,
                                    messages=[{"role": "user", "content": "What do I like?"}]
                                    ) as stream:
            kinds = [event.type for event in stream]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        assert stored(hub) == [("user", "What do I like?"), ("assistant", "Let me check.")]
        tool_turn = [{"role": "user", "content": "What do I like?"},
                     {"role": "assistant", "content": [
                         {"type": "text", "text": "Let me check."},
                         {"type": "tool_use", "id": "toolu_1", "name": "memory",
                          "input": {"command": "view", "path": "/memories"}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                   "content": "No notes."}]}]
        deltas = [event.delta.text for event in client.messages.create(
            model="claude-x", max_tokens=100, stream=True, messages=tool_turn)
            if event.type == "content_block_delta"]
        assert len(deltas) > 3
    messages = hub.messages("alice", "s-1")["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "What do I like?"), ("assistant", "Let me check."), ("tool", "No notes."),
        ("assistant", "".join(deltas))]
    assert messages[1]["metadata"] == {**CLAUDE_META, "stop_reason": "tool_use",
                                       "tool_calls": [{"id": "toolu_1", "name": "memory"}]}
    assert messages[2]["metadata"] == {"tool_use_ids": ["toolu_1"]}
    assert messages[3]["metadata"] == CLAUDE_META


def test_anthropic_beta_messages_recall_and_capture(hub: MemoryHub, remembered: str) -> None:
    """``client.beta.messages`` (``betas=[...]``, as apps using Claude's memory tool call it):
    ``create`` and the ``stream()`` helper recall and capture as ``messages`` do; so does
    ``messages.parse``."""
    asked = [{"role": "user", "content": ASK}]
    betas = ["context-management-2025-06-27"]
    replies = [claude(text("Mushroom risotto.")), claude(text("Lentil soup.")),
               claude(text('{"dish": "Bean stew"}'))]
    with ScriptedModel(replies) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        reply = client.beta.messages.create(model="claude-x", max_tokens=100, messages=asked,
                                            betas=betas)
        assert reply.content[0].text == "Mushroom risotto."
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-2")
        with client.beta.messages.stream(model="claude-x", max_tokens=100, messages=asked,
                                         betas=betas) as stream:
            assert "".join(stream.text_stream) == "Lentil soup."
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-3")
        parsed = client.messages.parse(model="claude-x", max_tokens=100, messages=asked,
                                       output_format=Dish)
        assert parsed.parsed_output == Dish(dish="Bean stew")
    assert [r["messages"] for r in model.requests] == [
        [{"role": "user", "content": remembered}, *asked]] * 3
    assert [h.get("anthropic-beta") for h in model.headers] == [*betas, *betas, None]
    assert stored(hub) == [("user", ASK), ("assistant", "Mushroom risotto.")]
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Lentil soup.")]
    assert stored(hub, "s-3") == [("user", ASK), ("assistant", '{"dish": "Bean stew"}')]
    assert hub.messages("alice", "s-1")["messages"][1]["metadata"] == CLAUDE_META


def test_an_anthropic_turn_of_tool_results_and_text_is_captured_whole(hub: MemoryHub) -> None:
    """A user turn can hold the tool results the model asked for and, after them, the user's
    own words: the results are captured as a tool message (as a turn of results alone is),
    then the text as the user's message."""
    history = [{"role": "user", "content": "What do I like?"},
               {"role": "assistant", "content": [
                   text("Let me check."), tool_use("toolu_1", {"command": "view",
                                                              "path": "/memories"})]},
               {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Vegetarian."},
                   {"type": "text", "text": "Also, I moved to Lisbon."}]}]
    with ScriptedModel([claude(text("Noted: vegetarian, in Lisbon."))]) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        client.messages.create(model="claude-x", max_tokens=100, messages=history)
    assert model.requests[0]["messages"] == history
    messages = hub.messages("alice", "s-1")["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "What do I like?"), ("assistant", "Let me check."), ("tool", "Vegetarian."),
        ("user", "Also, I moved to Lisbon."), ("assistant", "Noted: vegetarian, in Lisbon.")]
    assert messages[2]["metadata"] == {"tool_use_ids": ["toolu_1"]}


def test_anthropic_injection_places(hub: MemoryHub, remembered: str) -> None:
    history = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"},
               {"role": "user", "content": [{"type": "text", "text": ASK}]}]
    places = ["after_system", "append", "merge_into_system", "disabled"]
    with ScriptedModel([claude(text("ok")) for _ in range(5)]) as model:
        for place in places:
            client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1",
                                 inject=place)  # type: ignore[arg-type]
            client.messages.create(model="claude-x", max_tokens=10, system="Be brief.",
                                   messages=history)
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-2",
                             inject="merge_into_system")
        client.messages.create(model="claude-x", max_tokens=10, messages=history,
                               system=[{"type": "text", "text": "Be brief."}])
    after_system, append, merged, disabled, merged_blocks = model.requests
    assert after_system["system"] == [{"type": "text", "text": "Be brief."},
                                      {"type": "text", "text": remembered}]
    assert after_system["messages"] == history
    assert append["messages"][:2] == history[:2]
    assert append["messages"][2]["content"] == [{"type": "text", "text": ASK},
                                                {"type": "text", "text": remembered}]
    assert merged["system"] == f"Be brief.\n\n{remembered}" and merged["messages"] == history
    assert disabled["system"] == "Be brief." and disabled["messages"] == history
    assert merged_blocks["system"] == [{"type": "text", "text": f"Be brief.\n\n{remembered}"}]
    assert ("assistant", "ok") in stored(hub) and all(
        "memori_context" not in content for _, content in stored(hub))


def test_openai_recalls_injects_and_captures_streams_included(hub: MemoryHub,
                                                              remembered: str) -> None:
    question = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": ASK}]
    replies = [gpt("Mushroom risotto."), gpt("Enjoy your risotto tonight!"), gpt("ok"),
               gpt("ok"), gpt("ok"), gpt("ok")]
    with ScriptedModel(replies) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1")
        first = client.chat.completions.create(model="gpt-x", messages=question)
        followed = [*question, first.choices[0].message.model_dump(exclude_none=True),
                    {"role": "user", "content": "Thanks!"}]
        stream = client.chat.completions.create(model="gpt-x", messages=followed, stream=True,
                                                stream_options={"include_usage": True},
                                                memory={"recall": False})
        pieces = [chunk.choices[0].delta.content for chunk in stream if chunk.choices]
        for place in ("after_system", "append", "merge_into_system", "disabled"):
            placed = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-2",
                                 inject=place)  # type: ignore[arg-type]
            placed.chat.completions.create(model="gpt-x", messages=question,
                                           memory={"capture": False})
    system, user = question
    assert model.requests[0]["messages"] == [system, {"role": "user", "content": remembered},
                                             user]
    assert "".join(p or "" for p in pieces) == "Enjoy your risotto tonight!"
    after_system, append, merged, disabled = (r["messages"] for r in model.requests[2:])
    assert after_system == [system, {"role": "system", "content": remembered}, user]
    assert append == [system, {"role": "user", "content": f"{ASK}\n\n{remembered}"}]
    assert merged == [{"role": "system", "content": f"Be brief.\n\n{remembered}"}, user]
    assert disabled == question
    messages = hub.messages("alice", "s-1")["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", ASK), ("assistant", "Mushroom risotto."), ("user", "Thanks!"),
        ("assistant", "Enjoy your risotto tonight!")]
    assert messages[1]["metadata"] == GPT_META
    assert messages[3]["metadata"] == GPT_META  # the stream's usage chunk included
    assert stored(hub, "s-2") == []


def test_an_azure_filtered_stream_is_read_to_its_end_and_captured(hub: MemoryHub) -> None:
    """Azure's content filter adds chunks whose choice has no delta: reading the stream
    raised AttributeError ('NoneType' object has no attribute 'content') in the app's loop."""
    with ScriptedModel([azure_filtered(gpt("Enjoy your risotto tonight!"))]) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1")
        stream = client.chat.completions.create(model="gpt-x", stream=True, messages=[
            {"role": "user", "content": ASK}])
        chunks = list(stream)
    assert any(chunk.choices and chunk.choices[0].delta is None for chunk in chunks)
    messages = hub.messages("alice", "s-1")["messages"]
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", ASK), ("assistant", "Enjoy your risotto tonight!")]
    assert messages[1]["metadata"] == {key: value for key, value in GPT_META.items()
                                       if key != "usage"}  # no usage chunk was asked for


def test_openai_parse_and_stream_helpers_recall_and_capture(hub: MemoryHub, remembered: str,
                                                            live_server: Any, acme: Any) -> None:
    """``chat.completions.parse`` and the ``stream()`` helper (sync, async, and under
    ``beta.chat`` too) recall and capture as ``create`` does; ``memory=`` works on them."""
    asked = [{"role": "user", "content": ASK}]

    async def run(model: ScriptedModel) -> str:
        async with AsyncMemoryHub(live_server.url, acme.key) as async_hub:
            client = with_memory(
                openai.AsyncOpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0),
                async_hub, user_id="alice", session_id="s-3")
            async with client.chat.completions.stream(model="gpt-x", messages=asked,
                                                      memory={"capture": False}) as stream:
                return "".join([e.delta async for e in stream if e.type == "content.delta"])

    replies = [gpt('{"dish": "Mushroom risotto"}'), gpt("Lentil soup."), gpt("Bean stew.")]
    with ScriptedModel(replies) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1")
        parsed = client.chat.completions.parse(model="gpt-x", messages=asked,
                                               response_format=Dish)
        assert parsed.choices[0].message.parsed == Dish(dish="Mushroom risotto")
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-2")
        with client.beta.chat.completions.stream(model="gpt-x", messages=asked) as stream:
            pieces = [e.delta for e in stream if e.type == "content.delta"]
        assert "".join(pieces) == "Lentil soup." and len(pieces) > 2
        assert asyncio.run(run(model)) == "Bean stew."
    assert [r["messages"] for r in model.requests] == [
        [{"role": "user", "content": remembered}, *asked]] * 3
    assert stored(hub) == [("user", ASK), ("assistant", '{"dish": "Mushroom risotto"}')]
    assert hub.messages("alice", "s-1")["messages"][1]["metadata"] == GPT_META
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Lentil soup.")]
    assert stored(hub, "s-3") == []


def test_openai_tool_calls_are_captured_with_their_metadata(hub: MemoryHub) -> None:
    call = function_call("call_1", {"city": "Lisbon"}, name="weather")
    with ScriptedModel([gpt(None, tool_calls=[call]), gpt("Sunny.")]) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1")
        asked = [{"role": "user", "content": "Weather in Lisbon?"}]
        stream = client.chat.completions.create(model="gpt-x", messages=asked, stream=True)
        list(stream)
        client.chat.completions.create(model="gpt-x", messages=[
            *asked, {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 24C"}])
    messages = hub.messages("alice", "s-1")["messages"]
    # The tool-call turn has no text: the tenant's policy drops empty messages.
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Weather in Lisbon?"), ("tool", "sunny, 24C"), ("assistant", "Sunny.")]
    assert messages[1]["metadata"] == {"tool_call_id": "call_1"}


def test_an_openai_answer_without_choices_is_returned_and_the_question_captured(
        hub: MemoryHub) -> None:
    """A content filter's answer (Azure's) has no choices: the app gets it as the SDK gives
    it, and capture keeps the question (the empty reply is dropped by the tenant's policy)."""
    filtered = {**gpt(None), "choices": []}
    with ScriptedModel([filtered]) as model:
        client = with_memory(gpt_client(model), hub, user_id="alice", session_id="s-1")
        response = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "Something filtered"}])
    assert response.choices == []
    assert stored(hub) == [("user", "Something filtered")]


def test_async_clients_with_the_async_hub(hub: MemoryHub, remembered: str, live_server: Any,
                                          acme: Any) -> None:
    async def run(model: ScriptedModel) -> list[str]:
        async with AsyncMemoryHub(live_server.url, acme.key) as async_hub:
            claude_async = with_memory(
                anthropic.AsyncAnthropic(base_url=model.url, api_key="t", max_retries=0),
                async_hub, user_id="alice", session_id="s-1")
            stream = await claude_async.messages.create(
                model="claude-x", max_tokens=100, stream=True,
                messages=[{"role": "user", "content": ASK}])
            async with stream:
                kinds = [event.type async for event in stream]
            gpt_async = with_memory(
                openai.AsyncOpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0),
                async_hub, user_id="alice", session_id="s-2", inject="append")
            await gpt_async.chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": ASK}])
            return kinds

    with ScriptedModel([claude(text("Mushroom risotto.")), gpt("Lentil soup.")]) as model:
        kinds = asyncio.run(run(model))
    assert kinds[-1] == "message_stop"
    assert model.requests[0]["messages"][0] == {"role": "user", "content": remembered}
    assert model.requests[1]["messages"] == [
        {"role": "user", "content": f"{ASK}\n\n{remembered}"}]
    assert stored(hub) == [("user", ASK), ("assistant", "Mushroom risotto.")]
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Lentil soup.")]
    assert hub.messages("alice", "s-1")["messages"][1]["metadata"] == CLAUDE_META


def test_memoryhub_down_the_model_call_goes_on(caplog: Any) -> None:
    down = MemoryHub("http://127.0.0.1:9", "mh_key", timeout=2)  # nothing listens there
    with ScriptedModel([claude(text("Hello!")), claude(text("unused"))]) as model:
        client = with_memory(claude_client(model), down, user_id="alice", session_id="s-1")
        with caplog.at_level(logging.WARNING, logger="memoryhub_client"):
            reply = client.messages.create(model="claude-x", max_tokens=10,
                                           messages=[{"role": "user", "content": "Hi"}])
        assert reply.content[0].text == "Hello!"
        assert model.requests[0]["messages"] == [{"role": "user", "content": "Hi"}]
        assert [r.message.split(" failed")[0] for r in caplog.records] == [
            "memoryhub: recall", "memoryhub: capture"]
        strict = with_memory(claude_client(model), down, user_id="alice", session_id="s-1",
                             strict=True)
        with pytest.raises(Exception) as raised:
            strict.messages.create(model="claude-x", max_tokens=10,
                                   messages=[{"role": "user", "content": "Hi"}])
        assert isinstance(raised.value, MemoryHubError) and raised.value.code == "connection_error"
        assert isinstance(raised.value, httpx.ConnectError)  # as it came, too
        assert len(model.requests) == 1


def test_a_hub_answering_pages_not_json_the_model_call_goes_on(caplog: Any) -> None:
    """What a misconfigured proxy answers in MemoryHub's place: 200 and a page, not JSON."""
    with Canned(200, b"<html>Welcome to nginx!</html>", {"Content-Type": "text/html"}) as proxy:
        hub = MemoryHub(proxy.url, "mh_key", timeout=5)
        with ScriptedModel([claude(text("Hello!"))]) as model:
            client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
            with caplog.at_level(logging.WARNING, logger="memoryhub_client"):
                reply = client.messages.create(model="claude-x", max_tokens=10, messages=[
                    {"role": "user", "content": "Hi " + "x" * 20_000}])
        assert reply.content[0].text == "Hello!"
        assert [r.message.split(" failed")[0] for r in caplog.records] == [
            "memoryhub: recall", "memoryhub: capture"]


def test_anthropics_clients_for_other_clouds_have_memory_too(hub: MemoryHub,
                                                             remembered: str) -> None:
    """Foundry's (or Bedrock's, Vertex's) client has the same messages API: with_memory
    refused it as no anthropic client."""
    with ScriptedModel([claude(text("Lentil soup."))]) as model:
        foundry = anthropic.AnthropicFoundry(api_key="t", base_url=f"{model.url}/anthropic/",
                                             max_retries=0)
        client = with_memory(foundry, hub, user_id="alice", session_id="s-1")
        client.messages.create(model="claude-x", max_tokens=10,
                               messages=[{"role": "user", "content": ASK}])
    assert model.requests[0]["messages"][0] == {"role": "user", "content": remembered}
    assert stored(hub) == [("user", ASK), ("assistant", "Lentil soup.")]


def test_the_hub_must_match_the_client() -> None:
    hub = MemoryHub("http://127.0.0.1:9", "k")
    with pytest.raises(TypeError):
        with_memory(anthropic.AsyncAnthropic(api_key="t"), hub, user_id="a", session_id="s")
    with pytest.raises(TypeError):
        with_memory(object(), hub, user_id="a", session_id="s")
    with pytest.raises(ValueError):
        with_memory(anthropic.Anthropic(api_key="t"), hub, user_id="a", session_id="s",
                    inject="somewhere")  # type: ignore[arg-type]


def test_anthropic_stream_helper_sync_and_async(hub: MemoryHub, remembered: str,
                                                live_server: Any, acme: Any) -> None:
    asked = [{"role": "user", "content": ASK}]

    async def run(model: ScriptedModel) -> str:
        async with AsyncMemoryHub(live_server.url, acme.key) as async_hub:
            client = with_memory(
                anthropic.AsyncAnthropic(base_url=model.url, api_key="t", max_retries=0),
                async_hub, user_id="alice", session_id="s-2", inject="after_system")
            async with client.messages.stream(model="claude-x", max_tokens=100,
                                              messages=asked) as stream:
                return "".join([piece async for piece in stream.text_stream])

    replies = [claude(text("Mushroom risotto, slowly stirred.")), claude(text("Lentil soup.")),
               claude(text("Not captured."))]
    with ScriptedModel(replies) as model:
        client = with_memory(claude_client(model), hub, user_id="alice", session_id="s-1")
        with client.messages.stream(model="claude-x", max_tokens=100, messages=asked) as stream:
            pieces = list(stream.text_stream)
        assert "".join(pieces) == "Mushroom risotto, slowly stirred." and len(pieces) > 3
        assert asyncio.run(run(model)) == "Lentil soup."
        with pytest.raises(RuntimeError), client.messages.stream(
                model="claude-x", max_tokens=100, messages=asked, memory={"recall": False}):
            raise RuntimeError("the app gave up")  # a block that fails captures nothing
    assert model.requests[0]["messages"][0] == {"role": "user", "content": remembered}
    assert model.requests[1]["system"] == [{"type": "text", "text": remembered}]
    assert model.requests[2]["messages"] == asked
    assert stored(hub) == [("user", ASK), ("assistant", "Mushroom risotto, slowly stirred.")]
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Lentil soup.")]
    assert hub.messages("alice", "s-1")["messages"][1]["metadata"] == CLAUDE_META


def test_the_wrapped_client_is_a_context_manager_with_memory_on(
        hub: MemoryHub, live_server: Any, acme: Any) -> None:
    """``with Anthropic() as client`` and ``async with AsyncOpenAI() as client``, as the SDKs
    document them, work on the wrapped client: the block's client is the wrapped one (memory
    on), and the SDK's client is closed as the block ends."""
    async def run(model: ScriptedModel) -> bool:
        async with AsyncMemoryHub(live_server.url, acme.key) as async_hub:
            async with with_memory(
                    openai.AsyncOpenAI(base_url=f"{model.url}/v1", api_key="t", max_retries=0),
                    async_hub, user_id="alice", session_id="s-2") as client:
                await client.chat.completions.create(
                    model="gpt-x", messages=[{"role": "user", "content": ASK}])
            return bool(client.is_closed())

    with ScriptedModel([claude(text("Risotto.")), gpt("Soup.")]) as model:
        with with_memory(claude_client(model), hub, user_id="alice",
                         session_id="s-1") as client:
            client.messages.create(model="claude-x", max_tokens=10,
                                   messages=[{"role": "user", "content": ASK}])
        assert client.is_closed()
        assert asyncio.run(run(model))
    assert stored(hub) == [("user", ASK), ("assistant", "Risotto.")]
    assert stored(hub, "s-2") == [("user", ASK), ("assistant", "Soup.")]
