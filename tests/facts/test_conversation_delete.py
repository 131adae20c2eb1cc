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


def _valid(kit) -> list[tuple[str, str | None]]:
    return sorted((f["object"], f["invalid_at"]) for f in facts(kit, include_invalid=True))


def test_what_a_deleted_conversation_contradicted_is_true_again(acme) -> None:
    """The move to Porto was augmentation's reading of the deleted conversation only: Lisbon,
    which it invalidated, is true again (updated, by the deleter), as a like that a deleted
    "no longer like" ended. It stayed invalid, ended by a fact that no longer existed."""
    first = capture(acme, "I live in Lisbon. I like jazz.", at="2026-01-01T10:00:00Z")
    augment(acme, first)
    second = capture(acme, "I moved to Porto. I no longer like jazz.", session="s2",
                     at="2026-06-01T10:00:00Z")
    augment(acme, second)
    lisbon = next(f for f in facts(acme, include_invalid=True) if f["object"] == "Lisbon")
    assert lisbon["invalid_at"] == "2026-06-01T10:00:00Z"
    before = len(_fact_changes(acme))

    _delete(acme, second)

    assert _valid(acme) == [("Lisbon", None), ("jazz", None)]
    history = acme.client.get(f"{FACTS}/{lisbon['id']}/history").json()["history"]
    assert [(h["version"], h["event"], h["actor"]) for h in history] == [
        (1, "created", "augmentation"), (2, "invalidated", "augmentation"), (3, "updated", "app")]
    assert sorted(_fact_changes(acme)[before:]) == [("deleted", "app")] * 2 + [("updated", "app")] * 2


def test_a_fact_still_contradicted_or_changed_since_stays_invalid(acme) -> None:
    first = capture(acme, "I live in Lisbon. I work at Acme.", at="2026-01-01T10:00:00Z")
    augment(acme, first)
    second = capture(acme, "I moved to Porto. I work at Globex.", session="s2",
                     at="2026-06-01T10:00:00Z")
    augment(acme, second)
    augment(acme, capture(acme, "I moved to Madrid.", session="s3", at="2026-09-01T10:00:00Z"))
    acme_fact = next(f for f in facts(acme, include_invalid=True) if f["object"] == "Acme")
    edited = acme.client.patch(f"{FACTS}/{acme_fact['id']}", {"confidence": 0.5}, format="json")
    assert edited.status_code == 200  # the app's edit of an invalid fact: its decision now

    _delete(acme, second)

    # Madrid still ends Lisbon; Acme was edited after Globex ended it.
    assert _valid(acme) == [("Acme", "2026-06-01T10:00:00Z"), ("Lisbon", "2026-06-01T10:00:00Z"),
                            ("Madrid", None)]


def test_a_statement_learnt_already_invalid_is_true_once_the_newer_one_goes(acme) -> None:
    newer = capture(acme, "I live in Porto.", at="2026-06-01T10:00:00Z")
    augment(acme, newer)
    augment(acme, capture(acme, "I live in Lisbon.", session="s2", at="2026-01-01T10:00:00Z"))
    assert _valid(acme) == [("Lisbon", "2026-06-01T10:00:00Z"), ("Porto", None)]
    _delete(acme, newer)
    assert _valid(acme) == [("Lisbon", None)]
