"""Deleting a conversation removes what augmentation took only from it (spec: Conversations,
"DELETE also removes what augmentation took only from it"), over the API, and retention,
which deletes through the same function, does the same."""

from __future__ import annotations

from django.utils import timezone

from memoryhub.models import Conversation, Fact, FactSourceKey
from memoryhub.services.conversations import conversations_expired_purge
from tenants.context import tenant_context
from tests.facts.test_augmentation import FACTS, USER, augment, capture, facts


def _delete(kit, conversation_id: str) -> None:
    response = kit.client.delete(f"/api/v1/users/{USER}/conversations/{conversation_id}")
    assert response.status_code == 204, response.content


def _fact_changes(kit) -> list[tuple[str, str]]:
    feed = kit.client.get("/api/v1/events", {"limit": 100}).json()["events"]
    return [(e["data"]["change"], e["actor"]) for e in feed if e["type"] == "fact.changed"]


def test_a_fact_only_that_conversation_stated_goes_with_it(acme) -> None:
    first = capture(acme, "I live in Lisbon.", "I love jazz.")
    augment(acme, first)
    second = capture(acme, "I love jazz!", session="s2")
    augment(acme, second)
    made = acme.client.post(FACTS, {"content": "User likes tea"}, format="json").json()
    lisbon = next(f for f in facts(acme) if f["object"] == "Lisbon")
    jazz = next(f for f in facts(acme) if f["object"] == "jazz")
    assert len(jazz["source"]["message_ids"]) == 2
    before = len(_fact_changes(acme))

    _delete(acme, first)

    left = {f["id"]: f for f in facts(acme, include_invalid=True)}
    assert set(left) == {jazz["id"], made["id"]}  # the app's own fact has no source: kept
    kept = left[jazz["id"]]
    assert kept["source"] == {"conversation_id": second,
                              "message_ids": [jazz["source"]["message_ids"][1]]}
    assert kept["version"] == jazz["version"] + 1
    assert acme.client.get(f"{FACTS}/{lisbon['id']}").status_code == 404
    history = acme.client.get(f"{FACTS}/{jazz['id']}/history").json()["history"]
    assert [(h["event"], h["actor"]) for h in history][-1] == ("updated", "app")
    assert sorted(_fact_changes(acme)[before:]) == [("deleted", "app"), ("updated", "app")]
    with tenant_context(acme.tenant.id):
        assert not FactSourceKey.objects.filter(fact_id=lisbon["id"]).exists()
        assert FactSourceKey.objects.filter(fact_id=jazz["id"]).exists()


def test_retention_removes_the_facts_of_the_conversations_it_deletes(acme) -> None:
    old = capture(acme, "I work at Acme.", at="2020-01-01T10:00:00Z")
    augment(acme, old)
    augment(acme, capture(acme, "I love hiking.", session="s2"))
    acme.tenant.conversation_days = 30
    acme.tenant.save(update_fields=["conversation_days"])
    with tenant_context(acme.tenant.id):
        assert conversations_expired_purge(tenant=acme.tenant, now=timezone.now()) == 1
        assert not Conversation.objects.filter(id=old).exists()
        assert list(Fact.objects.values_list("object", flat=True)) == ["hiking"]


def test_a_fact_that_also_names_a_message_id_of_the_apps_own_keeps_it(acme) -> None:
    # The facts API takes any string as a source message id (the app's own, such as "m-1"):
    # deleting the conversation of the fact's other message must not read it as one of ours.
    conversation = capture(acme, "hello there")
    message = acme.client.get(f"/api/v1/users/{USER}/sessions/s1/messages").json()["messages"][0]
    made = acme.client.post(FACTS, {"content": "User says hello", "source": {
        "conversation_id": conversation, "message_ids": ["m-1", message["id"]]}}, format="json")
    assert made.status_code == 201, made.content

    _delete(acme, conversation)

    kept = acme.client.get(f"{FACTS}/{made.json()['id']}").json()
    assert kept["source"] == {"conversation_id": None, "message_ids": ["m-1"]}


def test_an_apps_fact_that_augmentation_merged_a_message_into_stays(acme) -> None:
    # Augmentation took nothing from the conversation but a source: the fact is the app's.
    made = acme.client.post(FACTS, {"content": "User likes jazz"}, format="json").json()
    conversation = capture(acme, "I like jazz.")
    augment(acme, conversation)
    merged = acme.client.get(f"{FACTS}/{made['id']}").json()
    assert merged["source"]["conversation_id"] == conversation
    assert len(merged["source"]["message_ids"]) == 1

    _delete(acme, conversation)

    kept = acme.client.get(f"{FACTS}/{made['id']}")
    assert kept.status_code == 200, kept.content
    assert kept.json()["source"] == {"conversation_id": None, "message_ids": []}
    assert kept.json()["content"] == "User likes jazz"


def test_a_learnt_fact_the_person_edited_stays_when_its_conversation_goes(acme) -> None:
    conversation = capture(acme, "I live in Lisbon.", "I love jazz.")
    augment(acme, conversation)
    jazz = next(f for f in facts(acme) if f["object"] == "jazz")
    edited = acme.client.patch(f"{FACTS}/{jazz['id']}", {"confidence": 0.5},
                               format="json").json()
    assert edited["updated_by"] == "app"

    _delete(acme, conversation)

    [kept] = facts(acme, include_invalid=True)  # Lisbon, augmentation's alone, went with it
    assert kept["id"] == jazz["id"] and kept["confidence"] == 0.5
    assert kept["source"] == {"conversation_id": None, "message_ids": []}
