"""A documents API request racing another write of the same document answers for the document
at the URL's path, as if it came wholly before or wholly after that write.

The interleaving is made to happen with real transactions, as in test_forget_races.py: the
request's own statements run on the test's connection, and Django's ``execute_wrapper`` runs
the other write on another connection (another thread), committed, just before the request
takes the person's write lock.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from tests.elsewhere import in_thread
from tests.spec.api_client import BASE

pytestmark = pytest.mark.django_db(transaction=True)  # the command must commit for real

DOCUMENTS = f"{BASE}/users/alice/documents/global"


def test_a_delete_whose_document_is_renamed_meanwhile_deletes_nothing(acme, globex) -> None:
    """The view finds /a.md, then takes the person's lock; the assistant renamed /a.md to
    /b.md in between. The DELETE of /a.md deleted the row, now /b.md, by its id."""
    for kit in (acme, globex):
        assert kit.client.put(f"{DOCUMENTS}/a.md", {"content": "keep me"},
                              format="json").status_code == 201
    renamed: list[dict] = []

    def rename() -> None:
        renamed.append(acme.client_with(acme.memory_key).post(
            f"{BASE}/users/alice/memory",
            {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"},
            format="json").json())

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "FOR NO KEY UPDATE" in sql and not renamed:  # the person's lock, after the find
            in_thread(rename)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between):
        response = acme.client.delete(f"{DOCUMENTS}/a.md")
    assert renamed == [{"content": "Successfully renamed /memories/a.md to /memories/b.md",
                        "is_error": False}]  # it did interleave
    assert response.status_code == 404, response.content
    assert response.json()["error"]["code"] == "not_found"
    moved = acme.client.get(f"{DOCUMENTS}/b.md")
    assert moved.status_code == 200 and moved.json()["content"] == "keep me"
    assert globex.client.get(f"{DOCUMENTS}/a.md").status_code == 200


def test_a_delete_if_match_star_of_a_document_edited_meanwhile_deletes_it(acme, globex) -> None:
    """``If-Match: *`` matches any current version. The view found version 1 unlocked and
    asked the service to delete exactly that version; an edit committed before the lock made
    it version 2, and the DELETE was 412 although the document existed throughout."""
    for kit in (acme, globex):
        assert kit.client.put(f"{DOCUMENTS}/a.md", {"content": "v1"},
                              format="json").status_code == 201
    edited: list[int] = []

    def edit() -> None:
        edited.append(acme.client_with(acme.memory_key).put(
            f"{DOCUMENTS}/a.md", {"content": "v2"}, format="json").status_code)

    def between(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if "FOR NO KEY UPDATE" in sql and not edited:  # the person's lock
            in_thread(edit)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(between):
        response = acme.client.delete(f"{DOCUMENTS}/a.md", headers={"If-Match": "*"})
    assert edited == [200]  # it did interleave
    assert response.status_code == 204, response.content
    assert acme.client.get(f"{DOCUMENTS}/a.md").status_code == 404
    assert globex.client.get(f"{DOCUMENTS}/a.md").json()["content"] == "v1"
