"""An export is the person at one moment, whatever commits while it is read.

The export reads the person's counts, documents, events, conversations, messages and facts
in several statements, each (READ COMMITTED) seeing what had committed when it began. A
stress run caught exports whose counts disagreed with what they listed ("messages 9 but 0
listed", a conversation whose message_count was not its messages). The export now holds
the person's write lock, as every writer of the person takes it first, so no capture,
write or forget commits between its statements. These tests commit one between two of
them, on a connection of its own (a thread), and give it a moment to get as far as it can.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from memoryhub.models import Conversation
from tests.elsewhere import Elsewhere

pytestmark = pytest.mark.django_db(transaction=True)  # the other request must commit for real



def _said(kit: Any, *contents: str) -> int:
    response = kit.client_with(kit.key).post(
        "/api/v1/users/alice/sessions/s1/messages",
        {"messages": [{"role": "user", "content": c} for c in contents]}, format="json")
    return response.status_code


def _consistent(export: dict) -> None:
    listed = [m for c in export["conversations"] for m in c["messages"]]
    assert export["messages"] == len(listed), export
    assert all(c["message_count"] == len(c["messages"]) for c in export["conversations"]), export
    assert export["bytes"] == sum(d["bytes"] for d in export["documents"]), export


@pytest.mark.parametrize("other", ["capture", "forget"])
def test_a_write_or_forget_during_an_export_is_not_half_in_it(acme, globex, other) -> None:
    assert _said(acme, "I moved to Porto.", "I like tea.") == 201
    assert acme.client.put("/api/v1/users/alice/documents/global/a.md", {"content": "abc"},
                           format="json").status_code == 201
    assert _said(globex, "Other tenant.") == 201
    work = {
        "capture": lambda: _said(acme, "I like coffee too."),
        "forget": lambda: acme.client_with(acme.key).delete("/api/v1/users/alice").status_code,
    }[other]
    racing: list[Elsewhere] = []

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        # The counts are read; the conversations are next.
        if (sql.lstrip().startswith("SELECT") and Conversation._meta.db_table in sql.split("WHERE")[0]
                and "ORDER BY" in sql and not racing):
            racing.append(Elsewhere(work).as_far_as_it_gets())
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between):
        response = acme.client.get("/api/v1/users/alice/export")
    assert racing, "the export read no conversations"
    racing[0].join(10)
    assert response.status_code == 200
    export = response.json()
    _consistent(export)
    assert export["messages"] == 2 and export["bytes"] == 3  # before the other request
    assert racing[0].error is None and racing[0].result in (201, 204)
    after = acme.client.get("/api/v1/users/alice/export").json()
    _consistent(after)
    assert after["messages"] == (3 if other == "capture" else 0)
