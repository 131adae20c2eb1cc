"""Real Celery workers (``celery -A memoryhub worker``) on Redis, against the test database.

As in production (deploy/systemd): one worker for everything but webhook deliveries
(``-X webhooks``) and one for those (``-Q webhooks``, threads), memoryhub/infra/queues.py.
Redis DB 5 and a queue named for this session (the webhooks' queue is named after it) keep
runs of several people on one Redis apart. This process's Celery is pointed at the same
broker and queues for the duration, so the on-commit hooks of writes made here reach the
workers. The workers connect to the test database because the session fixture put its name
in ``MEMORYHUB_DB_NAME``; with the embedded server they connect as the application role, so
RLS applies to them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import kombu.pools
import pytest

from memoryhub.celery import app as celery_app
from memoryhub.infra.publisher import embedding_publisher, record_publisher
from memoryhub.infra.queues import WEBHOOKS, task_queues

REDIS_URL = os.environ.get("MEMORYHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
READY_TIMEOUT = 60.0


def _point_celery_at(conf: dict) -> None:
    """Reconfigure this process's Celery; its producer pool and queue table are cached.
    What the publisher thread holds goes to the broker it was meant for first. kombu keeps
    producer pools per broker URL too: without ``pools.reset()`` a second module with a
    worker would get the first one's closed pool back."""
    embedding_publisher.flush()
    record_publisher.flush()
    celery_app.conf.update(conf)
    if celery_app._pool is not None:
        celery_app._pool.force_close_all()
    celery_app._pool = None
    celery_app.__dict__.pop("amqp", None)
    kombu.pools.reset()


@contextmanager
def worker_running(log: Path, *, broker_url: str, queue: str, env: dict[str, str] | None = None,
                   beat: bool = False, webhooks: bool = True) -> Iterator[subprocess.Popen]:
    """``celery -A memoryhub worker -X webhooks`` (2 processes; with ``beat``, the sweeps
    too) on ``broker_url`` and ``queue`` against the test database, until the block ends;
    yields it. With ``webhooks``, the webhooks worker beside it (``-Q webhooks``, 4 threads,
    its log next to ``log``). Each in a session of its own, so that ``os.killpg`` reaches
    the pool's processes too."""
    env = {
        **os.environ,  # MEMORYHUB_DB_NAME is the test database by now
        "CELERY_BROKER_URL": broker_url, "CELERY_QUEUE": queue,
        "SECRET_KEY": "worker-under-test", "DB_POOL": "0",
        "WEBHOOK_ALLOW_PRIVATE_URLS": "1", "WEBHOOK_RETRY_BASE": "1", **(env or {}),
    }
    options = ["-X", WEBHOOKS, "--concurrency", "2"]
    if beat:
        options += ["--beat", "--schedule", str(log.with_suffix(".beat"))]
    with ExitStack() as stack:
        worker = stack.enter_context(_started(log, env, queue, options))
        if webhooks:
            stack.enter_context(_started(
                log.with_name(f"{log.stem}-webhooks{log.suffix}"), env, f"{queue}-webhooks",
                ["-Q", WEBHOOKS, "--pool", "threads", "--concurrency", "4"]))
        yield worker


@contextmanager
def _started(log: Path, env: dict[str, str], name: str,
             options: list[str]) -> Iterator[subprocess.Popen]:
    """One worker, node ``name``, once it says it is ready; a warm stop after the block."""
    command = [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "--loglevel",
               "INFO", "--without-gossip", "--without-mingle", "--without-heartbeat",
               "--hostname", f"{name}-{uuid.uuid4().hex[:6]}@%h", *options]
    with log.open("w") as out:
        worker = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  cwd=Path(__file__).resolve().parents[2], start_new_session=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT
        while " ready." not in log.read_text():
            if worker.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the worker did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield worker
    finally:
        if worker.poll() is None:
            worker.terminate()
            try:
                worker.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        if os.environ.get("MEMORYHUB_SHOW_WORKER_LOG"):
            print(log.read_text())


@contextmanager
def celery_pointed_at(broker_url: str, queue: str) -> Iterator[None]:
    """This process's on-commit hooks publish to ``broker_url`` and ``queue`` (and the
    webhooks' queue named after it) in the block."""
    saved = {key: celery_app.conf[key] for key in
             ("broker_url", "broker_transport_options", "task_default_queue", "task_queues")}
    _point_celery_at({"broker_url": broker_url, "broker_transport_options": {},
                      "task_default_queue": queue, "task_queues": task_queues(queue)})
    try:
        yield
    finally:
        _point_celery_at(saved)


@pytest.fixture(scope="module")
def celery_worker(celery_workers_of_the_run: str) -> Iterator[str]:
    """The run's workers (tests/conftest.py), with this process's Celery pointed at them for
    the module; yields the queue name."""
    with celery_pointed_at(REDIS_URL, celery_workers_of_the_run):
        yield celery_workers_of_the_run


def wait_for(predicate, *, timeout: float = 20.0, interval: float = 0.1):
    """Poll until ``predicate()`` is truthy (returns it) or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout} s waiting for {predicate.__doc__ or predicate}")
        time.sleep(interval)
