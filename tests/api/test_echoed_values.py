"""Error texts quote at most ``ECHO_LIMIT`` characters of what the caller sent (issue 17).

A 100 KB ``turn_id`` came back whole in its error. Every message that quotes input goes
through ``memoryhub.errors.echo``: its first 300 characters, then ``…``. Values of a normal
length are quoted whole, so the memory tool's texts stay the reference's
(tests/api/test_memory_differential.py: "long values").
"""

from __future__ import annotations

import pytest

from memoryhub.errors import ECHO_LIMIT
from tests.spec.api_client import BASE, assert_error, err, ok, put_document

HUGE = "x" * 100_000
CUT = "x" * ECHO_LIMIT + "…"
MAX_TEXT = 1_000  # an error text with one quoted value stays this short


@pytest.mark.parametrize("field", ["turn_id", "session_id", "profile"])
def test_a_huge_context_field_is_quoted_cut(acme, globex, field) -> None:
    text = err(acme, command="view", path="/memories", **{field: HUGE + "!"})
    # repr() quotes the value: the quote is the first of the 300 characters.
    assert len(text) < MAX_TEXT and text.endswith(f"got '{'x' * (ECHO_LIMIT - 1)}….")


def test_a_huge_scope_or_command_is_quoted_cut(acme, globex) -> None:
    for body in ({"command": "view", "path": "/memories", "scope": HUGE},
                 {"command": HUGE, "path": "/memories"},
                 {"command": [HUGE], "path": "/memories"}):
        text = err(acme, **body)
        assert len(text) < MAX_TEXT and "…" in text, text[:400]


def test_a_huge_path_is_quoted_cut(acme, globex) -> None:
    for command in ({"command": "view", "path": "/" + HUGE},
                    {"command": "create", "path": "/" + HUGE, "file_text": "x"},
                    {"command": "rename", "old_path": "/a.md", "new_path": "/" + HUGE}):
        assert err(acme, **command) == f"Error: /{CUT[:-2]}… is not an allowed path"
    response = put_document(acme, "global/" + "y" * 10_000 + ":", "x")
    message = assert_error(response, 422, "invalid_path")["message"]
    assert message == f"Error: /{'y' * (ECHO_LIMIT - 1)}… is not an allowed path"


def test_a_huge_old_str_or_view_range_is_quoted_cut(acme, globex) -> None:
    ok(acme, command="create", path="/memories/a.md", file_text="one\none\n")
    assert err(acme, command="str_replace", path="/memories/a.md", old_str=HUGE, new_str="") == (
        f"No replacement was performed, old_str `{CUT}` did not appear verbatim in "
        "/memories/a.md.")
    text = err(acme, command="view", path="/memories/a.md", view_range=[HUGE, 1])
    assert len(text) < MAX_TEXT and "…" in text


def test_huge_field_names_and_choices_are_not_quoted_whole(acme, globex) -> None:
    for method, url, body in (
        ("put", "/users/alice/documents/global/a.md", {"content": "x", HUGE: 1}),
        ("patch", "/tenant", {HUGE: 1}),
        ("patch", "/tenant", {"limits": {HUGE: 1}}),
        ("patch", "/users/alice", {"memory_enabled": True, HUGE: 1}),
        ("post", "/webhooks", {"url": "https://example.com/hook", "event_types": [HUGE]}),
    ):
        response = getattr(acme.client, method)(BASE + url, body, format="json")
        message = assert_error(response, 400, "invalid_request")["message"]
        assert len(message) < MAX_TEXT, (url, message[:400])
