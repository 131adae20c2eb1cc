"""The queue's faults: a worker killed mid-task, Redis away. The sweeps (beat, run by the real
worker with short intervals) finish what a lost message left.

A Redis of the module's own (on a free port) so that stopping it touches nobody else; the
writes go through this process's API (on-commit hooks publish to that Redis) into the shared
test database, where the worker reads them.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memoryhub.models import DeliveryStatus, MemoryDocument, Passage, WebhookDelivery
from tenants.context import tenant_context
from tests.faults.harness import OwnRedis, wait_until
from tests.platform.embedding_server import embedding_server
from tests.webhooks.receiver import webhook_receiver
from tests.workers.conftest import celery_pointed_at, worker_running

pytestmark = [pytest.mark.faults, pytest.mark.worker]

# Every second, for work of any age: the test need not wait out the production grace.
SWEEPS = {"EMBEDDINGS_SWEEP_INTERVAL": "1", "EMBEDDINGS_SWEEP_GRACE": "0",
          "WEBHOOKS_SWEEP_INTERVAL": "1", "WEBHOOKS_SWEEP_GRACE": "0"}
# Three passages (memoryhub/chunking.py splits at the headings of a long text).
LONG = "\n\n".join(f"## Part {i}\n" + f"Sentence {i} of a long memory. " * 25 for i in range(3))


@pytest.fixture(scope="module")
def own_redis() -> Iterator[OwnRedis]:
    server = OwnRedis()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def queue(own_redis: OwnRedis) -> Iterator[str]:
    name = f"faults-{uuid.uuid4().hex[:10]}"
    with celery_pointed_at(own_redis.url, name):
        yield name


def put(kit: Any, path: str, content: str) -> None:
    response = kit.client.put(f"/api/v1/users/alice/documents/global{path}", {"content": content},
                              format="json")
    assert response.status_code in (200, 201), response.content


def vectors(kit: Any, path: str) -> list[bool]:
    """Whether each passage of the document has its vector."""
    with tenant_context(kit.tenant.id):
        document = MemoryDocument.objects.get(path=path)
        return [vector is not None for vector in Passage.objects.filter(document=document)
                .order_by("ordinal").values_list("embedding", flat=True)]


def test_a_worker_killed_mid_task_leaves_nothing_half_done_and_the_sweep_finishes(
    transactional_db: Any, acme: Any, own_redis: OwnRedis, queue: str, tmp_path: Path,
) -> None:
    """The provider embeds one passage per call; the second call is held until the worker
    (its main process and pool, SIGKILL) is gone. The first passage's vector, computed, was
    never stored: the task's transaction died with it. A new worker's sweep embeds them all."""
    release = threading.Event()
    with embedding_server(dimension=384) as provider:
        def held(body: dict) -> Any:
            release.wait(60)
            return provider.embeddings(body)

        provider.script += [provider.embeddings, held]
        env = {"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_URL": provider.url,
               "EMBEDDINGS_MODEL": "mini", "EMBEDDINGS_BATCH_SIZE": "1"}
        broker = {"broker_url": own_redis.url, "queue": queue}
        try:
            with worker_running(tmp_path / "killed.log", **broker, env=env) as worker:
                put(acme, "/long.md", LONG)
                wait_until(lambda: len(provider.requests) >= 2, timeout=60,
                           what="the worker's second provider call")
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        finally:
            release.set()
        assert vectors(acme, "/long.md") == [False, False, False]
        with worker_running(tmp_path / "sweeping.log", **broker, env={**env, **SWEEPS},
                            beat=True):
            wait_until(lambda: vectors(acme, "/long.md") == [True, True, True], timeout=60,
                       what="the sweep to embed the document")


def test_with_redis_away_writes_succeed_and_embeddings_and_webhooks_catch_up(
    transactional_db: Any, acme: Any, own_redis: OwnRedis, queue: str, tmp_path: Path,
    settings: Any,
) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    paths = [f"/notes/{n}.md" for n in range(3)]
    with webhook_receiver() as receiver, worker_running(
            tmp_path / "worker.log", broker_url=own_redis.url, queue=queue, env=SWEEPS,
            beat=True):
        created = acme.client.post("/api/v1/webhooks", {"url": receiver.url}, format="json")
        assert created.status_code == 201, created.content
        own_redis.stop()
        try:
            for path in paths:
                put(acme, path, f"Written while Redis was away: {path}.")
        finally:
            own_redis.start()

        def caught_up() -> bool:
            with tenant_context(acme.tenant.id):
                delivered = WebhookDelivery.objects.filter(status=DeliveryStatus.DELIVERED)
                done = delivered.count() == len(paths)
            return done and all(vectors(acme, path) == [True] for path in paths)

        wait_until(caught_up, timeout=60, what="the vectors and the webhook deliveries")
    assert len(receiver.received) == len(paths)
