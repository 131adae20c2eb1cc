"""The OpenAPI document states the validators' own rules (issue 17, "The API schema tells the
truth"): each pattern in /api/schema/ accepts exactly what the server accepts, checked here
against the validators themselves on generated values, and the server refuses what the
document refuses (a number where a name goes, an unknown field). tests/spec/test_schemathesis.py
checks the same over HTTP with Schemathesis; these pin the rules one by one, fast."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from api.serializers import text_pattern
from memoryhub import paths
from memoryhub.errors import MemoryRefusal
from memoryhub.identifiers import is_profile_name, is_user_id
from memoryhub.services.documents import description_check

V1 = "/api/v1"
# Characters near the rules' edges, plus any other that UTF-8 can carry (a URL cannot carry
# a surrogate).
EDGY = st.text(st.sampled_from("aZ09._@:+|-/ %\\\n\x00é\u200d\uff0f\u2024") | st.characters(codec="utf-8"),
               max_size=20)


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict:
    with django_db_blocker.unblock():
        return APIClient().get("/api/schema/", {"format": "json"}).json()


def parameter(schema: dict, path: str, method: str, name: str) -> dict:
    found = [p for p in schema["paths"][path][method]["parameters"] if p["name"] == name]
    return found[0]["schema"]


def matcher(pattern: str) -> re.Pattern[str]:
    """An ECMAScript pattern as Python reads it: ``$`` is the end of the text there."""
    return re.compile(pattern.removesuffix("$") + r"\Z" if pattern.endswith("$") else pattern)


def accepts(rule: dict, value: str) -> bool:
    return (matcher(rule["pattern"]).match(value) is not None
            and rule.get("minLength", 0) <= len(value) <= rule.get("maxLength", len(value)))


def test_identifier_parameters_carry_the_validators_rules(schema: dict) -> None:
    doc = f"{V1}/users/{{user_id}}/documents/profile/{{profile}}/{{path}}"
    user_id = parameter(schema, doc, "get", "user_id")
    profile = parameter(schema, doc, "get", "profile")
    session = parameter(schema, f"{V1}/users/{{user_id}}/memory/index", "get", "session_id")
    check = settings(max_examples=300, deadline=None)

    @check
    @given(EDGY | st.text("ab-", min_size=120, max_size=140))
    def agree(value: str) -> None:
        assert accepts(user_id, value) == is_user_id(value), value
        assert accepts(profile, value) == is_profile_name(value), value
        # A query parameter left empty reads as not given.
        assert accepts(session, value) == (value == "" or is_user_id(value)), value

    agree()


def test_the_path_parameter_is_the_path_rule(schema: dict) -> None:
    rule = parameter(schema, f"{V1}/users/{{user_id}}/documents/global/{{path}}", "put", "path")
    segments = st.lists(EDGY, min_size=1, max_size=18).map("/".join)

    @settings(max_examples=500, deadline=None)
    @given(segments | st.just("memories/").flatmap(lambda p: segments.map(p.__add__)))
    def agree(url_path: str) -> None:
        written = "/" + url_path
        try:
            canonical = paths.normalize_path(written)
        except paths.InvalidPath:
            accepted = False
        else:
            accepted = canonical != paths.ROOT and not paths.written_as_directory(written)
        # The byte limit is the one rule a regex cannot count (the fuzz run accepts it).
        if len(written.encode()) <= paths.MAX_PATH_BYTES:
            assert accepts(rule, url_path) == accepted, url_path

    agree()
    assert rule["maxLength"] == len("memories/") + paths.MAX_PATH_BYTES - 1


@settings(max_examples=300, deadline=None)
@given(EDGY | st.text(" \t\u3000\x1f\x85\ufeffa"))
def test_text_patterns_are_the_blank_and_nul_rules(value: str) -> None:
    assert (matcher(text_pattern()).match(value) is not None) == ("\x00" not in value)
    non_blank = "\x00" not in value and value.strip() != ""
    assert (matcher(text_pattern(blank=False)).match(value) is not None) == non_blank


def test_limits_and_bodies_say_what_the_server_checks(schema: dict) -> None:
    history = parameter(schema, f"{V1}/users/{{user_id}}/history", "get", "limit")
    assert (history["minimum"], history["maximum"]) == (1, 50)
    events = parameter(schema, f"{V1}/events", "get", "after")
    assert (events["minimum"], events["maximum"]) == (0, 10**18 - 1)
    components = schema["components"]["schemas"]
    tool = components["MemoryToolInput"]
    assert "required" not in tool and "additionalProperties" not in tool  # all tool errors
    memory = schema["paths"][f"{V1}/users/{{user_id}}/memory"]["post"]
    assert memory["requestBody"]["required"] is True
    assert components["EndUserPatch"]["required"] == ["memory_enabled"]
    assert components["ApiKeyInput"]["additionalProperties"] is False
    assert components["ApiKeyInput"]["properties"]["permissions"]["minItems"] == 1
    assert components["PatchedTenant"]["properties"]["name"]["minLength"] == 1
    capture = components["CaptureInput"]["properties"]["messages"]
    assert (capture["minItems"], capture["maxItems"]) == (1, 100)
    for name in ("411", "413", "415"):
        assert name in schema["paths"][f"{V1}/tenant"]["patch"]["responses"], name


def test_the_server_refuses_what_the_schema_refuses(acme: Any) -> None:
    c = acme.client
    for name in (0, "", "   "):  # 0 was stored as "0"
        response = c.patch(f"{V1}/tenant", {"name": name}, format="json")
        assert response.status_code == 400, name
    assert acme.client.get(f"{V1}/tenant").json()["name"] == "Acme"
    unknown = c.post(f"{V1}/keys", {"name": "phone", "colour": "red"}, format="json")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (400, "invalid_request")
    empty = c.post(f"{V1}/keys", {"name": "phone", "permissions": []}, format="json")
    assert empty.status_code == 400


def test_a_query_parameter_given_twice_is_refused(acme: Any) -> None:
    """Django reads the last of several values: ``limit=abc&limit=`` was read as no limit."""
    for query in ("limit=abc&limit=", "limit=5&limit=5", "cursor=&cursor="):
        response = acme.client.get(f"{V1}/profiles?{query}")
        assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_request")
    assert acme.client.get(f"{V1}/profiles?limit=5").status_code == 200
    unauthenticated = APIClient().get(f"{V1}/profiles?limit=1&limit=2")
    assert unauthenticated.status_code == 401  # the key first, as for every request


@pytest.mark.parametrize("role", [{}, [], ["user"], 1])  # null is no role: invalid_message
def test_a_role_that_is_no_string_is_invalid_role_not_500(acme: Any, role: Any) -> None:
    response = acme.client.post(f"{V1}/users/alice/sessions/s1/messages",
                                {"messages": [{"role": role, "content": "hi"}]}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (400, "invalid_role")


# Characters at the edges of the one-line rule: controls (tab, C1), line and paragraph
# separators, and their printable neighbours.
LINE_EDGES = "a é\t\x0b\x1f\x7f\x80\x85\x9f\xa0\u2027\u2028\u2029\u202a\u200b\U0001f600"


def test_the_description_pattern_is_the_one_line_rule(schema: dict) -> None:
    """A description the schema allows is stored; the server refused a tab, a C1 control or
    U+2028 (``description_check``: 422 not_text) that the schema's pattern let through."""
    rule = schema["components"]["schemas"]["DocumentWrite"]["properties"]["description"]

    @settings(max_examples=300, deadline=None)
    @given(EDGY | st.text(LINE_EDGES, max_size=8))
    def agree(value: str) -> None:
        try:
            one_line = description_check(value) is not None
        except MemoryRefusal:
            one_line = False
        assert accepts(rule, value) == one_line, ascii(value)

    agree()


@pytest.mark.parametrize("description", ["tab\there", "C1\x85", "sep\u2028arator", "bell\x07"])
def test_a_description_the_schema_refuses_is_refused(acme: Any, schema: dict,
                                                     description: str) -> None:
    rule = schema["components"]["schemas"]["DocumentWrite"]["properties"]["description"]
    assert not accepts(rule, description)
    response = acme.client.put(f"{V1}/users/alice/documents/global/notes.md",
                               {"content": "x", "description": description}, format="json")
    assert (response.status_code, response.json()["error"]["code"]) == (422, "not_text")
    stored = acme.client.put(f"{V1}/users/alice/documents/global/notes.md",
                             {"content": "x", "description": "one line, é \U0001f600"},
                             format="json")
    assert stored.status_code == 201


def _query_parameters(schema: dict) -> list[tuple[str, dict]]:
    return [(path, p) for path, item in schema["paths"].items()
            for p in item.get("get", {}).get("parameters", []) if p["in"] == "query"]


def test_an_empty_query_parameter_is_not_given_and_the_schema_says_so(acme: Any,
                                                                      schema: dict) -> None:
    """``?limit=`` (or ``after=``, ``include_invalid=``, ``type=``) is read as absent, as the
    contract's ``?session_id=&profile=``: the schema said ``type: integer`` (Schemathesis sent
    ``GET /events?after=&limit=`` as invalid, and it was answered 200)."""
    found = _query_parameters(schema)
    assert {p["name"] for _, p in found} >= {"limit", "after", "include_invalid", "type", "scope"}
    for path, parameter in found:
        url = path.replace("{user_id}", "alice").replace("{session_id}", "s1")
        plain = acme.client.get(url)
        empty = acme.client.get(f"{url}?{parameter['name']}=")
        assert (plain.status_code, empty.status_code) == (200, 200), (path, parameter["name"])
        assert empty.json() == plain.json(), (path, parameter["name"])
        assert parameter.get("allowEmptyValue") is True, (path, parameter["name"])


def test_conversation_and_fact_ids_in_paths_are_uuids(acme: Any, schema: dict) -> None:
    """A path's id was any string, the empty one included: Schemathesis' stateful phase carried
    a fact's ``source.conversation_id`` of ``""`` into ``PUT .../conversations/{id}/summary``,
    which then named another route (``.../conversations/summary``: 405). The ids are the
    UUIDs the API hands out; any other text names nothing (404)."""
    fact = acme.client.post(f"{V1}/users/alice/facts", {"content": "Likes tea"}, format="json")
    assert fact.status_code == 201
    found = [(path, p) for path, item in schema["paths"].items() for op in item.values()
             if isinstance(op, dict) for p in op.get("parameters", [])
             if p["in"] == "path" and p["name"] in ("conversation_id", "fact_id")]
    assert len(found) == 7, found
    for path, parameter in found:
        assert parameter["schema"] == {"type": "string", "format": "uuid"}, path
    assert acme.client.get(f"{V1}/users/alice/facts/{fact.json()['id']}").status_code == 200
    for other in ("x", "summary", "0" * 33):
        assert acme.client.get(f"{V1}/users/alice/facts/{other}").status_code == 404
        assert acme.client.get(f"{V1}/users/alice/conversations/{other}").status_code == 404
