"""A tenant's webhook endpoint that hangs delays only webhook deliveries: neither that tenant's
nor another tenant's facts and vectors wait for it (memoryhub/infra/queues.py, README
"Scaling out").

The workers run as production runs them (tests/workers/conftest.py): one for everything but
deliveries, two processes, and one for deliveries. The endpoint answers nothing until the
test ends, and the workers give it WEBHOOK_TIMEOUT (far longer than the test's patience)
before they give up. When deliveries shared the queue of embeddings and augmentation, two
hanging ones held both processes, and a capture's fact came only when they timed out.

``transactional_db``: the workers are other processes and see only committed rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from memoryhub.infra.queues import webhooks_queue
from memoryhub.models import DeliveryStatus, WebhookDelivery
from tenants.context import tenant_context
from tests.recall.helpers import recall
from tests.webhooks.receiver import webhook_receiver
from tests.workers.conftest import REDIS_URL, celery_pointed_at, wait_for, worker_running

pytestmark = pytest.mark.worker

SLOTS = 2  # the processes of the worker that embeds and learns facts (conftest)
PATIENCE = 5.0  # seconds a fact or a vector may take while the deliveries hang
WEBHOOK_TIMEOUT = 30.0  # the workers' wait for an answer: the deliveries hang all along
THREADS = 4  # the webhooks worker's (conftest)
IN_FLIGHT = 2  # WEBHOOK_MAX_IN_FLIGHT: attempts one endpoint may have out
QUERY = "zebra quokka"  # no word of the facts: only their vectors find them (relaxed recall)


@pytest.fixture(scope="module")
def workers(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The workers for the module, waiting WEBHOOK_TIMEOUT for an endpoint; yields the queue."""
    queue = f"memoryhub-test-{uuid.uuid4().hex[:12]}"
    log = Path(tmp_path_factory.mktemp("worker")) / "worker.log"
    try:
        with worker_running(log, broker_url=REDIS_URL, queue=queue,
                            env={"WEBHOOK_TIMEOUT": str(WEBHOOK_TIMEOUT),
                                 "WEBHOOK_MAX_IN_FLIGHT": str(IN_FLIGHT)}), \
                celery_pointed_at(REDIS_URL, queue):
            yield queue
    finally:
        redis.Redis.from_url(REDIS_URL).delete(queue, webhooks_queue(queue))


def capture(kit, user: str, text: str) -> None:
    response = kit.client.post(f"/api/v1/users/{user}/sessions/s1/messages",
                               {"messages": [{"role": "user", "content": text}]}, format="json")
    assert response.status_code == 201, response.content


def put(kit, path: str, content: str) -> None:
    response = kit.client.put(f"/api/v1/users/alice/documents/global{path}",
                              {"content": content}, format="json")
    assert response.status_code in (200, 201), response.content


def facts(kit, user: str) -> list[str]:
    """The person's facts' objects, through the API."""
    response = kit.client.get(f"/api/v1/users/{user}/facts")
    assert response.status_code == 200, response.content
    return sorted(fact["object"] for fact in response.json()["facts"])


def found_by_vector(kit, user: str) -> int:
    """How many of the person's facts recall finds by their vector alone."""
    answer = recall(kit, user, query=QUERY, relaxed=True, sources=["facts"])
    assert answer.status_code == 200, answer.content
    return len(answer.json()["results"])


def test_a_hanging_endpoint_delays_neither_facts_nor_vectors(
    transactional_db, workers, acme, globex, settings,
) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    with webhook_receiver(held=True) as endpoint:
        created = acme.client.post("/api/v1/webhooks", {"url": endpoint.url}, format="json")
        assert created.status_code == 201, created.content
        for i in range(SLOTS + 1):  # each write's memory.changed event: one delivery
            put(acme, f"/notes/{i}.md", f"Note {i}.")
        wait_for(lambda: len(endpoint.received) >= SLOTS, timeout=30)  # in hand, hanging

        capture(globex, "bob", "I live in Oslo.")  # another tenant
        capture(acme, "alice", "I'm vegetarian.")  # the tenant whose endpoint hangs
        assert wait_for(lambda: facts(globex, "bob"), timeout=PATIENCE) == ["Oslo"]
        assert wait_for(lambda: facts(acme, "alice"), timeout=PATIENCE) == ["vegetarian"]
        wait_for(lambda: found_by_vector(globex, "bob") and found_by_vector(acme, "alice"),
                 timeout=PATIENCE)
        assert len(endpoint.received) >= SLOTS and not endpoint.released.is_set()

        # Released, the endpoint answers: every delivery is delivered at its first attempt,
        # the facts' fact.changed events' too.
        endpoint.released.set()

        def delivered() -> bool:
            """every delivery of acme's events delivered"""
            with tenant_context(acme.tenant.id):
                statuses = set(WebhookDelivery.objects.values_list("status", flat=True))
            return statuses == {DeliveryStatus.DELIVERED}

        wait_for(delivered, timeout=30)
    with tenant_context(acme.tenant.id):
        assert set(WebhookDelivery.objects.values_list("attempts", flat=True)) == {1}
    with tenant_context(globex.tenant.id):
        assert not WebhookDelivery.objects.exists()


def test_an_endpoint_that_hangs_leaves_other_tenants_deliveries_their_threads(
    transactional_db, workers, acme, globex, settings,
) -> None:
    """One tenant's endpoint hangs with more deliveries than the webhooks worker has threads.
    It gets IN_FLIGHT of them; another tenant's delivery goes out at once. Before, the
    hanging endpoint took every thread, and the other's waited WEBHOOK_TIMEOUT."""
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    with webhook_receiver(held=True) as hanging, webhook_receiver() as healthy:
        for kit, endpoint in ((acme, hanging), (globex, healthy)):
            created = kit.client.post("/api/v1/webhooks", {"url": endpoint.url}, format="json")
            assert created.status_code == 201, created.content
        for i in range(THREADS + 2):
            put(acme, f"/notes/{i}.md", f"Note {i}.")
        wait_for(lambda: len(hanging.received) >= IN_FLIGHT, timeout=30)

        written = globex.client.put("/api/v1/users/bob/documents/global/notes/a.md",
                                    {"content": "Note."}, format="json")
        assert written.status_code in (200, 201), written.content
        wait_for(lambda: healthy.received, timeout=PATIENCE)
        assert len(hanging.received) == IN_FLIGHT  # its share, no more

        hanging.released.set()  # the rest go out as those end, each at its first attempt

        def delivered() -> bool:
            """every delivery of acme's events delivered"""
            with tenant_context(acme.tenant.id):
                rows = set(WebhookDelivery.objects.values_list("status", "attempts"))
            return rows == {(DeliveryStatus.DELIVERED, 1)}

        wait_for(delivered, timeout=30)
    assert len(hanging.received) == THREADS + 2
