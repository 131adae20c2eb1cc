"""The person's conversations on their page: newest first with summaries and messages, paged,
opened one at a time, deleted one by one, forgotten with everything, in the download.

The agent's side is the real API over HTTP (``POST .../sessions/{s}/messages``); the person's
side is Django's test client (htmx requests carry ``HX-Request``) or, for what a person
clicks, Debian's Chromium against the live server.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urljoin

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from playwright.sync_api import expect

from memoryhub.models import Conversation, Message
from memoryhub.tasks import augment_conversation
from tenants.context import tenant_context
from tests.pages.browser import Api, shot
from tests.pages.conftest import person, person_url, signed_in, write

HTMX = {"HTTP_HX_REQUEST": "true"}
CSRF = re.compile(r'"X-CSRFToken": "[^"]*"|name="csrfmiddlewaretoken" value="[^"]*"')
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
BROWSER = pytest.mark.browser
LIVE = pytest.mark.django_db(transaction=True)  # live_server: see tests/pages/test_browser.py


def at(minutes: int) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def messages(*lines: str, minutes: int) -> list[dict[str, Any]]:
    """user and assistant in turn, one minute apart from ``minutes`` on."""
    return [{"role": ("user", "assistant")[i % 2], "content": line, "created_at": at(minutes + i)}
            for i, line in enumerate(lines)]


def capture_over_http(client, user: str, session: str, lines: list[dict], **body: Any) -> str:
    response = client.post(f"/api/v1/users/{user}/sessions/{session}/messages",
                           {"messages": lines, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["conversation_id"]


def stored_ids(tenant) -> tuple[set, set]:
    with tenant_context(tenant.pk):
        return (set(Conversation.objects.values_list("id", flat=True)),
                set(Message.objects.values_list("id", flat=True)))


@pytest.fixture
def alice(acme, globex, acme_team, globex_team):
    """alice of acme, linked to acme's member account, with three conversations; globex has
    its own alice with a secret conversation; bob of acme has one too."""
    end_user = person(acme_team.tenant, "alice", account=acme_team.member)
    ids = {
        "oldest": capture_over_http(acme.client, "alice", "s-1",
                                    messages("Why is the build red?", "A stale patch.",
                                             "Fixed?", "Green now.", minutes=0)),
        "middle": capture_over_http(acme.client, "alice", "s-2",
                                    messages("Plan Friday", minutes=60), profile="work"),
        "newest": capture_over_http(acme.client, "alice", "s-3",
                                    messages("<b>hi</b> <script>x()</script>", minutes=120)),
        "globex": capture_over_http(globex.client, "alice", "s-1",
                                    messages("GLOBEX SECRET", minutes=0)),
        "bob": capture_over_http(acme.client, "bob", "s-1", messages("bob's", minutes=0)),
    }
    summary = acme.client.put(f"/api/v1/users/alice/conversations/{ids['oldest']}/summary",
                              {"summary": "Fixed the red build."}, format="json")
    assert summary.status_code == 200
    return end_user, signed_in(acme_team.member), ids


def test_conversations_are_listed_newest_first_with_summary_and_first_messages(alice) -> None:
    end_user, client, ids = alice
    html = client.get(person_url(end_user)).content.decode()
    sessions = [html.index(f"Session <code>{s}</code>") for s in ("s-3", "s-2", "s-1")]
    assert sessions == sorted(sessions)  # by last message, newest first
    assert "Summary:</strong> Fixed the red build." in html
    assert "profile <code>work</code>" in html and "4 messages" in html
    assert "Why is the build red?" in html and "A stale patch." in html  # the first two
    assert "Fixed?" not in html and "Show all 4 messages" in html
    assert "&lt;b&gt;hi&lt;/b&gt; &lt;script&gt;" in html and "<script>x()" not in html
    assert "GLOBEX SECRET" not in html and "bob&#x27;s" not in html


def test_the_page_reads_conversations_in_the_same_queries_however_many(alice, acme) -> None:
    end_user, client, _ = alice
    with CaptureQueriesContext(connection) as few:
        client.get(person_url(end_user))
    for i in range(6):
        capture_over_http(acme.client, "alice", f"more-{i}", messages("q", "a", minutes=300 + i))
    with CaptureQueriesContext(connection) as more:
        html = client.get(person_url(end_user)).content.decode()
    assert html.count('class="conversation"') == 9
    assert len(more) == len(few)


def test_an_opened_conversation_shows_every_message_in_order(alice) -> None:
    end_user, client, ids = alice
    url = person_url(end_user, "web:conversation_open", conversation_id=ids["oldest"])
    html = client.get(url, **HTMX).content.decode()
    assert "<html" not in html  # an htmx request gets the conversation's partial only
    order = [html.index(s) for s in ("Why is the build red?", "A stale patch.", "Fixed?",
                                     "Green now.")]
    assert order == sorted(order)
    assert 'aria-expanded="true"' in html and "You" in html and "The assistant" in html
    folded = client.get(person_url(end_user, "web:conversation_fold",
                                   conversation_id=ids["oldest"]), **HTMX).content.decode()
    assert "Fixed?" not in folded and 'aria-expanded="false"' in folded
    whole = client.get(url).content.decode()  # without htmx: the page, with it open
    assert "<html" in whole and "Green now." in whole and "All your conversations" in whole


def test_another_tenants_or_persons_conversation_looks_deleted(alice, acme, globex) -> None:
    end_user, client, ids = alice
    nobodys = str(uuid.uuid4())
    for name, method in (("web:conversation_open", "get"), ("web:conversation_fold", "get"),
                         ("web:conversation_delete", "post")):
        answers = [getattr(client, method)(person_url(end_user, name, conversation_id=pk),
                                           **HTMX)
                   for pk in (ids["globex"], ids["bob"], nobodys)]
        # Looks like a conversation deleted elsewhere: the notice and the refreshed list.
        assert [a.status_code for a in answers] == [200, 200, 200], name
        assert "deleted" in answers[0].text and 'id="conversations"' in answers[0].text
        plain = getattr(client, method)(person_url(end_user, name, conversation_id=nobodys))
        assert plain.status_code == 404, name  # a plain request: no such page
        # Nothing tells them apart (but the CSRF token, masked afresh for every response).
        assert len({CSRF.sub("", a.content.decode()) for a in answers}) == 1, name
    malformed = person_url(end_user).rstrip("/") + "/conversations/not-a-uuid/"
    assert client.get(malformed).status_code == 404
    assert ids["globex"] in {str(pk) for pk in stored_ids(globex.tenant)[0]}
    assert ids["bob"] in {str(pk) for pk in stored_ids(acme.tenant)[0]}


def test_without_htmx_a_delete_comes_back_to_the_same_page(alice, acme) -> None:
    end_user, client, ids = alice
    for i in range(10):  # 13 conversations: two pages
        capture_over_http(acme.client, "alice", f"more-{i}", messages("q", minutes=300 + i))
    url = person_url(end_user, "web:conversation_delete", conversation_id=ids["oldest"])
    response = client.post(url, {"page": "2"})
    assert response.status_code == 302
    assert response["Location"] == f"{person_url(end_user)}?page=2#conversations"
    html = client.get(response["Location"]).content.decode()
    assert "Deleted a conversation of session s-1 (4 messages)." in html
    assert "Page 2 of 2" in html and "Session <code>s-2</code>" in html
    assert ids["oldest"] not in {str(pk) for pk in stored_ids(acme.tenant)[0]}


def _older_link(page_url: str, html: str) -> str:
    """Where the list's "Older" link leads, resolved against the page's URL as a browser does."""
    href = re.search(r'<nav class="pager"[^>]*>.*?<a href="([^"]+)">Older</a>', html, re.S).group(1)
    return urljoin(page_url, href.replace("&amp;", "&"))


def test_the_pager_leads_to_the_next_page_from_any_url_the_page_is_shown_at(alice, acme) -> None:
    """The page is also served at a document's, a fact's or a conversation's own URL (opened
    without htmx, or the fact's "where you said it" link); its pager goes to the person's
    list, not to ``?page=2`` of that URL (the same document again, or a 404 once the
    conversation it names is deleted)."""
    end_user, client, ids = alice
    for i in range(10):  # 13 conversations: two pages
        capture_over_http(acme.client, "alice", f"more-{i}", messages("q", minutes=300 + i))
    doc = write(end_user.tenant, "alice", "/a.md", "x")
    conversation = person_url(end_user, "web:conversation_open", conversation_id=ids["middle"])
    for url in (person_url(end_user, "web:document_open", document_id=doc.pk),
                person_url(end_user, "web:document_edit", document_id=doc.pk)):
        older = client.get(_older_link(url, client.get(url).content.decode()))
        assert older.status_code == 200 and "Page 2 of 2" in older.content.decode(), url
    # On the conversation's own page, the person deletes it: the list comes back, paged.
    assert client.get(f"{conversation}?start=1").status_code == 200
    deleted = client.post(person_url(end_user, "web:conversation_delete",
                                     conversation_id=ids["middle"]), {"page": "1"}, **HTMX)
    older = client.get(_older_link(conversation, deleted.content.decode()))
    assert older.status_code == 200 and "Page 2 of 2" in older.content.decode()


# --- in the browser -----------------------------------------------------------------------------


@pytest.fixture
def api(acme, live_server) -> Api:
    return Api(live_server.url, acme.key)


def _seed_over_http(api: Api, live_server, globex) -> dict[str, str]:
    ids = {
        "build": api.capture("alice", "s-build", messages(
            "Why is the build red?", "ReviewOrchestrator still uses ChangedFile.Patch.",
            "Fixed it?", "Green now.", minutes=0))["conversation_id"],
        "friday": api.capture("alice", "s-friday", messages("Plan Friday", "Gym at 7.",
                                                            minutes=60),
                              profile="work")["conversation_id"],
    }
    summary = api.http.put(f"/users/alice/conversations/{ids['build']}/summary",
                           json={"summary": "Fixed the red build."})
    assert summary.status_code == 200
    Api(live_server.url, globex.key).capture("alice", "s-build", messages("GLOBEX ONLY",
                                                                          minutes=0))
    return ids


def _alice_page(pages, api: Api) -> Any:
    page = pages.new()
    page.goto(api.portal_link("alice"))
    expect(page.get_by_role("heading", name="What the AI remembers")).to_be_visible()
    return page


def _conversation(page, conversation_id: str) -> Any:
    return page.locator(f"#conv-{conversation_id}")


@BROWSER
@LIVE
def test_the_person_reads_their_conversations(pages, api, globex, live_server) -> None:
    ids = _seed_over_http(api, live_server, globex)
    page = _alice_page(pages, api)
    titles = page.locator("#conversations .conversation-title")
    expect(titles).to_have_text(["Session s-friday", "Session s-build"])  # newest first
    build = _conversation(page, ids["build"])
    expect(build.locator(".conversation-summary")).to_have_text("Summary: Fixed the red build.")
    expect(build.locator(".turn-text")).to_have_text(
        ["Why is the build red?", "ReviewOrchestrator still uses ChangedFile.Patch."])
    expect(_conversation(page, ids["friday"])).to_contain_text("profile work")
    expect(page.locator("#conversations")).not_to_contain_text("GLOBEX")
    shot(page, "person-conversations")
    url_before = page.url
    build.get_by_role("link", name="Show all 4 messages").click()
    expect(build.locator(".turn-text")).to_have_text(
        ["Why is the build red?", "ReviewOrchestrator still uses ChangedFile.Patch.",
         "Fixed it?", "Green now."])
    expect(build.get_by_role("link", name="Session s-build")).to_have_attribute(
        "aria-expanded", "true")
    assert page.url == url_before  # htmx swapped the conversation in place
    shot(page, "person-conversation-open")
    build.get_by_text("Edit the summary…").click()
    build.get_by_label("Summary of this conversation (empty: none)").fill("The patch was stale.")
    build.get_by_role("button", name="Save the summary").click()
    expect(page.locator("#notice")).to_have_text("Summary saved.")
    expect(build.locator(".conversation-summary")).to_have_text("Summary: The patch was stale.")
    assert page.url == url_before
    build.get_by_role("link", name="Session s-build").click()
    expect(build.locator(".turn-text")).to_have_count(2)


@BROWSER
@LIVE
def test_the_person_pages_through_conversations_and_messages(pages, api) -> None:
    long_one = api.capture("alice", "s-long", messages(*[f"line {n}" for n in range(1, 56)],
                                                        minutes=0))["conversation_id"]
    for i in range(11):  # 12 conversations: 10 a page
        api.capture("alice", f"s-{i:02}", messages(f"question {i}", minutes=100 + i))
    page = _alice_page(pages, api)
    titles = page.locator("#conversations .conversation-title")
    expect(titles).to_have_count(10)
    expect(titles.first).to_have_text("Session s-10")
    expect(page.locator("#conversations .pager")).to_contain_text("Page 1 of 2")
    page.get_by_role("link", name="Older").click()
    expect(titles).to_have_text(["Session s-00", "Session s-long"])
    long = _conversation(page, long_one)
    long.get_by_role("link", name="Show all 55 messages").click()
    expect(long.locator(".turn-text")).to_have_count(50)
    expect(long.locator(".turn-text").first).to_have_text("line 1")
    expect(long.locator(".pager")).to_contain_text("Messages 1–50 of 55")
    long.get_by_role("link", name="Later messages").click()
    expect(long.locator(".turn-text")).to_have_text([f"line {n}" for n in range(51, 56)])
    long.get_by_role("link", name="Earlier messages").click()
    expect(long.locator(".turn-text").last).to_have_text("line 50")
    page.get_by_role("link", name="Newer").click()
    expect(titles.first).to_have_text("Session s-10")


@BROWSER
@LIVE
def test_the_person_deletes_one_conversation(pages, api, acme, globex, live_server) -> None:
    ids = _seed_over_http(api, live_server, globex)
    page = _alice_page(pages, api)
    build = _conversation(page, ids["build"])
    build.get_by_text("Delete conversation…").click()
    build.get_by_role("button", name="Yes, delete this conversation").click()
    expect(page.locator("#notice")).to_contain_text(
        "Deleted a conversation of session s-build (4 messages).")
    expect(build).to_have_count(0)
    expect(page.locator("#conversations .conversation-title")).to_have_text(["Session s-friday"])
    assert api.http.get(f"/users/alice/conversations/{ids['build']}").status_code == 404
    feed = api.http.get("/events", params={"limit": 1000}).json()["events"]
    assert [(e["actor"], e["data"]) for e in feed if e["data"].get("conversation_id")] == [
        ("user", {"change": "deleted", "path": None, "scope": None, "scope_key": None,
                  "conversation_id": ids["build"]})]
    with tenant_context(acme.tenant.pk):
        assert not Message.objects.filter(conversation_id=ids["build"]).exists()
    assert len(stored_ids(globex.tenant)[0]) == 1


@BROWSER
@LIVE
def test_forget_everything_removes_the_conversations(pages, api, acme, globex,
                                                     live_server) -> None:
    _seed_over_http(api, live_server, globex)
    page = _alice_page(pages, api)
    page.get_by_label("Type FORGET to confirm").fill("FORGET")
    page.get_by_role("button", name="Forget everything").click()
    expect(page.get_by_role("heading", name="Everything was forgotten")).to_be_visible()
    assert stored_ids(acme.tenant) == (set(), set())
    assert api.http.get("/users/alice/conversations").json()["conversations"] == []
    assert len(stored_ids(globex.tenant)[1]) == 1  # globex's alice is someone else


@BROWSER
@LIVE
def test_the_download_holds_the_conversations(pages, api, globex, live_server) -> None:
    ids = _seed_over_http(api, live_server, globex)
    page = _alice_page(pages, api)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download everything (JSON)").click()
    with open(download.value.path(), encoding="utf-8") as file:
        data = json.load(file)
    assert [c["id"] for c in data["conversations"]] == [ids["build"], ids["friday"]]
    build = data["conversations"][0]
    assert build["summary"] == "Fixed the red build." and build["session_id"] == "s-build"
    assert [(m["seq"], m["role"], m["content"]) for m in build["messages"]] == [
        (1, "user", "Why is the build red?"),
        (2, "assistant", "ReviewOrchestrator still uses ChangedFile.Patch."),
        (3, "user", "Fixed it?"), (4, "assistant", "Green now.")]
    assert data["conversations"][1]["profile"] == "work"
    assert "GLOBEX ONLY" not in json.dumps(data)
    assert data == api.http.get("/users/alice/export").json()  # the API's own export


@BROWSER
@LIVE
def test_conversations_fit_a_phone(pages, api) -> None:
    opened = api.capture("alice", "s-" + "x" * 100, messages("y" * 400, "Ok.", "z" * 300,
                                                             minutes=0))["conversation_id"]
    page = pages.new(phone=True)
    page.goto(api.portal_link("alice"))
    _conversation(page, opened).get_by_role("link", name="Show all 3 messages").click()
    expect(_conversation(page, opened).locator(".turn-text")).to_have_count(3)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
    shot(page, "person-conversations-phone")


def test_a_start_past_the_end_shows_the_last_page(alice, acme) -> None:
    end_user, client, _ = alice
    long = capture_over_http(acme.client, "alice", "long",
                             messages(*(f"line {i}" for i in range(1, 61)), minutes=400))
    url = person_url(end_user, "web:conversation_open", conversation_id=long)
    html = client.get(f"{url}?start=999999").content.decode()
    assert "Messages 11–60 of 60" in html and "line 60" in html and "Earlier messages" in html
    assert "Later messages" not in html


@BROWSER
@LIVE
def test_the_pager_keeps_the_person_at_their_conversations(pages, api) -> None:
    """Older and Newer load the page again: it opens at the conversations, not at the top of
    a page whose notes push them out of sight."""
    for n in range(15):
        api.tool("alice", command="create", path=f"/memories/n{n:02}.md", file_text="x\n")
    for i in range(11):
        api.capture("alice", f"s-{i:02}", messages(f"question {i}", minutes=100 + i))
    page = _alice_page(pages, api)
    heading = page.get_by_role("heading", name="Your conversations")
    expect(heading).not_to_be_in_viewport()
    page.get_by_role("link", name="Older").click()
    expect(page.locator("#conversations .pager")).to_contain_text("Page 2 of 2")
    expect(heading).to_be_in_viewport()
    page.get_by_role("link", name="Newer").click()
    expect(page.locator("#conversations .pager")).to_contain_text("Page 1 of 2")
    expect(heading).to_be_in_viewport()


def test_without_notes_the_page_does_not_say_nothing_is_stored(alice, acme) -> None:
    """alice has conversations and no notes: her notes are empty, her memory is not. Once her
    conversations are deleted too, nothing is stored."""
    end_user, client, ids = alice
    html = client.get(person_url(end_user)).content.decode()
    notes = html[html.index('id="memory-list"'):html.index('id="facts"')]
    assert "No notes are kept." in notes and "Nothing is stored about you." not in html
    for name in ("oldest", "middle", "newest"):
        client.post(person_url(end_user, "web:conversation_delete", conversation_id=ids[name]))
    assert "Nothing is stored about you." in client.get(person_url(end_user)).content.decode()


@BROWSER
@LIVE
def test_paging_messages_from_the_keyboard_keeps_focus_on_the_messages(pages, api) -> None:
    """"Show all", "Later messages" and "Earlier messages" replace the conversation, the link
    pressed with it: focus goes to the messages now shown (not back to the top of the page);
    the title, a disclosure, opens and folds the conversation without moving focus there."""
    api.capture("alice", "s-long", messages(*[f"line {n}" for n in range(1, 56)], minutes=0))
    page = _alice_page(pages, api)
    transcript = page.locator("#conversations .transcript")
    page.get_by_role("link", name="Show all 55 messages").press("Enter")
    expect(transcript).to_be_focused()
    expect(transcript).to_have_accessible_name("Messages 1–50 of 55")
    page.get_by_role("link", name="Later messages").press("Enter")
    expect(transcript).to_have_accessible_name("Messages 51–55 of 55")
    expect(transcript).to_be_focused()
    page.get_by_role("link", name="Earlier messages").press("Enter")
    expect(transcript).to_have_accessible_name("Messages 1–50 of 55")
    expect(transcript).to_be_focused()
    # The title opens and folds without sending focus to the messages. (Where focus lands is
    # htmx's search for the pressed title by its id, which Chromium under load loses now and
    # then: not asserted.)
    title = page.locator("#conversations .conversation-title")
    title.press("Enter")
    expect(page.get_by_role("link", name="Show all 55 messages")).to_be_visible()
    title.press("Enter")
    expect(transcript).to_have_accessible_name("Messages 1–50 of 55")
    expect(transcript).not_to_be_focused()


def test_an_opened_conversation_shows_what_the_app_stored_with_each_message(alice, acme) -> None:
    """Capture keeps a message's ``id`` (the app's own) and ``metadata`` beside its text, and
    the download holds them; the opened conversation shows them, folded, with or without
    htmx. Before: they were stored about the person but on no page."""
    end_user, client, _ = alice
    conversation = capture_over_http(acme.client, "alice", "s-9", [
        {"role": "user", "content": "Hi", "id": "client-7",
         "metadata": {"channel": "web", "city": "Lisboa ✓", "device": "<b>phone</b>",
                      "client": {"name": "app", "beta": True, "seat": None}, "tags": [1, "a"]}},
        {"role": "assistant", "content": "Hello"}], new_conversation=True)
    url = person_url(end_user, "web:conversation_open", conversation_id=conversation)
    for headers in ({}, HTMX):
        html = client.get(url, **headers).content.decode()
        assert html.count('class="turn-details"') == 1  # the reply has nothing stored with it
        shown = html[html.index('class="turn-details"'):]
        shown = shown[:shown.index("</details>")]
        assert "<dt>The app's id</dt><dd><code>client-7</code></dd>" in shown
        assert "<dt>channel</dt><dd>web</dd>" in shown and "<dd>Lisboa ✓</dd>" in shown
        assert "<dd>&lt;b&gt;phone&lt;/b&gt;</dd>" in shown
        # Nested values as the app sent them, JSON, not Python's {'name': 'app', ...} and True
        assert ('<dt>client</dt><dd>{&quot;beta&quot;: true, &quot;name&quot;: &quot;app&quot;,'
                ' &quot;seat&quot;: null}</dd>') in shown
        assert "<dt>tags</dt><dd>[1, &quot;a&quot;]</dd>" in shown
    folded = client.get(person_url(end_user)).content.decode()
    assert "turn-details" not in folded  # the list's previews stay short


def _seen(html: str) -> str:
    return re.search(r'name="seen" value="([^"]*)"', html).group(1)


def test_the_person_edits_and_clears_a_conversations_summary(alice, acme) -> None:
    """A summary was stored about the person (an app's or augmentation's) and shown, but only
    deleting the whole conversation removed it. Now the opened conversation edits it, with
    htmx or without, as an app's PUT .../summary does (actor user: augmentation leaves it);
    a summary changed since the page showed it is not overwritten."""
    end_user, client, ids = alice
    oldest = ids["oldest"]
    url = person_url(end_user, "web:conversation_summary", conversation_id=oldest)
    opened = client.get(person_url(end_user, "web:conversation_open",
                                   conversation_id=oldest)).content.decode()
    assert "Edit the summary…" in opened and ">Fixed the red build.</textarea>" in opened
    seen = _seen(opened)
    saved = client.post(url, {"summary": "A stale patch broke the build.", "seen": seen,
                              "page": "1"})
    assert saved.status_code == 302 and saved["Location"].endswith(f"?page=1#conv-{oldest}")
    api = acme.client.get(f"/api/v1/users/alice/conversations/{oldest}").json()
    assert api["summary"] == "A stale patch broke the build."
    augment_conversation(tenant_id=acme.tenant.id, conversation_id=oldest)  # its own summary
    api = acme.client.get(f"/api/v1/users/alice/conversations/{oldest}").json()
    assert api["summary"] == "A stale patch broke the build."  # the person's wins
    # The page showed the old summary: the save is refused, the newer one shown, the text kept.
    stale = client.post(url, {"summary": "Mine", "seen": seen}, **HTMX)
    html = stale.content.decode()
    assert stale.status_code == 409 and "changed after the page showed it" in html
    assert ">A stale patch broke the build.</textarea>" in html and "Mine" in html
    cleared = client.post(url, {"summary": "  ", "seen": _seen(html)}, **HTMX)
    assert cleared.status_code == 200 and "Summary cleared." in cleared.content.decode()
    assert "Write a summary…" in cleared.content.decode()
    assert acme.client.get(f"/api/v1/users/alice/conversations/{oldest}").json()["summary"] == ""
    with tenant_context(acme.tenant.id):
        assert Conversation.objects.get(id=oldest).summary_by == "user"
