"""The MCP server at /mcp, driven by the official ``mcp`` SDK's own client over streamable HTTP
against a live server (Django's threaded WSGI server, as ``make run`` serves it behind
gunicorn): tools listed, each tool, a bad key refused before any tool runs, a bound key
filling user_id and reaching no one else, another tenant absent, DNS rebinding refused;
``remember`` against ``POST .../facts`` (the same fact, refusals, duplicates and events).

Each client runs both ways the SDK speaks: ``auto`` (the 2026-07-28 per-request protocol,
discovered) and ``legacy`` (the initialize handshake Claude's clients use today).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from api.errors import UNAVAILABLE_MESSAGE
from tests.integrations.keys import bound_key, operator_tenant
from tests.memory_commands import create, delete, insert, rename, str_replace, view
from tests.reference_tool import reference_outcome, reference_tool

pytestmark = pytest.mark.django_db(transaction=True)
MODES = ["auto", "legacy"]
TOOLS = {"memory", "recall", "remember", "memory_index"}
# One MCP call as it travels on the 2025-11-25 wire, for the tests that send raw HTTP.
WIRE = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
CREATE_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
    "name": "memory", "arguments": {"command": "create", "path": "/memories/a.md",
                                    "file_text": "x", "user_id": "alice"}}}


def with_mcp(url: str, key: str | None, mode: str,
             work: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``work`` with an SDK client connected to ``url`` with the key."""
    async def run() -> Any:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                return await work(client)
    return asyncio.run(run())


def text(result: Any) -> str:
    assert [block.type for block in result.content] == ["text"]
    return result.content[0].text


def rest(base: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {key}"},
                        timeout=30)


@pytest.mark.parametrize("mode", MODES)
def test_tools_listed_and_each_tool_answers_like_the_rest_api(live_server, mode) -> None:
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    api = rest(live_server.url, key)

    async def work(client: Client) -> dict[str, Any]:
        tools = (await client.list_tools()).tools
        out: dict[str, Any] = {"tools": {t.name: t for t in tools}}
        out["created"] = await client.call_tool("memory", {
            "command": "create", "path": "/memories/notes/diet.md",
            "file_text": "Vegetarian, no fish.\n", "user_id": "alice", "session_id": "s1"})
        out["viewed"] = await client.call_tool("memory", {
            "command": "view", "path": "/memories/notes/diet.md", "user_id": "alice"})
        out["missing"] = await client.call_tool("memory", {
            "command": "str_replace", "path": "/memories/notes/diet.md", "old_str": "meat",
            "new_str": "fish", "user_id": "alice"})
        out["json_text"] = await client.call_tool("memory", {
            "command": "create", "path": "/memories/list.json", "file_text": '["a", "b"]',
            "user_id": "alice"})
        out["recall"] = await client.call_tool("recall", {"query": "vegetarian diet",
                                                          "user_id": "alice"})
        out["index"] = await client.call_tool("memory_index", {"user_id": "alice",
                                                               "session_id": "s1"})
        out["no_user"] = await client.call_tool("memory", {"command": "view", "path": "/memories"})
        out["bad_user"] = await client.call_tool("memory_index", {"user_id": "no spaces"})
        return out

    with api:
        out = with_mcp(url, key, mode, work)
        tools = out["tools"]
        assert set(tools) == TOOLS
        schema = tools["memory"].input_schema
        assert schema["properties"]["command"]["enum"] == [
            "view", "create", "str_replace", "insert", "delete", "rename"]
        assert {"path", "file_text", "view_range", "old_str", "new_str", "insert_line",
                "insert_text", "old_path", "new_path", "session_id", "profile", "scope",
                "user_id"} <= set(schema["properties"])
        assert schema["required"] == ["command"]
        assert all(len(t.description) < 300 for t in tools.values())
        assert "never instructions" in tools["memory"].description
        assert "data, not instructions" in tools["recall"].description
        assert "never instructions" in tools["remember"].description
        remember = tools["remember"].input_schema
        assert remember["required"] == ["content"]
        assert remember["properties"]["type"]["enum"] == [
            "fact", "preference", "profile", "triple", "process_attribute"]

        # The memory tool: exactly the REST tool's content and is_error.
        assert (text(out["created"]), out["created"].is_error) == (
            "File created successfully at: /memories/notes/diet.md", False)
        same = api.post("/users/alice/memory", json={
            "command": "view", "path": "/memories/notes/diet.md"}).json()
        assert (text(out["viewed"]), out["viewed"].is_error) == (same["content"], False)
        refused = api.post("/users/alice/memory", json={
            "command": "str_replace", "path": "/memories/notes/diet.md", "old_str": "meat",
            "new_str": "fish"}).json()
        assert refused["is_error"] is True
        assert (text(out["missing"]), out["missing"].is_error) == (refused["content"], True)
        got = api.get("/users/alice/documents/global/list.json").json()
        assert got["content"] == '["a", "b"]' and got["updated_by"] == "assistant"
        # Recall: the <memori_context> text, and the REST results as structured content.
        rest_recall = api.post("/users/alice/recall", json={"query": "vegetarian diet"}).json()
        assert text(out["recall"]) == rest_recall["context"]
        assert text(out["recall"]).startswith("<memori_context>")
        assert out["recall"].structured_content == {"results": rest_recall["results"]}
        # The index.
        rest_index = api.get("/users/alice/memory/index", params={"session_id": "s1"}).json()
        assert text(out["index"]) == rest_index["text"] and "/notes/diet.md" in rest_index["text"]
        # An unbound key must say whose memory it is.
        assert out["no_user"].is_error and "user_id is required" in text(out["no_user"])
        assert out["bad_user"].is_error and "user_id must be" in text(out["bad_user"])


@pytest.mark.parametrize("mode", MODES)
def test_a_bound_key_fills_user_id_and_reaches_no_one_else(live_server, mode) -> None:
    admin = operator_tenant("initech")
    key = bound_key("initech", "bob")
    url = f"{live_server.url}/mcp"
    api = rest(live_server.url, admin)
    with api:
        assert api.put("/users/alice/documents/global/notes/diet.md",
                       json={"content": "Vegetarian, no fish."}).status_code == 201

        async def work(client: Client) -> dict[str, Any]:
            return {
                "own": await client.call_tool("memory", {
                    "command": "create", "path": "/memories/bob.md", "file_text": "Likes tea."}),
                "own_index": await client.call_tool("memory_index", {}),
                "other_view": await client.call_tool("memory", {
                    "command": "view", "path": "/memories/notes/diet.md", "user_id": "alice"}),
                "ghost_view": await client.call_tool("memory", {
                    "command": "view", "path": "/memories/notes/diet.md", "user_id": "ghost"}),
                "other_write": await client.call_tool("memory", {
                    "command": "create", "path": "/memories/x.md", "file_text": "x",
                    "user_id": "alice"}),
                "ghost_write": await client.call_tool("memory", {
                    "command": "create", "path": "/memories/x.md", "file_text": "x",
                    "user_id": "ghost"}),
                "other_recall": await client.call_tool("recall", {"query": "vegetarian",
                                                                  "user_id": "alice"}),
                "ghost_recall": await client.call_tool("recall", {"query": "vegetarian",
                                                                  "user_id": "ghost"}),
            }

        out = with_mcp(url, key, mode, work)
        assert not out["own"].is_error
        assert api.get("/users/bob/documents/global/bob.md").json()["content"] == "Likes tea."
        assert "/bob.md" in text(out["own_index"])
        # alice looks exactly like a person who does not exist, for reads and for writes.
        for verb in ("view", "write", "recall"):
            reached, missed = out[f"other_{verb}"], out[f"ghost_{verb}"]
            assert (text(reached), reached.is_error, reached.structured_content) == (
                text(missed), missed.is_error, missed.structured_content), verb
        assert out["other_view"].is_error and "does not exist" in text(out["other_view"])
        assert out["other_write"].is_error and "bound to one end user" in text(out["other_write"])
        assert text(out["other_recall"]) == ""
        assert api.get("/users/alice/documents").json()["documents"][0]["bytes"] == 20
        assert api.get("/users/ghost").json()["created_at"] is None


def test_a_bad_key_is_401_before_any_tool_runs(live_server) -> None:
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    for authorization in (None, "Bearer mh_1_abcdefgh_" + "x" * 43, "Basic abc", "Bearer " + key[:-2]):
        sent = {**WIRE, **({"Authorization": authorization} if authorization else {})}
        response = httpx.post(url, json=CREATE_CALL, headers=sent, timeout=30)
        assert response.status_code == 401, authorization
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        refused = response.json()  # JSON-RPC's error, the REST code in its data
        assert refused["jsonrpc"] == "2.0" and refused["id"] is None
        assert refused["error"]["code"] == -32600 and refused["error"]["data"] == {
            "code": "not_authenticated" if authorization is None else "invalid_api_key",
            "status": 401}
    with rest(live_server.url, key) as api:
        assert api.get("/users/alice").json()["created_at"] is None  # nothing ran
    with pytest.raises(Exception):
        with_mcp(url, "mh_1_abcdefgh_" + "x" * 43, "legacy", lambda client: client.list_tools())


def test_the_sdk_reports_what_was_refused_before_it(live_server) -> None:
    """A body over 1 MiB is refused before the MCP server reads it: the SDK's client reports
    the API's message (a REST error body read as "Server returned an error response")."""
    key = operator_tenant("initech")
    huge = {"command": "create", "path": "/memories/big.md", "file_text": "x" * 1_100_000,
            "user_id": "alice"}

    async def work(client: Client) -> str:
        with pytest.raises(Exception) as refused:
            await client.call_tool("memory", huge)
        return str(refused.value)

    said = with_mcp(f"{live_server.url}/mcp", key, "legacy", work)
    assert "The request body is over 1 MiB. Send less at a time." in said


def test_get_is_405_at_once_not_a_stream_that_holds_a_thread_and_only_post_is_served(live_server) -> None:
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    for _ in range(6):  # more than the web server's threads: none is held
        response = httpx.get(url, headers={**WIRE, "Accept": "text/event-stream",
                                           "Authorization": f"Bearer {key}"}, timeout=10)
        assert response.status_code == 405 and response.headers["Allow"] == "POST"
        assert response.json()["error"]["data"]["code"] == "method_not_allowed"
    assert httpx.get(url, headers={"Accept": "text/event-stream"}, timeout=10).status_code == 401
    # Nothing but POST is served, and Allow says so: stateless, there is no session for a
    # DELETE to end (the SDK's 405 had no Allow; to PUT it answered "GET, POST, DELETE").
    for method in ("DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"):
        response = httpx.request(method, url, headers={**WIRE, "Authorization": f"Bearer {key}",
                                                       "Mcp-Session-Id": "abc"}, timeout=10)
        assert (response.status_code, response.headers.get("Allow")) == (405, "POST"), method
        if method != "HEAD":
            assert response.json()["error"]["data"] == {"code": "method_not_allowed",
                                                         "status": 405}, method
    # The SDK's client, which opens that stream after the handshake, works as before.
    listed = with_mcp(url, key, "legacy", lambda client: client.list_tools())
    assert {tool.name for tool in listed.tools} == TOOLS


@pytest.mark.parametrize("mode", MODES)
def test_another_tenants_person_is_absent(live_server, mode) -> None:
    key, other = operator_tenant("initech"), operator_tenant("umbrella")
    with rest(live_server.url, key) as api:
        api.put("/users/alice/documents/global/notes/diet.md", json={"content": "Vegetarian."})

    async def work(client: Client) -> list[Any]:
        results = []
        for user in ("alice", "ghost"):
            results.append(await client.call_tool("memory", {
                "command": "view", "path": "/memories/notes/diet.md", "user_id": user}))
            results.append(await client.call_tool("memory", {
                "command": "view", "path": "/memories", "user_id": user}))
            results.append(await client.call_tool("recall", {"query": "vegetarian",
                                                             "user_id": user}))
            results.append(await client.call_tool("memory_index", {"user_id": user}))
        return results

    out = with_mcp(f"{live_server.url}/mcp", other, mode, work)
    seen = [(text(r).replace("ghost", "alice"), r.is_error, r.structured_content) for r in out]
    assert seen[:4] == seen[4:]
    assert not any("Vegetarian" in text(r) for r in out)


def test_dns_rebinding_is_refused(live_server) -> None:
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    headers = {"Authorization": f"Bearer {key}", **WIRE}
    # A page on another site that rebinds its name to this server: its Host, or its Origin.
    bad_host = httpx.post(url, json=CREATE_CALL, headers={**headers, "Host": "attacker.example"},
                          timeout=30)
    assert bad_host.status_code in (400, 421)
    bad_origin = httpx.post(url, json=CREATE_CALL, headers={**headers,
                                                     "Origin": "http://attacker.example"},
                            timeout=30)
    assert bad_origin.status_code == 403
    with rest(live_server.url, key) as api:
        assert api.get("/users/alice").json()["created_at"] is None  # no tool ran
    good = httpx.post(url, json=CREATE_CALL, headers={**headers, "Origin": live_server.url}, timeout=30)
    assert good.status_code == 200 and good.json()["result"]["isError"] is False


def mcp_status(url: str, key: str, **headers: str) -> int:
    return httpx.post(url, json=CREATE_CALL, timeout=30,
                      headers={"Authorization": f"Bearer {key}", **WIRE, **headers}).status_code


@pytest.mark.parametrize("allowed", [[".example.org"], ["*"]])
def test_allowed_hosts_are_read_as_django_reads_them(live_server, settings, allowed) -> None:
    """A subdomain entry and ``*`` allow their hosts on /mcp as on the REST API (the SDK's
    exact-name check answered them 421); a foreign page's Origin stays refused."""
    settings.ALLOWED_HOSTS = [*allowed, "localhost"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://*.example.net"]
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    assert mcp_status(url, key, Host="memory.example.org") == 200
    # Its own origin under *, an allowed host's otherwise (https, another port).
    origin = "http" if allowed == ["*"] else "https"
    assert mcp_status(url, key, Host="memory.example.org:8443",
                      Origin=f"{origin}://memory.example.org:8443") == 200
    assert mcp_status(url, key, Origin="https://app.example.net") == 200
    assert mcp_status(url, key, Origin="http://attacker.example") == 403
    assert mcp_status(url, key, Origin="https://app.example.net.attacker.example") == 403
    assert mcp_status(url, key, Origin="null") == 403
    if allowed == ["*"]:
        assert mcp_status(url, key, Host="anything.example") == 200
    else:
        assert mcp_status(url, key, Host="example.com") == 400  # Django's refusal


def test_the_rate_limit_is_the_apis(live_server, settings, fresh_rate_window) -> None:
    settings.API_RATE_LIMIT = "2/min"
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {key}", **WIRE}
    statuses = [httpx.post(url, json=body, headers=headers, timeout=30).status_code
                for _ in range(2)]
    with rest(live_server.url, key) as api:
        limited = api.get("/users")
    assert statuses == [200, 200] and limited.status_code == 429
    again = httpx.post(url, json=body, headers=headers, timeout=30)
    assert again.status_code == 429 and int(again.headers["Retry-After"]) >= 1


# Arguments a model may get wrong: each tool answers them as the REST call does.
ODD_MEMORY_ARGUMENTS = [
    {"command": "insert", "path": "/memories/a.md", "insert_line": "1", "insert_text": "x"},
    {"command": "insert", "path": "/memories/a.md", "insert_line": True, "insert_text": "x"},
    {"command": "insert", "path": "/memories/a.md", "insert_line": 1.0, "insert_text": "x"},
    {"command": "view", "path": "/memories/a.md", "view_range": "[1, 2]"},
    {"command": "view", "path": "/memories/a.md", "view_range": ["1", "2"]},
    {"command": "view", "path": "/memories/a.md", "view_range": None},
    {"command": "view", "path": None},
    {"command": "view", "path": 123},
    {"command": None, "path": "/memories"},
    {"command": "create", "path": "/memories/n.md", "file_text": 123},
    {"command": "append", "path": "/memories/a.md", "text": "more\n"},
    {"command": "create", "path": "/memories/d.md", "file_text": "x", "description": "Diet"},
]
ODD_RECALLS = [{"query": ""}, {"query": "   "}, {"query": "x" * 10_001}, {"query": "tea\x00x"},
               {"query": "tea", "limit": True}, {"query": "tea", "limit": "5"}, {"query": 123},
               {"query": "tea", "session_id": "no spaces"}, {"query": "tea", "profile": "Cooking"},
               {"query": "tea", "session_id": "s" * 129}]


def test_odd_arguments_are_answered_as_the_rest_api_answers_them(live_server) -> None:
    key = operator_tenant("initech")
    with rest(live_server.url, key) as api:
        for person in ("alice", "bob"):  # alice through MCP, bob through REST, alike
            api.post(f"/users/{person}/memory", json={
                "command": "create", "path": "/memories/a.md", "file_text": "one\ntwo\n"})

        async def work(client: Client) -> list[Any]:
            return [await client.call_tool("memory", {**arguments, "user_id": "alice"})
                    for arguments in ODD_MEMORY_ARGUMENTS]

        for arguments, result in zip(ODD_MEMORY_ARGUMENTS, with_mcp(
                f"{live_server.url}/mcp", key, "legacy", work), strict=True):
            expected = api.post("/users/bob/memory", json=arguments).json()
            assert (text(result), bool(result.is_error)) == (
                expected["content"], expected["is_error"]), arguments
        documents = {d["path"]: d for d in api.get("/users/alice/documents").json()["documents"]}
        assert documents["/d.md"]["description"] == "Diet"
        assert api.get("/users/alice/documents/global/a.md").json()["content"].endswith("more\n")

        async def recalls(client: Client) -> list[Any]:
            return [await client.call_tool("recall", {**arguments, "user_id": "alice"})
                    for arguments in ODD_RECALLS]

        for arguments, result in zip(ODD_RECALLS, with_mcp(
                f"{live_server.url}/mcp", key, "legacy", recalls), strict=True):
            refused = api.post("/users/alice/recall", json=arguments)
            assert refused.status_code == 400, arguments
            assert result.is_error and text(result) == f"Error: {refused.json()['error']['message']}"


def test_the_memory_tool_matches_the_reference_through_mcp(live_server) -> None:
    """A sequence of commands through MCP gives the SDK reference tool's texts, byte for byte."""
    key = operator_tenant("initech")
    commands = [
        create("/memories/a.md", "one\ntwo\n"),
        view("/memories/a.md", [1, 1]),
        insert("/memories/a.md", 1, "x\n"),
        str_replace("/memories/a.md", "two", "2"),
        str_replace("/memories/a.md", "zzz", "2"),
        create("/memories/a.md", "again"),
        rename("/memories/a.md", "/memories/b.md"),
        view("/memories/b.md"),
        delete("/memories/b.md"),
        view("/memories/b.md"),
    ]

    async def work(client: Client) -> list[tuple[str, bool]]:
        out = []
        for command in commands:
            result = await client.call_tool("memory", {**command, "user_id": "alice"})
            out.append((text(result), bool(result.is_error)))
        return out

    through_mcp = with_mcp(f"{live_server.url}/mcp", key, "auto", work)
    with reference_tool() as reference:
        expected = [reference_outcome(reference, command)[:2] for command in commands]
    assert through_mcp == expected


def test_served_by_the_production_command(live_server) -> None:
    """gunicorn as the README runs it in production (gthread workers): /mcp on the API's port.
    (``live_server`` only makes the test database the server's: its data is committed.)"""
    import os
    import secrets
    import sys

    from tests.benchmarks.benchserver import free_port, serving

    operator_tenant("initech")
    key = bound_key("initech", "bob")
    port = free_port()
    env = {**os.environ, "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50),
           "ALLOWED_HOSTS": "127.0.0.1,localhost", "SECURE_SSL_REDIRECT": "0",
           "LOG_LEVEL": "WARNING"}
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    command = [sys.executable, "-m", "gunicorn", "memoryhub.wsgi:application", "--bind",
               f"127.0.0.1:{port}", "--workers", "2", "--threads", "2"]
    with serving(command, env, port, "gunicorn") as base:

        async def work(client: Client) -> tuple[set[str], Any, Any]:
            tools = {t.name for t in (await client.list_tools()).tools}
            created = await client.call_tool("memory", {
                "command": "create", "path": "/memories/a.md", "file_text": "Likes tea."})
            viewed = await client.call_tool("memory", {"command": "view", "path": "/memories/a.md"})
            return tools, created, viewed

        for mode in MODES:
            tools, created, viewed = with_mcp(f"{base}/mcp", key, mode, work)
            assert tools == TOOLS
            assert not viewed.is_error and "Likes tea." in text(viewed)
        assert httpx.post(f"{base}/mcp", json={}, timeout=10).status_code == 401


# --- remember ------------------------------------------------------------------------------

CREDENTIAL = "My key is sk-ant-api03-" + "a" * 40


def fact_events(api: httpx.Client) -> list[tuple[str, str, str]]:
    feed = api.get("/events", params={"limit": 1000}).json()["events"]
    return [(e["user_id"], e["actor"], e["data"]["change"]) for e in feed
            if e["type"] == "fact.changed"]


def refusal_text(api: httpx.Client, user_id: str, content: str) -> str:
    """What ``POST .../facts`` refuses this content with (its error message)."""
    response = api.post(f"/users/{user_id}/facts", json={"content": content})
    assert response.status_code in (403, 422), response.text
    return response.json()["error"]["message"]


@pytest.mark.parametrize("mode", MODES)
def test_remember_adds_a_fact_as_post_facts_does(live_server, mode) -> None:
    key = operator_tenant("initech")
    api = rest(live_server.url, key)

    async def work(client: Client) -> dict[str, Any]:
        call = client.call_tool
        return {
            "kept": await call("remember", {"content": "User prefers green tea",
                                            "type": "preference", "user_id": "alice"}),
            "again": await call("remember", {"content": "  user prefers GREEN tea.",
                                             "user_id": "alice"}),
            "plain": await call("remember", {"content": "User lives in Porto", "user_id": "alice"}),
            "secret": await call("remember", {"content": CREDENTIAL, "user_id": "dave"}),
            "blank": await call("remember", {"content": " \n", "user_id": "alice"}),
            "big": await call("remember", {"content": "x" * 2001, "user_id": "alice"}),
            "kind": await call("remember", {"content": "User is tall", "type": "opinion",
                                            "user_id": "alice"}),
            "off": await call("remember", {"content": "User likes jazz", "user_id": "carol"}),
            "nobody": await call("remember", {"content": "User likes jazz"}),
        }

    with api:
        assert api.patch("/users/carol", json={"memory_enabled": False}).status_code == 200
        out = with_mcp(f"{live_server.url}/mcp", key, mode, work)
        kept, again, plain = out["kept"], out["again"], out["plain"]
        assert (text(kept), kept.is_error) == ("Remembered: User prefers green tea", False)
        fact = api.get(f"/users/alice/facts/{kept.structured_content['id']}").json()
        assert kept.structured_content == fact
        assert (fact["type"], fact["updated_by"], fact["version"]) == ("preference", "assistant", 1)
        # The same normalised text: the valid fact, unchanged, as POST answers it with 200.
        assert text(again) == "Already known: User prefers green tea"
        assert again.structured_content == fact
        assert plain.structured_content["type"] == "fact"
        listed = api.get("/users/alice/facts").json()["facts"]
        assert sorted(f["content"] for f in listed) == ["User lives in Porto",
                                                       "User prefers green tea"]
        # Refusals: the REST texts, nothing stored, not even the person.
        for name, user, content in (("secret", "dave", CREDENTIAL), ("blank", "alice", " \n"),
                                    ("big", "alice", "x" * 2001), ("off", "carol", "User likes jazz")):
            assert out[name].is_error, name
            assert text(out[name]) == refusal_text(api, user, content), name
        assert "credential" in text(out["secret"]) and "disabled" in text(out["off"])
        assert api.get("/users/dave").json()["created_at"] is None
        assert api.get("/users/carol/facts").json()["facts"] == []
        assert out["kind"].is_error and text(out["kind"]) == (
            'Error: type: "opinion" is not a valid choice.')
        assert out["nobody"].is_error and "user_id is required" in text(out["nobody"])
        # fact.changed, by the assistant, once per new fact.
        assert fact_events(api) == [("alice", "assistant", "created")] * 2


@pytest.mark.parametrize("mode", MODES)
def test_remember_with_a_bound_key_reaches_no_one_else(live_server, mode) -> None:
    admin = operator_tenant("initech")
    other = operator_tenant("umbrella")
    key = bound_key("initech", "bob")
    url = f"{live_server.url}/mcp"
    with rest(live_server.url, admin) as api:
        assert api.post("/users/alice/facts", json={"content": "User likes tea"}).status_code == 201

        async def work(client: Client) -> dict[str, Any]:
            call = client.call_tool
            return {
                "own": await call("remember", {"content": "User likes tea"}),
                "own_named": await call("remember", {"content": "User likes tea", "user_id": "bob"}),
                "other": await call("remember", {"content": "User hates tea", "user_id": "alice"}),
                "ghost": await call("remember", {"content": "User hates tea", "user_id": "ghost"}),
            }

        out = with_mcp(url, key, mode, work)
        assert text(out["own"]) == "Remembered: User likes tea"
        assert text(out["own_named"]) == "Already known: User likes tea"
        [bobs] = api.get("/users/bob/facts").json()["facts"]
        assert bobs == out["own"].structured_content and bobs["updated_by"] == "assistant"
        # Another person of the same tenant: refused exactly as one who does not exist.
        assert (text(out["other"]), out["other"].is_error) == (text(out["ghost"]), True)
        assert "bound to one end user" in text(out["other"])
        assert [f["content"] for f in api.get("/users/alice/facts").json()["facts"]] == [
            "User likes tea"]
        assert api.get("/users/ghost").json()["created_at"] is None

        # Another tenant's alice is another person: no duplicate of initech's fact, no trace.
        async def theirs(client: Client) -> Any:
            return await client.call_tool("remember", {"content": "User likes tea",
                                                       "user_id": "alice"})

        remembered = with_mcp(url, other, mode, theirs)
        assert text(remembered) == "Remembered: User likes tea"
        mine = api.get("/users/alice/facts").json()["facts"]
        assert [f["id"] for f in mine] != [remembered.structured_content["id"]]
        assert len(mine) == 1
        assert api.get(f"/users/alice/facts/{remembered.structured_content['id']}").status_code == 404
        assert [e[0] for e in fact_events(api)] == ["alice", "bob"]


# remember's arguments a model may get wrong, and what POST .../facts says of the same body.
ODD_REMEMBERS = [{}, {"content": None}, {"content": 5}, {"content": "User is tall", "type": "opinion"},
                 {"content": "User is tall", "type": 5}, {"content": "User is tall", "tpye": "profile"},
                 {"content": "User is tall", "confidence": 5},
                 {"content": "User is tall", "process": "no spaces"}]


def test_remembers_odd_arguments_are_answered_as_post_facts_answers_them(live_server) -> None:
    """The arguments (without user_id) are POST .../facts' body: its refusals' texts (a
    misspelt field included, which would otherwise lose the type), and a null type is the
    default type, as REST takes it."""
    key = operator_tenant("initech")

    async def work(client: Client) -> list[Any]:
        calls = [*ODD_REMEMBERS, {"content": "User is tall", "type": None}]
        return [await client.call_tool("remember", {**arguments, "user_id": "alice"})
                for arguments in calls]

    *refused, untyped = with_mcp(f"{live_server.url}/mcp", key, "legacy", work)
    with rest(live_server.url, key) as api:
        for arguments, result in zip(ODD_REMEMBERS, refused, strict=True):
            expected = api.post("/users/bob/facts", json=arguments)
            assert expected.status_code == 400, arguments
            assert result.is_error, arguments
            assert text(result) == f"Error: {expected.json()['error']['message']}", arguments
        assert (text(untyped), untyped.is_error) == ("Remembered: User is tall", False)
        assert untyped.structured_content["type"] == "fact"
        assert [f["content"] for f in api.get("/users/alice/facts").json()["facts"]] == [
            "User is tall"]


def test_a_database_failure_in_a_tool_is_the_apis_503_text_not_the_exceptions(live_server) -> None:
    """The tool's connection is cut while it waits for the person's write lock (a database
    restart, a failover): the answer is the REST API's text for that, as a JSON-RPC error
    with the 503's code and status, never psycopg's message (what the connection was doing)
    as the tool's text."""
    import threading

    from django.db import connection

    from memoryhub.models import EndUser
    from tenants.context import tenant_context
    from tenants.models import Tenant
    from tests.faults.harness import wait_until

    key = operator_tenant("initech")
    with rest(live_server.url, key) as api:
        assert api.put("/users/alice/documents/global/b.md", json={"content": "x"}).status_code == 201
    answered: dict[str, httpx.Response] = {}

    def create() -> None:
        answered["response"] = httpx.post(
            f"{live_server.url}/mcp", json=CREATE_CALL,
            headers={**WIRE, "Authorization": f"Bearer {key}"}, timeout=60)

    def waiting_backend() -> int | None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                           "AND pid <> pg_backend_pid()")
            row = cursor.fetchone()
        return row[0] if row else None

    caller = threading.Thread(target=create)
    with tenant_context(Tenant.objects.get(slug="initech").pk):
        EndUser.objects.select_for_update(no_key=True).get(user_id="alice")
        caller.start()
        pid = wait_until(waiting_backend, timeout=30, what="the tool to wait for alice's lock")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    caller.join(timeout=60)
    response = answered["response"]
    assert response.status_code == 200
    error = response.json()["error"]
    assert error == {"code": -32603, "message": UNAVAILABLE_MESSAGE,
                     "data": {"code": "service_unavailable", "status": 503}}
    with rest(live_server.url, key) as api:  # nothing was written, and the next call works
        assert [d["path"] for d in api.get("/users/alice/documents").json()["documents"]] == ["/b.md"]
        again = httpx.post(f"{live_server.url}/mcp", json=CREATE_CALL,
                           headers={**WIRE, "Authorization": f"Bearer {key}"}, timeout=30)
        assert again.json()["result"]["isError"] is False


def test_identifier_refusals_are_the_rest_apis_messages(live_server) -> None:
    """A user_id, session_id or profile outside its rule: the tool error is "Error: " and the
    message REST answers its 400 with, the same in every tool."""
    key = operator_tenant("initech")
    url = f"{live_server.url}/mcp"
    bad = {"user_id": "no spaces", "session_id": "no spaces", "profile": "Cooking"}

    async def work(client: Client) -> dict[str, list[Any]]:
        out: dict[str, list[Any]] = {}
        for name, value in bad.items():
            place = {"user_id": "alice", name: value}
            out[name] = [
                await client.call_tool("memory_index", place),
                await client.call_tool("recall", {"query": "tea", **place}),
                await client.call_tool("remember", {"content": "User likes tea", **place})
                if name == "user_id" else None,
            ]
        return out

    out = with_mcp(url, key, "legacy", work)
    with rest(live_server.url, key) as api:
        rest_says = {
            "user_id": api.get("/users/no spaces/memory/index"),
            "session_id": api.get("/users/alice/memory/index", params={"session_id": "no spaces"}),
            "profile": api.get("/users/alice/memory/index", params={"profile": "Cooking"}),
        }
        for name, results in out.items():
            assert rest_says[name].status_code == 400, name
            expected = f"Error: {rest_says[name].json()['error']['message']}"
            for result in filter(None, results):
                assert (text(result), result.is_error) == (expected, True), name


@pytest.mark.parametrize("mode", MODES)
def test_the_url_with_a_trailing_slash_is_the_same_server(live_server, mode) -> None:
    """"/mcp/", as people copy it from servers the SDK builds (which send it on to "/mcp"):
    the same tools and refusals, not the pages' HTML 404."""
    operator_tenant("initech")
    key = bound_key("initech", "bob")
    url = f"{live_server.url}/mcp/"

    async def work(client: Client) -> tuple[set[str], Any]:
        tools = {t.name for t in (await client.list_tools()).tools}
        return tools, await client.call_tool("memory", {
            "command": "create", "path": "/memories/a.md", "file_text": "Likes tea."})

    tools, created = with_mcp(url, key, mode, work)
    assert tools == TOOLS
    assert (text(created), created.is_error) == ("File created successfully at: /memories/a.md",
                                                 False)
    refused = httpx.post(url, json=CREATE_CALL, headers=WIRE, timeout=30)
    assert refused.status_code == 401
    assert refused.json()["error"]["data"] == {"code": "not_authenticated", "status": 401}
