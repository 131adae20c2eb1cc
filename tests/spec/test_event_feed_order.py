"""The event feed under concurrent writers (issue 17): each tenant's ids are its own, and a
reader following ``after`` sees every event once, in strictly increasing order.

Writers of two tenants create documents at once through the API (the live server answers in
threads, each with its own database connection) while a reader pages through one tenant's
feed with small pages. Ids are numbered per tenant under the tenant's feed lock
(memoryhub/store/events.py), so the reader can neither skip an event that commits after a
later one nor see another tenant's numbers.
"""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.django_db(transaction=True)

WRITES = 8  # per writer; each its own person, well under max_writes_per_turn


def write_documents(base: str, key: str, user_id: str, failed: list[dict]) -> None:
    with httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"},
                      timeout=60) as api:
        for i in range(WRITES):
            response = api.post(f"/users/{user_id}/memory", json={
                "command": "create", "path": f"/memories/n{i}.md", "file_text": "x"})
            if response.status_code != 200 or response.json()["is_error"]:
                failed.append(response.json())


def follow_feed(base: str, key: str, done: threading.Event) -> list[int]:
    """Page through the feed with ``after`` until the writers are done and nothing is left."""
    seen: list[int] = []
    cursor: int | None = None
    with httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"},
                      timeout=60) as api:
        while True:
            finished = done.is_set()  # before the read: a read after it sees every write
            params: dict[str, Any] = {"limit": 5, **({"after": cursor} if cursor else {})}
            page = api.get("/events", params=params).json()
            seen += [e["id"] for e in page["events"]]
            cursor = page["next_cursor"] or cursor
            if finished and not page["events"]:
                return seen


def test_concurrent_writers_and_a_reader_following_the_cursor(live_server, acme, globex) -> None:
    failed: list[dict] = []
    writers = [threading.Thread(target=write_documents,
                                args=(live_server.url, kit.key, user, failed))
               for kit, users in ((acme, ["a0", "a1", "a2", "a3"]), (globex, ["g0", "g1"]))
               for user in users]
    done = threading.Event()
    result: list[list[int]] = []
    reader = threading.Thread(target=lambda: result.append(
        follow_feed(live_server.url, acme.key, done)))
    reader.start()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    done.set()
    reader.join()
    assert failed == []
    assert result == [list(range(1, 4 * WRITES + 1))]  # each once, in order, no gap
    globex_feed = globex.client.get("/api/v1/events", {"limit": 1000}).json()["events"]
    assert [e["id"] for e in globex_feed] == list(range(1, 2 * WRITES + 1))
