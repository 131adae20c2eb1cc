"""Concurrent memory tool writes from real threads against a live server lose nothing.

The live server runs in a thread of this process with its own database connections, and the
requests commit for real (``transactional_db``), so the locks in
``memoryhub.services.documents`` are what keeps 40 appends to one document from overwriting
each other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from memoryhub.models import MemoryDocument, MemoryEvent
from tenants.context import tenant_context

WRITERS = 40
# The live server's flush after each test runs on the owner connection (tests/conftest.py).
pytestmark = pytest.mark.django_db(transaction=True)


def connected_clients(live_server: Any, key: str, count: int) -> Iterator[list[httpx.Client]]:
    """``count`` clients, each with its keep-alive connection already open.

    Connecting one by one, before the race: the test server's listen backlog is small, and
    the point is 40 requests in flight at once, not 40 TCP handshakes.
    """
    with ExitStack() as stack:
        clients = []
        for _ in range(count):
            client = stack.enter_context(httpx.Client(
                base_url=live_server.url, headers={"Authorization": f"Bearer {key}"},
                timeout=30))
            assert client.get("/api/v1/users/alice/memory/index").status_code == 200
            clients.append(client)
        yield clients


def post(client: httpx.Client, url: str, body: dict) -> dict:
    response = client.post(url, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def test_forty_concurrent_appends_leave_forty_lines(transactional_db: Any, live_server: Any,
                                                    acme: Any, globex: Any) -> None:
    url = "/api/v1/users/alice/memory"
    start = threading.Barrier(WRITERS)
    for clients in connected_clients(live_server, acme.memory_key, WRITERS):
        assert post(clients[0], url, {"command": "create", "path": "/memories/log.md",
                                      "file_text": ""})["is_error"] is False

        def append(number: int) -> dict:
            start.wait()  # all requests in flight at once
            return post(clients[number], url, {
                "command": "append", "path": "/memories/log.md", "text": f"entry {number}",
                "turn_id": f"turn-{number}"})

        with ThreadPoolExecutor(max_workers=WRITERS) as pool:
            results = list(pool.map(append, range(WRITERS)))

    assert [result["is_error"] for result in results] == [False] * WRITERS, results
    with tenant_context(acme.tenant.id):
        document = MemoryDocument.objects.get(path="/log.md")
        changes = MemoryEvent.objects.filter(type="memory.changed").count()
    assert sorted(document.content.split("\n")) == sorted(f"entry {n}" for n in range(WRITERS))
    assert (document.version, changes) == (WRITERS + 1, WRITERS + 1)
    with tenant_context(globex.tenant.id):
        assert not MemoryDocument.objects.exists()


def test_concurrent_first_writes_create_one_person_and_one_document(
    transactional_db: Any, live_server: Any, acme: Any
) -> None:
    """Creates of one path race: exactly one wins, the others hear ``already exists``."""
    url = "/api/v1/users/newcomer/memory"
    racers = 8
    start = threading.Barrier(racers)
    for clients in connected_clients(live_server, acme.memory_key, racers):

        def create(number: int) -> dict:
            start.wait()
            return post(clients[number], url, {
                "command": "create", "path": "/memories/first.md", "file_text": f"from {number}",
                "turn_id": f"t{number}"})

        with ThreadPoolExecutor(max_workers=racers) as pool:
            results = list(pool.map(create, range(racers)))

    outcomes = sorted(result["content"] for result in results)
    assert outcomes == ["File /memories/first.md already exists"] * (racers - 1) + [
        "File created successfully at: /memories/first.md"]
    with tenant_context(acme.tenant.id):
        assert MemoryDocument.objects.filter(end_user__user_id="newcomer").count() == 1
