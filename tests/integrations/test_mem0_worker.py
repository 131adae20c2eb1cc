"""mem0's ``add`` with inference through a real worker (``test_mem0`` has the rest).

A module of its own: the worker lives as long as its module, and writes of later tests would
give it tasks to run while their data is truncated at teardown (a deadlock, seen once).
"""

from __future__ import annotations

import pytest

from tests.integrations.keys import operator_tenant
from tests.integrations.test_mem0 import mem0
from tests.workers.conftest import celery_worker, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["celery_worker"]  # the worker fixture, used by name


@pytest.mark.worker
def test_infer_through_a_real_worker(live_server, celery_worker) -> None:
    key = operator_tenant("initech")
    client = mem0(live_server, key)
    assert client.add("I work at Initech.", user_id="alice")["status"] == "PENDING"

    def learnt() -> list[str]:
        """the fact learnt by the worker"""
        return [m["memory"] for m in client.get_all(filters={"user_id": "alice"})["results"]]

    assert "Initech" in wait_for(learnt)[0]
    [memory] = client.search("employer Initech", filters={"user_id": "alice"})["results"]
    assert [h["event"] for h in client.history(memory["id"])] == ["ADD"]
