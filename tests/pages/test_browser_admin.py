"""The admin's operations pages in Debian's Chromium: the webhooks page and the usage charts.

The app's side is the real API over HTTP against the live server (and MCP for one recall);
the pages fixture fails a test on any console error, which is where a Content-Security-
Policy violation (an inline style or script) would show.
"""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pytest
from django.utils import timezone
from playwright.sync_api import expect

from memoryhub.models import WebhookEndpoint
from memoryhub.selectors.usage import usage_day
from tenants.context import tenant_context
from tests.pages.browser import Api, shot
from tests.webhooks.receiver import private_urls_allowed, webhook_receiver  # noqa: F401 - a fixture

# live_server makes every test here transactional (see test_browser.py).
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
MCP_WIRE = {"Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25"}


@pytest.fixture
def api(acme, live_server) -> Api:
    return Api(live_server.url, acme.key)


@pytest.mark.usefixtures("private_urls_allowed")
def test_an_admin_reads_why_an_endpoint_was_switched_off_tests_it_and_switches_it_on(
    pages, api, acme, acme_team, globex, eager_tasks,
) -> None:
    with webhook_receiver(statuses=[500]) as receiver:
        created = api.http.post("/webhooks", json={"url": receiver.url}).json()
        api.http.post("/webhooks", json={"url": "https://elsewhere.example.com/hook",
                                         "event_types": ["memory.pressure"]})
        with tenant_context(globex.tenant.id):  # globex's own: never on acme's page
            WebhookEndpoint.objects.create(url="https://globex.example.com/hook",
                                           secret="whsec_" + "g" * 32, event_types=["memory.changed"])
        with tenant_context(acme.tenant.id):  # failing for a day already: the next failure ends it
            WebhookEndpoint.objects.filter(pk=created["id"]).update(
                failing_since=timezone.now() - timedelta(hours=25))
        api.tool("alice", command="create", path="/memories/a.md", file_text="x")
        assert len(receiver.received) == 1  # delivered (and failed) by the task, inline

        page = pages.new(user=acme_team.admin)
        page.goto("/t/acme/")
        page.get_by_role("link", name="Webhooks").click()
        card = page.locator(f"#webhook-{created['id']}")
        expect(card.get_by_text("Switched off.")).to_be_visible()
        expect(card).to_contain_text("every delivery has failed since")
        expect(card.locator("tbody tr")).to_have_count(1)
        expect(card.locator("tbody tr")).to_contain_text("abandoned")
        expect(card.locator("tbody tr")).to_contain_text("HTTP 500")
        expect(page.get_by_text("globex.example.com")).to_have_count(0)
        shot(page, "webhooks-switched-off")

        url_before = page.url
        card.get_by_role("button", name=re.compile("Send a test event")).click()
        expect(card.get_by_role("status")).to_have_text("The test event was delivered: HTTP 200.")
        assert page.url == url_before  # htmx swapped the card in place
        assert [r.headers["X-MemoryHub-Event"] for r in receiver.received][-1] == "webhook.test"

        card.get_by_role("button", name=re.compile("Switch on again")).click()
        expect(card.get_by_role("status")).to_contain_text("Switched on")
        expect(card.locator(f"#webhook-{created['id']}-state")).to_have_text("on")
        expect(card.get_by_text("Switched off.")).to_have_count(0)
        shown = api.http.get(f"/webhooks/{created['id']}").json()
        assert shown["enabled"] is True and shown["disabled_reason"] == ""

        # Back on: the next write is delivered, and the page shows it.
        api.tool("alice", command="create", path="/memories/b.md", file_text="y")
        page.reload()
        expect(card.locator("tbody tr").first).to_contain_text("delivered")
        expect(card.locator("tbody tr").first).to_contain_text("HTTP 200")
        shot(page, "webhooks-on-again")

    page.get_by_role("link", name="Audit log").click()
    expect(page.get_by_text("webhook.tested")).to_be_visible()
    expect(page.get_by_text("webhook.updated")).to_be_visible()


def test_the_usage_charts_render_from_what_the_api_did(
    pages, api, acme, acme_team, live_server,
) -> None:
    api.tool("alice", command="create", path="/memories/notes.md", file_text="likes tea\n")
    api.tool("alice", command="str_replace", path="/memories/notes.md", old_str="tea",
             new_str="green tea")
    for query in ("tea", "green"):
        assert api.http.post("/users/alice/recall", json={"query": query}).status_code == 200
    mcp_recall = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "recall", "arguments": {"query": "tea", "user_id": "alice"}}}
    answered = httpx.post(f"{live_server.url}/mcp", json=mcp_recall, timeout=30,
                          headers={"Authorization": f"Bearer {acme.key}", **MCP_WIRE})
    assert answered.status_code == 200 and '"isError":false' in answered.text.replace(" ", "")

    page = pages.new(user=acme_team.admin)
    page.goto("/t/acme/")
    today = usage_day(timezone.now()).isoformat()
    for chart, value in (("writes", "2"), ("recalls", "3"), ("stored", str(len("likes green tea\n")))):
        figure = page.locator(f"#chart-{chart}")
        expect(figure.locator("svg")).to_be_visible()
        expect(figure.locator("rect")).to_have_count(30 if chart != "stored" else 1)
        bar = figure.locator(f'rect[data-day="{today}"]')
        expect(bar).to_have_attribute("data-value", value)
        expect(bar).to_be_visible()  # drawn with a height, in the stylesheet's colour
        assert bar.bounding_box()["height"] > 10
    expect(page.locator("#chart-recalls rect").last.locator("title")).to_have_text(
        re.compile(r": 3 recalls$"))
    page.get_by_text("The figures").click()
    expect(page.locator(f'#usage-figures tr[data-day="{today}"]')).to_contain_text("2")
    assert "style-src 'self'" in page.request.get("/t/acme/").headers["content-security-policy"]
    shot(page, "overview-usage")
    phone = pages.new(user=acme_team.admin, phone=True)
    phone.goto("/t/acme/")
    expect(phone.locator("#chart-writes svg")).to_be_visible()
    shot(phone, "overview-usage-phone")
