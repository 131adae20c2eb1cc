"""The facts API over HTTP (spec: Facts): create and duplicates, the list and its filters,
ETags and If-Match, edits, invalidation, deletion, history, content rules, events, and
forget-everything leaving no fact or history row behind."""

from __future__ import annotations

import pytest

from memoryhub.models import Fact, FactSourceKey, FactVersion, MemoryEvent
from tenants.context import tenant_context

FACTS = "/api/v1/users/alice/facts"


def create(kit, content: str = "User prefers dark mode", **extra):
    response = kit.client.post(FACTS, {"content": content, **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def fact_events(kit) -> list[dict]:
    feed = kit.client.get("/api/v1/events", {"limit": 1000}).json()["events"]
    return [e["data"] for e in feed if e["type"] == "fact.changed"]


def test_create_answers_the_fact_with_its_etag_and_a_duplicate_the_existing_one(acme) -> None:
    response = acme.client.post(FACTS, {
        "content": "User prefers dark mode", "type": "preference", "subject": "user",
        "predicate": "prefers", "object": "dark mode", "confidence": 0.9,
        "source": {"conversation_id": None, "message_ids": ["m-1"]}}, format="json")
    assert response.status_code == 201, response.content
    fact = response.json()
    assert response["ETag"] == '"1"'
    assert fact["type"] == "preference" and fact["version"] == 1
    assert fact["updated_by"] == "app" and fact["invalid_at"] is None
    assert fact["subject"] == "user" and fact["object"] == "dark mode" and fact["process"] is None
    assert fact["source"] == {"conversation_id": None, "message_ids": ["m-1"]}

    again = acme.client.post(FACTS, {"content": "user  PREFERS dark mode."}, format="json")
    assert again.status_code == 200
    assert again.json()["id"] == fact["id"] and again.json()["version"] == 1
    assert acme.client.get(FACTS).json()["facts"] == [fact]
    assert fact_events(acme) == [{"change": "created", "fact_id": fact["id"], "type": "preference"}]


def test_the_list_is_newest_first_filtered_and_paginated(acme) -> None:
    first = create(acme, "User likes tea", type="preference")
    second = create(acme, "User is onboarded", type="process_attribute", process="support-agent")
    third = create(acme, "User lives in Lisbon", type="profile")
    acme.client.patch(f"{FACTS}/{first['id']}", {"invalid_at": "2026-01-01T00:00:00Z"},
                      format="json")

    ids = [f["id"] for f in acme.client.get(FACTS).json()["facts"]]
    assert ids == [third["id"], second["id"]]  # invalid left out
    everything = acme.client.get(FACTS, {"include_invalid": "true"}).json()["facts"]
    assert [f["id"] for f in everything] == [third["id"], second["id"], first["id"]]
    assert [f["id"] for f in acme.client.get(FACTS, {"type": "profile"}).json()["facts"]] == [third["id"]]
    by_process = acme.client.get(FACTS, {"process": "support-agent"}).json()["facts"]
    assert [f["id"] for f in by_process] == [second["id"]]

    page = acme.client.get(FACTS, {"limit": 1, "include_invalid": "true"}).json()
    assert [f["id"] for f in page["facts"]] == [third["id"]] and page["next_cursor"]
    rest = acme.client.get(FACTS, {"limit": 5, "include_invalid": "true",
                                   "cursor": page["next_cursor"]}).json()
    assert [f["id"] for f in rest["facts"]] == [second["id"], first["id"]]
    assert rest["next_cursor"] is None

    assert acme.client.get(FACTS, {"type": "opinion"}).json()["error"]["code"] == "invalid_type"
    assert acme.client.get(FACTS, {"cursor": "nope"}).json()["error"]["code"] == "invalid_cursor"
    assert acme.client.get("/api/v1/users/nobody/facts").json() == {"facts": [], "next_cursor": None}


def test_patch_honours_if_match_and_keeps_history(acme) -> None:
    fact = create(acme, "User likes tea")
    url = f"{FACTS}/{fact['id']}"
    stale = acme.client.patch(url, {"content": "User likes green tea"}, format="json",
                              HTTP_IF_MATCH='"7"')
    assert stale.status_code == 412 and stale.json()["error"]["code"] == "precondition_failed"

    edited = acme.client.patch(url, {"content": "User likes green tea", "confidence": 0.5},
                               format="json", HTTP_IF_MATCH='"1"')
    assert edited.status_code == 200, edited.content
    assert edited["ETag"] == '"2"'
    assert edited.json()["content"] == "User likes green tea" and edited.json()["confidence"] == 0.5
    invalid = acme.client.patch(url, {"invalid_at": "2026-03-01T10:00:00Z"}, format="json").json()
    assert invalid["version"] == 3 and invalid["invalid_at"] == "2026-03-01T10:00:00Z"

    got = acme.client.get(url)
    assert got["ETag"] == '"3"'
    assert acme.client.get(url, HTTP_IF_NONE_MATCH='"3"').status_code == 304
    history = acme.client.get(f"{url}/history").json()["history"]
    assert [(h["version"], h["event"], h["content"], h["actor"]) for h in history] == [
        (1, "created", "User likes tea", "app"),
        (2, "updated", "User likes green tea", "app"),
        (3, "invalidated", "User likes green tea", "app"),
    ]
    assert [e["change"] for e in fact_events(acme)] == ["created", "updated", "invalidated"]


def test_delete_honours_if_match_and_hides_the_history(acme) -> None:
    fact = create(acme)
    url = f"{FACTS}/{fact['id']}"
    assert acme.client.delete(url, HTTP_IF_MATCH='"2"').status_code == 412
    # If-Match compares strongly (RFC 9110, 13.1.1), as for documents: a weak tag matches nothing.
    assert acme.client.delete(url, HTTP_IF_MATCH='W/"1"').status_code == 412
    assert acme.client.patch(url, {"confidence": 0.2}, format="json",
                             HTTP_IF_MATCH='W/"1", "7"').status_code == 412
    assert acme.client.delete(url, HTTP_IF_MATCH='"1"').status_code == 204
    assert acme.client.get(url).status_code == 404
    assert acme.client.get(f"{url}/history").status_code == 404
    assert acme.client.delete(url).status_code == 404
    assert acme.client.patch(url, {"confidence": 1.0}, format="json").status_code == 404
    assert [e["change"] for e in fact_events(acme)] == ["created", "deleted"]
    with tenant_context(acme.tenant.id):  # what happened, kept until forget-everything
        assert list(FactVersion.objects.values_list("event", flat=True).order_by("id")) == [
            "created", "deleted"]


def test_a_deleted_fact_leaves_no_copy_of_its_text(acme) -> None:
    """Its history stayed with every version's text until the person was forgotten, and the
    person's download showed it: deleting "User is pregnant" kept it. The events stay, as what
    happened and when, without the text."""
    fact = create(acme, "User is pregnant")
    url = f"{FACTS}/{fact['id']}"
    acme.client.patch(url, {"content": "User is pregnant with twins"}, format="json")
    assert acme.client.delete(url).status_code == 204
    export = acme.client.get("/api/v1/users/alice/export").content.decode()
    assert "pregnant" not in export
    with tenant_context(acme.tenant.id):
        rows = list(FactVersion.objects.values_list("event", "content").order_by("id"))
    assert rows == [("created", ""), ("updated", ""), ("deleted", "")]


@pytest.mark.parametrize(("content", "code"), [
    ("x" * 2001, "fact_too_large"),
    ("é" * 1001, "fact_too_large"),
    ("My key is sk-ant-api03-" + "a" * 40, "credential_detected"),
    ("nul \x00 inside", "not_text"),
    ("   ", "not_text"),
])
def test_content_rules_refuse_with_422(acme, content: str, code: str) -> None:
    response = acme.client.post(FACTS, {"content": content}, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == code
    fact = create(acme)
    patched = acme.client.patch(f"{FACTS}/{fact['id']}", {"content": content}, format="json")
    assert patched.status_code == 422 and patched.json()["error"]["code"] == code


@pytest.mark.parametrize("field", ["subject", "predicate", "object"])
def test_a_credential_in_a_facts_triple_is_refused_too(acme, field: str) -> None:
    body = {"content": "User keeps a key", "type": "triple", "subject": "user",
            "predicate": "keeps", "object": "a key", field: "AKIAIOSFODNN7EXAMPLE"}
    response = acme.client.post(FACTS, body, format="json")
    assert response.status_code == 422, response.content
    assert response.json()["error"]["code"] == "credential_detected"
    assert acme.client.get(FACTS).json()["facts"] == []


def test_a_fact_of_2000_bytes_is_accepted(acme) -> None:
    assert create(acme, "x" * 2000)["content"] == "x" * 2000


def test_bad_bodies_and_ids(acme) -> None:
    assert acme.client.post(FACTS, {"content": "a", "colour": "red"},
                            format="json").status_code == 400
    assert acme.client.post(FACTS, {"content": "a", "type": "opinion"},
                            format="json").status_code == 400
    assert acme.client.post(FACTS, {"content": "a", "confidence": 2},
                            format="json").status_code == 400
    assert acme.client.get(f"{FACTS}/not-a-uuid").status_code == 404
    assert acme.client.get("/api/v1/users/bad%20id/facts").status_code == 400


def test_a_fact_in_its_own_shape_with_nulls_is_created_as_it_reads(acme) -> None:
    fact = create(acme, "User prefers dark mode", type=None, subject=None, predicate=None,
                  object=None, process=None, confidence=None, valid_at=None, invalid_at=None,
                  source=None)
    assert (fact["type"], fact["confidence"], fact["invalid_at"]) == ("fact", 1.0, None)
    assert fact["valid_at"] is not None and fact["source"]["message_ids"] == []



def test_a_fact_of_the_past_is_created_no_longer_true_and_beside_a_valid_twin(acme) -> None:
    valid = create(acme, "User lives in Paris")
    past = create(acme, "User lives in Paris", valid_at="2020-01-01T00:00:00Z",
                  invalid_at="2023-06-01T00:00:00Z")
    assert past["id"] != valid["id"]
    assert (past["valid_at"], past["invalid_at"]) == ("2020-01-01T00:00:00Z", "2023-06-01T00:00:00Z")
    assert [f["id"] for f in acme.client.get(FACTS).json()["facts"]] == [valid["id"]]
    everything = acme.client.get(FACTS, {"include_invalid": "true"}).json()["facts"]
    assert {f["id"] for f in everything} == {valid["id"], past["id"]}
    assert acme.client.get(f"{FACTS}/{past['id']}/history").json()["history"][0]["event"] == "created"


def test_a_fact_cannot_stop_being_true_before_it_was_stated(acme) -> None:
    """A POST naming both times, invalid_at before valid_at, was stored as sent: a fact no
    longer true before it was true. Now 400, naming both times, and nothing is written. A fact
    of the past sent without valid_at was stated "now", after it stopped being true: it is
    taken as stated when it stopped."""
    refused = acme.client.post(FACTS, {"content": "User lives in Rome",
                                       "valid_at": "2024-01-01T00:00:00Z",
                                       "invalid_at": "2023-01-01T00:00:00Z"}, format="json")
    assert refused.status_code == 400, refused.content
    assert refused.json()["error"]["code"] == "invalid_request"
    assert "is before valid_at" in refused.json()["error"]["message"]
    with tenant_context(acme.tenant.id):
        assert not Fact.objects.exists()
    past = create(acme, "User lived in Oslo", invalid_at="2023-01-01T00:00:00Z")
    assert past["valid_at"] == past["invalid_at"] == "2023-01-01T00:00:00Z"
    # A PATCH may still date an end before the time a fact was recorded (valid_at defaults to
    # when it was written, not when it became true).


def test_memory_off_for_the_person_refuses_a_new_fact(acme) -> None:
    acme.client.patch("/api/v1/users/alice", {"memory_enabled": False}, format="json")
    response = acme.client.post(FACTS, {"content": "User likes tea"}, format="json")
    assert response.status_code == 403 and response.json()["error"]["code"] == "memory_disabled"


def test_forget_everything_leaves_no_fact_history_or_key(acme, globex) -> None:
    fact = create(acme)
    acme.client.patch(f"{FACTS}/{fact['id']}", {"confidence": 0.4}, format="json")
    deleted = create(acme, "User likes tea")
    acme.client.delete(f"{FACTS}/{deleted['id']}")
    create(globex, "User likes tea")
    with tenant_context(acme.tenant.id):
        end_user = Fact.objects.get().end_user
        FactSourceKey.objects.create(tenant=acme.tenant, end_user=end_user, key="k", fact_id=None)
    assert acme.client.delete("/api/v1/users/alice").status_code == 204
    with tenant_context(acme.tenant.id):
        assert not Fact.objects.exists()
        assert not FactVersion.objects.exists()
        assert not FactSourceKey.objects.exists()
        assert not MemoryEvent.objects.filter(type="fact.changed").exists()
    with tenant_context(globex.tenant.id):
        assert Fact.objects.count() == 1 and FactVersion.objects.count() == 1


def test_a_process_attribute_is_the_same_fact_only_within_its_process(acme) -> None:
    """A process attribute is a tag of one process: the same tag for another process is a
    fact of its own. It was answered 200 with the first process's fact."""
    tag = {"content": "onboarding-complete", "type": "process_attribute"}
    first = acme.client.post(FACTS, {**tag, "process": "support-agent"}, format="json")
    other = acme.client.post(FACTS, {**tag, "process": "sales-agent"}, format="json")
    again = acme.client.post(FACTS, {**tag, "process": "support-agent"}, format="json")
    assert (first.status_code, other.status_code, again.status_code) == (201, 201, 200)
    assert other.json()["id"] != first.json()["id"] and again.json()["id"] == first.json()["id"]
    assert other.json()["process"] == "sales-agent"
