"""A person whose sources hold many rows has them searched at once, each on a connection of
its own (``memoryhub.store.recall.searches_run``'s ``apart_rows``), and gets exactly what
searching them one after another finds.

``transactional_db``: the helper threads' connections see only committed rows.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.recall.helpers import embed_all, put
from tests.recall.test_presence import ranked
from tests.recall.test_recall_sources import add_fact, capture

pytestmark = pytest.mark.usefixtures("transactional_db")

ALL = ["documents", "facts", "messages"]
TABLES = ["memoryhub_passage", "memoryhub_fact", "memoryhub_message"]


def apart_rows(settings: Any, rows: int) -> None:
    settings.MEMORYHUB_RECALL = {**settings.MEMORYHUB_RECALL, "apart_rows": rows}


def tea_drinker(kit: Any, user: str = "alice") -> None:
    put(kit, user, "/notes/tea.md", "Alice drinks green tea every morning.")
    put(kit, user, "/notes/coffee.md", "Alice gave up coffee in March.")
    embed_all(kit)
    add_fact(kit, "User drinks green tea", user=user)
    add_fact(kit, "User dislikes coffee", user=user)
    capture(kit, "I brew green tea at seven.", "Coffee keeps me awake.", user=user)


def test_sources_searched_apart_find_what_they_find_in_turn(acme, settings) -> None:
    tea_drinker(acme)
    body = {"query": "green tea coffee", "sources": ALL, "threshold": 0.0}
    apart_rows(settings, 0)
    in_turn, tables = ranked(acme, "alice", **body)
    assert tables == TABLES and {r["kind"] for r in in_turn} == {"document", "fact", "message"}

    apart_rows(settings, 6)  # 2 documents (2 passages) + 2 facts + 2 messages
    apart, tables = ranked(acme, "alice", **body)
    assert apart == in_turn
    # The request's connection ran the first source; helper threads ran the others.
    assert tables == ["memoryhub_passage"]


def test_fewer_rows_than_the_threshold_are_searched_in_turn(acme, settings) -> None:
    tea_drinker(acme)
    apart_rows(settings, 7)
    _, tables = ranked(acme, "alice", query="green tea", sources=ALL)
    assert tables == TABLES


def test_a_helper_reads_as_the_requests_tenant_only(acme, globex, settings) -> None:
    tea_drinker(acme)
    tea_drinker(globex)  # the same user id, the same texts, another tenant
    apart_rows(settings, 1)
    results, tables = ranked(acme, "alice", query="green tea coffee", sources=ALL,
                             threshold=0.0)
    assert tables == ["memoryhub_passage"]
    listed = acme.client.get("/api/v1/users/alice/facts").json()["facts"]
    facts = {r["id"] for r in results if r["kind"] == "fact"}
    assert facts and facts <= {f["id"] for f in listed}
    assert len(results) == len({r["id"] or r["path"] for r in results})  # nobody's twice
