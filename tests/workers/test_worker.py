"""Through a real worker: a write gets embedded; a webhook is signed, retried after a 500, sent;
what beat sends (retention, the webhooks sweep) runs there too.

``transactional_db``: the worker is another process and sees only committed rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memoryhub.celery import app as celery_app
from memoryhub.models import (
    DeliveryStatus,
    Fact,
    MemoryEvent,
    Passage,
    WebhookDelivery,
    WebhookEndpoint,
)
from memoryhub.services.webhooks import DELIVERY_HEADER
from memoryhub.store.events import event_insert
from memoryhub.store.passages import embedding_claim
from tenants.context import tenant_context
from tests.webhooks.receiver import TIMESTAMP, webhook_receiver
from tests.workers import test_retention as retention
from tests.workers.conftest import wait_for

pytestmark = pytest.mark.worker

DIET = "Alice is vegetarian: she eats no meat and no fish."


def put_over_http(kit, path: str, content: str):
    response = kit.client.put(f"/api/v1/users/alice/documents/global{path}",
                              {"content": content}, format="json")
    assert response.status_code in (200, 201), response.content
    return response


def test_a_write_is_embedded_by_the_worker(transactional_db, celery_worker, acme, globex) -> None:
    put_over_http(acme, "/notes/diet.md", DIET)

    def embedded() -> list[str]:
        """the passage's vector"""
        with tenant_context(acme.tenant.id):
            return list(Passage.objects.filter(embedding__isnull=False)
                        .values_list("embedding_provider", flat=True))

    assert wait_for(embedded) == ["hashing:384"]
    hit = acme.client.post("/api/v1/users/alice/recall", {"query": "what does she eat?"},
                           format="json").json()["results"][0]
    assert hit["path"] == "/notes/diet.md"
    with tenant_context(globex.tenant.id):
        assert not Passage.objects.exists()


def test_a_burst_of_writes_of_two_tenants_is_embedded(
    transactional_db, celery_worker, acme, globex,
) -> None:
    """The writes' embeddings travel together (memoryhub/infra/publisher.py), each in its tenant."""
    for i in range(4):
        put_over_http(acme, f"/notes/a{i}.md", f"{DIET} Note {i}.")
        put_over_http(globex, f"/notes/g{i}.md", f"Bob plays chess. Note {i}.")

    def embedded() -> bool:
        """every passage of both tenants has its vector"""
        counts = []
        for kit in (acme, globex):
            with tenant_context(kit.tenant.id):
                counts.append(Passage.objects.filter(embedding__isnull=False).count())
        return counts == [4, 4]

    wait_for(embedded)


@contextmanager
def embedding_claimed(tenant_id: int, kind: str, record_id: object) -> Iterator[None]:
    """Another transaction (a thread of this process, with its own connection) holds the
    embedding claim of a document, fact or conversation for the block, as a task embedding it
    in the other worker process would."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with tenant_context(tenant_id):
                assert embedding_claim(kind=kind, ids=[record_id]) == {record_id}
                held.set()
                release.wait(timeout=60)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(timeout=10)
    try:
        yield
    finally:
        release.set()
        holder.join(timeout=10)


def test_a_document_another_task_is_embedding_is_left_to_it_and_asked_for_again(
    transactional_db, celery_worker, acme,
) -> None:
    """memoryhub/services/passages.py, "Catching up": one transaction embeds a document at a
    time; a task that finds its document claimed asks for it again until the claim is free."""
    put_over_http(acme, "/notes/diet.md", DIET)

    def waiting() -> int:
        with tenant_context(acme.tenant.id):
            return Passage.objects.filter(embedding__isnull=True).count()

    wait_for(lambda: waiting() == 0)
    with tenant_context(acme.tenant.id):
        document_id = Passage.objects.get().document_id
    with embedding_claimed(acme.tenant.id, "document", document_id):
        put_over_http(acme, "/notes/diet.md", DIET + " She loves lentils.")
        time.sleep(2.5)  # the edit's task and at least one retry came and left it
        assert waiting() == 1
    wait_for(lambda: waiting() == 0, timeout=10)


def test_a_fact_another_task_is_embedding_is_left_to_it_and_asked_for_again(
    transactional_db, celery_worker, acme,
) -> None:
    """The same claim for a fact (facts' and messages' tasks, ``records_embed``)."""
    created = acme.client.post("/api/v1/users/alice/facts",
                               {"content": "Alice is vegetarian", "type": "preference"},
                               format="json")
    assert created.status_code == 201, created.content
    fact_id = created.json()["id"]

    def waiting() -> int:
        with tenant_context(acme.tenant.id):
            return Fact.objects.filter(embedding__isnull=True).count()

    wait_for(lambda: waiting() == 0)
    with embedding_claimed(acme.tenant.id, "fact", fact_id):
        edited = acme.client.patch(f"/api/v1/users/alice/facts/{fact_id}",
                                   {"content": "Alice is vegan"}, format="json")
        assert edited.status_code == 200, edited.content
        time.sleep(2.5)  # the edit's task and at least one retry came and left it
        assert waiting() == 1
    wait_for(lambda: waiting() == 0, timeout=10)


def test_a_webhook_is_retried_after_a_500_then_delivered(
    transactional_db, celery_worker, acme, globex, settings,
) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    with webhook_receiver(statuses=[500]) as receiver:
        endpoint = acme.client.post("/api/v1/webhooks", {"url": receiver.url}, format="json").json()
        writing = time.time()
        put_over_http(acme, "/notes/diet.md", DIET)

        def delivered() -> bool:
            """the delivery to be marked delivered"""
            with tenant_context(acme.tenant.id):
                return WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).exists()

        wait_for(delivered)
    first, second = receiver.received  # the 500, then the retry (WEBHOOK_RETRY_BASE=1 s)
    # Each attempt signed anew (the README's formula, checked as a receiver would): the
    # retry's timestamp is no earlier than the first attempt's arrival.
    assert first.signed_by(endpoint["secret"]) and first.signed_between(writing)
    assert second.signed_by(endpoint["secret"]) and second.signed_between(first.arrived_at)
    assert int(second.headers[TIMESTAMP]) > int(first.headers[TIMESTAMP])  # retried >= 1 s on
    assert first.body == second.body
    assert first.headers[DELIVERY_HEADER] == second.headers[DELIVERY_HEADER]
    shown = acme.client.get(f"/api/v1/webhooks/{endpoint['id']}").json()
    assert shown["last_status"] == 200 and shown["failing_since"] is None
    with tenant_context(acme.tenant.id):
        assert WebhookDelivery.objects.get().attempts == 2


# --- what beat sends --------------------------------------------------------------------------


def beat_sends(settings, entry: str) -> None:
    """What beat does when an entry of CELERY_BEAT_SCHEDULE is due: send its task by name."""
    celery_app.send_task(settings.CELERY_BEAT_SCHEDULE[entry]["task"])


def test_hourly_retention_runs_through_the_worker(
    transactional_db, celery_worker, acme, globex, settings,
) -> None:
    """The retention entry fans out one purge per tenant on the worker; only acme's expired
    session goes (globex keeps sessions forever), with its `deleted` events."""
    acme.tenant.session_days = 30
    acme.tenant.save()
    globex.tenant.session_days = None
    globex.tenant.save()
    retention.seed(acme)
    retention.seed(globex)
    beat_sends(settings, "retention-purge")

    def purged() -> bool:
        """acme's idle session to be purged"""
        return ("s-old", "/old1.md") not in retention.remaining(acme)

    wait_for(purged)
    wait_for(lambda: ("s-old", "/old2.md") not in retention.remaining(acme))
    assert retention.remaining(acme) == [("", "/g.md"), ("cook", "/p.md"),
                                         ("s-active", "/new.md"), ("s-active", "/old.md")]
    with tenant_context(acme.tenant.id):
        deleted = MemoryEvent.objects.filter(data__change="deleted").order_by("id")
        assert [(e.actor, e.data["path"]) for e in deleted] == [("app", "/old1.md"),
                                                                ("app", "/old2.md")]
    assert len(retention.remaining(globex)) == 6


def test_the_webhooks_sweep_sends_a_delivery_whose_message_was_lost(
    transactional_db, celery_worker, acme, globex, settings,
) -> None:
    """A pending delivery that no message announced (a crash between commit and enqueue) is
    found by the sweep entry and sent by the worker, signed."""
    with webhook_receiver() as receiver:
        with tenant_context(acme.tenant.id):
            WebhookEndpoint.objects.create(tenant=acme.tenant, url=receiver.url, secret="s" * 32,
                                           event_types=["memory.changed"])
            # The store's insert, without the service's enqueue on commit: the lost message.
            event_insert(type="memory.changed", user_id="alice", actor="app",
                         data={"change": "created", "path": "/a.md"}, now=timezone.now())
            # Due two minutes ago: the sweep leaves a delivery its own message may still send
            # alone for a minute.
            WebhookDelivery.objects.update(next_attempt_at=timezone.now() - timedelta(minutes=2))
        sweeping = time.time()
        beat_sends(settings, "webhooks-sweep")
        wait_for(lambda: receiver.received)
    [request] = receiver.received
    assert request.signed_by("s" * 32) and request.signed_between(sweeping)

    def delivered() -> bool:
        """the delivery to be marked delivered"""
        with tenant_context(acme.tenant.id):
            return WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED).exists()

    wait_for(delivered)
