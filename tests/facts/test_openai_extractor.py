"""The ``openai`` extractor against a local server that speaks the chat completions protocol:
a valid answer becomes facts and the rolling summary; malformed, slow and failing answers
write nothing, keep the cursor, and are recorded for the dashboard after the last retry
(never a crash); 429 and 503 are retried after their Retry-After."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from memoryhub.models import AugmentationFailure, Conversation
from memoryhub.tasks import augment_conversation
from tenants.context import tenant_context
from tests.facts.chat_server import ChatServer, Reply, chat_server
from tests.facts.test_augmentation import FACTS, USER, capture, facts


@pytest.fixture
def llm(settings) -> Iterator[ChatServer]:
    with chat_server() as server:
        settings.AUGMENTATION_PROVIDER = "openai"
        settings.AUGMENTATION_URL = server.url
        settings.AUGMENTATION_API_KEY = "sk-test"
        settings.AUGMENTATION_MODEL = "test-model"
        settings.AUGMENTATION_TIMEOUT = 0.5
        settings.AUGMENTATION_MAX_RETRIES = 1  # per run: one retry of the HTTP call
        settings.AUGMENTATION_RUN_RETRIES = 1  # then one retry of the run
        yield server


def answer(*found: dict, summary: str | None = "The user talked about where they live.") -> Reply:
    return Reply(content=json.dumps({"facts": list(found), "summary": summary}))


LISBON = {"message": 1, "type": "profile", "content": "User lives in Lisbon", "subject": "user",
          "predicate": "home", "object": "Lisbon", "confidence": 0.95}


def run(kit, conversation_id: str) -> int:
    """The task as a worker runs it, retries included (in this process)."""
    return augment_conversation.apply(
        kwargs={"tenant_id": kit.tenant.id, "conversation_id": conversation_id}).get()


def state(kit, conversation_id: str) -> tuple[int, str, str]:
    with tenant_context(kit.tenant.id):
        c = Conversation.objects.get(id=conversation_id)
        return c.augmented_seq, c.summary, c.summary_by


def failures(kit) -> list[AugmentationFailure]:
    with tenant_context(kit.tenant.id):
        return list(AugmentationFailure.objects.order_by("id"))


def test_a_valid_answer_becomes_facts_and_the_summary(acme, llm) -> None:
    acme.client.post(FACTS, {"content": "User likes tea"}, format="json")
    conversation = capture(acme, "I live in Lisbon now.", "Nice, and what do you do?")
    llm.script(answer(LISBON))
    assert run(acme, conversation) == 2
    [fact] = [f for f in facts(acme) if f["predicate"] == "home"]
    assert fact["content"] == "User lives in Lisbon" and fact["confidence"] == 0.95
    assert fact["updated_by"] == "augmentation" and fact["object"] == "Lisbon"
    assert fact["source"]["conversation_id"] == conversation
    assert state(acme, conversation) == (2, "The user talked about where they live.",
                                         "augmentation")
    [request] = llm.requests
    assert llm.paths == ["/v1/chat/completions"] and llm.authorization == ["Bearer sk-test"]
    assert request["model"] == "test-model"
    assert request["response_format"] == {"type": "json_object"}
    prompt = request["messages"][1]["content"]
    assert "[1] user: I live in Lisbon now." in prompt and "[2] assistant:" not in prompt
    assert "- User likes tea" in prompt  # what is known, so it is not stated again


def test_the_previous_summary_is_in_the_prompt_and_an_apps_summary_wins(acme, llm) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    put = acme.client.put(f"/api/v1/users/{USER}/conversations/{conversation}/summary",
                          {"summary": "Written by the app."}, format="json")
    assert put.status_code == 200, put.content
    llm.script(answer(LISBON, summary="The model's own summary."))
    run(acme, conversation)
    assert "Written by the app." in llm.requests[0]["messages"][1]["content"]
    assert state(acme, conversation) == (1, "Written by the app.", "app")
    assert len(facts(acme)) == 1


@pytest.mark.parametrize(("reply", "error"), [
    ("this is not json", "not JSON"),
    ('["a list"]', '"facts" list'),
    (json.dumps({"facts": [{**LISBON, "type": "opinion"}]}), "fact 1: type"),
    (json.dumps({"facts": [{**LISBON, "message": 7}]}), "fact 1: message"),
    (json.dumps({"facts": [LISBON, {**LISBON, "content": ""}]}), "fact 2: content"),
    (json.dumps({"facts": [{**LISBON, "confidence": 3}]}), "fact 1: confidence"),
    (json.dumps({"facts": [], "summary": 42}), "summary"),
])
def test_a_malformed_answer_writes_nothing_and_is_recorded(acme, llm, reply, error) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    llm.script(Reply(content=reply), Reply(content=reply))  # the run and its retry
    assert run(acme, conversation) == 0  # no crash
    assert facts(acme, include_invalid=True) == []
    assert state(acme, conversation) == (0, "", "")  # the cursor stays
    [failure] = failures(acme)
    assert failure.malformed and error in failure.error and "Lisbon" not in failure.error
    assert (failure.provider, failure.user_id, failure.attempts) == ("openai", USER, 2)
    assert str(failure.conversation_id) == conversation


def test_a_malformed_answer_then_a_valid_one_on_the_retry_is_learnt(acme, llm) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    llm.script(Reply(content="{not json"), answer(LISBON))
    assert run(acme, conversation) == 1
    assert [f["object"] for f in facts(acme)] == ["Lisbon"] and failures(acme) == []


def test_a_credential_leaves_out_that_fact_or_summary_only(acme, llm) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    secret = {**LISBON, "content": "User's key is sk-ant-api03-" + "a" * 90, "predicate": "key"}
    llm.script(answer(secret, LISBON, summary="The key is sk-ant-api03-" + "b" * 90))
    run(acme, conversation)
    assert [f["content"] for f in facts(acme)] == ["User lives in Lisbon"]
    assert state(acme, conversation) == (1, "", "")  # nor the summary


def test_a_slow_server_times_out_and_is_recorded(acme, llm) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    llm.script(*[Reply(content=json.dumps({"facts": [LISBON]}), delay=1.0)] * 4)
    started = time.monotonic()
    assert run(acme, conversation) == 0
    assert time.monotonic() - started < 4  # 4 attempts of 0.5 s, not 4 of 1 s
    [failure] = failures(acme)
    assert "Timeout" in failure.error and not failure.malformed
    assert facts(acme) == [] and state(acme, conversation)[0] == 0


def test_a_500_is_retried_and_after_the_last_try_recorded(acme, llm) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    llm.script(Reply(status=500, raw=b'{"error": {"message": "overloaded"}}'), answer(LISBON))
    assert run(acme, conversation) == 1  # the client's own retry
    assert len(llm.requests) == 2 and failures(acme) == []

    later = capture(acme, "I love jazz.", session="s2")
    llm.script(*[Reply(status=500, raw=b'{"error": {"message": "overloaded"}}')] * 4)
    assert run(acme, later) == 0
    [failure] = failures(acme)
    assert "HTTP 500: overloaded" in failure.error and failure.attempts == 2
    assert state(acme, later)[0] == 0


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(acme, llm, status) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    llm.script(Reply(status=status, headers={"Retry-After": "1"}, raw=b"{}"), answer(LISBON))
    started = time.monotonic()
    assert run(acme, conversation) == 1
    assert time.monotonic() - started >= 1.0
    assert [f["object"] for f in facts(acme)] == ["Lisbon"]


def test_a_client_error_is_not_retried(acme, llm) -> None:
    conversation = capture(acme, "I live in Lisbon.")
    llm.script(*[Reply(status=401, raw=b'{"error": {"message": "bad key"}}')] * 2)
    run(acme, conversation)
    assert len(llm.requests) == 2  # one per run (the run and its retry), none by the client
    assert "HTTP 401: bad key" in failures(acme)[0].error


def test_a_process_attribute_learnt_in_another_process_is_its_own_fact(acme, llm) -> None:
    """The same tag learnt in two processes' conversations: two facts, each of its process
    (the second was merged into the first process's fact)."""
    onboarded = {"message": 1, "type": "process_attribute", "content": "onboarding-complete",
                 "confidence": 0.9}
    for session, process in (("s1", "support-agent"), ("s2", "sales-agent")):
        response = acme.client.post(f"/api/v1/users/{USER}/sessions/{session}/messages", {
            "messages": [{"role": "user", "content": "I finished the onboarding."}],
            "process": process}, format="json")
        llm.script(answer(onboarded))
        run(acme, response.json()["conversation_id"])
    learnt = [f for f in facts(acme) if f["type"] == "process_attribute"]
    assert sorted(f["process"] for f in learnt) == ["sales-agent", "support-agent"]
