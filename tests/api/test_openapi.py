"""The API documents itself: every path of the contract in /api/schema/, and a Swagger UI at
/api/docs/ that works offline (every asset served by this server)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from rest_framework.test import APIClient

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
