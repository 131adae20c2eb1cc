"""Embedding tasks published by a background thread of each process, a batch at a time.

Publishing one Celery message cost about 1 ms of a write's CPU and 1.4 ms of its time here:
kombu builds the message, and every LPUSH wakes Redis. So a write, once committed, only
hands (tenant, document, version) to its process's publisher thread. The thread sends one
``embed_documents`` task (by name, through memoryhub.infra.jobs) for what arrived within
``linger`` seconds of the first item, and no sooner than ``interval`` after its previous
send (at most ``batch`` items): the request does not wait for the broker, and under load one
message carries several writes. The worker's cost is mostly per message (a task, a
transaction), so that is what lets it keep up with a burst (``make bench-embed``).

What can be lost: items not yet sent when a process dies without exiting normally (a normal
exit sends them: ``atexit``), or a batch the broker refused (logged). The embeddings sweep
(beat) re-enqueues their documents after ``EMBEDDINGS_SWEEP_GRACE``, as it does for a message
lost in the broker. With ``CELERY_TASK_ALWAYS_EAGER`` items are sent at once, in the caller.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from memoryhub.infra.jobs import EMBED_DOCUMENTS, EMBED_RECORDS, job_enqueue, jobs_run_inline

logger = logging.getLogger(__name__)

Item = tuple[int, int, int]  # tenant id, document id, document version
RecordItem = tuple[int, str, str]  # tenant id, "fact" or "conversation", its id
T = TypeVar("T")


class Publisher(Generic[T]):
    """``linger``: how long the first item of a batch waits for others; ``interval``: the
    least time between two sends, so that under load a batch holds what arrived meanwhile
    (a worker's cost is per message more than per item) while a lone write still leaves
    after ``linger``."""

    def __init__(self, send: Callable[[list[T]], None], *, linger: float, batch: int,
                 interval: float = 0.0, what: str = "embeddings",
                 lost: str = "the sweep will find them") -> None:
        self._send = send
        self._what, self._lost = what, lost  # for the log
        self._linger = linger
        self._batch = batch
        self._interval = interval
        self._last_send = -interval  # monotonic time of the latest send
        self._queue: queue.SimpleQueue[T] = queue.SimpleQueue()
        self._pending = 0  # submitted and not yet sent (or given up)
        self._settled = threading.Condition()
        self._pid: int | None = None  # the process whose thread runs (a fork has none)

    def submit(self, item: T) -> None:
        self._ensure_thread()
        with self._settled:
            self._pending += 1
        self._queue.put(item)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything submitted so far was sent; False on timeout."""
        with self._settled:
            return self._settled.wait_for(lambda: self._pending == 0, timeout=timeout)

    def _ensure_thread(self) -> None:
        if self._pid == os.getpid():
            return
        with self._settled:
            if self._pid == os.getpid():
                return
            self._queue, self._pending = queue.SimpleQueue(), 0  # a fork's copy is not ours
            threading.Thread(target=self._run, name=f"{self._what}-publisher", daemon=True).start()
            self._pid = os.getpid()
        atexit.register(self.flush)

    def _run(self) -> None:
        while True:
            batch = self._collect()
            self._last_send = time.monotonic()
            try:
                self._send(batch)
            except Exception:
                logger.exception("could not publish %d %s; %s", len(batch), self._what,
                                 self._lost)
            with self._settled:
                self._pending -= len(batch)
                self._settled.notify_all()

    def _collect(self) -> list[T]:
        batch = [self._queue.get()]
        deadline = max(time.monotonic() + self._linger, self._last_send + self._interval)
        while len(batch) < self._batch:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                batch.append(self._queue.get(timeout=remaining))
            except queue.Empty:
                break
        return batch


def _send_embedding_tasks(items: list[Item]) -> None:
    latest: dict[tuple[int, int], int] = {}
    for tenant_id, document_id, version in items:
        key = (tenant_id, document_id)
        latest[key] = max(version, latest.get(key, version))
    job_enqueue(
        name=EMBED_DOCUMENTS, kwargs={"items": [[t, d, v] for (t, d), v in latest.items()]},
        # Celery would build these with its safe repr, a large share of a publish's CPU.
        argsrepr="()", kwargsrepr=f"{{{len(latest)} documents}}",
    )


# At most one message per process and kind every SEND_INTERVAL: a lone write's embedding
# leaves after the linger, a burst's in messages of what arrived meanwhile (make bench-embed).
SEND_INTERVAL = 0.1
embedding_publisher: Publisher[Item] = Publisher(_send_embedding_tasks, linger=0.02, batch=100,
                                                 interval=SEND_INTERVAL)


def embedding_enqueue(*, tenant_id: int, document_id: int, version: int) -> None:
    """Ask for the embedding of a committed document version (called on commit)."""
    if jobs_run_inline():
        _send_embedding_tasks([(tenant_id, document_id, version)])
    else:
        embedding_publisher.submit((tenant_id, document_id, version))


# Facts and the messages of a conversation (recall over facts and messages), the same way:
# one ``embed_records`` task for what arrived within the linger.


def _send_record_tasks(items: list[RecordItem]) -> None:
    unique = list(dict.fromkeys(items))
    job_enqueue(name=EMBED_RECORDS, kwargs={"items": [list(item) for item in unique]},
                argsrepr="()", kwargsrepr=f"{{{len(unique)} records}}")


record_publisher: Publisher[RecordItem] = Publisher(_send_record_tasks, linger=0.02, batch=100,
                                                    interval=SEND_INTERVAL)


def record_embedding_enqueue(*, tenant_id: int, kind: str, record_id: str) -> None:
    """Ask for the vectors of a committed fact (``kind`` "fact") or of a conversation's
    messages that lack one ("conversation"), called on commit."""
    if jobs_run_inline():
        _send_record_tasks([(tenant_id, kind, record_id)])
    else:
        record_publisher.submit((tenant_id, kind, record_id))


# Other jobs whose loss a sweep repairs (webhook deliveries): sent one by one, each with its
# countdown, by a thread of their own, so that a request never waits for the broker. With
# Redis away, kombu's publish retries took about half a second a job, in every write that
# recorded a delivery; now the first failure of a batch drops the batch (logged), and the
# webhooks sweep sends those deliveries when the broker is back.

Job = tuple[str, dict[str, Any], float]  # task name, keyword arguments, countdown (s)


def _send_jobs(jobs: list[Job]) -> None:
    for name, kwargs, countdown in jobs:
        job_enqueue(name=name, kwargs=kwargs, countdown=countdown)


job_publisher: Publisher[Job] = Publisher(_send_jobs, linger=0.0, batch=100, what="jobs")


def job_enqueue_soon(*, name: str, kwargs: dict[str, Any], countdown: float = 0.0) -> None:
    """Send a job from the background thread (at once, in eager mode): for jobs that a
    sweep finds again when their message is lost."""
    if jobs_run_inline():
        job_enqueue(name=name, kwargs=kwargs, countdown=countdown)
    else:
        job_publisher.submit((name, kwargs, countdown))
