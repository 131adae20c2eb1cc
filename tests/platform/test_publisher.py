"""The embedding publisher's thread (memoryhub/infra/publisher.py), with a recording sender."""

from __future__ import annotations

import threading

import pytest

from memoryhub.infra.publisher import Publisher


class Recorder:
    def __init__(self, fail_first: bool = False) -> None:
        self.batches: list[list[tuple[int, int, int]]] = []
        self.fail_first = fail_first
        self.lock = threading.Lock()

    def __call__(self, batch: list[tuple[int, int, int]]) -> None:
        with self.lock:
            if self.fail_first and not self.batches:
                self.batches.append([])
                raise ConnectionError("the broker is away")
            self.batches.append(batch)


def test_what_arrives_within_the_linger_goes_out_as_one_batch() -> None:
    sent = Recorder()
    publisher = Publisher(sent, linger=0.5, batch=100)
    for document in range(5):
        publisher.submit((1, document, 1))
    assert publisher.flush(timeout=5)
    assert sent.batches == [[(1, d, 1) for d in range(5)]]


def test_a_batch_holds_at_most_batch_items_and_flush_waits_for_all() -> None:
    sent = Recorder()
    publisher = Publisher(sent, linger=0.5, batch=3)
    for document in range(7):
        publisher.submit((1, document, 1))
    assert publisher.flush(timeout=5)
    assert [len(b) for b in sent.batches] == [3, 3, 1]
    assert [item for b in sent.batches for item in b] == [(1, d, 1) for d in range(7)]


def test_what_arrives_within_the_interval_after_a_send_goes_out_together() -> None:
    """A lone item leaves after the linger; those behind it wait out the interval, together."""
    sent = Recorder()
    publisher = Publisher(sent, linger=0.0, batch=100, interval=1.0)
    publisher.submit((1, 0, 1))
    assert publisher.flush(timeout=5)
    for document in range(1, 4):
        publisher.submit((1, document, 1))
    assert publisher.flush(timeout=5)
    assert sent.batches == [[(1, 0, 1)], [(1, d, 1) for d in range(1, 4)]]


def test_a_failed_send_is_logged_and_the_thread_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    sent = Recorder(fail_first=True)
    publisher = Publisher(sent, linger=0.01, batch=100)
    publisher.submit((1, 1, 1))
    assert publisher.flush(timeout=5)
    assert "could not publish 1 embeddings; the sweep will find them" in caplog.text
    publisher.submit((1, 2, 1))
    assert publisher.flush(timeout=5)
    assert sent.batches[-1] == [(1, 2, 1)]


def test_flush_returns_false_when_the_sender_is_stuck() -> None:
    release = threading.Event()
    publisher = Publisher(lambda batch: release.wait(5), linger=0.0, batch=100)
    publisher.submit((1, 1, 1))
    assert publisher.flush(timeout=0.2) is False
    release.set()
    assert publisher.flush(timeout=5)
