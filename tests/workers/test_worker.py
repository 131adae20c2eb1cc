"""Through a real worker: a write gets embedded; a webhook is signed, retried after a 500, sent.

``transactional_db``: the worker is another process and sees only committed rows.
"""

from __future__ import annotations

import time

import pytest

from memoryhub.models import DeliveryStatus, Passage, WebhookDelivery
from memoryhub.services.webhooks import DELIVERY_HEADER
from tenants.context import tenant_context
from tests.webhooks.receiver import TIMESTAMP, webhook_receiver
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
