"""API v1, "The prompt index": ``GET .../memory/index`` and ``GET .../memory/snapshot``.

The person's own edit (``[edited by the user]``) is made the way a person makes it: through
the one-time portal link and the memory page, over HTTP.
"""

from __future__ import annotations

import re
from typing import Any

from django.test import Client

from tests.spec.api_client import (
    BASE,
    MEMORY_INDEX_HEADER,
    index,
    ok,
    put_document,
    set_limits,
    snapshot,
)

DISABLED = {"enabled": False, "text": "", "entries": [], "omitted": 0}
EMPTY = {"enabled": True, "text": "", "entries": [], "omitted": 0}


def edit_as_the_person(kit: Any, user_id: str, path: str, content: str) -> None:
    """Open the portal link, find the document on the memory page, save a new text."""
    url = kit.client.post(f"{BASE}/users/{user_id}/portal-link").json()["url"]
    browser = Client()
    page_url = browser.get(url[url.index("/portal/"):])["Location"]
    page = browser.get(page_url).content.decode()
    listed = dict((shown, pk) for pk, shown in
                  re.findall(r'id="doc-(\d+)-toggle".*?<code>(.*?)</code>', page, re.S))
    edit_url = f"{page_url}doc/{listed[path]}/edit"
    form = browser.get(edit_url, HTTP_HX_REQUEST="true").content.decode()
    version = re.search(r'name="version" value="(\d+)"', form).group(1)
    description = re.search(r'name="description".*?value="([^"]*)"', form, re.S)
    response = browser.post(edit_url, {"content": content, "version": version,
                                       "description": description.group(1) if description else ""})
    assert response.status_code in (200, 302), response.content


def test_exact_text_newest_first_of_this_session_profile_and_global(acme, globex) -> None:
    conversation = {"session_id": "s-123", "profile": "cooking"}
    ok(acme, command="create", path="/memories/notes/preferences.md", file_text="v" * 120,
       description="Diet and units")
    ok(acme, command="create", path="/todo.md", file_text="t" * 40, scope="session",
       session_id="s-123")
    ok(acme, command="create", path="/p.md", file_text="p", scope="profile", profile="cooking")
    ok(acme, command="create", path="/other.md", file_text="o", scope="session",
       session_id="s-999")
    ok(acme, command="create", path="/baking.md", file_text="b", scope="profile",
       profile="baking")
    edit_as_the_person(acme, "alice", "/todo.md", "u" * 40)
    body = index(acme, **conversation)
    assert body["text"] == "\n".join([
        MEMORY_INDEX_HEADER,
        "- /todo.md (session, 40 bytes) [edited by the user]",
        "- /p.md (profile, 1 bytes)",
        "- /notes/preferences.md (global, 120 bytes): Diet and units",
        "</memory_index>",
    ])
    assert body["enabled"] is True and body["omitted"] == 0
    assert [{k: e[k] for k in ("path", "scope", "bytes", "description", "edited_by_user")}
            for e in body["entries"]] == [
        {"path": "/todo.md", "scope": "session", "bytes": 40, "description": "",
         "edited_by_user": True},
        {"path": "/p.md", "scope": "profile", "bytes": 1, "description": "",
         "edited_by_user": False},
        {"path": "/notes/preferences.md", "scope": "global", "bytes": 120,
         "description": "Diet and units", "edited_by_user": False},
    ]
    assert all(set(e) == {"path", "scope", "bytes", "description", "edited_by_user",
                          "updated_at"} for e in body["entries"])
    stamps = [e["updated_at"] for e in body["entries"]]
    assert stamps == sorted(stamps, reverse=True)
    # The assistant's next change makes it the assistant's again, and the newest.
    ok(acme, command="append", path="/memories/notes/preferences.md", text="more",
       **conversation)
    first = index(acme, **conversation)["entries"][0]
    assert (first["path"], first["edited_by_user"], first["bytes"]) == (
        "/notes/preferences.md", False, 125)
    ok(acme, command="append", path="/todo.md", text="x", **conversation)
    assert index(acme, **conversation)["entries"][0]["edited_by_user"] is False
    # Without a session or profile: global only.
    assert [e["path"] for e in index(acme)["entries"]] == ["/notes/preferences.md"]


def test_text_is_empty_when_there_is_nothing_to_show(acme, globex) -> None:
    assert index(acme) == EMPTY
    ok(acme, command="create", path="/s.md", file_text="s", scope="session", session_id="s-1")
    assert index(acme) == EMPTY
    assert index(acme, session_id="s-2") == EMPTY


def test_what_does_not_fit_becomes_one_last_line(acme, globex) -> None:
    set_limits(acme, max_index_entries=3, max_index_tokens=None, max_writes_per_turn=None)
    for n in range(5):
        put_document(acme, f"global/n{n}.md", "x" * n)
    body = index(acme)
    assert body["text"].split("\n")[2:] == [
        "- /n4.md (global, 4 bytes)", "- /n3.md (global, 3 bytes)", "- /n2.md (global, 2 bytes)",
        "- 2 more; use view /", "</memory_index>"]
    assert body["omitted"] == 2 and [e["path"] for e in body["entries"]] == [
        "/n4.md", "/n3.md", "/n2.md"]
    # About max_index_tokens tokens at 4 characters a token: whole lines only.
    set_limits(acme, max_index_entries=None, max_index_tokens=15)
    body = index(acme)
    lines = body["text"].split("\n")[2:-1]
    assert lines[-1] == f"- {body['omitted']} more; use view /"
    assert body["omitted"] >= 1 and len(body["entries"]) == 5 - body["omitted"]
    assert sum(len(line) + 1 for line in lines[:-1]) <= 15 * 4 + 30
    # Null switches both off.
    set_limits(acme, max_index_entries=None, max_index_tokens=None)
    assert index(acme)["omitted"] == 0 and len(index(acme)["entries"]) == 5


def test_memory_off_gives_the_disabled_shape(acme, globex) -> None:
    ok(acme, command="create", path="/a.md", file_text="a")
    ok(acme, command="create", path="/p.md", file_text="p", scope="profile", profile="cooking")
    acme.client.put(f"{BASE}/profiles/cooking", {"disabled": True}, format="json")
    assert index(acme, profile="cooking") == DISABLED
    assert index(acme, session_id="s-1", profile="cooking") == DISABLED
    assert snapshot(acme, profile="cooking") == ""
    assert index(acme)["enabled"] is True
    acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": False}, format="json")
    assert index(acme) == DISABLED
    assert index(acme, "bob") == EMPTY
    acme.client.patch(f"{BASE}/users/alice", {"memory_enabled": True}, format="json")
    acme.client.patch(f"{BASE}/tenant", {"memory_enabled": False}, format="json")
    assert index(acme) == DISABLED and index(acme, "nobody") == DISABLED
    ok(globex, command="create", path="/a.md", file_text="a")
    assert index(globex)["enabled"] is True and len(index(globex)["entries"]) == 1


def test_snapshot_format_ordered_by_path(acme, globex) -> None:
    conversation = {"session_id": "s-1", "profile": "cooking"}
    ok(acme, command="create", path="/memories/notes/a.md", file_text="line 1\nline 2")
    ok(acme, command="create", path="/B.md", file_text="")
    ok(acme, command="create", path="/a/b.md", file_text="ab", scope="profile", profile="cooking")
    ok(acme, command="create", path="/a.md", file_text="session a", scope="session",
       session_id="s-1")
    ok(acme, command="create", path="/z.md", file_text="other", scope="session",
       session_id="s-2")
    assert snapshot(acme, **conversation) == (
        '<memory path="/B.md" scope="global">\n\n</memory>\n'
        '<memory path="/a.md" scope="session">\nsession a\n</memory>\n'
        '<memory path="/a/b.md" scope="profile">\nab\n</memory>\n'
        '<memory path="/notes/a.md" scope="global">\nline 1\nline 2\n</memory>\n'
    )
    assert snapshot(acme) == (
        '<memory path="/B.md" scope="global">\n\n</memory>\n'
        '<memory path="/notes/a.md" scope="global">\nline 1\nline 2\n</memory>\n'
    )
    assert snapshot(acme, "nobody", **conversation) == ""
    assert snapshot(globex, **conversation) == ""
