"""The API documents itself: every path of the contract in /api/schema/, and a Swagger UI at
/api/docs/ that works offline (every asset served by this server). What the schema says an
operation answers is what it answers: every documented success, and the error body, is
checked against real responses (api/representations.py keeps one definition of each shape)."""

from __future__ import annotations

import copy
import inspect
import json
import re
from collections.abc import Callable
from datetime import datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from jsonschema import Draft7Validator, FormatChecker
from rest_framework.test import APIClient

from api.serializers import ClosedSerializer, FlatSerializer
from memoryhub.models import MemoryEvent
from memoryhub.services.webhooks import event_payload
from tenants.context import tenant_context

# Every operation of /work/shared/spec/api-v1.md, as OpenAPI names its parameters.
SPEC_OPERATIONS: dict[str, set[str]] = {
    "/api/v1/users/{user_id}/memory": {"post"},
    "/api/v1/users/{user_id}/memory/index": {"get"},
    "/api/v1/users/{user_id}/memory/snapshot": {"get"},
    "/api/v1/users/{user_id}/documents": {"get"},
    "/api/v1/users/{user_id}/documents/global/{path}": {"get", "put", "delete"},
    "/api/v1/users/{user_id}/documents/profile/{profile}/{path}": {"get", "put", "delete"},
    "/api/v1/users/{user_id}/documents/session/{session_id}/{path}": {"get", "put", "delete"},
    "/api/v1/users/{user_id}/recall": {"post"},
    "/api/v1/users": {"get"},
    "/api/v1/users/{user_id}": {"get", "patch", "delete"},
    "/api/v1/users/{user_id}/sessions/{session_id}": {"delete"},
    "/api/v1/users/{user_id}/export": {"get"},
    "/api/v1/users/{user_id}/portal-link": {"post"},
    "/api/v1/tenant": {"get", "patch"},
    "/api/v1/profiles": {"get"},
    "/api/v1/profiles/{profile}": {"put"},
    "/api/v1/events": {"get"},
    "/api/v1/users/{user_id}/sessions/{session_id}/messages": {"get", "post"},
    "/api/v1/users/{user_id}/conversations": {"get"},
    "/api/v1/users/{user_id}/conversations/{conversation_id}": {"get", "delete"},
    "/api/v1/users/{user_id}/conversations/{conversation_id}/summary": {"put"},
    "/api/v1/users/{user_id}/history": {"get"},
    "/api/v1/users/{user_id}/context": {"post"},
    "/api/v1/users/{user_id}/facts": {"get", "post"},
    "/api/v1/users/{user_id}/facts/{fact_id}": {"get", "patch", "delete"},
    "/api/v1/users/{user_id}/facts/{fact_id}/history": {"get"},
}
METHODS = {"get", "put", "patch", "post", "delete"}


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return response.json()


def operations(schema: dict) -> dict[tuple[str, str], dict]:
    return {(path, method): op for path, ops in schema["paths"].items()
            for method, op in ops.items() if method in METHODS}


def test_the_schema_lists_every_operation_of_the_contract(schema) -> None:
    listed = {(p, m) for p, m in operations(schema)}
    wanted = {(p, m) for p, methods in SPEC_OPERATIONS.items() for m in methods}
    assert wanted - listed == set()


def test_every_operation_documents_auth_errors_and_a_success(schema) -> None:
    for (path, method), op in operations(schema).items():
        if not path.startswith("/api/v1/"):
            continue
        codes = set(op["responses"])
        assert {"401", "403"} <= codes, (path, method, codes)
        assert any(c.startswith("2") for c in codes), (path, method)
        assert op.get("security") == [{"ApiKey": []}], (path, method)
        if "{user_id}" in path:
            assert "400" in codes, (path, method)


def test_error_responses_have_the_error_body(schema) -> None:
    error_refs = set()
    for (path, method), op in operations(schema).items():
        if path not in SPEC_OPERATIONS:
            continue
        for code, response in op["responses"].items():
            if code.startswith(("4", "5")) and "content" in response:
                error_refs.add(response["content"]["application/json"]["schema"]["$ref"])
    for ref in error_refs:
        component = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
        assert set(component["properties"]) == {"error"}, ref


def test_document_operations_describe_bodies_and_preconditions(schema) -> None:
    ops = operations(schema)
    put = ops[("/api/v1/users/{user_id}/documents/global/{path}", "put")]
    body = put["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][body.rsplit("/", 1)[1]]["properties"]
    assert {"content", "description", "confidence"} <= set(fields)
    assert {"200", "201", "412", "422"} <= set(put["responses"])
    headers = {p["name"] for p in put["parameters"] if p["in"] == "header"}
    assert {"If-Match", "If-None-Match"} <= headers
    got = ops[("/api/v1/users/{user_id}/documents/session/{session_id}/{path}", "get")]
    assert "404" in got["responses"]


def test_objects_are_described_by_their_own_docstring_only(schema) -> None:
    """A serializer without a docstring has no description: drf-spectacular took its base
    class's, so the recall body read "DRF deep-copies a serializer's declared fields..."."""
    bases = {inspect.cleandoc(base.__doc__ or "") for base in (FlatSerializer, ClosedSerializer)}
    described = {name: component.get("description")
                 for name, component in schema["components"]["schemas"].items()}
    assert {name for name, text in described.items() if text in bases} == set()
    assert "description" not in schema["components"]["schemas"]["RecallInput"]


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in {"src", "href"} and value]


def test_swagger_ui_loads_with_local_assets_only(client, db) -> None:
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    parser = _Assets()
    parser.feed(html)
    assert any(url.endswith("swagger-ui-bundle.js") for url in parser.urls)
    for url in parser.urls:
        assert url.startswith("/") and not url.startswith("//"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        body = b"".join(asset.streaming_content) if asset.streaming else asset.content
        assert len(body) > 100, url
    # No CDN in scripts either (Swagger UI's default loads from unpkg/jsdelivr).
    assert not re.search(r"https?://", html), re.findall(r"https?://\S+", html)
    assert "/api/schema/" in html


# --- Real answers against the documented shapes ------------------------------------------------


def strict(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema for checking answers: every declared property must
    be present and no other, so a key added, dropped or renamed on either side is caught
    (the schema's ``required`` is looser where a serializer is also a PATCH body)."""
    if isinstance(node, list):
        return [strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: strict(value) for key, value in node.items()}
    if "properties" in node:
        node["required"] = sorted(node["properties"])
        node.setdefault("additionalProperties", False)
    if node.pop("nullable", False):
        node = {"anyOf": [node, {"type": "null"}]}
    return node


_dates = FormatChecker(formats=())


@_dates.checks("date-time", raises=ValueError)
def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or bool(datetime.fromisoformat(value))


class Answers:
    """Checks responses against the component their operation documents, and remembers which
    documented (path, method, status) were seen."""

    def __init__(self, schema: dict) -> None:
        self.schema = schema
        self.components = strict(copy.deepcopy(schema["components"]))
        self.seen: set[tuple[str, str, str]] = set()

    def check(self, path: str, method: str, response: Any) -> dict:
        status = str(response.status_code)
        documented = self.schema["paths"][path][method]["responses"]
        assert status in documented, (path, method, status, response.content)
        content = documented[status].get("content")
        assert content is not None, (path, method, status, "documented without a body")
        body = response.json()
        self.conforms(content["application/json"]["schema"], body, (path, method, status))
        self.seen.add((path, method, status))
        return body

    def conforms(self, shape: dict, body: Any, where: Any) -> None:
        validator = Draft7Validator({**shape, "components": self.components},
                                    format_checker=_dates)
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in validator.iter_errors(body)]
        assert errors == [], (where, errors, body)


def documented_answers(schema: dict) -> set[tuple[str, str, str]]:
    """Every documented success with a JSON body, of every /api/v1 operation."""
    wanted = set()
    for (path, method), op in operations(schema).items():
        if not path.startswith("/api/v1/"):
            continue
        for status, response in op["responses"].items():
            if status.startswith("2") and "content" in response:
                wanted.add((path, method, status))
    return wanted


@pytest.fixture
def answers(schema) -> Answers:
    return Answers(schema)


@pytest.fixture
def private_urls_allowed(settings) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}


V1 = "/api/v1"


def test_every_documented_answer_is_what_the_operation_answers(
    acme, globex, answers: Answers, private_urls_allowed
) -> None:
    c = acme.client
    check: Callable[..., dict] = answers.check
    users = f"{V1}/users/{{user_id}}"
    docs = {
        "global": (f"{users}/documents/global/{{path}}",
                   f"{V1}/users/alice/documents/global/notes/a.md"),
        "profile": (f"{users}/documents/profile/{{profile}}/{{path}}",
                    f"{V1}/users/alice/documents/profile/work/memories/b.md"),
        "session": (f"{users}/documents/session/{{session_id}}/{{path}}",
                    f"{V1}/users/alice/documents/session/s1/c.md"),
    }
    for template, url in docs.values():
        check(template, "put", c.put(url, {"content": "Likes tea.", "description": "tea"},
                                     format="json"))  # 201
        check(template, "put", c.put(url, {"content": "Likes green tea."}, format="json"))  # 200
        check(template, "get", c.get(url))
    # The memory tool writes as the assistant, and its answers are the same shape either way.
    tool = f"{users}/memory"
    check(tool, "post", c.post(f"{V1}/users/alice/memory",
                               {"command": "create", "path": "/memories/d.md",
                                "file_text": "Has a cat.", "session_id": "s1"}, format="json"))
    check(tool, "post", c.post(f"{V1}/users/alice/memory",
                               {"command": "view", "path": "/memories/missing.md"}, format="json"))
    context = {"session_id": "s1", "profile": "work"}
    check(f"{users}/memory/index", "get", c.get(f"{V1}/users/alice/memory/index", context))
    check(f"{users}/memory/index", "get", c.get(f"{V1}/users/nobody/memory/index"))
    check(f"{users}/memory/snapshot", "get", c.get(f"{V1}/users/alice/memory/snapshot", context))
    listed = check(f"{users}/documents", "get",
                   c.get(f"{V1}/users/alice/documents", {"limit": 2}))
    assert listed["next_cursor"] is not None  # a page with a cursor, and the last one
    check(f"{users}/documents", "get", c.get(f"{V1}/users/alice/documents",
                                             {"limit": 2, "cursor": listed["next_cursor"]}))
    check(f"{users}/recall", "post", c.post(f"{V1}/users/alice/recall",
                                            {"query": "tea", "session_id": "s1"}, format="json"))
    check(f"{users}/recall", "post", c.post(f"{V1}/users/alice/recall",
                                            {"query": "zebra crossing"}, format="json"))

    # Conversations: capture (201; 200 with memory off), read, summarise, history, context.
    messages = f"{users}/sessions/{{session_id}}/messages"
    captured = check(messages, "post", c.post(
        f"{V1}/users/alice/sessions/s1/messages",
        {"messages": [{"role": "user", "content": "Hi", "id": "m-1", "metadata": {"k": "v"}},
                      {"role": "assistant", "content": "Hello"}], "profile": "work"},
        format="json"))
    conversation = f"{V1}/users/alice/conversations/{captured['conversation_id']}"
    check(f"{users}/conversations/{{conversation_id}}/summary", "put",
          c.put(f"{conversation}/summary", {"summary": "Greetings."}, format="json"))
    check(f"{users}/conversations/{{conversation_id}}", "get", c.get(conversation))
    check(f"{users}/conversations", "get", c.get(f"{V1}/users/alice/conversations"))
    check(messages, "get", c.get(f"{V1}/users/alice/sessions/s1/messages", {"limit": 1}))
    check(f"{users}/history", "get", c.get(f"{V1}/users/alice/history"))
    check(f"{users}/context", "post", c.post(f"{V1}/users/alice/context",
                                             {"query": "tea", "history": 2}, format="json"))
    c.patch(f"{V1}/users/quiet", {"memory_enabled": False}, format="json")
    check(messages, "post", c.post(f"{V1}/users/quiet/sessions/s1/messages",
                                   {"messages": [{"role": "user", "content": "Hi"}]},
                                   format="json"))  # 200, enabled false

    # End users.
    check(f"{users}/portal-link", "post", c.post(f"{V1}/users/alice/portal-link"))
    check(users, "get", c.get(f"{V1}/users/alice"))
    check(users, "get", c.get(f"{V1}/users/nobody"))  # created_at null
    check(users, "patch", c.patch(f"{V1}/users/bob", {"memory_enabled": False}, format="json"))
    check(f"{V1}/users", "get", c.get(f"{V1}/users", {"limit": 1}))
    check(f"{V1}/users", "get", c.get(f"{V1}/users"))
    exported = check(f"{users}/export", "get", c.get(f"{V1}/users/alice/export"))
    assert exported["documents"] and exported["events"] and exported["portal_links"]
    assert exported["conversations"][0]["messages"]
    check(f"{users}/export", "get", c.get(f"{V1}/users/nobody/export"))

    # Tenant administration.
    check(f"{V1}/tenant", "get", c.get(f"{V1}/tenant"))
    check(f"{V1}/tenant", "patch", c.patch(f"{V1}/tenant", {"limits": {"max_scope_bytes": None}},
                                           format="json"))
    conversation_settings = {
        "capture": {"excluded_roles": ["tool"], "drop_empty": False, "redact": ["x+y"]},
        "conversation_timeout_minutes": 5, "max_message_bytes": None, "max_history_tokens": 10,
        "augmentation_enabled": False, "retention": {"conversation_days": 3},
    }
    check(f"{V1}/tenant", "patch", c.patch(f"{V1}/tenant", conversation_settings, format="json"))
    check(f"{V1}/profiles/{{profile}}", "put",
          c.put(f"{V1}/profiles/work", {"disabled": True}, format="json"))  # 201
    check(f"{V1}/profiles/{{profile}}", "put",
          c.put(f"{V1}/profiles/work", {"disabled": False}, format="json"))  # 200
    check(f"{V1}/profiles", "get", c.get(f"{V1}/profiles"))
    feed = check(f"{V1}/events", "get", c.get(f"{V1}/events", {"limit": 3}))
    assert feed["events"]
    # A webhook delivery carries the feed's object: the service builds it below the API.
    with tenant_context(acme.tenant.id):
        for event in MemoryEvent.objects.order_by("id")[:3]:
            answers.conforms({"$ref": "#/components/schemas/Event"},
                             json.loads(event_payload(event)), ("webhook delivery", event.id))
    check(f"{V1}/events", "get", c.get(f"{V1}/events", {"after": 10**12}))  # empty, null cursor

    # Webhooks: the secret in full when it is set, its hint otherwise.
    hooks = f"{V1}/webhooks"
    created = check(hooks, "post", c.post(hooks, {"url": "http://127.0.0.1:9/hook"}, format="json"))
    hook = f"{hooks}/{{webhook_id}}"
    one = f"{hooks}/{created['id']}"
    check(hook, "get", c.get(one))
    assert "secret" not in check(hook, "patch", c.patch(one, {"enabled": False}, format="json"))
    assert "secret" in check(hook, "patch", c.patch(one, {"secret": "s" * 32}, format="json"))
    check(hooks, "get", c.get(hooks))

    # Conversations: capture (201, and 200 with memory off), reads, summary, history, context.
    messages = f"{users}/sessions/{{session_id}}/messages"
    captured = check(messages, "post", c.post(f"{V1}/users/alice/sessions/s1/messages", {
        "messages": [{"role": "user", "content": "Why is the build red?", "id": "m1",
                      "metadata": {"channel": "web"}},
                     {"role": "assistant", "content": "A stale patch."}],
        "profile": "work", "process": "support-agent"}, format="json"))
    check(messages, "post", c.post(f"{V1}/users/bob/sessions/s1/messages", {
        "messages": [{"role": "user", "content": "hi"}]}, format="json"))  # bob: memory off
    page = check(messages, "get", c.get(f"{V1}/users/alice/sessions/s1/messages", {"limit": 1}))
    assert page["next_cursor"] is not None
    conversation = f"{users}/conversations/{{conversation_id}}"
    one_conversation = f"{V1}/users/alice/conversations/{captured['conversation_id']}"
    check(f"{conversation}/summary", "put",
          c.put(f"{one_conversation}/summary", {"summary": "Build fixed."}, format="json"))
    check(conversation, "get", c.get(one_conversation))
    check(f"{users}/conversations", "get", c.get(f"{V1}/users/alice/conversations"))
    check(f"{users}/history", "get", c.get(f"{V1}/users/alice/history"))
    check(f"{users}/context", "post", c.post(f"{V1}/users/alice/context", {
        "session_id": "s2", "query": "build", "history": 3}, format="json"))
    check(f"{users}/context", "post", c.post(f"{V1}/users/alice/context", {}, format="json"))
    check(conversation, "get", c.get(f"{V1}/users/alice/conversations/nothing"))  # 404

    # API keys: the key in full once, masked in the list, a bound key's person shown.
    keys = f"{V1}/keys"
    minted = check(keys, "post", c.post(keys, {"name": "phone", "permissions": ["memory"],
                                               "user_id": "alice"}, format="json"))
    assert minted["api_key"].startswith("mh_") and minted["user_id"] == "alice"
    listed_keys = check(keys, "get", c.get(keys))
    assert "api_key" not in listed_keys["keys"][0]

    # Facts: create (201), its duplicate (200), the list, one, an edit, its history.
    facts = f"{users}/facts"
    made = check(facts, "post", c.post(f"{V1}/users/alice/facts", {
        "content": "User prefers dark mode", "type": "preference", "subject": "user",
        "predicate": "prefers", "object": "dark mode"}, format="json"))
    check(facts, "post", c.post(f"{V1}/users/alice/facts", {"content": "user prefers dark mode"},
                                format="json"))
    check(facts, "get", c.get(f"{V1}/users/alice/facts"))
    one_fact = f"{V1}/users/alice/facts/{made['id']}"
    check(f"{facts}/{{fact_id}}", "get", c.get(one_fact))
    check(f"{facts}/{{fact_id}}", "patch", c.patch(one_fact, {"confidence": 0.5}, format="json"))
    check(f"{facts}/{{fact_id}}/history", "get", c.get(f"{one_fact}/history"))

    # The error body, from an operation that documents it.
    check(docs["global"][0], "get", c.get(f"{V1}/users/alice/documents/global/none.md"))  # 404
    check(users, "get", c.get(f"{V1}/users/{'x' * 129}"))  # 400
    check(f"{V1}/tenant", "get", globex.client_with(globex.memory_key).get(f"{V1}/tenant"))  # 403

    assert documented_answers(answers.schema) - answers.seen == set()


def test_an_answer_that_drifts_from_its_shape_is_caught(schema, answers: Answers) -> None:
    """The check itself: a missing key, an extra key and a wrong type each fail it."""

    class Fake:
        status_code = 200

        def __init__(self, body: dict) -> None:
            self.body, self.content = body, b""

        def json(self) -> dict:
            return self.body

    good = {"content": "ok", "is_error": False}
    answers.check(f"{V1}/users/{{user_id}}/memory", "post", Fake(good))
    for bad in ({"content": "ok"}, {**good, "extra": 1}, {**good, "is_error": "no"}):
        with pytest.raises(AssertionError):
            answers.check(f"{V1}/users/{{user_id}}/memory", "post", Fake(bad))
