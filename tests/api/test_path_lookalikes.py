"""Paths that only look like others are refused (issue 17), like control characters.

Zero-width characters, bidi controls and lookalikes of ``/`` and ``.`` made
``/notes／diet.md`` read as ``/notes/diet.md`` on the pages and in the prompt index. They are
refused with the contract's text wherever a path comes in: the memory tool (a tool error) and
the documents API (422 ``invalid_path``). The full list is in tests/domain/test_paths.py.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.spec.api_client import BASE, assert_error, err, index, ok, put_document

LOOKALIKES = {
    "fullwidth solidus": "/notes\uff0fdiet.md",
    "division slash": "/notes\u2215diet.md",
    "fraction slash": "/notes\u2044diet.md",
    "one-dot leader": "/notes/diet\u2024md",
    "fullwidth full stop": "/notes/diet\uff0emd",
    "zero-width space": "/notes/di\u200bet.md",
    "right-to-left mark": "/notes/\u200fdiet.md",
    "left-to-right isolate": "/notes/\u2066diet.md",
}


@pytest.mark.parametrize("path", LOOKALIKES.values(), ids=LOOKALIKES.keys())
def test_the_memory_tool_refuses_a_lookalike_path(acme, globex, path) -> None:
    ok(acme, command="create", path="/notes/diet.md", file_text="vegetarian")
    expected = f"Error: {path} is not an allowed path"
    written = "/memories" + path
    assert err(acme, command="create", path=path, file_text="meat") == expected
    assert err(acme, command="create", path=written, file_text="meat") == (
        f"Error: {written} is not an allowed path")
    assert err(acme, command="rename", old_path="/notes/diet.md", new_path=path) == expected
    assert err(acme, command="view", path=path) == expected
    assert [entry["path"] for entry in index(acme)["entries"]] == ["/notes/diet.md"]


@pytest.mark.parametrize("path", LOOKALIKES.values(), ids=LOOKALIKES.keys())
def test_the_documents_api_refuses_a_lookalike_path(acme, globex, path) -> None:
    where = "global" + quote(path)
    error = assert_error(put_document(acme, where, "meat"), 422, "invalid_path")
    assert error["message"] == f"Error: {path} is not an allowed path"
    assert_error(acme.client.get(f"{BASE}/users/alice/documents/{where}"), 422, "invalid_path")
    assert acme.client.get(f"{BASE}/users/alice/documents").json()["documents"] == []
