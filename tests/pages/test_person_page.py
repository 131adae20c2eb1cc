"""The person's page, "What the AI remembers": list, open, edit, delete, forget, switch, export.

Driven with Django's test client; htmx requests carry ``HX-Request`` and get partials back.
The browser tests (test_browser.py) click through the same flows.
"""

from __future__ import annotations

import json

import pytest

from memoryhub.models import EndUser, MemoryDocument, Scope
from memoryhub.services.profiles import profile_set
from tenants.context import tenant_context
from tenants.services import tenant_settings_update
from tests.pages.conftest import document_of, person, person_url, signed_in, write

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def alice(acme_team, globex_team):
    """alice of acme, linked to acme's member account, with notes in every scope; globex has
    its own alice with a secret."""
    end_user = person(acme_team.tenant, "alice", account=acme_team.member)
    write(acme_team.tenant, "alice", "/notes/diet.md", "Vegetarian.\nNo nuts.",
          description="Diet")
    write(acme_team.tenant, "alice", "/a.md", "first by path")
    write(acme_team.tenant, "alice", "/recipes.md", "soup", scope=Scope.PROFILE,
          scope_key="cooking")
    write(acme_team.tenant, "alice", "/todo.md", "buy milk", scope=Scope.SESSION,
          scope_key="s-1")
    write(globex_team.tenant, "alice", "/globex.md", "GLOBEX SECRET")
    return end_user, signed_in(acme_team.member)


def _doc(tenant, path: str, scope: str = Scope.GLOBAL) -> MemoryDocument:
    with tenant_context(tenant.pk):
        return MemoryDocument.objects.get(path=path, scope=scope)


def test_the_page_groups_documents_by_scope_sorted_by_path(alice, acme_team) -> None:
    end_user, client = alice
    html = client.get(person_url(end_user)).content.decode()
    order = [html.index(s) for s in ("Global", "/a.md", "/notes/diet.md", "Profile: cooking",
                                     "/recipes.md", "Session: s-1", "/todo.md")]
    assert order == sorted(order)
    assert "Diet" in html and "by the assistant" in html
    assert "Vegetarian" not in html  # the list shows metadata; a document is opened to read it
    assert "GLOBEX" not in html and "globex.md" not in html


def test_content_is_shown_as_escaped_text(alice, acme_team) -> None:
    end_user, client = alice
    doc = write(acme_team.tenant, "alice", "/x.md", '<script>alert("x")</script><b>bold</b>')
    url = person_url(end_user, "web:document_open", document_id=doc.pk)
    html = client.get(url, **HTMX).content.decode()
    assert "<script>alert" not in html and "<b>bold" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in html
    assert "<html" not in html  # an htmx request gets the partial only


def test_an_edit_saves_as_the_user_and_bumps_the_version(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/notes/diet.md")
    url = person_url(end_user, "web:document_edit", document_id=doc.pk)
    form = client.get(url, **HTMX).content.decode()
    assert 'name="version" value="1"' in form and "Vegetarian." in form
    response = client.post(url, {"content": "Vegan.\r\nNo nuts.", "description": "Diet, updated",
                                 "version": "1"}, **HTMX)
    assert response.status_code == 200
    assert "Saved /notes/diet.md." in response.content.decode()
    saved = document_of(acme_team.tenant, doc.pk)
    assert (saved.content, saved.description, saved.version, saved.updated_by) == (
        "Vegan.\nNo nuts.", "Diet, updated", 2, "user")


def test_a_stale_edit_is_refused_and_shows_the_newer_text(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/notes/diet.md")
    write(acme_team.tenant, "alice", "/notes/diet.md", "Pescatarian now.")  # the agent, v2
    url = person_url(end_user, "web:document_edit", document_id=doc.pk)
    response = client.post(url, {"content": "mine", "description": "", "version": "1"}, **HTMX)
    assert response.status_code == 409
    html = response.content.decode()
    assert "changed after you opened it" in html
    assert "Pescatarian now." in html and 'name="version" value="2"' in html
    assert "mine" in html  # the person's own text is kept to copy from
    saved = document_of(acme_team.tenant, doc.pk)
    assert (saved.content, saved.version, saved.updated_by) == ("Pescatarian now.", 2, "assistant")


@pytest.mark.parametrize(("content", "message"), [
    ("my key is sk-ant-api03-" + "a" * 40, "credential"),
    ("x" * 20000, "condense"),
])
def test_the_apis_content_rules_and_limits_apply(alice, acme_team, content, message) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/a.md")
    url = person_url(end_user, "web:document_edit", document_id=doc.pk)
    response = client.post(url, {"content": content, "description": "", "version": "1"}, **HTMX)
    assert response.status_code == 422
    assert message in response.content.decode().lower()
    assert document_of(acme_team.tenant, doc.pk).content == "first by path"


def test_a_description_is_one_short_line(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/a.md")
    url = person_url(end_user, "web:document_edit", document_id=doc.pk)
    for bad in ("two\nlines", "x" * 201):
        response = client.post(url, {"content": "c", "description": bad, "version": "1"}, **HTMX)
        assert response.status_code == 422
    assert document_of(acme_team.tenant, doc.pk).version == 1


def test_delete_one_document(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/a.md")
    url = person_url(end_user, "web:document_delete", document_id=doc.pk)
    response = client.post(url, {"version": "1"}, **HTMX)
    assert response.status_code == 200
    assert "Deleted /a.md." in response.content.decode()
    assert document_of(acme_team.tenant, doc.pk) is None
    again = client.post(url, {"version": "1"}, **HTMX)
    assert again.status_code == 200 and "This document was already deleted." in again.text
    assert client.post(url, {"version": "1"}).status_code == 404  # a plain form: no such URL


def test_delete_refuses_a_document_changed_since_it_was_shown(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/a.md")
    write(acme_team.tenant, "alice", "/a.md", "newer")
    url = person_url(end_user, "web:document_delete", document_id=doc.pk)
    response = client.post(url, {"version": "1"}, **HTMX)
    assert "changed after you opened it" in response.content.decode()
    assert document_of(acme_team.tenant, doc.pk).content == "newer"


def test_delete_a_sessions_memory(alice, acme_team) -> None:
    end_user, client = alice
    write(acme_team.tenant, "alice", "/more.md", "x", scope=Scope.SESSION, scope_key="s-1")
    write(acme_team.tenant, "alice", "/keep.md", "x", scope=Scope.SESSION, scope_key="s-2")
    response = client.post(person_url(end_user, "web:session_delete"), {"session_id": "s-1"},
                           **HTMX)
    assert "Deleted the memory of session s-1 (2 documents)." in response.content.decode()
    with tenant_context(acme_team.tenant.pk):
        sessions = set(MemoryDocument.objects.filter(scope=Scope.SESSION)
                       .values_list("scope_key", flat=True))
    assert sessions == {"s-2"}


def test_forget_everything_needs_the_typed_word(alice, acme_team, globex_team) -> None:
    end_user, client = alice
    url = person_url(end_user, "web:forget")
    response = client.post(url, {"confirm": "forget"})
    assert response.status_code == 422
    assert "Type the word FORGET" in response.content.decode()
    with tenant_context(acme_team.tenant.pk):
        assert MemoryDocument.objects.count() == 4
    response = client.post(url, {"confirm": "FORGET"})
    assert response.status_code == 200
    assert "Everything was forgotten" in response.content.decode()
    with tenant_context(acme_team.tenant.pk):
        assert MemoryDocument.objects.count() == 0
        assert not EndUser.objects.filter(user_id="alice").exists()
    with tenant_context(globex_team.tenant.pk):
        assert MemoryDocument.objects.count() == 1  # globex's alice is someone else
    assert client.get(person_url(end_user)).status_code == 404


def test_the_person_switches_memory_off_and_on(alice, acme_team) -> None:
    end_user, client = alice
    url = person_url(end_user, "web:memory_switch")
    response = client.post(url, {"enabled": "off"}, **HTMX)
    assert "Memory is off" in response.content.decode()
    with tenant_context(acme_team.tenant.pk):
        assert EndUser.objects.get(pk=end_user.pk).memory_enabled is False
    client.post(url, {"enabled": "on"}, **HTMX)
    with tenant_context(acme_team.tenant.pk):
        assert EndUser.objects.get(pk=end_user.pk).memory_enabled is True


def test_a_switch_value_that_is_neither_on_nor_off_leaves_the_card(alice, acme_team) -> None:
    end_user, client = alice
    url = person_url(end_user, "web:memory_switch")
    response = client.post(url, {"enabled": "maybe"}, **HTMX)
    assert (response.status_code, response["HX-Reswap"]) == (422, "none")
    html = response.content.decode()
    assert 'id="memory-switch"' not in html
    assert 'id="notice" class="notice is-error"' in html and "Choose on or off" in html
    plain = client.post(url, {"enabled": "maybe"}, follow=True).content.decode()
    assert "Choose on or off" in plain and "Memory is on" in plain
    with tenant_context(acme_team.tenant.pk):
        assert EndUser.objects.get(pk=end_user.pk).memory_enabled is True


def test_download_everything_as_json(alice, acme_team) -> None:
    end_user, client = alice
    response = client.get(person_url(end_user, "web:export"))
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith("attachment;")
    data = json.loads(response.content)
    assert data["user_id"] == "alice"
    assert {d["path"]: d["content"] for d in data["documents"]}["/notes/diet.md"] == (
        "Vegetarian.\nNo nuts.")
    assert "GLOBEX SECRET" not in response.content.decode()


def test_without_htmx_every_action_works_as_a_plain_form(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/a.md")
    page = client.get(person_url(end_user, "web:document_open", document_id=doc.pk))
    assert "<html" in page.content.decode() and "first by path" in page.content.decode()
    edit = person_url(end_user, "web:document_edit", document_id=doc.pk)
    response = client.post(edit, {"content": "plain", "description": "", "version": "1"})
    assert response.status_code == 302
    assert "Saved /a.md." in client.get(response["Location"]).content.decode()
    response = client.post(person_url(end_user, "web:document_delete", document_id=doc.pk),
                           {"version": "2"})
    assert response.status_code == 302
    assert document_of(acme_team.tenant, doc.pk) is None


def test_a_save_on_a_document_deleted_elsewhere_says_so_and_drops_it(alice, acme_team) -> None:
    end_user, client = alice
    doc = _doc(acme_team.tenant, "/a.md")
    url = person_url(end_user, "web:document_edit", document_id=doc.pk)
    client.post(person_url(end_user, "web:document_delete", document_id=doc.pk), {"version": "1"})
    response = client.post(url, {"content": "mine", "description": "", "version": "1"}, **HTMX)
    assert response.status_code == 200
    # The form targeted the document's item; the answer is the list, so it says where it goes.
    assert (response["HX-Retarget"], response["HX-Reswap"]) == ("#memory-list", "outerHTML")
    html = response.content.decode()
    assert "This document was deleted after you opened it; nothing was saved." in html
    # The typed text is not lost with the document: it is under the notice, to copy.
    notice = html[html.index('id="notice"'):]
    assert "Your text (not saved)" in notice and "<pre class=\"content\">mine</pre>" in notice
    assert html.index('id="memory-list"') < html.index('id="notice"')
    assert f'id="doc-{doc.pk}"' not in html and "/notes/diet.md" in html
    opened = client.get(url, **HTMX)  # opening the edit too, which carried no text
    assert opened["HX-Retarget"] == "#memory-list"
    assert "deleted after the page showed it" in opened.text and "Your text" not in opened.text
    # Without htmx a redirect would lose the text: the page itself answers (404), with it.
    plain = client.post(url, {"content": "<b>mine</b>", "description": "", "version": "1"})
    assert plain.status_code == 404 and "<html" in plain.text
    assert "&lt;b&gt;mine&lt;/b&gt;" in plain.text and "nothing was saved" in plain.text
    assert document_of(acme_team.tenant, doc.pk) is None



def test_deleting_a_session_with_nothing_stored_says_so(alice, acme_team) -> None:
    end_user, client = alice
    url = person_url(end_user, "web:session_delete")
    response = client.post(url, {"session_id": "s-none"}, **HTMX)
    assert "Nothing was stored for session s-none." in response.content.decode()
    response = client.post(url, {"session_id": "s-1"}, **HTMX)
    assert "Deleted the memory of session s-1 (1 document)." in response.content.decode()


@pytest.mark.parametrize(("switched_off", "path", "scope", "message"), [
    ("tenant", "/a.md", Scope.GLOBAL, "The app has switched memory off, so notes cannot be "
                                      "changed for now; you can still delete them."),
    ("profile", "/recipes.md", Scope.PROFILE, "The app has switched memory off for the profile "
                                              "cooking, so its notes cannot be changed for now; "
                                              "you can still delete them."),
])
def test_a_save_with_memory_off_by_the_app_says_so_to_the_person(
        alice, acme_team, switched_off, path, scope, message) -> None:
    """Not the model's "continue without reading or saving memories": the person's text
    stays in the form, with what they can still do."""
    end_user, client = alice
    if switched_off == "tenant":
        tenant_settings_update(tenant_id=acme_team.tenant.pk, changes={"memory_enabled": False},
                               actor="test")
    else:
        with tenant_context(acme_team.tenant.pk):
            profile_set(tenant=acme_team.tenant, name="cooking", disabled=True, actor="test")
    doc = _doc(acme_team.tenant, path, scope)
    url = person_url(end_user, "web:document_edit", document_id=doc.pk)
    response = client.post(url, {"content": "typed", "description": "", "version": "1"}, **HTMX)
    assert response.status_code == 422
    assert message in response.text
    assert "continue without" not in response.text and "typed</textarea>" in response.text
    assert document_of(acme_team.tenant, doc.pk).version == 1


@pytest.mark.parametrize("own_switch", ["on", "off"])
def test_with_memory_off_for_the_app_the_card_does_not_say_it_is_on(alice, acme_team,
                                                                     own_switch) -> None:
    """The app's switch wins over the person's (the index is off): the card says memory is
    off and why, and what the person's own switch will do when the app turns memory on."""
    end_user, client = alice
    client.post(person_url(end_user, "web:memory_switch"), {"enabled": own_switch})
    tenant_settings_update(tenant_id=acme_team.tenant.pk, changes={"memory_enabled": False},
                           actor="test")
    html = client.get(person_url(end_user)).content.decode()
    card = html[html.index('id="memory-switch"'):html.index('id="memory-list"')]
    assert '<h2 id="switch-heading">Memory is off</h2>' in card
    assert "Acme has switched memory off" in card
    assert "The assistant reads these notes" not in card
    after = {"on": "Your own switch is on: memory comes back when Acme turns it on again.",
             "off": "Your own switch is off: memory stays off when Acme turns it on again."}
    assert after[own_switch] in card
    assert f">Turn your switch {'off' if own_switch == 'on' else 'on'}</button>" in card
