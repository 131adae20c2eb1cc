"""Recall runs no ranking statement for a source the person holds nothing in
(``memoryhub.store.recall.searches_run``: the count of each search's rows rides on the
session settings' statement), and finds what it found before wherever there is something."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memoryhub.store.recall import Search, _rows_params
from tests.recall.helpers import put, recall
from tests.recall.test_recall_sources import add_fact, capture


def ranked(kit, user: str, **body) -> tuple[list[dict], list[str]]:
    """The results of a recall over HTTP, and the tables its ranking statements read."""
    with CaptureQueriesContext(connection) as queries:
        response = recall(kit, user, **body)
    assert response.status_code == 200, response.content
    statements = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("WITH terms")]
    tables = [table for sql in statements
              for table in ("memoryhub_passage", "memoryhub_fact", "memoryhub_message")
              if f"FROM {table} p WHERE" in sql]
    return response.json()["results"], tables


def test_a_person_without_facts_gets_no_facts_statement_until_they_have_one(acme) -> None:
    put(acme, "alice", "/notes/tea.md", "Alice drinks green tea every morning.")
    results, tables = ranked(acme, "alice", query="green tea")
    assert [r["kind"] for r in results] == ["document"]
    assert tables == ["memoryhub_passage"]

    fact = add_fact(acme, "User drinks green tea")
    results, tables = ranked(acme, "alice", query="green tea")
    assert sorted(r["kind"] for r in results) == ["document", "fact"]
    assert fact["id"] in [r["id"] for r in results]
    assert tables == ["memoryhub_passage", "memoryhub_fact"]


def test_only_invalid_facts_are_searched_only_when_asked_for(acme) -> None:
    fact = add_fact(acme, "User lives in Porto")
    patched = acme.client.patch(f"/api/v1/users/alice/facts/{fact['id']}",
                                {"invalid_at": timezone.now().isoformat()}, format="json")
    assert patched.status_code == 200, patched.content
    assert ranked(acme, "alice", query="Porto", sources=["facts"]) == ([], [])
    results, tables = ranked(acme, "alice", query="Porto", sources=["facts"],
                             include_invalid=True)
    assert [r["id"] for r in results] == [fact["id"]] and tables == ["memoryhub_fact"]


def test_messages_are_searched_once_the_person_has_some(acme) -> None:
    put(acme, "alice", "/notes/pets.md", "Alice walks her greyhound at dawn.")
    assert ranked(acme, "alice", query="greyhound", sources=["messages"]) == ([], [])
    capture(acme, "I adopted a greyhound called Biscuit.")
    results, tables = ranked(acme, "alice", query="greyhound", sources=["messages"])
    assert [r["kind"] for r in results] == ["message"] and tables == ["memoryhub_message"]


def test_documents_are_searched_only_where_the_session_sees_a_passage(acme) -> None:
    put(acme, "alice", "/notes/plan.md", "The launch plan is due on Friday.",
        scope="session", key="s1")
    assert ranked(acme, "alice", query="launch plan", session_id="s2") == ([], [])
    results, tables = ranked(acme, "alice", query="launch plan", session_id="s1")
    assert [r["path"] for r in results] == ["/notes/plan.md"]
    assert tables == ["memoryhub_passage"]


def test_another_persons_rows_do_not_count_as_present(acme) -> None:
    add_fact(acme, "User drinks green tea", user="bob")
    put(acme, "alice", "/notes/tea.md", "Alice drinks green tea every morning.")
    results, tables = ranked(acme, "alice", query="green tea")
    assert [r["kind"] for r in results] == ["document"] and tables == ["memoryhub_passage"]


def test_searches_of_different_people_cannot_share_one_count_statement() -> None:
    def search(end_user: int) -> Search:
        return Search("", {"tenant": 1, "end_user": end_user}, lambda row: row,
                      rows="FROM (VALUES (1)) p WHERE %(tenant)s = 1 AND %(end_user)s > 0")

    assert _rows_params([search(7), search(7)], 1) == {"rows_cap": 1, "tenant": 1, "end_user": 7}
    with pytest.raises(ValueError, match="end_user"):
        _rows_params([search(7), search(8)], 1)
