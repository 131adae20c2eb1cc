"""An endpoint deleted while the tenant's writes record events and the worker sends: no
request fails, and no delivery is left pointing at a deleted endpoint.

A delivery's foreign key to its endpoint is checked at commit, so a write whose event
inserted a delivery for an endpoint that another request deleted meanwhile failed at its
COMMIT (IntegrityError, a 500 to an agent's memory write), and the deletion failed the same
way when a write's delivery committed between its two statements (deliveries, then the
endpoint). Every writer of deliveries now takes the endpoint's row first
(memoryhub/store/webhooks.py); these tests make the interleavings happen with real
transactions: the request's statements run on the test's connection, and the other party
runs on a connection of its own in a thread, started between two of them, that waits where
it must (the tests give it a moment to get as far as it can, then go on).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub.models import Actor, MemoryEvent, WebhookDelivery, WebhookEndpoint
from memoryhub.services.people import end_user_forget
from memoryhub.services.webhooks import webhook_deliver
from tenants.context import tenant_context
from tests.elsewhere import Elsewhere, in_thread
from tests.webhooks.receiver import private_urls_allowed, webhook_receiver  # noqa: F401 - a fixture

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("private_urls_allowed")]  # both sides must commit for real

WRITE = {"command": "create", "path": "/memories/a.md", "file_text": "x"}




def _hook(kit: Any, url: str = "http://127.0.0.1:9/hook") -> int:
    response = kit.client.post("/api/v1/webhooks", {"url": url}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def _left(kit: Any) -> tuple[list[int], int]:
    with tenant_context(kit.tenant.id):
        return (list(WebhookEndpoint.objects.values_list("pk", flat=True)),
                WebhookDelivery.objects.count())


def test_an_endpoint_deleted_while_a_write_holds_its_event_does_not_fail_the_write(
        acme, globex) -> None:
    hook, kept = _hook(acme), _hook(globex)
    deleting: list[Elsewhere] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if WebhookDelivery._meta.db_table in sql and "INSERT" in sql and not deleting:
            # The write's event and its delivery are in; the admin deletes the endpoint now.
            deleting.append(Elsewhere(
                lambda: acme.client_with(acme.key).delete(f"/api/v1/webhooks/{hook}").status_code
            ).as_far_as_it_gets())
        return result

    with connection.execute_wrapper(between):
        write = acme.client.post("/api/v1/users/alice/memory", WRITE, format="json")
    assert deleting, "the write recorded no delivery"
    deleting[0].join(10)
    assert write.status_code == 200 and write.json()["is_error"] is False, write.content
    assert deleting[0].error is None and deleting[0].result == 204
    assert _left(acme) == ([], 0)  # the endpoint went, and the write's delivery with it
    assert _left(globex) == ([kept], 0)


def test_a_write_between_the_deletions_of_deliveries_and_endpoint_does_not_fail_either(
        acme) -> None:
    hook = _hook(acme)
    writing: list[Elsewhere] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if (sql.startswith("DELETE") and WebhookEndpoint._meta.db_table in sql.split("WHERE")[0]
                and not writing):
            # The endpoint's deliveries are deleted, the endpoint not yet: a write comes in.
            writing.append(Elsewhere(
                lambda: acme.client_with(acme.key).post("/api/v1/users/alice/memory", WRITE,
                                                        format="json").status_code
            ).as_far_as_it_gets())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between):
        deleted = acme.client.delete(f"/api/v1/webhooks/{hook}")
    assert writing, "the endpoint was never deleted"
    writing[0].join(10)
    assert deleted.status_code == 204, deleted.content
    assert writing[0].error is None and writing[0].result == 200
    assert _left(acme) == ([], 0)  # the write's event came after: no delivery at all
    with tenant_context(acme.tenant.id):
        assert MemoryEvent.objects.filter(data__change="created").count() == 1


def test_a_send_being_recorded_and_a_forget_make_the_deletion_wait_instead_of_failing(
        acme) -> None:
    """The orders the fix sets, held: a send records its answer holding the endpoint (key
    share) and the delivery; the endpoint's deletion waits for it. A forget deletes its
    events' deliveries after holding the endpoints; the deletion waits for it too."""
    with webhook_receiver() as receiver:
        hook = _hook(acme, receiver.url)
        write = acme.client.post("/api/v1/users/alice/memory", WRITE, format="json")
        assert write.status_code == 200
        with tenant_context(acme.tenant.id):
            delivery = WebhookDelivery.objects.get().pk
        deleting: list[Elsewhere] = []

        def delete_during_the_send(execute: Any, sql: str, params: Any, many: bool,
                                   context: Any) -> Any:
            if (WebhookEndpoint._meta.db_table in sql and "UPDATE" in sql.split("FOR")[-1]
                    and "SKIP LOCKED" not in sql and not deleting):  # answered; to record it
                deleting.append(Elsewhere(
                    lambda: acme.client_with(acme.key).delete(f"/api/v1/webhooks/{hook}")
                    .status_code).as_far_as_it_gets())
            return execute(sql, params, many, context)

        with connection.execute_wrapper(delete_during_the_send):
            assert webhook_deliver(tenant_id=acme.tenant.id, delivery_id=delivery) == "delivered"
        deleting[0].join(10)
        assert deleting[0].result == 204 and len(receiver.received) == 1
        assert _left(acme) == ([], 0)

        hook = _hook(acme, receiver.url)
        assert acme.client.post("/api/v1/users/alice/memory", {**WRITE, "path": "/memories/b.md"},
                                format="json").status_code == 200
        forgotten: list[bool] = []

        def delete_during_the_forget(execute: Any, sql: str, params: Any, many: bool,
                                     context: Any) -> Any:
            result = execute(sql, params, many, context)
            if (sql.startswith("DELETE") and WebhookDelivery._meta.db_table in sql
                    and not deleting[1:]):  # the forget's events' deliveries are deleted
                deleting.append(Elsewhere(
                    lambda: acme.client_with(acme.key).delete(f"/api/v1/webhooks/{hook}")
                    .status_code).as_far_as_it_gets())
            return result

        with tenant_context(acme.tenant.id), connection.execute_wrapper(delete_during_the_forget):
            forgotten.append(end_user_forget(tenant=acme.tenant, user_id="alice",
                                             actor=Actor.APP))
        deleting[1].join(10)
        assert forgotten == [True] and deleting[1].result == 204
        assert _left(acme) == ([], 0)


def test_a_forget_and_the_endpoints_deletion_do_not_wait_for_an_endpoint_to_answer(
        acme) -> None:
    """A send holds nothing while the endpoint answers: before, it held its delivery's row
    for the whole call, so a person's forget (which deletes their events' deliveries) and the
    endpoint's deletion waited up to WEBHOOK_TIMEOUT for a tenant's endpoint."""
    with webhook_receiver(held=True) as receiver:
        hook = _hook(acme, receiver.url)
        for path in ("/memories/a.md", "/memories/b.md"):
            assert acme.client.post("/api/v1/users/alice/memory", {**WRITE, "path": path},
                                    format="json").status_code == 200
        with tenant_context(acme.tenant.id):
            first = WebhookDelivery.objects.order_by("id").values_list("pk", flat=True)[0]
        sending = Elsewhere(lambda: webhook_deliver(tenant_id=acme.tenant.id,
                                                    delivery_id=first))
        sending.start()
        deadline = time.monotonic() + 10
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.01)
        assert receiver.received, "the send never arrived"  # and waits for its answer now

        def forget() -> bool:
            with tenant_context(acme.tenant.id):
                return end_user_forget(tenant=acme.tenant, user_id="alice", actor=Actor.APP)

        forgetting = Elsewhere(forget).as_far_as_it_gets()
        assert not forgetting.is_alive(), "the forget waited for the endpoint's answer"
        assert forgetting.error is None and forgetting.result is True
        deleting = Elsewhere(lambda: acme.client_with(acme.key).delete(
            f"/api/v1/webhooks/{hook}").status_code).as_far_as_it_gets()
        assert not deleting.is_alive(), "the deletion waited for the endpoint's answer"
        assert deleting.result == 204
        receiver.released.set()
        sending.join(10)
        assert sending.error is None and sending.result == "skipped"  # nothing left to record
    assert _left(acme) == ([], 0)


def test_switching_off_an_endpoint_while_another_send_waits_for_it_does_not_deadlock(
        acme) -> None:
    """Two sends to an endpoint failing for a day: the one that switches it off abandons its
    pending deliveries while the other's attempt is out, then records its answer. When a send
    held its delivery during the call, switching off waited for it while it waited for the
    endpoint's lock (PostgreSQL ended one of them); now the attempt out is abandoned with the
    rest, and its answer recorded after."""
    import http.server
    import socketserver
    from datetime import timedelta

    from django.utils import timezone

    arrived, answer = threading.Event(), threading.Event()

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # the first send waits for the test, the second does not
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if not arrived.is_set():
                arrived.set()
                answer.wait(10)
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            return None

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Slow)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        hook = _hook(acme, f"http://127.0.0.1:{server.server_address[1]}/hook")
        for path in ("/memories/a.md", "/memories/b.md"):
            assert acme.client.post("/api/v1/users/alice/memory", {**WRITE, "path": path},
                                    format="json").status_code == 200
        with tenant_context(acme.tenant.id):
            WebhookEndpoint.objects.update(failing_since=timezone.now() - timedelta(hours=25))
            first, second = WebhookDelivery.objects.order_by("id").values_list("pk", flat=True)

        def send(delivery_id: int) -> str:
            return webhook_deliver(tenant_id=acme.tenant.id, delivery_id=delivery_id)

        in_flight = Elsewhere(lambda: send(second))
        in_flight.start()
        assert arrived.wait(10)  # the second send waits for its answer

        def answer_before_abandoning(execute: Any, sql: str, params: Any, many: bool,
                                     context: Any) -> Any:
            if sql.startswith("UPDATE") and WebhookDelivery._meta.db_table in sql.split("SET")[0]:
                if "status" in sql.split("WHERE")[0] and not answer.is_set():
                    answer.set()  # its answer comes: it goes on to record it
                    in_flight.as_far_as_it_gets()
            return execute(sql, params, many, context)

        with connection.execute_wrapper(answer_before_abandoning):
            assert send(first) == "abandoned"
        in_flight.join(10)
        assert in_flight.error is None, in_flight.error
        assert in_flight.result == "abandoned"  # switched off while its attempt was out
        with tenant_context(acme.tenant.id):  # its answer is recorded all the same
            recorded = WebhookDelivery.objects.get(pk=second)
        assert (recorded.attempts, recorded.last_status) == (1, 500)
        assert send(second) == "skipped"  # nothing more to try
        shown = acme.client.get(f"/api/v1/webhooks/{hook}").json()
        assert shown["enabled"] is False
    finally:
        server.shutdown()
        server.server_close()


def test_two_admins_creating_the_last_endpoint_at_once_make_one(acme, globex) -> None:
    """MAX_ENDPOINTS was counted, then the endpoint inserted: two creates at 19 both counted
    19 and made 21. The tenant's row (FOR NO KEY UPDATE) now orders them: the second waits,
    counts 20 and is refused (422 webhook_limit)."""
    from memoryhub.services.webhooks import MAX_ENDPOINTS

    for number in range(MAX_ENDPOINTS - 1):
        _hook(acme, f"http://127.0.0.1:9/hook{number}")
    _hook(globex)  # another tenant's endpoints count for it alone
    other: list[Elsewhere] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        if "COUNT(" in sql.upper() and WebhookEndpoint._meta.db_table in sql and not other:
            other.append(Elsewhere(lambda: acme.client_with(acme.key).post(
                "/api/v1/webhooks", {"url": "http://127.0.0.1:9/other"}, format="json",
            ).status_code).as_far_as_it_gets())
        return result

    with connection.execute_wrapper(between):
        first = acme.client.post("/api/v1/webhooks", {"url": "http://127.0.0.1:9/last"},
                                 format="json")
    assert other, "the create counted nothing"
    other[0].join(10)
    assert sorted([first.status_code, other[0].result]) == [201, 422]
    assert len(_left(acme)[0]) == MAX_ENDPOINTS and len(_left(globex)[0]) == 1


def test_a_send_deferred_while_the_last_attempt_out_ends_is_sent_when_it_ends(
        acme, settings) -> None:
    """WEBHOOK_MAX_IN_FLIGHT 1. An attempt ends, finding nothing waiting, and before it has
    committed a new event's send counts it as still out and defers. Nothing was left to send
    the new one but the sweep, minutes later. The end of an attempt now holds the endpoint's
    claim lock from before it looks for the next: the new send waits, then goes."""
    from memoryhub.services.webhooks import Attempt, _claim, _settle

    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "max_in_flight": 1}
    with webhook_receiver() as receiver:
        _hook(acme, receiver.url)
        assert acme.client.post("/api/v1/users/alice/memory", WRITE,
                                format="json").status_code == 200
        with tenant_context(acme.tenant.id):
            first = WebhookDelivery.objects.get().pk
            out = _claim(delivery_id=first, now=timezone.now())
        assert not isinstance(out, str)
        racing: list[Elsewhere] = []

        def new_event_as_it_ends(execute: Any, sql: str, params: Any, many: bool,
                                 context: Any) -> Any:
            result = execute(sql, params, many, context)
            if ('"next_attempt_at" <=' in sql and WebhookDelivery._meta.db_table in sql
                    and not racing):
                # The ending attempt has looked for the next delivery waiting: none yet. A
                # write elsewhere records a new event now.
                assert in_thread(lambda: acme.client_with(acme.key).post(
                    "/api/v1/users/alice/memory", {**WRITE, "path": "/memories/b.md"},
                    format="json").status_code) == 200
                second = in_thread(lambda: _other_delivery(acme, first))
                racing.append(Elsewhere(lambda: webhook_deliver(
                    tenant_id=acme.tenant.id, delivery_id=second)).as_far_as_it_gets())
            return result

        with tenant_context(acme.tenant.id), connection.execute_wrapper(new_event_as_it_ends):
            assert _settle(claim=out, attempt=Attempt(200, "")) == "delivered"
        assert racing, "the ending attempt never looked for the next"
        racing[0].join(10)
        assert racing[0].error is None, racing[0].error
        assert racing[0].result == "delivered"  # not "deferred", with nobody left to send it
    assert len(receiver.received) == 1  # the second's; the first was only settled here


def _other_delivery(kit: Any, first: int) -> int:
    with tenant_context(kit.tenant.id):
        return WebhookDelivery.objects.exclude(pk=first).get().pk
