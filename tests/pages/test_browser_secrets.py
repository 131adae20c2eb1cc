"""Secrets shown once on the admin pages (a key bound to a person, a person's portal link),
in Debian's Chromium: htmx's history keeps no copy of them.

htmx saves a snapshot of the page (sessionStorage, ``htmx-history-cache``) before an
``hx-push-url`` request, the people page's search, and Back restores it without asking the
server. The page that shows a secret (the mint's POST answer) pushes no URL, so it is never
saved.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.factories import EndUserFactory

# live_server makes every test here transactional (see test_browser.py).
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize(("button", "secret"), [
    ("Mint a bound key for alice", "#new-key-secret"),
    ("Portal link for alice", "#portal-link"),
])
def test_a_secret_shown_once_stays_out_of_htmxs_history(pages, acme_team, button,
                                                         secret) -> None:
    for user_id in ("alice", "bob"):
        EndUserFactory(tenant=acme_team.tenant, user_id=user_id)
    page = pages.new(user=acme_team.admin)
    page.goto("/t/acme/people")
    page.get_by_role("button", name=button).click()
    shown = page.locator(secret).inner_text()
    assert shown
    page.get_by_label("Search by user id").fill("bob")
    expect(page.locator("#results")).not_to_contain_text("alice")  # the search still works
    cached = page.evaluate("sessionStorage.getItem('htmx-history-cache') || ''")
    assert (shown in cached) is False  # (not the snapshot itself in the report)
    page.go_back()  # to the list as it was before minting, without the secret
    expect(page).to_have_url(f"{pages.base_url}/t/acme/people")
    expect(page.locator("#results")).to_contain_text("alice")
    expect(page.locator(secret)).to_have_count(0)
