"""Work on a database connection of its own, for the tests that make two transactions
interleave (a deadlock, a race with a forget): the test holds locks on its connection while
the other side runs in a thread, as far as it gets.

Those tests use ``django_db(transaction=True)``: each side must commit for real.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connection, connections

# Longest a side may take to get as far as it can: far past any real step of the tests.
STUCK_WITHIN = 10.0


class Elsewhere(threading.Thread):
    """``work`` on a connection of its own; ``result`` once it has finished, ``error`` if
    it raised (for the test's assertion to report)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work, self.result, self.error = work, None, None
        self.pid: int | None = None  # its PostgreSQL backend's, once connected

    def run(self) -> None:
        try:
            with connection.cursor() as cursor:  # connected first, so its waits can be seen
                cursor.execute("SELECT pg_backend_pid()")
                self.pid = cursor.fetchone()[0]
            self.result = self.work()
        except Exception as exc:  # reported by the test's assertion
            self.error = exc
        finally:
            connections.close_all()

    def as_far_as_it_gets(self) -> Elsewhere:
        """Start (unless started), and return once it has got as far as it can: finished,
        or waiting for a lock another transaction holds (PostgreSQL's ``pg_blocking_pids``).
        A fixed pause was either slow or, on a loaded machine, too short for the race to
        happen at all."""
        if self.ident is None:
            self.start()
        in_thread(self._until_stuck)  # polled on a connection of its own: the test's own
        return self                   # may be inside an execute_wrapper, holding locks

    def _until_stuck(self) -> None:
        deadline = time.monotonic() + STUCK_WITHIN
        with connection.cursor() as cursor:
            while self.is_alive() and time.monotonic() < deadline:
                if self.pid is not None:
                    cursor.execute("SELECT cardinality(pg_blocking_pids(%s)) > 0", [self.pid])
                    if cursor.fetchone()[0]:
                        return
                time.sleep(0.01)


def in_thread(work: Callable[[], Any]) -> Any:
    """``work`` on a connection of its own, to its end (at most 30 s); its result."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_closing(work)).result(timeout=30)


def _closing(work: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        try:
            return work()
        finally:
            connections.close_all()  # a thread's connections are its own
    return run
