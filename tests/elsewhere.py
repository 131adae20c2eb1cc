"""Work on a database connection of its own, for the tests that make two transactions
interleave (a deadlock, a race with a forget): the test holds locks on its connection while
the other side runs in a thread, as far as it gets.

Those tests use ``django_db(transaction=True)``: each side must commit for real.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import connections


class Elsewhere(threading.Thread):
    """``work`` on a connection of its own; ``result`` once it has finished, ``error`` if
    it raised (for the test's assertion to report)."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work, self.result, self.error = work, None, None

    def run(self) -> None:
        try:
            self.result = self.work()
        except Exception as exc:  # reported by the test's assertion
            self.error = exc
        finally:
            connections.close_all()

    def as_far_as_it_gets(self, wait: float = 1.5) -> Elsewhere:
        """Start, and wait ``wait`` seconds for it to get as far as it can: finished, or
        waiting for a lock (the default is past PostgreSQL's deadlock timeout, 1 s)."""
        self.start()
        self.join(wait)
        return self


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
