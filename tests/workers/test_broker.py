"""The Redis transport's publish client (memoryhub/infra/broker.py), against the real Redis."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from kombu import Connection, Exchange, Producer, Queue
from kombu.common import ignore_errors

import memoryhub.celery  # noqa: F401 - maps redis:// to memoryhub.infra.broker
from memoryhub.infra.broker import Channel, FilesystemChannel
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


def test_a_lost_connection_closed_with_a_message_unacknowledged_keeps_the_message(
        queue_name: str) -> None:
    """Celery 5.7's consumer, when Redis goes away, collects the broker connection, then
    closes it. When closing the channel failed during the collect (its BRPOP read raised), the
    collect still detached the transport, and the close then tried to put back the message a
    task was working on with no connection details: AttributeError, which nothing caught, and
    the worker stopped for good ("Unrecoverable error"). Here the transport is detached as the
    collect does, then the connection closed as celery does. The message stays in Redis and
    is delivered again once the visibility timeout has passed."""
    options = {"visibility_timeout": 1}
    queue = Queue(queue_name, Exchange(queue_name), routing_key=queue_name)
    with Connection(REDIS_URL) as connection:
        Producer(connection.default_channel).publish(
            {"n": 7}, exchange=queue.exchange, routing_key=queue_name, declare=[queue],
            serializer="json")
    lost = Connection(REDIS_URL, transport_options=options)
    channel = lost.default_channel
    assert queue(channel).get(no_ack=False) is not None  # a task is working on it
    channel._disconnect_pools()  # what the channel's failed close had done
    lost._do_close_transport()  # what collect() does after it
    ignore_errors(lost, lost.close)  # celery's on_connection_error_after_connected
    time.sleep(1.1)  # the visibility timeout
    with Connection(REDIS_URL, transport_options=options) as again:
        again.default_channel.qos.restore_visible()
        message = queue(again.default_channel).get(no_ack=True)
    assert message is not None and message.payload == {"n": 7}


# --- the filesystem transport (make run's default broker) ------------------------------------


def fs_queue() -> Queue:
    """A queue of its own: kombu keeps the filesystem transport's bindings in one global
    state for every folder, so a name bound in another test's folder would route nowhere here."""
    name = f"fs-test-{uuid.uuid4().hex[:8]}"
    return Queue(name, Exchange(name), routing_key=name)


def filesystem_connection(folder: Path) -> Connection:
    for name in ("out", "processed", "control"):
        (folder / name).mkdir(exist_ok=True)
    return Connection("filesystem://", transport_options={
        "data_folder_in": str(folder / "out"), "data_folder_out": str(folder / "out"),
        "processed_folder": str(folder / "processed"), "control_folder": str(folder / "control"),
        "polling_interval": 0.01,
    })


def test_filesystem_messages_written_while_a_worker_reads_all_arrive_whole(tmp_path: Path) -> None:
    """kombu's own channel lets a reader take a file its writer has created but not yet
    written: the worker died on the empty message ("Unrecoverable error"). And a writer thread
    whose binding kombu had marked done before its table was written published into no
    table: the message was dropped."""
    queue = fs_queue()
    writers, each, body = 4, 100, "x" * 50_000  # large bodies: long writes
    received: list[int] = []
    with filesystem_connection(tmp_path) as reader:
        assert isinstance(reader.default_channel, FilesystemChannel)

        def write(first: int) -> None:
            with filesystem_connection(tmp_path) as connection:
                producer = Producer(connection.default_channel)
                for n in range(first, first + each):
                    producer.publish({"n": n, "body": body}, exchange=queue.exchange,
                                     routing_key=queue.routing_key, declare=[queue],
                                     serializer="json")

        threads = [threading.Thread(target=write, args=(i * each,)) for i in range(writers)]
        for thread in threads:
            thread.start()
        simple = reader.SimpleQueue(queue)
        while len(received) < writers * each:
            message = simple.get(timeout=30)
            assert message.payload["body"] == body
            received.append(message.payload["n"])
            message.ack()
        for thread in threads:
            thread.join()
    assert sorted(received) == list(range(writers * each))
    assert os.listdir(tmp_path / "out") == os.listdir(tmp_path / "processed") == []


def test_queues_bound_at_once_to_a_new_exchange_are_all_kept_and_never_read_half_written(
    tmp_path: Path,
) -> None:
    """kombu creates the exchange's table, then writes it: two first bindings each truncated
    the other's, and a publisher reading in between raised on the empty file."""
    exchange, binders, rounds = Exchange(f"fs-test-{uuid.uuid4().hex[:8]}"), 6, 20
    errors: list[BaseException] = []
    for round_ in range(rounds):
        name = f"{exchange.name}-{round_}"
        start = threading.Barrier(binders * 2)

        def bind(n: int, name: str = name, start: threading.Barrier = start) -> None:
            with filesystem_connection(tmp_path) as connection:
                channel = connection.default_channel
                channel.exchange_declare(name, type="direct")
                start.wait()
                try:
                    channel.queue_bind(f"{name}-q{n}", exchange=name, routing_key=f"k{n}")
                except BaseException as exc:  # any of them: reported below
                    errors.append(exc)

        def read(name: str = name, start: threading.Barrier = start) -> None:
            with filesystem_connection(tmp_path) as connection:
                channel = connection.default_channel
                start.wait()
                try:
                    for _ in range(50):
                        channel.get_table(name)
                except BaseException as exc:  # any of them: reported below
                    errors.append(exc)

        threads = [threading.Thread(target=bind, args=(n,)) for n in range(binders)]
        threads += [threading.Thread(target=read) for _ in range(binders)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        with filesystem_connection(tmp_path) as connection:
            table = connection.default_channel.get_table(name)
        assert errors == []
        assert sorted(q.queue for q in table) == [f"{name}-q{n}" for n in range(binders)]
    assert [p for p in os.listdir(tmp_path / "control") if p.endswith(".partial")] == []


def test_an_unreadable_filesystem_message_is_dropped_and_logged_not_fatal(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    queue = fs_queue()
    broken = f"0_broken.{queue.name}.msg"  # sorted first: read before the good one
    with filesystem_connection(tmp_path) as connection:
        producer = Producer(connection.default_channel)
        (tmp_path / "out" / broken).write_bytes(b"")  # what a torn write leaves
        producer.publish({"n": 1}, exchange=queue.exchange, routing_key=queue.routing_key,
                         declare=[queue], serializer="json")
        message = connection.SimpleQueue(queue).get(timeout=10)
        assert message.payload == {"n": 1}
    assert f"dropped an unreadable broker message {broken}" in caplog.text
