"""Webhooks: the admin API, and delivery (signed, retried, switched off) to a real local server.

Delivery runs in-process here (the service the worker's task calls); tests/workers runs it
through a real worker.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from memoryhub.celery import app as celery_app
from memoryhub.models import DeliveryStatus, WebhookDelivery, WebhookEndpoint
from memoryhub.services.events import changed_event, pressure_event
from memoryhub.services.webhooks import (
    DELIVERY_HEADER,
    EVENT_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    event_payload,
    signature_valid,
    webhook_deliver,
)
from memoryhub.tasks import webhooks_sweep
from tenants.context import tenant_context
from tenants.models import AuditEntry
from tests.webhooks.receiver import webhook_receiver


@pytest.fixture
def private_urls_allowed(settings) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}


def create(kit, url: str, **extra) -> dict:
    response = kit.client.post("/api/v1/webhooks", {"url": url, **extra}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def event(kit, *, path: str = "/a.md"):
    with tenant_context(kit.tenant.id):
        return changed_event(tenant_id=kit.tenant.id, user_id="alice", actor="app",
                             change="created", path=path, scope="global")


def deliver(kit, delivery_id: int) -> str:
    return webhook_deliver(tenant_id=kit.tenant.id, delivery_id=delivery_id)


def delivery_of(kit) -> WebhookDelivery:
    with tenant_context(kit.tenant.id):
        return WebhookDelivery.objects.select_related("endpoint").get()


def overdue(kit) -> None:
    """The tenant's deliveries due five minutes ago, past the sweep's grace, and any attempt's
    lease run out then."""
    past = timezone.now() - timedelta(minutes=5)
    with tenant_context(kit.tenant.id):
        WebhookDelivery.objects.update(next_attempt_at=past)
        WebhookDelivery.objects.exclude(sending_until=None).update(sending_until=past)


# --- admin API -----------------------------------------------------------------------------


def test_create_shows_the_secret_once_then_only_a_hint(acme, globex, private_urls_allowed) -> None:
    created = create(acme, "https://hooks.example.com/memory")
    assert created["secret"].startswith("whsec_") and len(created["secret"]) > 40
    assert created["event_types"] == ["fact.changed", "memory.changed", "memory.pressure"]
    assert created["enabled"] is True and created["last_status"] is None
    listed = acme.client.get("/api/v1/webhooks").json()["webhooks"]
    assert [w["id"] for w in listed] == [created["id"]]
    assert "secret" not in listed[0] and listed[0]["secret_hint"].endswith(created["secret"][-4:])
    given = create(acme, "https://hooks.example.com/b", secret="s" * 20,
                   event_types=["memory.pressure"])
    assert given["secret"] == "s" * 20 and given["event_types"] == ["memory.pressure"]
    with tenant_context(acme.tenant.id):
        assert AuditEntry.objects.filter(action="webhook.created").count() == 2


def test_update_and_delete(acme, globex, private_urls_allowed) -> None:
    created = create(acme, "https://hooks.example.com/memory")
    url = f"/api/v1/webhooks/{created['id']}"
    changed = acme.client.patch(url, {"enabled": False, "event_types": ["memory.changed"]},
                                format="json").json()
    assert changed["enabled"] is False and changed["event_types"] == ["memory.changed"]
    assert "secret" not in changed
    rotated = acme.client.patch(url, {"secret": "n" * 32}, format="json").json()
    assert rotated["secret"] == "n" * 32
    assert acme.client.delete(url).status_code == 204
    assert acme.client.get(url).status_code == 404


def test_another_tenant_and_a_memory_key_cannot_touch_webhooks(acme, globex, private_urls_allowed) -> None:
    created = create(acme, "https://hooks.example.com/memory")
    url = f"/api/v1/webhooks/{created['id']}"
    for response in (globex.client.get(url), globex.client.patch(url, {"enabled": False}, format="json"),
                     globex.client.delete(url)):
        assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")
    assert globex.client.get("/api/v1/webhooks").json() == {"webhooks": []}
    agent = acme.client_with(acme.memory_key)
    assert agent.get("/api/v1/webhooks").status_code == 403
    assert agent.post("/api/v1/webhooks", {"url": "https://x.example.com"}, format="json").status_code == 403
    assert acme.client.get(url).json()["enabled"] is True


def test_validation(acme, globex, settings) -> None:
    bad = [
        ({"url": "ftp://hooks.example.com"}, "invalid_url"),
        ({"url": "https://hooks.example.com", "event_types": ["memory.read"]}, "invalid_request"),
        ({"url": "https://hooks.example.com", "event_types": []}, "invalid_request"),
        ({"url": "https://hooks.example.com", "secret": "short"}, "invalid_request"),
        ({"url": "https://hooks.example.com", "colour": "red"}, "invalid_request"),
        ({"url": "http://127.0.0.1:9/x"}, "invalid_url"),  # private addresses: SSRF
        ({"url": "http://169.254.169.254/latest"}, "invalid_url"),
        ({"url": "https://user:pw@hooks.example.com"}, "invalid_url"),
        # IPv6 addresses that reach private IPv4 ones, or a site's own network:
        ({"url": "http://[64:ff9b::a00:1]/x"}, "invalid_url"),  # NAT64 to 10.0.0.1
        ({"url": "http://[2002:a00:1::1]/x"}, "invalid_url"),  # 6to4 of 10.0.0.1
        ({"url": "http://[::7f00:1]/x"}, "invalid_url"),  # IPv4-compatible 127.0.0.1
        ({"url": "http://[::ffff:0:a00:1]/x"}, "invalid_url"),  # SIIT's, of 10.0.0.1
        ({"url": "http://[::ffff:0:a9fe:a9fe]/x"}, "invalid_url"),  # ... of 169.254.169.254
        ({"url": "http://[fec0::1]/x"}, "invalid_url"),  # site-local
        ({"url": "http://[64:ff9b:1::1]/x"}, "invalid_url"),  # a local NAT64
        ({"url": "https://xn--zz.example.com/x"}, "invalid_url"),  # not a valid IDNA name
    ]
    for body, code in bad:
        response = acme.client.post("/api/v1/webhooks", body, format="json")
        assert (response.status_code, response.json()["error"]["code"]) == (400, code), body
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    for i in range(20):
        create(acme, f"http://127.0.0.1:9/{i}")
    over = acme.client.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/x"}, format="json")
    assert (over.status_code, over.json()["error"]["code"]) == (422, "webhook_limit")



@pytest.mark.parametrize("port", ["99999", "0"])
def test_a_port_out_of_range_is_refused_not_a_crash(acme, globex, settings, port) -> None:
    # urlsplit raises only when the port is read: this was a 500, and with private URLs
    # allowed (no lookup) the endpoint was stored and every delivery to it crashed.
    url = f"https://hooks.example.com:{port}/x"
    for private in (False, True):
        settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS,
                                       "allow_private_urls": private}
        response = acme.client.post("/api/v1/webhooks", {"url": url}, format="json")
        assert response.status_code == 400, (private, response.content)
        assert response.json()["error"] == {
            "code": "invalid_url", "message": "The port must be a number from 1 to 65535."}
    endpoint = create(acme, "http://127.0.0.1:9/x")
    response = acme.client.patch(f"/api/v1/webhooks/{endpoint['id']}", {"url": url},
                                 format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_url")
    assert acme.client.get(f"/api/v1/webhooks/{endpoint['id']}").json()["url"] == endpoint["url"]


def test_a_long_url_is_kept_whole_in_the_audit_log(acme, globex, private_urls_allowed) -> None:
    # URLs are taken up to 2,000 characters (a Logic Apps or signed URL passes 200); the audit
    # entry's 200-character target made such a create, change or delete a 500.
    url = "http://127.0.0.1:9/hook?sig=" + "s" * 400
    endpoint = create(acme, url)
    assert endpoint["url"] == url
    longer = url + "&v=2"
    assert acme.client.patch(f"/api/v1/webhooks/{endpoint['id']}", {"url": longer},
                             format="json").status_code == 200
    assert acme.client.delete(f"/api/v1/webhooks/{endpoint['id']}").status_code == 204
    with tenant_context(acme.tenant.id):
        audited = list(AuditEntry.objects.filter(action__startswith="webhook.")
                       .order_by("id").values_list("action", "target"))
    assert audited == [("webhook.created", url), ("webhook.updated", longer),
                       ("webhook.deleted", longer)]

# --- delivery ------------------------------------------------------------------------------


def test_events_queue_deliveries_for_subscribed_enabled_endpoints_only(
    acme, globex, private_urls_allowed, django_capture_on_commit_callbacks,
) -> None:
    changed_only = create(acme, "https://a.example.com", event_types=["memory.changed"])
    both = create(acme, "https://b.example.com")
    create(acme, "https://c.example.com", enabled=False)
    create(globex, "https://g.example.com")
    with django_capture_on_commit_callbacks() as callbacks:
        first = event(acme)
        with tenant_context(acme.tenant.id):
            pressure = pressure_event(tenant_id=acme.tenant.id, user_id="alice",
                                      actor="assistant", scope="global", scope_key="",
                                      used_bytes=10, limit_bytes=10)
    with tenant_context(acme.tenant.id):
        queued = sorted(WebhookDelivery.objects.values_list("event_id", "endpoint_id"))
    assert queued == sorted([(first.id, changed_only["id"]), (first.id, both["id"]),
                             (pressure.id, both["id"])])
    assert len(callbacks) == 3  # one enqueue per delivery, when the write commits
    with tenant_context(globex.tenant.id):
        assert not WebhookDelivery.objects.exists()


def test_a_delivery_is_signed_and_sent_once(acme, globex, private_urls_allowed) -> None:
    with webhook_receiver() as receiver:
        created = create(acme, receiver.url)
        sent = event(acme)
        delivery = delivery_of(acme)
        sending = time.time()
        assert deliver(acme, delivery.pk) == DeliveryStatus.DELIVERED
        assert deliver(acme, delivery.pk) == "skipped"  # idempotent
    assert len(receiver.received) == 1
    request = receiver.received[0]
    assert json.loads(request.body) == json.loads(event_payload(sent))
    feed = acme.client.get("/api/v1/events").json()["events"]
    assert json.loads(request.body) == next(e for e in feed if e["id"] == sent.seq)  # to the µs
    assert json.loads(request.body) == {
        "id": sent.seq, "type": "memory.changed", "created_at": json.loads(request.body)["created_at"],
        "actor": "app", "user_id": "alice",
        "data": {"change": "created", "path": "/a.md", "scope": "global", "scope_key": None},
    }
    # As a receiver checks it, from the README's formula; and as the product's helper does.
    assert request.signed_by(created["secret"]) and request.signed_between(sending)
    assert signature_valid(secret=created["secret"], timestamp=request.headers[TIMESTAMP_HEADER],
                           body=request.body, header=request.headers[SIGNATURE_HEADER])
    # The check can fail: another secret, another body, another timestamp, a stale one.
    assert not request.signed_by("whsec_other")
    assert not replace(request, body=request.body + b" ").signed_by(created["secret"])
    later = str(int(request.headers[TIMESTAMP_HEADER]) + 1)
    assert not replace(request, headers={**request.headers, TIMESTAMP_HEADER: later}).signed_by(
        created["secret"])
    assert not request.signed_between(request.arrived_at + 1)
    assert request.headers[EVENT_HEADER] == "memory.changed"
    assert request.headers[DELIVERY_HEADER] == str(delivery.seq)
    shown = acme.client.get(f"/api/v1/webhooks/{created['id']}").json()
    assert shown["last_status"] == 200 and shown["last_success_at"] and not shown["failing_since"]


def test_delivery_ids_are_numbered_per_tenant(acme, globex, private_urls_allowed) -> None:
    """X-MemoryHub-Delivery is the delivery's number in its tenant, like event ids: one
    sequence for every tenant would tell each the others' volume."""
    create(acme, "https://hooks.example.com/a")
    create(acme, "https://hooks.example.com/b")
    create(globex, "https://hooks.example.com/g")
    event(acme)
    event(globex)
    event(acme, path="/b.md")
    for kit, expected in ((acme, [(1, 1), (1, 2), (2, 3), (2, 4)]), (globex, [(1, 1)])):
        with tenant_context(kit.tenant.id):
            numbers = WebhookDelivery.objects.order_by("seq").values_list("event__seq", "seq")
            assert list(numbers) == expected


def test_a_failure_is_retried_later_with_backoff(acme, globex, private_urls_allowed) -> None:
    with webhook_receiver(statuses=[500, 503]) as receiver:
        created = create(acme, receiver.url)
        event(acme)
        delivery = delivery_of(acme)
        assert deliver(acme, delivery.pk) == DeliveryStatus.PENDING
        first = delivery_of(acme)
        assert (first.attempts, first.last_status) == (1, 500)
        assert deliver(acme, delivery.pk) == "skipped"  # not due yet: a duplicate message
        shown = acme.client.get(f"/api/v1/webhooks/{created['id']}").json()
        assert (shown["last_status"], shown["last_error"]) == (500, "HTTP 500")
        assert shown["failing_since"] and shown["enabled"]
        for _ in range(2):
            with tenant_context(acme.tenant.id):
                WebhookDelivery.objects.update(next_attempt_at=timezone.now())
            deliver(acme, delivery.pk)
        final = delivery_of(acme)
    assert final.status == DeliveryStatus.DELIVERED and final.attempts == 3
    waits = [(first.next_attempt_at - first.created_at).total_seconds()]
    assert 29 <= waits[0] <= 31  # retry_base: 30 s, doubling each time
    assert len({r.headers[DELIVERY_HEADER] for r in receiver.received}) == 1
    assert acme.client.get(f"/api/v1/webhooks/{created['id']}").json()["failing_since"] is None


def test_an_endpoint_failing_for_a_day_is_switched_off_with_a_reason(acme, globex, private_urls_allowed) -> None:
    with webhook_receiver(statuses=[500, 500]) as receiver:
        created = create(acme, receiver.url)
        event(acme, path="/a.md")
        event(acme, path="/b.md")
        with tenant_context(acme.tenant.id):
            WebhookEndpoint.objects.update(failing_since=timezone.now() - timedelta(hours=25))
            first_id = WebhookDelivery.objects.order_by("id").first().pk
        assert deliver(acme, first_id) == DeliveryStatus.ABANDONED
    shown = acme.client.get(f"/api/v1/webhooks/{created['id']}").json()
    assert shown["enabled"] is False and "HTTP 500" in shown["disabled_reason"]
    with tenant_context(acme.tenant.id):
        assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"abandoned"}
    # New events are not queued for it; switching it on again clears the failure record.
    event(acme, path="/c.md")
    with tenant_context(acme.tenant.id):
        assert WebhookDelivery.objects.count() == 2
    again = acme.client.patch(f"/api/v1/webhooks/{created['id']}", {"enabled": True}, format="json").json()
    assert again["enabled"] and again["disabled_reason"] == "" and again["failing_since"] is None
    assert len(receiver.received) == 1


def test_a_url_turning_private_is_refused_at_delivery(acme, globex, settings, private_urls_allowed) -> None:
    create(acme, "http://10.0.0.1/hook")
    event(acme)
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": False}
    delivery = delivery_of(acme)
    assert deliver(acme, delivery.pk) == DeliveryStatus.PENDING
    assert "private or reserved" in delivery_of(acme).last_error


def test_the_sweep_sends_deliveries_whose_message_was_lost(
    acme, globex, private_urls_allowed, eager_tasks,
) -> None:
    with webhook_receiver() as receiver:
        create(acme, receiver.url)
        event(acme)
        overdue(acme)
        assert webhooks_sweep() == 1
    assert delivery_of(acme).status == DeliveryStatus.DELIVERED
    assert len(receiver.received) == 1


@pytest.mark.django_db(transaction=True)  # the send in a thread must see the delivery
def test_a_delivery_out_on_its_attempt_is_not_sent_again_meanwhile(
    acme, globex, private_urls_allowed,
) -> None:
    """The send claims its delivery (a lease) and holds nothing while the endpoint answers:
    a duplicate message, or the sweep, finds it not due."""
    with webhook_receiver(held=True) as receiver:
        create(acme, receiver.url)
        event(acme)
        pk = delivery_of(acme).pk
        overdue(acme)  # due for the sweep, until claimed
        sending = threading.Thread(target=deliver, args=(acme, pk))
        sending.start()
        deadline = time.monotonic() + 10
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.01)
        assert deliver(acme, pk) == "skipped"
        assert webhooks_sweep() == 0
        receiver.released.set()
        sending.join(10)
    assert len(receiver.received) == 1 and delivery_of(acme).status == DeliveryStatus.DELIVERED


@pytest.mark.django_db(transaction=True)  # the sends in threads must see the deliveries
def test_an_endpoint_has_at_most_its_share_of_attempts_out(acme, globex, settings) -> None:
    """WEBHOOK_MAX_IN_FLIGHT (2 here): a third send while two wait for the endpoint is
    deferred; the first attempt to end sends it (here inline, at its commit: eager tasks
    from then on; the events' own messages went to the broker, where nothing takes them)."""
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True,
                                   "max_in_flight": 2}
    with webhook_receiver(held=True) as receiver:
        create(acme, receiver.url)
        with tenant_context(acme.tenant.id):  # three events, their tasks not run
            for path in ("/a.md", "/b.md", "/c.md"):
                changed_event(tenant_id=acme.tenant.id, user_id="alice", actor="app",
                              change="created", path=path, scope="global")
            first, second, third = WebhookDelivery.objects.order_by("id").values_list(
                "pk", flat=True)
        sends = [threading.Thread(target=deliver, args=(acme, pk)) for pk in (first, second)]
        for send in sends:
            send.start()
        deadline = time.monotonic() + 10
        while len(receiver.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert deliver(acme, third) == "deferred"
        assert len(receiver.received) == 2
        celery_app.conf.task_always_eager = True
        try:
            receiver.released.set()
            for send in sends:
                send.join(10)
        finally:
            celery_app.conf.task_always_eager = False
    with tenant_context(acme.tenant.id):
        statuses = list(WebhookDelivery.objects.values_list("status", "attempts", "sending_until"))
    assert statuses == [(DeliveryStatus.DELIVERED, 1, None)] * 3
    assert len(receiver.received) == 3


def test_a_lease_run_out_is_sent_again_and_the_late_answer_is_not_recorded(
    acme, globex, private_urls_allowed,
) -> None:
    """A sender that died mid-send (its worker killed) leaves its lease to run out; the
    sweep's send then delivers it. Should the first sender come back with its answer after
    all, the delivery is no longer its own: nothing of it is recorded."""
    from memoryhub.services.webhooks import Attempt, _claim, _settle

    with webhook_receiver() as receiver:
        create(acme, receiver.url)
        event(acme)
        pk = delivery_of(acme).pk
        overdue(acme)
        with tenant_context(acme.tenant.id):
            stale = _claim(delivery_id=pk, now=timezone.now())  # then it died
        assert not isinstance(stale, str)
        assert webhooks_sweep() == 0  # its lease holds
        overdue(acme)  # the lease has run out
        assert deliver(acme, pk) == DeliveryStatus.DELIVERED
        with tenant_context(acme.tenant.id):
            assert _settle(claim=stale, attempt=Attempt(500, "HTTP 500")) == "skipped"
    delivered = delivery_of(acme)
    assert (delivered.status, delivered.attempts, delivered.last_status) == (
        DeliveryStatus.DELIVERED, 1, 200)
    assert len(receiver.received) == 1


def test_the_sweep_takes_each_endpoints_share_not_one_endpoints_backlog(
    acme, globex, settings,
) -> None:
    """An endpoint that hangs piles up overdue deliveries; the sweep's batch took them
    oldest first, all of them to be deferred again, and another endpoint's lost message
    waited for the backlog. Each endpoint now gets its WEBHOOK_MAX_IN_FLIGHT oldest."""
    from memoryhub.services.webhooks import deliveries_due

    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True,
                                   "max_in_flight": 2}
    backlog = create(acme, "http://127.0.0.1:9/hanging")
    for n in range(5):
        event(acme, path=f"/{n}.md")
    other = create(acme, "http://127.0.0.1:9/other", event_types=["memory.pressure"])
    with tenant_context(acme.tenant.id):
        pressure_event(tenant_id=acme.tenant.id, user_id="alice", actor="app", scope="global",
                       scope_key="", used_bytes=10, limit_bytes=10)
    overdue(acme)  # five minutes late; the other endpoint's two minutes, the latest
    with tenant_context(acme.tenant.id):
        WebhookDelivery.objects.filter(endpoint_id=other["id"]).update(
            next_attempt_at=timezone.now() - timedelta(minutes=2))
        by_endpoint = dict(WebhookDelivery.objects.values_list("pk", "endpoint_id"))
        due = deliveries_due(now=timezone.now(), limit=3)
    assert sorted(by_endpoint[pk] for pk in due) == sorted([backlog["id"]] * 2 + [other["id"]])


def test_an_endless_answer_is_not_read(acme, globex, private_urls_allowed) -> None:
    """The status is the answer: an endpoint streaming a body that does not end (here 2,000
    chunks of 16 KiB, 20 ms apart: 32 MiB over 40 s) neither holds the delivery nor fills
    the worker's memory. Before, the whole body was read, for as long as it kept coming."""
    hung_up: list[int] = []  # the chunks sent before the delivery closed the connection

    class Endless(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's naming
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for sent in range(2000):
                    self.wfile.write(b"4000\r\n" + b"x" * 0x4000 + b"\r\n")
                    self.wfile.flush()
                    time.sleep(0.02)
            except OSError:  # a write after the other side closed: reset, broken pipe
                hung_up.append(sent)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        create(acme, f"http://127.0.0.1:{server.server_address[1]}/hooks")
        event(acme)
        assert deliver(acme, delivery_of(acme).pk) == DeliveryStatus.DELIVERED
        deadline = time.monotonic() + 10
        while not hung_up and time.monotonic() < deadline:
            time.sleep(0.05)
        assert hung_up and hung_up[0] < 1999, hung_up  # it hung up rather than reading on
    finally:
        server.shutdown()
        server.server_close()
