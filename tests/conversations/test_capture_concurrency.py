"""Concurrent captures into one session, from real threads against a live server, lose
nothing and store nothing twice, and ``seq`` stays gapless.

The live server runs in a thread of this process with its own database connections, and the
requests commit for real (``transactional_db``), so what keeps the session in order is the
person's write lock that capture holds (``memoryhub.services.conversations``): without it two
captures would read the same ``message_count`` and collide on ``seq``, or both pass the retry
check and collide on the caller's id (a 500 either way, which these tests would report).
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from memoryhub.models import Conversation, Message
from tenants.context import tenant_context
from tests.api.test_memory_concurrency import connected_clients

THREADS = 8
CAPTURES = 25  # per thread, each of 2 messages
URL = "/api/v1/users/alice/sessions/s1/messages"
pytestmark = pytest.mark.django_db(transaction=True)


def capture(client: httpx.Client, messages: list[dict]) -> dict:
    response = client.post(URL, json={"messages": messages})
    assert response.status_code == 201, response.text
    return response.json()


def exchange(tag: str) -> list[dict]:
    """A user message and the assistant's reply, with the caller's ids."""
    return [{"role": "user", "content": f"question {tag}", "id": f"{tag}-u"},
            {"role": "assistant", "content": f"answer {tag}", "id": f"{tag}-a"}]


def run_threads(live_server: Any, key: str, work: Any) -> list[list[dict]]:
    """``work(client, thread number)`` in THREADS threads released together; their results."""
    start = threading.Barrier(THREADS)
    for clients in connected_clients(live_server, key, THREADS):

        def run(number: int) -> list[dict]:
            start.wait()  # every thread's first capture in flight at once
            return work(clients[number], number)

        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            return list(pool.map(run, range(THREADS)))
    raise AssertionError("no clients")


def stored_messages(kit: Any) -> list[dict]:
    with tenant_context(kit.tenant.id):
        return list(Message.objects.filter(end_user__user_id="alice", session_id="s1")
                    .order_by("conversation_id", "seq")
                    .values("id", "conversation_id", "seq", "client_id", "content"))


def assert_session_consistent(kit: Any, replies: list[dict], expected_ids: set[str]) -> None:
    """Every expected message stored exactly once, in one conversation whose seq runs 1..N
    without a gap (and whose message_count says N), and each reply's seqs the stored ones."""
    rows = stored_messages(kit)
    counts = Counter(row["client_id"] for row in rows)
    assert set(counts) == expected_ids
    assert [client_id for client_id, n in counts.items() if n > 1] == []
    by_conversation: dict[Any, list[int]] = defaultdict(list)
    for row in rows:
        by_conversation[row["conversation_id"]].append(row["seq"])
    assert len(by_conversation) == 1  # all within the timeout: one conversation
    [(conversation_id, seqs)] = by_conversation.items()
    assert seqs == list(range(1, len(expected_ids) + 1))
    with tenant_context(kit.tenant.id):
        assert Conversation.objects.get(id=conversation_id).message_count == len(expected_ids)
    stored = {str(row["id"]): row for row in rows}
    for reply in replies:
        assert reply["conversation_id"] == str(conversation_id)
        for message in reply["captured"]:
            row = stored[message["id"]]
            assert (message["seq"], message["client_id"]) == (row["seq"], row["client_id"])
        seqs = [message["seq"] for message in reply["captured"]]
        if seqs:  # a capture's messages are adjacent, in the order sent: none came between
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))


def test_concurrent_captures_into_one_session_keep_every_message_once_in_order(
    transactional_db: Any, live_server: Any, acme: Any, globex: Any
) -> None:
    def work(client: httpx.Client, number: int) -> list[dict]:
        return [capture(client, exchange(f"t{number}-c{c}")) for c in range(CAPTURES)]

    per_thread = run_threads(live_server, acme.memory_key, work)

    replies = [reply for thread in per_thread for reply in thread]
    assert all(len(reply["captured"]) == 2 and reply["dropped"]["duplicate"] == 0
               for reply in replies)
    expected = {f"t{n}-c{c}-{r}" for n in range(THREADS) for c in range(CAPTURES) for r in "ua"}
    assert_session_consistent(acme, replies, expected)
    for thread in per_thread:  # one thread's captures follow each other
        firsts = [reply["captured"][0]["seq"] for reply in thread]
        assert firsts == sorted(firsts)
    content = {row["client_id"]: row["content"] for row in stored_messages(acme)}
    assert content["t3-c7-u"] == "question t3-c7" and content["t3-c7-a"] == "answer t3-c7"
    with tenant_context(globex.tenant.id):
        assert not Message.objects.exists()


def test_concurrent_retries_store_each_message_once(
    transactional_db: Any, live_server: Any, acme: Any
) -> None:
    """Threads in pairs send the same captures at the same time (a retry racing the request
    it repeats), and each capture after the first resends the previous answer (a client that
    repeats its last message): one of each pair stores the new exchange, the other hears
    that it is a duplicate, and the resent answer is a duplicate for both."""
    pairs = THREADS // 2

    def batch(pair: int, number: int) -> list[dict]:
        resent = [exchange(f"p{pair}-c{number - 1}")[1]] if number else []
        return resent + exchange(f"p{pair}-c{number}")

    def work(client: httpx.Client, thread: int) -> list[dict]:
        return [capture(client, batch(thread // 2, c)) for c in range(CAPTURES)]

    per_thread = run_threads(live_server, acme.memory_key, work)

    for pair in range(pairs):
        for number in range(CAPTURES):
            twins = [per_thread[2 * pair][number], per_thread[2 * pair + 1][number]]
            assert sorted(len(reply["captured"]) for reply in twins) == [0, 2], twins
            resent = 1 if number else 0
            assert sorted(reply["dropped"]["duplicate"] for reply in twins) == [
                resent, resent + 2], twins
            winner = next(reply for reply in twins if reply["captured"])
            assert [m["client_id"] for m in winner["captured"]] == [
                f"p{pair}-c{number}-u", f"p{pair}-c{number}-a"]
    replies = [reply for thread in per_thread for reply in thread]
    expected = {f"p{p}-c{c}-{r}" for p in range(pairs) for c in range(CAPTURES) for r in "ua"}
    assert_session_consistent(acme, replies, expected)
