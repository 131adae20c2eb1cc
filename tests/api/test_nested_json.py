"""Deeply nested JSON (issue 17) is 400 ``invalid_json``, never a RecursionError's 500.

Python's json module recurses once per array or object: about 1,000 levels used to raise
RecursionError while parsing, and a few hundred parsed but crashed later (``repr`` of the value
in a tool error). Bodies may nest at most ``MAX_JSON_DEPTH`` levels. On the memory tool the key
is checked first: an unknown key gets 401 whatever the body.
"""

from __future__ import annotations

import json

import pytest

from api.parsers import MAX_JSON_DEPTH
from tests.spec.api_client import BASE, anonymous, assert_error

DEEP_ARRAY = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a":' * 1000 + "1" + "}" * 1000
# Parses within Python's recursion limit, then a tool error's repr() of the command recursed.
DEEP_COMMAND = '{"command": ' + "[" * 900 + "]" * 900 + ', "path": "/memories"}'
DEEP_BODIES = [DEEP_ARRAY, DEEP_OBJECT, DEEP_COMMAND]

ENDPOINTS = [
    ("post", "/users/alice/memory"), ("put", "/users/alice/documents/global/a.md"),
    ("post", "/users/alice/recall"), ("patch", "/tenant"), ("patch", "/users/alice"),
    ("put", "/profiles/cooking"), ("post", "/webhooks"),
]


def nested(depth: int) -> str:
    """A body whose outer object is level 1 and whose ``x`` nests arrays to ``depth``."""
    return '{"command": "view", "path": "/memories", "x": ' + "[" * (depth - 1) + "]" * (
        depth - 1) + "}"


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
@pytest.mark.parametrize("body", DEEP_BODIES, ids=["array", "object", "in-a-field"])
def test_deep_nesting_is_invalid_json(acme, globex, method, url, body) -> None:
    response = getattr(acme.client, method)(BASE + url, body, content_type="application/json")
    assert_error(response, 400, "invalid_json")


def test_nesting_up_to_the_limit_parses(acme, globex) -> None:
    assert json.loads(nested(MAX_JSON_DEPTH))  # the helper nests as it says
    url = f"{BASE}/users/alice/memory"
    at_limit = acme.client.post(url, nested(MAX_JSON_DEPTH), content_type="application/json")
    assert at_limit.status_code == 200 and at_limit.json()["is_error"] is False
    over = acme.client.post(url, nested(MAX_JSON_DEPTH + 1), content_type="application/json")
    assert_error(over, 400, "invalid_json")


@pytest.mark.parametrize("body", DEEP_BODIES, ids=["array", "object", "in-a-field"])
def test_the_memory_tool_checks_the_key_before_the_body(acme, globex, body) -> None:
    url = f"{BASE}/users/alice/memory"
    unknown = acme.key[:-4] + ("AAAA" if not acme.key.endswith("AAAA") else "BBBB")
    for header in (f"Bearer {unknown}", "Bearer not-a-key", None):
        client = anonymous()
        if header is not None:
            client.credentials(HTTP_AUTHORIZATION=header)
        assert_error(client.post(url, body, content_type="application/json"), 401)
    assert_error(acme.client.post(url, body, content_type="application/json"), 400,
                 "invalid_json")
    memory_only = acme.client_with(acme.memory_key)
    assert_error(memory_only.post(url, body, content_type="application/json"), 400,
                 "invalid_json")
