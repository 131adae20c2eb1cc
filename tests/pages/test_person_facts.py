"""The person's facts on their page: grouped by type, each with a link to the message it came
from, edited, marked "no longer true" (then shown apart), deleted, all as actor ``user``;
another person's or tenant's fact is a 404; the download and the API's export hold every
fact with its history (and the history left of deleted ones).

Facts are learnt the real way: captured over HTTP, then the augmentation task's function."""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect

from memoryhub.tasks import augment_conversation
from tests.pages.browser import Api, shot
from tests.pages.conftest import person, person_url, signed_in
from tests.pages.test_person_conversations import BROWSER, LIVE, messages

SAID = ["I live in Lisbon and I love jazz.", "Noted.", "My dog is called Rex.", "Nice name!"]


def _learn(kit, user: str = "alice", lines: list[str] = SAID) -> tuple[str, list[dict]]:
    response = kit.client.post(f"/api/v1/users/{user}/sessions/s-1/messages",
                               {"messages": messages(*lines, minutes=0)}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    augment_conversation(tenant_id=kit.tenant.id, conversation_id=body["conversation_id"])
    facts = kit.client.get(f"/api/v1/users/{user}/facts").json()["facts"]
    return body["conversation_id"], facts


def _by_object(facts: list[dict]) -> dict[str, dict]:
    return {f["object"]: f for f in facts}


@pytest.fixture
def alice(acme, acme_team):
    end_user = person(acme_team.tenant, "alice", account=acme_team.member)
    return end_user, signed_in(acme_team.member)


def test_facts_are_grouped_with_where_they_came_from(alice, acme) -> None:
    end_user, client = alice
    conversation, facts = _learn(acme)
    html = client.get(person_url(end_user)).content.decode()
    section = html[html.index('id="facts"'):html.index('id="conversations"')]
    assert section.index("About you") < section.index("User lives in Lisbon")
    assert section.index("What you like and dislike") < section.index("User loves jazz")
    assert section.index("People and pets") < section.index("User&#x27;s dog is called Rex")
    rex = _by_object(facts)["Rex"]
    [message_id] = rex["source"]["message_ids"]
    link = (f"{person_url(end_user)}conversations/{conversation}/?start=3#msg-{message_id}")
    assert f'href="{link}"' in section
    opened = client.get(link.split("#")[0]).content.decode()
    assert f'id="msg-{message_id}"' in opened and "My dog is called Rex." in opened


def test_edit_invalidate_and_delete_are_the_persons(alice, acme) -> None:
    end_user, client = alice
    _, facts = _learn(acme)
    facts = _by_object(facts)
    base = f"{person_url(end_user)}facts"
    lisbon, jazz, rex = facts["Lisbon"], facts["jazz"], facts["Rex"]
    response = client.post(f"{base}/{lisbon['id']}/edit",
                           {"content": "User lives in Porto", "version": lisbon["version"]})
    assert response.status_code == 302 and response["Location"].endswith("#facts")
    stale = client.post(f"{base}/{lisbon['id']}/edit",
                        {"content": "User lives in Faro", "version": lisbon["version"]})
    assert stale.status_code == 302
    client.post(f"{base}/{jazz['id']}/invalidate")
    client.post(f"{base}/{rex['id']}/delete")
    api = "/api/v1/users/alice/facts"
    after = {f["id"]: f for f in acme.client.get(api, {"include_invalid": "true"}).json()["facts"]}
    assert set(after) == {lisbon["id"], jazz["id"]}
    assert after[lisbon["id"]]["content"] == "User lives in Porto"
    assert after[jazz["id"]]["invalid_at"] is not None
    assert {f["updated_by"] for f in after.values()} == {"user"}
    history = acme.client.get(f"{api}/{jazz['id']}/history").json()["history"]
    assert [(h["event"], h["actor"]) for h in history][-1] == ("invalidated", "user")
    html = client.get(person_url(end_user)).content.decode()
    invalid = html[html.index('id="facts-invalid"'):html.index('id="conversations"')]
    assert "User loves jazz" in invalid and "User lives in Porto" not in invalid
    assert "Rex" not in html[html.index('id="facts"'):html.index('id="conversations"')]


def test_another_persons_or_tenants_fact_is_not_found(alice, acme, globex) -> None:
    end_user, client = alice
    _, theirs = _learn(globex)
    _, bobs = _learn(acme, user="bob")
    for fact in (theirs[0], bobs[0]):
        for action in ("edit", "invalidate", "delete"):
            response = client.post(f"{person_url(end_user)}facts/{fact['id']}/{action}",
                                   {"content": "x", "version": 1})
            assert response.status_code == 404
    assert len(globex.client.get("/api/v1/users/alice/facts").json()["facts"]) == 3


def test_the_download_and_the_export_hold_facts_and_their_history(alice, acme) -> None:
    end_user, client = alice
    _, facts = _learn(acme)
    rex = _by_object(facts)["Rex"]
    client.post(f"{person_url(end_user)}facts/{rex['id']}/delete")
    download = json.loads(client.get(f"{person_url(end_user)}export").content)
    exported = acme.client.get("/api/v1/users/alice/export").json()
    assert download["facts"] == exported["facts"] and len(exported["facts"]) == 2
    assert {f["object"] for f in exported["facts"]} == {"Lisbon", "jazz"}
    assert all(f["history"][0]["event"] == "created" for f in exported["facts"])
    [gone] = exported["deleted_facts"]
    assert gone["id"] == rex["id"]
    assert [h["event"] for h in gone["history"]] == ["created", "deleted"]


# --- in the browser -----------------------------------------------------------------------------


@BROWSER
@LIVE
def test_the_person_corrects_what_was_learnt(pages, acme, live_server) -> None:
    api = Api(live_server.url, acme.key)
    conversation = api.capture("alice", "s-1", messages(*SAID, minutes=0))["conversation_id"]
    augment_conversation(tenant_id=acme.tenant.id, conversation_id=conversation)
    page: Any = pages.new()
    page.goto(api.portal_link("alice"))
    facts = page.locator("#facts")
    expect(facts.get_by_role("heading", level=3)).to_have_text(
        ["About you", "What you like and dislike", "People and pets"])
    shot(page, "person-facts")
    rex = facts.locator(".fact", has_text="User's dog is called Rex")
    rex.get_by_role("link", name="where you said it").click()
    expect(page.locator(".turn.role-user", has_text="My dog is called Rex.")).to_be_in_viewport()
    page.go_back()

    lisbon = facts.locator(".fact", has_text="User lives in Lisbon")
    lisbon.get_by_text("Edit…").click()
    lisbon.get_by_label("Fact").fill("User lives in Porto")
    lisbon.get_by_role("button", name="Save").click()
    expect(page.locator("#facts")).to_contain_text("User lives in Porto")

    facts.locator(".fact", has_text="User loves jazz").get_by_role(
        "button", name="No longer true").click()
    expect(page.locator("#facts-invalid")).to_contain_text("User loves jazz")

    rex = page.locator("#facts .fact", has_text="User's dog is called Rex")
    rex.get_by_text("Delete…").click()
    rex.get_by_role("button", name="Yes, delete it").click()
    expect(page.locator("#facts")).not_to_contain_text("Rex")
    shot(page, "person-facts-corrected")
    left = api.http.get("/users/alice/facts", params={"include_invalid": "true"}).json()["facts"]
    assert sorted(f["content"] for f in left) == ["User lives in Porto", "User loves jazz"]
