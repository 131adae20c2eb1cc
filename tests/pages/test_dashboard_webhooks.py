"""The dashboard's webhooks page: endpoints, recent deliveries, why one was switched off,
switching it back on, and a test event, through the services the webhooks API uses.

Endpoints are created with the API, events come from API writes, and deliveries go to a real
receiver on 127.0.0.1 (the same one tests/webhooks uses), sent by the service a worker runs.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub.models import WebhookDelivery, WebhookEndpoint
from memoryhub.services.webhooks import webhook_deliver
from tenants.context import tenant_context
from tenants.models import AuditEntry
from tests.pages.conftest import signed_in
from tests.webhooks.receiver import private_urls_allowed, webhook_receiver  # noqa: F401 - a fixture

HTMX = {"HTTP_HX_REQUEST": "true"}

pytestmark = pytest.mark.usefixtures("private_urls_allowed")


def endpoint(kit, url: str, **extra) -> dict:
    response = kit.client.post("/api/v1/webhooks", {"url": url, **extra}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def write(kit, path: str) -> None:
    response = kit.client.put(f"/api/v1/users/alice/documents/global{path}", {"content": "x"},
                              format="json")
    assert response.status_code in (200, 201), response.json()


def deliver_all(kit) -> None:
    """What the worker does with each queued delivery."""
    with tenant_context(kit.tenant.id):
        pks = list(WebhookDelivery.objects.order_by("id").values_list("id", flat=True))
    for pk in pks:
        webhook_deliver(tenant_id=kit.tenant.id, delivery_id=pk)


def audit(kit, action: str) -> list[AuditEntry]:
    with tenant_context(kit.tenant.id):
        return list(AuditEntry.objects.filter(action=action).order_by("id"))


def card(html: str, webhook_id: int) -> str:
    found = re.search(rf'<section id="webhook-{webhook_id}".*?</section>', html, re.S)
    assert found, html
    return found.group(0)


def test_the_page_shows_endpoints_and_their_deliveries_of_this_tenant_only(
    acme, globex, acme_team,
) -> None:
    with webhook_receiver(statuses=[500]) as receiver:
        created = endpoint(acme, receiver.url, event_types=["memory.changed"])
        endpoint(globex, "https://globex.example.com/hook")
        write(acme, "/a.md")
        write(acme, "/b.md")
        deliver_all(acme)
    html = signed_in(acme_team.admin).get("/t/acme/webhooks").content.decode()
    assert "globex.example.com" not in html
    shown = card(html, created["id"])
    assert receiver.url in shown and created["secret"] not in shown
    assert created["secret"][-4:] in shown  # the hint only
    rows = re.findall(r'<tr class="delivery-(\w+)">(.*?)</tr>', shown, re.S)
    assert [status for status, _ in rows] == ["delivered", "pending"]  # newest first
    newest, oldest = (" ".join(re.sub(r"<.*?>", " ", row).split()) for _, row in rows)
    assert "memory.changed created" in newest and " 1 " in newest and "HTTP 200" in newest
    assert "HTTP 500" in oldest and "retry" in oldest
    assert "Every delivery has failed since" not in shown  # the later success cleared it


def test_a_delivery_whose_attempt_is_out_says_it_is_being_sent(acme, acme_team) -> None:
    """Its ``next_attempt_at`` is the lease's end then, not a time it is due."""
    from memoryhub.services.webhooks import _claim

    with webhook_receiver() as receiver:
        created = endpoint(acme, receiver.url)
        write(acme, "/a.md")
        with tenant_context(acme.tenant.id):  # what a send does before it posts
            assert not isinstance(_claim(delivery_id=WebhookDelivery.objects.get().pk,
                                         now=timezone.now()), str)
    html = signed_in(acme_team.admin).get("/t/acme/webhooks").content.decode()
    row = " ".join(re.sub(r"<.*?>", " ", card(html, created["id"])).split())
    assert "sending now, waiting for the answer" in row and "due" not in row


def test_why_it_was_switched_off_and_switching_it_on_again(
    acme, globex, acme_team, globex_team,
) -> None:
    with webhook_receiver(statuses=[500]) as receiver:
        created = endpoint(acme, receiver.url)
        with tenant_context(acme.tenant.id):
            WebhookEndpoint.objects.update(failing_since=timezone.now() - timedelta(hours=25))
        write(acme, "/a.md")
        deliver_all(acme)
    client = signed_in(acme_team.admin)
    shown = card(client.get("/t/acme/webhooks").content.decode(), created["id"])
    assert "Switched off." in shown and "every delivery has failed since" in shown
    assert "HTTP 500" in shown and 'class="delivery-abandoned"' in shown
    url = f"/t/acme/webhooks/{created['id']}/switch"
    # Another tenant's admin addresses it by id under their own slug: not found.
    assert signed_in(globex_team.owner).post(
        f"/t/globex/webhooks/{created['id']}/switch", {"enabled": "on"}).status_code == 404
    swapped = client.post(url, {"enabled": "on"}, **HTMX)
    assert swapped.status_code == 200
    body = swapped.content.decode()
    assert body.lstrip().startswith(f'<section id="webhook-{created["id"]}"')  # the card only
    assert "Switched on" in body and "Switched off." not in body
    api = acme.client.get(f"/api/v1/webhooks/{created['id']}").json()
    assert api["enabled"] is True and api["disabled_reason"] == "" and api["failing_since"] is None
    [entry] = audit(acme, "webhook.updated")
    assert entry.actor == "admin@acme.test" and entry.data["enabled"] is True
    # Without htmx: post, redirect, get, with the notice among the messages.
    off = client.post(url, {"enabled": "off"}, follow=True)
    assert "Switched off: no events are sent to it." in off.content.decode()
    assert acme.client.get(f"/api/v1/webhooks/{created['id']}").json()["enabled"] is False
    assert client.post(url, {"enabled": "maybe"}, **HTMX).status_code == 200
    assert acme.client.get(f"/api/v1/webhooks/{created['id']}").json()["enabled"] is False


def test_a_test_event_is_signed_sent_once_and_audited(acme, globex, acme_team) -> None:
    with webhook_receiver() as receiver:
        created = endpoint(acme, receiver.url, enabled=False)  # a test needs no switch
        response = signed_in(acme_team.admin).post(
            f"/t/acme/webhooks/{created['id']}/test", **HTMX)
    assert response.status_code == 200
    assert "The test event was delivered: HTTP 200." in response.content.decode()
    [request] = receiver.received
    body = json.loads(request.body)
    assert body == {"id": None, "type": "webhook.test", "created_at": body["created_at"],
                    "actor": None, "user_id": None, "data": {"webhook_id": created["id"]}}
    assert request.headers["X-MemoryHub-Event"] == "webhook.test"
    assert request.headers["X-MemoryHub-Delivery"].startswith("test-")
    # The documented formula, computed here: HMAC-SHA256 of "<timestamp>.<body>", and fresh.
    timestamp = request.headers["X-MemoryHub-Timestamp"]
    expected = hmac.new(created["secret"].encode(), f"{timestamp}.".encode() + request.body,
                        hashlib.sha256).hexdigest()
    assert request.headers["X-MemoryHub-Signature"] == f"sha256={expected}"
    assert abs(time.time() - int(timestamp)) < 300
    [entry] = audit(acme, "webhook.tested")
    assert (entry.actor, entry.data["status"], entry.data["error"]) == ("admin@acme.test", 200, "")
    with tenant_context(acme.tenant.id):
        assert not WebhookDelivery.objects.exists()  # not a delivery of an event


def test_a_failed_test_says_why_and_changes_nothing_of_the_endpoint(
    acme, globex, acme_team, settings,
) -> None:
    with webhook_receiver(statuses=[503]) as receiver:
        created = endpoint(acme, receiver.url)
        response = signed_in(acme_team.admin).post(
            f"/t/acme/webhooks/{created['id']}/test", follow=True)
    assert "The test event was not delivered: HTTP 503." in response.content.decode()
    assert len(receiver.received) == 1  # once: a test is not retried
    api = acme.client.get(f"/api/v1/webhooks/{created['id']}").json()
    assert (api["enabled"], api["failing_since"], api["last_status"]) == (True, None, None)
    [entry] = audit(acme, "webhook.tested")
    assert (entry.data["status"], entry.data["error"]) == (503, "HTTP 503")
    # A URL that became private is refused at the test as at every delivery.
    with tenant_context(acme.tenant.id):
        WebhookEndpoint.objects.update(url="http://10.0.0.1/hook")
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": False}
    refused = signed_in(acme_team.admin).post(f"/t/acme/webhooks/{created['id']}/test", **HTMX)
    assert "private or reserved address" in refused.content.decode()
