"""The Redis transport's publish client (memoryhub/infra/broker.py), against the real Redis."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterator

import pytest
import redis
from kombu import Connection, Exchange, Producer, Queue

import memoryhub.celery  # noqa: F401 - maps redis:// to memoryhub.infra.broker
from memoryhub.infra.broker import Channel
from tests.workers.conftest import REDIS_URL


@pytest.fixture
def queue_name() -> Iterator[str]:
    name = f"memoryhub-broker-test-{uuid.uuid4().hex[:12]}"
    yield name
    redis.Redis.from_url(REDIS_URL).delete(name)


def test_publishes_reuse_one_client_per_pool_and_every_message_arrives(queue_name: str) -> None:
    queue = Queue(queue_name, Exchange(queue_name), routing_key=queue_name)
    with Connection(REDIS_URL) as connection:
        channel = connection.default_channel
        assert isinstance(channel, Channel)
        producer = Producer(channel)

        def publish(n: int) -> None:
            producer.publish({"n": n}, exchange=queue.exchange, routing_key=queue_name,
                             declare=[queue], serializer="json")

        publish(0)
        client = channel._sync_client
        publish(1)
        assert channel._sync_client is client  # kombu alone builds one per message

        channel._disconnect_pools()  # what a fork or a lost connection does
        publish(2)
        assert channel._sync_client is not client
        assert channel._sync_client.connection_pool is channel.pool

    raw = redis.Redis.from_url(REDIS_URL).lrange(queue_name, 0, -1)
    # kombu's Redis messages carry their body base64-encoded
    bodies = sorted(json.loads(base64.b64decode(json.loads(message)["body"]))["n"] for message in raw)
    assert bodies == [0, 1, 2]
