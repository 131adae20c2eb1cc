"""The contract over a real socket: ``live_server`` (Django's threaded WSGI server) and httpx.

The tenant and its key come from ``manage.py create_tenant``, exactly as an operator makes
them; everything after that is HTTP an outside client sends, headers and raw bytes included.
"""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db(transaction=True)


def operator_tenant(slug: str) -> str:
    out = io.StringIO()
    call_command("create_tenant", slug, "--name", slug.title(), stdout=out)
    return json.loads(out.getvalue())["api_key"]


def test_the_contract_over_real_http(live_server: Any) -> None:
    key, other_key = operator_tenant("initech"), operator_tenant("umbrella")
    api = httpx.Client(base_url=f"{live_server.url}/api/v1",
                       headers={"Authorization": f"Bearer {key}"}, timeout=30)
    other = httpx.Client(base_url=f"{live_server.url}/api/v1",
                         headers={"Authorization": f"Bearer {other_key}"}, timeout=30)
    user = "ext:42|team+a@example.com"  # every punctuation mark a user_id may hold
    with api, other:
        # The memory tool, both path spellings, echoed as written.
        response = api.post(f"/users/{user}/memory", json={
            "command": "create", "path": "/memories/notes/diet.md", "file_text": "vegetarian\n",
            "description": "Diet"})
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("application/json")
        assert response.json() == {"content": "File created successfully at: /memories/notes/diet.md",
                                   "is_error": False}
        assert api.post(f"/users/{user}/memory", json={"command": "view", "path": "/notes/diet.md"}
                        ).json()["content"] == (
            "Here's the content of /notes/diet.md with line numbers:\n     1\tvegetarian\n     2\t")
        assert api.post(f"/users/{user}/memory", json={"command": "view", "path": "/x/.."}).json() == {
            "content": "Error: /x/.. is not an allowed path", "is_error": True}
        # Documents: ETag and preconditions as raw headers.
        url = f"/users/{user}/documents/global/notes/diet.md"
        got = api.get(url)
        assert got.status_code == 200 and got.headers["ETag"] == '"1"'
        assert got.json()["content"] == "vegetarian\n" and got.json()["updated_by"] == "assistant"
        stale = api.put(url, json={"content": "vegan\n"}, headers={"If-Match": '"7"'})
        assert stale.status_code == 412 and set(stale.json()["error"]) == {"code", "message"}
        fresh = api.put(url, json={"content": "vegan\n"}, headers={"If-Match": got.headers["ETag"]})
        assert fresh.status_code == 200 and fresh.headers["ETag"] == '"2"'
        assert api.put(url, json={"content": "x"}, headers={"If-None-Match": "*"}).status_code == 412
        # Raw bytes that are not UTF-8 are a content rule (422 not_text), not a crash.
        raw = api.put(f"/users/{user}/documents/global/raw.md", content=b'{"content": "\xff\xfe"}',
                      headers={"Content-Type": "application/json"})
        assert (raw.status_code, raw.json()["error"]["code"]) == (422, "not_text")
        # The index and the snapshot.
        index = api.get(f"/users/{user}/memory/index").json()
        assert index["enabled"] is True and index["omitted"] == 0
        assert "- /notes/diet.md (global, 6 bytes): Diet" in index["text"].split("\n")
        assert api.get(f"/users/{user}/memory/snapshot").json() == {
            "text": '<memory path="/notes/diet.md" scope="global">\nvegan\n\n</memory>\n'}
        # Over 1 MiB: 413, with the error body.
        big = api.post(f"/users/{user}/memory", content=b'{"file_text": "' + b"x" * (1 << 20) + b'"}',
                       headers={"Content-Type": "application/json"})
        assert big.status_code == 413 and "code" in big.json()["error"]
        # Auth and tenancy.
        assert httpx.get(f"{live_server.url}/api/v1/users").status_code == 401
        assert other.get(url).status_code == 404
        assert other.get(f"/users/{user}").json()["documents"]["total"] == 0
        assert api.get("/users/bad user/memory/index").json()["error"]["code"] == "invalid_user_id"
        feed = api.get("/events").json()
        assert [e["data"]["change"] for e in feed["events"]] == ["created", "updated"]
        assert feed["next_cursor"] == feed["events"][-1]["id"]
