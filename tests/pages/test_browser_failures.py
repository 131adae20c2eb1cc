"""What a person sees when an htmx request fails, in Chromium: a thing deleted elsewhere is
said so and dropped from the page; any other failure (an out-of-date page's CSRF token, a
server error, no network) is a message in the page's notice line, never nothing at all."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from memoryhub.models import MemoryDocument
from tenants.context import tenant_context
from tests.pages.browser import Api
from tests.pages.conftest import person_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def api(acme, live_server) -> Api:
    return Api(live_server.url, acme.key)


@pytest.fixture
def alice_page(pages, api):
    """alice's page, through a portal link, with one document's edit form open."""
    api.tool("alice", command="create", path="/memories/diet.md", file_text="Vegetarian.\n")
    api.tool("alice", command="create", path="/memories/todo.md", file_text="buy milk\n")
    page = pages.new()
    page.goto(api.portal_link("alice"))
    page.get_by_role("link", name="/diet.md").click()
    page.get_by_role("link", name="Edit").click()
    page.get_by_label("Content", exact=True).fill("Vegan.\n")
    return page


def _edit_path(acme) -> str:
    with tenant_context(acme.tenant.pk):
        doc = MemoryDocument.objects.select_related("end_user").get(path="/diet.md")
    return person_url(doc.end_user, "web:document_edit", document_id=doc.pk)


def test_a_save_on_a_document_deleted_elsewhere_says_so(alice_page, api) -> None:
    page = alice_page
    api.tool("alice", command="delete", path="/memories/diet.md")  # the agent, meanwhile
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("deleted after you opened it")
    expect(page.locator("#notice pre")).to_have_text("Vegan.\n")  # the typed text, to copy
    expect(page.get_by_role("link", name="/diet.md")).to_have_count(0)
    expect(page.get_by_role("link", name="/todo.md")).to_be_visible()
    expect(page.get_by_label("Content", exact=True)).to_have_count(0)


def test_an_out_of_date_csrf_token_says_reload(alice_page, pages, acme) -> None:
    page = alice_page
    pages.expect_failed_load(403, _edit_path(acme))
    page.context.clear_cookies(name="csrftoken")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_have_text("Your page is out of date: reload it, "
                                                 "then try again.")
    expect(page.get_by_label("Content", exact=True)).to_have_value("Vegan.\n")  # kept


@pytest.mark.parametrize(("status", "text"), [
    (500, "Something went wrong on our side (HTTP 500)"),
    (429, "Too many requests"),
])
def test_a_refused_or_failed_request_says_so(alice_page, pages, acme, status, text) -> None:
    page = alice_page
    path = _edit_path(acme)
    pages.expect_failed_load(status, path)
    page.route(f"**{path}", lambda route: route.fulfill(status=status, body="no"))
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text(text)
    expect(page.get_by_label("Content", exact=True)).to_have_value("Vegan.\n")


def test_no_network_says_so(alice_page, pages, acme) -> None:
    page = alice_page
    for logged in ("Failed to load resource: net::ERR_FAILED", "htmx:sendError",
                   "htmx:afterRequest"):
        pages.expect_console_error(logged)
    page.route(f"**{_edit_path(acme)}", lambda route: route.abort())
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_contain_text("The server could not be reached")


def test_a_refused_switch_leaves_the_card_and_says_why(alice_page, pages, acme) -> None:
    page = alice_page
    switch = page.locator("#memory-switch")
    pages.expect_failed_load(422, urlsplit(switch.locator("form").get_attribute("action")).path)
    switch.locator("input[name=enabled]").evaluate("input => { input.value = 'maybe'; }")
    page.get_by_role("button", name="Turn memory off").click()
    expect(page.locator("#notice")).to_contain_text("Choose on or off")
    expect(switch.get_by_role("heading")).to_have_text("Memory is on")
    expect(page.get_by_role("button", name="Turn memory off")).to_be_visible()



def test_a_save_too_large_to_send_says_so_and_keeps_the_text(alice_page, pages, acme) -> None:
    """A note over the request limit (1 MiB; possible with the document limit switched off)
    is refused before any form is read: the person reads that it is too large, not "reload the
    page", which would lose it; the text stays in the form."""
    page = alice_page
    pages.expect_failed_load(413, _edit_path(acme))
    huge = "x" * (1024 * 1024 + 1) + "\n"
    page.get_by_label("Content", exact=True).fill(huge)
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#notice")).to_have_text("That is too large to send.")
    assert page.get_by_label("Content", exact=True).input_value() == huge
