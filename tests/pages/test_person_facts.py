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

from memoryhub.models import EndUser
from memoryhub.tasks import augment_conversation
from tenants.context import tenant_context
from tests.pages.browser import Api, shot
from tests.pages.conftest import person, person_url, signed_in
from tests.pages.test_person_conversations import BROWSER, LIVE, messages
from tests.pages.test_person_page import HTMX

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
    section = _facts_section(client.get(person_url(end_user)).content.decode())
    assert section.index("About you") < section.index("User lives in Lisbon")
    assert section.index("What you like and dislike") < section.index("User loves jazz")
    assert section.index("People and pets") < section.index("User&#x27;s dog is called Rex")
    rex = _by_object(facts)["Rex"]
    [message_id] = rex["source"]["message_ids"]
    link = (f"{person_url(end_user)}conversations/{conversation}/?start=3#msg-{message_id}")
    assert f'href="{link}"' in section
    opened = client.get(link.split("#")[0]).content.decode()
    assert f'id="msg-{message_id}"' in opened and "My dog is called Rex." in opened


def _api_facts(kit, user: str = "alice") -> dict[str, dict]:
    facts = kit.client.get(f"/api/v1/users/{user}/facts", {"include_invalid": "true"}).json()
    return {f["id"]: f for f in facts["facts"]}


def _facts_section(html: str) -> str:
    return html[html.index('id="facts"'):html.index('id="conversations"')]


def test_edit_invalidate_and_delete_are_the_persons(alice, acme) -> None:
    """Without htmx: plain forms, post/redirect/get, a refused edit shown on the page."""
    end_user, client = alice
    _, facts = _learn(acme)
    facts = _by_object(facts)
    base = f"{person_url(end_user)}facts"
    lisbon, jazz, rex = facts["Lisbon"], facts["jazz"], facts["Rex"]
    form = client.get(f"{base}/{lisbon['id']}/edit").content.decode()
    assert "<html" in form and f'id="fact-{lisbon["id"]}-content"' in form
    response = client.post(f"{base}/{lisbon['id']}/edit",
                           {"content": "User lives in Porto", "version": lisbon["version"]})
    assert response.status_code == 302
    assert response["Location"] == f"{person_url(end_user)}#fact-{lisbon['id']}"
    stale = client.post(f"{base}/{lisbon['id']}/edit",
                        {"content": "User lives in Faro", "version": lisbon["version"]})
    assert stale.status_code == 409
    assert "User lives in Porto" in stale.content.decode()  # the newer text, to edit again
    assert client.get(f"{base}/{lisbon['id']}/")["Location"].endswith(f"#fact-{lisbon['id']}")
    assert client.post(f"{base}/{jazz['id']}/invalidate",
                       {"version": jazz["version"]}).status_code == 302
    client.post(f"{base}/{rex['id']}/delete", {"version": rex["version"]})
    after = _api_facts(acme)
    assert set(after) == {lisbon["id"], jazz["id"]}
    assert after[lisbon["id"]]["content"] == "User lives in Porto"
    assert after[jazz["id"]]["invalid_at"] is not None
    assert {f["updated_by"] for f in after.values()} == {"user"}
    history = acme.client.get(f"/api/v1/users/alice/facts/{jazz['id']}/history").json()["history"]
    assert [(h["event"], h["actor"]) for h in history][-1] == ("invalidated", "user")
    html = client.get(person_url(end_user)).content.decode()
    invalid = html[html.index('id="facts-invalid"'):html.index('id="conversations"')]
    assert "User loves jazz" in invalid and "User lives in Porto" not in invalid
    assert "Rex" not in _facts_section(html)


def test_htmx_edits_a_fact_in_place(alice, acme) -> None:
    end_user, client = alice
    _, facts = _learn(acme)
    lisbon = _by_object(facts)["Lisbon"]
    item = f'<li id="fact-{lisbon["id"]}"'
    edit = f"{person_url(end_user)}facts/{lisbon['id']}/edit"
    form = client.get(edit, **HTMX).content.decode()
    assert "<html" not in form and form.lstrip().startswith(item)
    assert "User lives in Lisbon</textarea>" in form and 'name="version" value="1"' in form
    cancelled = client.get(f"{person_url(end_user)}facts/{lisbon['id']}/", **HTMX).content.decode()
    assert cancelled.lstrip().startswith(item) and "<textarea" not in cancelled

    blank = client.post(edit, {"content": "  ", "version": 1}, **HTMX)
    assert blank.status_code == 422 and "Write the fact to save." in blank.content.decode()
    secret = client.post(edit, {"content": "My key is sk-ant-api03-" + "a" * 40, "version": 1},
                         **HTMX)
    assert secret.status_code == 422 and "looks like a credential" in secret.content.decode()
    saved = client.post(edit, {"content": "User lives in Porto", "version": 1}, **HTMX)
    html = saved.content.decode()
    assert saved.status_code == 200 and html.lstrip().startswith(item)
    assert "User lives in Porto" in html and "<textarea" not in html
    assert 'id="notice"' in html and "Saved: User lives in Porto" in html
    # The app edits it meanwhile: a save from the old form is refused, the newer text shown.
    acme.client.patch(f"/api/v1/users/alice/facts/{lisbon['id']}",
                      {"content": "User lives in Braga"}, format="json")
    stale = client.post(edit, {"content": "User lives in Faro", "version": 2}, **HTMX)
    html = stale.content.decode()
    assert stale.status_code == 409 and "changed after you opened it" in html
    assert "User lives in Braga</textarea>" in html and 'name="version" value="3"' in html
    assert '<pre class="content">User lives in Faro</pre>' in html
    assert _api_facts(acme)[lisbon["id"]]["content"] == "User lives in Braga"


def test_htmx_marks_no_longer_true_and_deletes_refreshing_the_section(alice, acme) -> None:
    end_user, client = alice
    _, facts = _learn(acme)
    facts = _by_object(facts)
    base = f"{person_url(end_user)}facts"
    jazz, rex = facts["jazz"], facts["Rex"]
    marked = client.post(f"{base}/{jazz['id']}/invalidate", {"version": 1}, **HTMX)
    html = marked.content.decode()
    assert marked.status_code == 200 and html.lstrip().startswith('<section id="facts"')
    assert "User loves jazz" in html[html.index('id="facts-invalid"'):]
    assert "Marked as no longer true: User loves jazz" in html
    # A delete from a page showing an older version is refused; nothing goes.
    acme.client.patch(f"/api/v1/users/alice/facts/{rex['id']}", {"confidence": 0.5},
                      format="json")
    refused = client.post(f"{base}/{rex['id']}/delete", {"version": 1}, **HTMX).content.decode()
    assert "changed after you opened it and was not deleted" in refused and "is-error" in refused
    assert rex["id"] in _api_facts(acme)
    deleted = client.post(f"{base}/{rex['id']}/delete", {"version": 2}, **HTMX).content.decode()
    assert "Deleted: User&#x27;s dog is called Rex" in deleted
    assert f'id="fact-{rex["id"]}"' not in deleted
    assert rex["id"] not in _api_facts(acme)


def test_another_persons_or_tenants_fact_is_not_found(alice, acme, globex) -> None:
    end_user, client = alice
    _, theirs = _learn(globex)
    _, bobs = _learn(acme, user="bob")
    for fact in (theirs[0], bobs[0]):
        url = f"{person_url(end_user)}facts/{fact['id']}/"
        # A plain request: no such page. htmx: the same notice as for a fact deleted
        # elsewhere, with the section refreshed.
        for headers, status in (({}, 404), (HTMX, 200)):
            answers = [client.get(url, **headers), client.get(f"{url}edit", **headers)]
            answers += [client.post(f"{url}{action}", {"content": "x", "version": 1}, **headers)
                        for action in ("edit", "invalidate", "delete")]
            assert {a.status_code for a in answers} == {status}
            if headers:
                assert all("This fact was deleted after the page showed it" in a.text
                           for a in answers[:2] + answers[3:])
            # A Save answers as one on a fact deleted meanwhile: its text comes back to copy.
            save = answers[2]
            assert "This fact was deleted after you opened it; nothing was saved." in save.text
            assert '<pre class="content">x</pre>' in save.text
    assert len(globex.client.get("/api/v1/users/alice/facts").json()["facts"]) == 3


def test_a_fact_whose_source_the_app_named_is_on_the_page(alice, acme) -> None:
    """The API keeps any string as a source (an app's own ids); one that is not a message id
    (or is another person's message) is shown as no message. Before: the facts query failed
    on "m-1" (not a UUID), so the section said "No facts are kept" and the fact's own views
    were 500: the person could neither see nor delete what was kept about them."""
    end_user, client = alice
    _, bobs = _learn(acme, user="bob")
    bobs_message = bobs[0]["source"]["message_ids"][0]
    response = acme.client.post("/api/v1/users/alice/facts", {
        "content": "User plays chess", "source": {
            "conversation_id": "c-1", "message_ids": ["m-1", bobs_message, "M-2"]}},
        format="json")
    assert response.status_code == 201, response.content
    fact = response.json()
    section = _facts_section(client.get(person_url(end_user)).content.decode())
    assert "User plays chess" in section and "No facts are kept" not in section
    assert bobs_message not in section and "c-1" not in section
    url = f"{person_url(end_user)}facts/{fact['id']}/"
    for headers in ({}, HTMX):
        assert client.get(f"{url}edit", **headers).status_code == 200
    assert client.get(url, **HTMX).status_code == 200
    edited = client.post(f"{url}edit", {"content": "User plays go", "version": 1}, **HTMX)
    assert edited.status_code == 200 and "User plays go" in edited.text
    assert client.post(f"{url}delete", {"version": 2}, **HTMX).status_code == 200
    assert acme.client.get(f"/api/v1/users/alice/facts/{fact['id']}").status_code == 404


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


def _kept_page(page: Any) -> None:
    """Marks the loaded document: an htmx swap keeps the mark, a page load loses it."""
    page.evaluate("window.keptPage = true")


def _still_kept(page: Any) -> bool:
    return page.evaluate("window.keptPage === true")


def _fact_edit_path(acme: Any, fact_id: str) -> str:
    """Where a fact's edit form posts (a refused save answers 422 or 409 there)."""
    with tenant_context(acme.tenant.id):
        alice = EndUser.objects.get(user_id="alice")
    return person_url(alice, "web:fact_edit", fact_id=fact_id)


def _learnt_page(pages, acme, live_server,
                 said: list[tuple[str, list[dict]]] | None = None,
                 ) -> tuple[Api, Any, list[str]]:
    """alice's page, opened after each session's messages (``SAID`` in s-1 by default) were
    captured over HTTP and learnt from by the augmentation task."""
    api = Api(live_server.url, acme.key)
    conversations = []
    for session, lines in said or [("s-1", messages(*SAID, minutes=0))]:
        conversation = api.capture("alice", session, lines)["conversation_id"]
        augment_conversation(tenant_id=acme.tenant.id, conversation_id=conversation)
        conversations.append(conversation)
    page: Any = pages.new()
    page.goto(api.portal_link("alice"))
    return api, page, conversations


@BROWSER
@LIVE
def test_the_person_corrects_what_was_learnt(pages, acme, live_server) -> None:
    api, page, _ = _learnt_page(pages, acme, live_server)
    facts = page.locator("#facts")
    expect(facts.get_by_role("heading", level=3)).to_have_text(
        ["About you", "What you like and dislike", "People and pets"])
    shot(page, "person-facts")
    rex = facts.locator(".fact", has_text="User's dog is called Rex")
    rex.get_by_role("link", name="where you said it").click()
    expect(page.locator(".turn.role-user", has_text="My dog is called Rex.")).to_be_in_viewport()
    page.go_back()
    _kept_page(page)

    # Edit in place: the form replaces the fact, Cancel brings it back, Save keeps the text.
    lisbon = facts.locator(".fact", has_text="User lives in Lisbon")
    lisbon_id = lisbon.get_attribute("id")
    pages.expect_failed_load(422, _fact_edit_path(acme, lisbon_id.removeprefix("fact-")))
    lisbon.get_by_role("link", name="Edit").click()
    field = page.locator(f"#{lisbon_id}").get_by_label("Fact")
    expect(field).to_be_focused()
    field.fill("User lives in Faro")
    page.locator(f"#{lisbon_id}").get_by_role("link", name="Cancel").click()
    expect(page.locator(f"#{lisbon_id} .fact-content")).to_have_text("User lives in Lisbon")
    page.locator(f"#{lisbon_id}").get_by_role("link", name="Edit").click()
    page.locator(f"#{lisbon_id}").get_by_label("Fact").fill("   ")
    page.locator(f"#{lisbon_id}").get_by_role("button", name="Save").click()
    expect(page.locator(f"#{lisbon_id} .errors")).to_have_text("Write the fact to save.")
    page.locator(f"#{lisbon_id}").get_by_label("Fact").fill("User lives in Porto")
    page.locator(f"#{lisbon_id}").get_by_role("button", name="Save").click()
    expect(page.locator(f"#{lisbon_id} .fact-content")).to_have_text("User lives in Porto")
    expect(page.locator("#notice")).to_have_text("Saved: User lives in Porto")
    expect(page.locator(f"#{lisbon_id}").get_by_role("link", name="Edit")).to_be_focused()

    # "No longer true" moves the fact apart; the rest of the page stays as it was.
    facts.locator(".fact", has_text="User loves jazz").get_by_role(
        "button", name="No longer true").click()
    expect(page.locator("#facts-invalid")).to_contain_text("User loves jazz")
    expect(page.locator("#notice")).to_have_text("Marked as no longer true: User loves jazz")

    # Delete asks first.
    rex = page.locator("#facts .fact", has_text="User's dog is called Rex")
    rex.get_by_text("Delete…").click()
    rex.get_by_role("button", name="Yes, delete it").click()
    expect(page.locator("#facts")).not_to_contain_text("Rex")
    expect(page.locator("#facts-heading")).to_be_focused()
    assert _still_kept(page)  # every step was a swap, not a page load
    shot(page, "person-facts-corrected")
    left = api.http.get("/users/alice/facts", params={"include_invalid": "true"}).json()["facts"]
    assert sorted(f["content"] for f in left) == ["User lives in Porto", "User loves jazz"]
    assert {f["updated_by"] for f in left} == {"user"}


@BROWSER
@LIVE
def test_a_stale_fact_edit_shows_the_newer_text(pages, acme, live_server) -> None:
    api, page, _ = _learnt_page(pages, acme, live_server)
    _kept_page(page)
    lisbon = page.locator("#facts .fact", has_text="User lives in Lisbon")
    lisbon_id = lisbon.get_attribute("id")
    fact_id = lisbon_id.removeprefix("fact-")
    pages.expect_failed_load(409, _fact_edit_path(acme, fact_id))  # the stale save
    lisbon.get_by_role("link", name="Edit").click()
    item = page.locator(f"#{lisbon_id}")
    item.get_by_label("Fact").fill("User lives in Faro")
    # The app changes the fact while the person types.
    assert api.http.patch(f"/users/alice/facts/{fact_id}",
                          json={"content": "User lives in Braga"}).status_code == 200
    item.get_by_role("button", name="Save").click()
    expect(item.get_by_role("alert")).to_contain_text("changed after you opened it")
    expect(item.get_by_label("Fact")).to_have_value("User lives in Braga")
    expect(item.locator(".attempted pre")).to_have_text("User lives in Faro")
    assert api.http.get(f"/users/alice/facts/{fact_id}").json()["content"] == "User lives in Braga"
    item.get_by_label("Fact").fill("User lives in Faro")  # knowing the newer text, it wins
    item.get_by_role("button", name="Save").click()
    expect(page.locator(f"#{lisbon_id} .fact-content")).to_have_text("User lives in Faro")
    assert _still_kept(page)
    after = api.http.get(f"/users/alice/facts/{fact_id}").json()
    assert (after["content"], after["updated_by"], after["version"]) == (
        "User lives in Faro", "user", 3)


@BROWSER
@LIVE
def test_a_fact_being_edited_survives_another_fact_changing(pages, acme, live_server) -> None:
    """Marking one fact no longer true, or deleting one, refreshes the whole section: a fact
    the person is correcting meanwhile stays open with what they typed."""
    api, page, _ = _learnt_page(pages, acme, live_server)
    facts = page.locator("#facts")
    lisbon_id = facts.locator(".fact", has_text="User lives in Lisbon").get_attribute("id")
    lisbon = page.locator(f"#{lisbon_id}")
    lisbon.get_by_role("link", name="Edit").click()
    lisbon.get_by_label("Fact").fill("User lives in Faro, half typed")
    facts.locator(".fact", has_text="User loves jazz").get_by_role(
        "button", name="No longer true").click()
    expect(page.locator("#facts-invalid")).to_contain_text("User loves jazz")
    expect(lisbon.get_by_label("Fact")).to_have_value("User lives in Faro, half typed")
    rex = facts.locator(".fact", has_text="User's dog is called Rex")
    rex.get_by_text("Delete…").click()
    rex.get_by_role("button", name="Yes, delete it").click()
    expect(facts).not_to_contain_text("Rex")
    expect(lisbon.get_by_label("Fact")).to_have_value("User lives in Faro, half typed")
    lisbon.get_by_role("button", name="Save").click()
    expect(lisbon.locator(".fact-content")).to_have_text("User lives in Faro, half typed")
    fact_id = lisbon_id.removeprefix("fact-")
    assert api.http.get(f"/users/alice/facts/{fact_id}").json()["content"] == (
        "User lives in Faro, half typed")


@BROWSER
@LIVE
def test_deleting_a_conversation_takes_what_was_learnt_only_from_it_off_the_page(
        pages, acme, live_server) -> None:
    """The spec's DELETE of a conversation also removes what augmentation took only from it:
    the page's facts follow at once, not only after a reload; a fact being corrected in
    another conversation's facts stays open with what the person typed."""
    api, page, (first, _) = _learnt_page(pages, acme, live_server,
                                         [("s-1", messages(*SAID, minutes=0)),
                                          ("s-2", messages("I work at Acme.", minutes=60))])
    facts = page.locator("#facts")
    acme_id = facts.locator(".fact", has_text="Acme").get_attribute("id")
    work = page.locator(f"#{acme_id}")
    work.get_by_role("link", name="Edit").click()
    work.get_by_label("Fact").fill("User works at Acme, typing")
    conversation = page.locator(f"#conv-{first}")
    conversation.get_by_text("Delete conversation…").click()
    conversation.get_by_role("button", name="Yes, delete this conversation").click()
    expect(page.locator("#notice")).to_contain_text("Deleted a conversation of session s-1")
    expect(facts).not_to_contain_text("Lisbon")
    expect(facts).not_to_contain_text("Rex")
    expect(work.get_by_label("Fact")).to_have_value("User works at Acme, typing")
    left = api.http.get("/users/alice/facts").json()["facts"]
    assert [f["id"] for f in left] == [acme_id.removeprefix("fact-")]


def test_a_line_break_typed_in_a_fact_is_stored_as_in_the_api(alice, acme) -> None:
    """Browsers send a textarea's line breaks as CRLF; the fact keeps LF, as a note does."""
    end_user, client = alice
    _, facts = _learn(acme)
    lisbon = _by_object(facts)["Lisbon"]
    edit = f"{person_url(end_user)}facts/{lisbon['id']}/edit"
    saved = client.post(edit, {"content": "User lives in Faro\r\nsince May", "version": 1}, **HTMX)
    assert saved.status_code == 200
    assert _api_facts(acme)[lisbon["id"]]["content"] == "User lives in Faro\nsince May"


@BROWSER
@LIVE
def test_a_facts_history_is_on_the_page(pages, acme, live_server) -> None:
    """Every change of a fact is kept (the API's .../facts/{id}/history, the download) and
    shown under the fact, folded: what it said at each change, when and by whom, also for a
    fact no longer true. Before: the page showed only the fact's latest text, so the person
    could not see what was learnt before they or a later conversation changed it."""
    api, page, _ = _learnt_page(pages, acme, live_server, said=[
        ("s-1", messages(*SAID, minutes=0)),
        ("s-2", messages("I moved to Porto.", "Welcome to Porto!", minutes=10))])
    _kept_page(page)
    jazz = page.locator("#facts .fact", has_text="User loves jazz")
    expect(jazz.locator(".fact-history")).to_have_count(0)  # only learnt: nothing to unfold
    jazz.get_by_role("link", name="Edit").click()
    jazz_id = jazz.get_attribute("id")
    page.locator(f"#{jazz_id}").get_by_label("Fact").fill("User loves jazz and blues")
    page.locator(f"#{jazz_id}").get_by_role("button", name="Save").click()
    edited = page.locator(f"#{jazz_id}")
    expect(edited.locator(".fact-content")).to_have_text("User loves jazz and blues")
    edited.get_by_text("History (2 changes)").click()
    expect(edited.locator(".fact-history li")).to_have_count(2)
    expect(edited.locator(".fact-history li").first).to_contain_text(
        "saved from a conversation: User loves jazz")
    expect(edited.locator(".fact-history li").last).to_contain_text(
        "changed by you: User loves jazz and blues")

    lisbon = page.locator("#facts-invalid .fact", has_text="User lives in Lisbon")
    lisbon.get_by_text("History (2 changes)").click()
    expect(lisbon.locator(".fact-history li").last).to_contain_text(
        "marked no longer true from a conversation: User lives in Lisbon")
    assert _still_kept(page)
    shot(page, "person-fact-history")
    [fact] = [f for f in api.http.get("/users/alice/facts").json()["facts"]
              if f["content"] == "User loves jazz and blues"]
    history = api.http.get(f"/users/alice/facts/{fact['id']}/history").json()["history"]
    assert [(h["event"], h["actor"]) for h in history] == [("created", "augmentation"),
                                                            ("updated", "user")]


def test_a_fact_names_the_process_it_belongs_to(alice, acme) -> None:
    """A process attribute ("onboarding-complete") is a tag of one process, which the API
    keeps beside it; the page says which. Before: "Progress: onboarding-complete" alone, so
    the person could not tell what it was about."""
    end_user, client = alice
    for process, tag in (("support-agent", "onboarding-complete"), ("sales-bot", "trial-ended")):
        response = acme.client.post("/api/v1/users/alice/facts", {
            "content": tag, "type": "process_attribute", "process": process}, format="json")
        assert response.status_code == 201, response.content
    section = _facts_section(client.get(person_url(end_user)).content.decode())
    for process in ("support-agent", "sales-bot"):
        assert f'for <code class="fact-process">{process}</code>' in section


def test_a_fact_no_longer_true_can_be_marked_true_again(alice, acme) -> None:
    """"Still true" undoes "No longer true" (a click by mistake, or a later conversation
    that misread the person), as the API's PATCH with invalid_at null does, with htmx or
    without; a page showing an older version changes nothing. Before: a fact once marked no
    longer true could only be deleted, so one mistaken click lost it from recall for good."""
    end_user, client = alice
    _, facts = _learn(acme)
    jazz, rex = _by_object(facts)["jazz"], _by_object(facts)["Rex"]
    base = f"{person_url(end_user)}facts"
    assert client.post(f"{base}/{jazz['id']}/invalidate", {"version": 1}, **HTMX).status_code == 200
    html = _facts_section(client.get(person_url(end_user)).content.decode())
    invalid = html[html.index('id="facts-invalid"'):]
    assert f'action="{base}/{jazz["id"]}/revalidate"' in invalid
    assert "Still true" in invalid and "Still true" not in html[:html.index('id="facts-invalid"')]
    refused = client.post(f"{base}/{jazz['id']}/revalidate", {"version": 1}, **HTMX).text
    assert "changed after you opened it and was not marked" in refused
    assert _api_facts(acme)[jazz["id"]]["invalid_at"] is not None
    again = client.post(f"{base}/{jazz['id']}/revalidate", {"version": 2}, **HTMX).text
    assert again.lstrip().startswith('<section id="facts"')
    assert "Marked as true again: User loves jazz" in again and 'id="facts-invalid"' not in again
    shown = _api_facts(acme)[jazz["id"]]
    assert shown["invalid_at"] is None and shown["updated_by"] == "user"
    recalled = acme.client.post("/api/v1/users/alice/recall", {"query": "jazz"},
                                format="json").json()
    assert "User loves jazz" in recalled["context"]
    # Without htmx: post/redirect/get.
    client.post(f"{base}/{rex['id']}/invalidate", {"version": 1})
    plain = client.post(f"{base}/{rex['id']}/revalidate", {"version": 2})
    assert plain.status_code == 302 and plain["Location"].endswith("#facts")
    assert _api_facts(acme)[rex["id"]]["invalid_at"] is None
    history = acme.client.get(f"/api/v1/users/alice/facts/{rex['id']}/history").json()["history"]
    assert [(h["event"], h["actor"]) for h in history][-2:] == [("invalidated", "user"),
                                                                 ("updated", "user")]


def test_facts_are_paged_each_kind_apart_newest_first(alice, acme) -> None:
    """Every fact of the person was on the page, each with its history: 400 facts made a page
    of 700 KB. Now 50 of each kind (true, no longer true) a page, newest first, each list with
    its own pager; a fact opened to edit without htmx is shown whatever its page."""
    end_user, client = alice
    facts = "/api/v1/users/alice/facts"
    made = [acme.client.post(facts, {"content": f"User visited city {n:03}"}, format="json")
            for n in range(53)]
    for n in range(51):
        acme.client.post(facts, {"content": f"User lived in town {n:03}", "invalid_at":
                                 "2021-01-01T00:00:00Z"}, format="json")
    url = person_url(end_user)
    first = _facts_section(client.get(url).content.decode())
    assert first.count('class="fact') >= 100 and "city 052" in first and "city 003" in first
    assert "city 002" not in first and "town 050" in first and "town 000" not in first
    assert f'href="{url}?facts=2#facts"' in first and f'href="{url}?invalid=2#facts-invalid"' in first
    second = _facts_section(client.get(f"{url}?facts=2").content.decode())
    assert "city 002" in second and "city 000" in second and "city 003" not in second
    assert "Page 2 of 2" in second and f'href="{url}?facts=1#facts"' in second
    oldest = made[0].json()["id"]
    form = client.get(f"{url}facts/{oldest}/edit").content.decode()
    assert f'id="fact-{oldest}-content"' in form and "city 000" in form
