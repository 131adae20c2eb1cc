"""Recall over facts and messages (spec: Facts, Recall): ``sources``, ``kind``, ids, the
``Stated at`` lines, invalid facts, and the near-duplicate merge by embedding."""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone

from memoryhub.augmentation.base import Candidate
from memoryhub.infra.embeddings import get_provider, provider_key
from memoryhub.models import EndUser, Fact, FactVersion, Message
from memoryhub.services.facts import fact_learn
from memoryhub.services.passages import record_embed
from memoryhub.tasks import embed_records
from tenants.context import tenant_context
from tests.recall.helpers import put, recall


def capture(kit, *texts: str, user: str = "alice", session: str = "s1") -> str:
    response = kit.client.post(f"/api/v1/users/{user}/sessions/{session}/messages",
                               {"messages": [{"role": "user", "content": t} for t in texts]},
                               format="json")
    assert response.status_code == 201, response.content
    return response.json()["conversation_id"]


def add_fact(kit, content: str, user: str = "alice", **extra) -> dict:
    response = kit.client.post(f"/api/v1/users/{user}/facts", {"content": content, **extra},
                               format="json")
    assert response.status_code == 201, response.content
    return response.json()


def stated(at: str) -> str:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).astimezone(UTC).strftime(
        "%Y-%m-%d %H:%M:%S")


def test_facts_are_found_with_their_ids_source_and_stated_at_line(acme) -> None:
    fact = add_fact(acme, "User prefers dark mode", type="preference",
                    valid_at="2026-03-04T05:06:07Z",
                    source={"conversation_id": "ext-1", "message_ids": ["m-9"]})
    put(acme, "alice", "/notes/ui.md", "Alice uses a dark theme in her editor.")
    response = recall(acme, "alice", query="dark mode", sources=["facts"])
    assert response.status_code == 200, response.content
    body = response.json()
    [hit] = body["results"]
    assert hit["kind"] == "fact" and hit["id"] == fact["id"]
    assert (hit["path"], hit["scope"]) == (None, None)
    assert hit["conversation_id"] == "ext-1" and hit["session_id"] is None  # not ours
    assert hit["source"] == {"conversation_id": "ext-1", "message_ids": ["m-9"]}
    assert hit["snippet"] == "User prefers dark mode"
    assert "- User prefers dark mode. Stated at 2026-03-04 05:06:07\n" in body["context"]


def test_a_fact_naming_another_persons_conversation_does_not_show_its_session(acme) -> None:
    bobs = capture(acme, "Meeting notes for the merger.", user="bob", session="bob-private")
    add_fact(acme, "User prefers dark mode", source={"conversation_id": bobs, "message_ids": []})
    [hit] = recall(acme, "alice", query="dark mode", sources=["facts"]).json()["results"]
    assert hit["conversation_id"] == bobs and hit["session_id"] is None


def test_default_sources_are_documents_and_facts_not_messages(acme) -> None:
    capture(acme, "My favourite band is Radiohead.")
    put(acme, "alice", "/notes/music.md", "Alice listens to Radiohead on Sundays.")
    add_fact(acme, "User loves Radiohead")
    kinds = [r["kind"] for r in recall(acme, "alice", query="Radiohead").json()["results"]]
    assert sorted(kinds) == ["document", "fact"]
    everything = recall(acme, "alice", query="Radiohead",
                        sources=["documents", "facts", "messages"]).json()["results"]
    assert sorted(r["kind"] for r in everything) == ["document", "fact", "message"]
    scores = [r["score"] for r in everything]
    assert scores == sorted(scores, reverse=True)  # one ranking over the three sources


def test_messages_are_found_lexically_as_soon_as_captured(acme) -> None:
    conversation = capture(acme, "I adopted a greyhound called Biscuit.", session="s7")
    with tenant_context(acme.tenant.id):
        message = Message.objects.get()
        assert message.embedding is None  # no worker in this test
    body = recall(acme, "alice", query="greyhound Biscuit", sources=["messages"]).json()
    [hit] = body["results"]
    assert hit["kind"] == "message" and hit["id"] == str(message.id)
    assert hit["conversation_id"] == conversation and hit["session_id"] == "s7"
    assert hit["source"] is None and hit["path"] is None and hit["scope"] is None
    assert hit["updated_at"].startswith(message.created_at.strftime("%Y-%m-%d"))
    line = (f"- The user said: I adopted a greyhound called Biscuit. Stated at "
            f"{stated(hit['updated_at'])}\n")
    assert line in body["context"]


def test_a_learnt_facts_result_names_its_conversation_and_session(
    acme, eager_tasks, django_capture_on_commit_callbacks,
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # augmentation, embedding: inline
        conversation = capture(acme, "I live in Lisbon.", session="s3")
    hits = recall(acme, "alice", query="Lisbon", sources=["facts"]).json()["results"]
    [hit] = hits
    assert hit["conversation_id"] == conversation and hit["session_id"] == "s3"
    with tenant_context(acme.tenant.id):
        message_id = str(Message.objects.get().id)
        fact = Fact.objects.get()
    assert hit["source"]["message_ids"] == [message_id]
    assert fact.embedding is not None  # augmentation stores the vector it computed
    with tenant_context(acme.tenant.id):
        assert Message.objects.get().embedding is not None  # the capture's embedding task


def test_invalid_facts_are_left_out_unless_asked_for(acme) -> None:
    fact = add_fact(acme, "User lives in Porto")
    patched = acme.client.patch(f"/api/v1/users/alice/facts/{fact['id']}",
                                {"invalid_at": timezone.now().isoformat()}, format="json")
    assert patched.status_code == 200, patched.content
    assert recall(acme, "alice", query="Porto", sources=["facts"]).json()["results"] == []
    shown = recall(acme, "alice", query="Porto", sources=["facts"],
                   include_invalid=True).json()["results"]
    assert [r["id"] for r in shown] == [fact["id"]]


def test_sources_are_checked(acme) -> None:
    for bad in (["notes"], [], "facts", [1]):
        response = recall(acme, "alice", query="tea", sources=bad)
        assert response.status_code == 400, bad
    assert recall(acme, "alice", query="tea", include_invalid="yes").status_code == 400


def test_an_edited_fact_loses_its_vector_until_embedded_again(acme) -> None:
    fact = add_fact(acme, "User drinks green tea")
    with tenant_context(acme.tenant.id):
        assert record_embed(kind="fact", record_id=fact["id"]) == 1
        assert record_embed(kind="fact", record_id=fact["id"]) == 0  # idempotent
    acme.client.patch(f"/api/v1/users/alice/facts/{fact['id']}", {"content": "User drinks oolong"},
                      format="json")
    with tenant_context(acme.tenant.id):
        assert Fact.objects.get().embedding is None
        assert record_embed(kind="fact", record_id=fact["id"]) == 1
    hit = recall(acme, "alice", query="oolong", sources=["facts"]).json()["results"][0]
    assert hit["snippet"] == "User drinks oolong"


def test_a_records_task_also_embeds_the_facts_and_messages_waiting_in_its_tenant(
    acme, globex,
) -> None:
    fact = add_fact(acme, "User drinks green tea")
    add_fact(acme, "User has two cats")
    capture(acme, "Hello there", "I moved to Lisbon")
    capture(globex, "Another tenant's message", user="bob")
    assert embed_records(items=[[acme.tenant.id, "fact", fact["id"]]]) == 2 + 2
    with tenant_context(acme.tenant.id):
        assert not Fact.objects.filter(embedding__isnull=True).exists()
        assert not Message.objects.filter(embedding__isnull=True).exists()
    with tenant_context(globex.tenant.id):
        assert Message.objects.filter(embedding__isnull=True).count() == 1


def test_a_near_duplicate_merges_by_similarity(acme, settings) -> None:
    """Two unstructured statements of the same type whose vectors are close: one fact."""
    settings.AUGMENTATION_MERGE_SIMILARITY = 0.85
    fact = add_fact(acme, "User prefers dark mode in every app", type="preference",
                    confidence=0.6)
    other = add_fact(acme, "User has two cats", type="fact")
    provider = get_provider()
    key = provider_key(provider)
    with tenant_context(acme.tenant.id):
        for pk in (fact["id"], other["id"]):
            record_embed(kind="fact", record_id=pk)
        end_user = EndUser.objects.get(user_id="alice")
        near = Candidate(type="preference", content="User prefers the dark mode in every app",
                         message_id="m-2", valid_at=timezone.now(), confidence=0.9)
        vector = (provider.embed([near.content])[0], key)
        assert fact_learn(end_user=end_user, candidate=near, conversation_id="c",
                          vector=vector) == "merged"
        merged = Fact.objects.get(id=fact["id"])
        assert merged.confidence == 0.9 and "m-2" in merged.source["message_ids"]
        assert FactVersion.objects.filter(fact_id=fact["id"], event="merged").exists()
        # another type, or far below the threshold: a new fact
        far = Candidate(type="preference", content="User prefers window seats on trains",
                        message_id="m-3", valid_at=timezone.now())
        assert fact_learn(end_user=end_user, candidate=far, conversation_id="c",
                          vector=(provider.embed([far.content])[0], key)) == "created"
        assert Fact.objects.count() == 3
