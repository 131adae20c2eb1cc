"""API v1, "The memory tool": ``POST /api/v1/users/{user_id}/memory``.

The reply is HTTP 200 ``{"content", "is_error"}`` for every outcome of the command; texts match
the SDK's reference ``BetaLocalFilesystemMemoryTool`` byte for byte for the same commands on
``/memories`` paths. Paths written without the prefix (``/notes/a.md``) name the same
documents, and every text echoes the path the way the caller wrote it: the reference's text
for ``/memories/notes/a.md`` with ``/memories/`` written as ``/``.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.memory_commands import Command, create, delete, insert, rename, str_replace, view
from tests.reference_tool import (
    prune_empty_directories,
    reference_outcome,
    reference_tool,
    without_directory_sizes,
)
from tests.spec.api_client import (
    BASE,
    DIRECTORY_HEADER,
    assert_error,
    err,
    events,
    ok,
    put_document,
    set_limits,
    tool,
)

_people = itertools.count()


TEN_LINES = "\n".join(f"line {n}" for n in range(1, 11))

# The tricky cases, written under /memories (the reference accepts nothing else).
SCRIPT = [
    # a directory with nested directories: two levels shown, deeper omitted, sorted by name
    create("/memories/notes/a.md", "one\ntwo\n"),
    create("/memories/notes/deep/b.md", "bb"),
    create("/memories/notes/deep/er/c.md", "c"),
    create("/memories/notes/deep/er/est/d.md", "d"),
    create("/memories/notes/Z.md", "Z" * 1536),
    create("/memories/notes-old/x.md", ""),
    view("/memories/notes"),
    view("/memories/notes/deep"),
    view("/memories/notes/deep/er/est"),
    # file views and view_range
    create("/memories/ten.md", TEN_LINES),
    view("/memories/ten.md"),
    view("/memories/ten.md", [3, 5]),
    view("/memories/ten.md", [8, -1]),
    view("/memories/ten.md", [0, 2]),
    view("/memories/ten.md", [9, 40]),
    view("/memories/ten.md", [6, 2]),
    view("/memories/notes/a.md"),
    view("/memories/notes/x.md"),
    # the str_replace snippet: two lines either side of where old_str began
    str_replace("/memories/ten.md", "line 5", "five\nFIVE"),
    str_replace("/memories/ten.md", "line 1\n", ""),
    str_replace("/memories/ten.md", "line 10", "ten"),
    str_replace("/memories/ten.md", "line", "L"),
    str_replace("/memories/ten.md", "absent", "x"),
    str_replace("/memories/notes", "a", "b"),
    str_replace("/memories/nope.md", "a", "b"),
    view("/memories/ten.md"),
    # insert at 0 and at the end, with and without a final newline
    create("/memories/ins.md", "first\nsecond"),
    insert("/memories/ins.md", 0, "zero"),
    insert("/memories/ins.md", 3, "third\n"),
    insert("/memories/ins.md", 5, "x"),
    insert("/memories/ins.md", -1, "x"),
    view("/memories/ins.md"),
    insert("/memories/notes/a.md", 2, "three"),
    view("/memories/notes/a.md"),
    insert("/memories/nope.md", 0, "x"),
    # carriage returns are kept, lines split on LF only; sizes are UTF-8 bytes
    create("/memories/crlf.md", "a\r\nb\r\n"),
    insert("/memories/crlf.md", 1, "x"),
    str_replace("/memories/crlf.md", "b\r", "B"),
    view("/memories/crlf.md"),
    create("/memories/ünï/çødé.md", "π≈3.14159\n"),
    view("/memories/ünï"),
    view("/memories/ünï/çødé.md"),
    # rename into new directories, of a file and of a directory
    rename("/memories/ins.md", "/memories/new/dir/ins.md"),
    view("/memories/new"),
    rename("/memories/notes/deep", "/memories/archive/2024/deep"),
    view("/memories/archive"),
    view("/memories/notes"),
    rename("/memories/ten.md", "/memories/archive/2024/deep/b.md"),
    rename("/memories/missing.md", "/memories/elsewhere.md"),
    create("/memories/new/dir/ins.md", "again"),
    # delete a directory with everything below it
    delete("/memories/archive"),
    view("/memories/archive"),
    view("/memories/archive/2024/deep/b.md"),
    delete("/memories/archive"),
    delete("/memories/new/dir/ins.md"),
    view("/memories/new"),
]


def reference_run(script: list[Command]) -> list[tuple[str, bool]]:
    """What the SDK's tool runner would send the model for each command, in order."""
    outcomes = []
    with reference_tool() as reference:
        for command in script:
            content, is_error, crashed = reference_outcome(reference, command)
            assert not crashed, (command, content)  # the script is one the reference runs
            outcomes.append((content, is_error))
            prune_empty_directories(reference.memory_root)
    return outcomes


def written_without_prefix(value: Any) -> Any:
    if isinstance(value, str) and value.startswith("/memories/"):
        return value[len("/memories"):]
    return value


@pytest.fixture
def kit(acme: Any) -> Any:
    set_limits(acme, max_writes_per_turn=None)
    return acme


@pytest.mark.parametrize("spelling", ["/memories/x", "/x"])
def test_results_match_the_reference_byte_for_byte(kit, globex, spelling) -> None:
    user_id = f"ref-{next(_people)}"
    expected = reference_run(SCRIPT)
    for command, (text, is_error) in zip(SCRIPT, expected, strict=True):
        if spelling == "/x":
            command = {k: written_without_prefix(v) for k, v in command.items()}
            text = text.replace("/memories/", "/")
        content, content_is_error = tool(kit, user_id, **command)
        assert content_is_error == is_error, (command, content, text)
        assert without_directory_sizes(content) == without_directory_sizes(text), command


def test_directory_sizes_are_those_of_an_ext4_directory(kit, globex) -> None:
    ok(kit, **create("/memories/d/e/f.md", "12345"))
    assert ok(kit, **view("/memories/d")) == "\n".join([
        DIRECTORY_HEADER.format("/memories/d"), "4K\t/memories/d", "4K\t/memories/d/e/",
        "5B\t/memories/d/e/f.md"])


def test_the_root_in_each_spelling(kit, globex) -> None:
    for path in ("/memories", "/memories/", "/"):
        assert ok(kit, "fresh", **view(path)) == f"{DIRECTORY_HEADER.format(path)}\n4K\t{path}"
    ok(kit, **create("/notes/a.md", "abc"))
    ok(kit, **create("/b.md", ""))
    assert ok(kit, **view("/memories")) == "\n".join([
        DIRECTORY_HEADER.format("/memories"), "4K\t/memories", "0B\t/memories/b.md",
        "4K\t/memories/notes/", "3B\t/memories/notes/a.md"])
    # The reference joins the path as written: /memories/ lists /memories//b.md.
    assert ok(kit, **view("/memories/")).split("\n")[2] == "0B\t/memories//b.md"
    assert ok(kit, **view("/")) == "\n".join([
        DIRECTORY_HEADER.format("/"), "4K\t/", "0B\t/b.md", "4K\t/notes/", "3B\t/notes/a.md"])
    for path in ("/memories", "/memories/", "/"):
        assert err(kit, **delete(path)) == "Cannot delete the /memories directory itself"
        assert err(kit, **rename(path, "/x")) == "Cannot rename the /memories directory itself"
        assert err(kit, **create(path)) == f"File {path} already exists"


def test_each_spelling_names_the_same_document_and_is_echoed(kit, globex) -> None:
    assert ok(kit, **create("/notes/a.md", "hello")) == "File created successfully at: /notes/a.md"
    assert err(kit, **create("/memories/notes/a.md")) == "File /memories/notes/a.md already exists"
    assert ok(kit, **view("/memories/notes/a.md")) == (
        "Here's the content of /memories/notes/a.md with line numbers:\n     1\thello")
    assert ok(kit, **view("/notes/a.md")) == (
        "Here's the content of /notes/a.md with line numbers:\n     1\thello")
    assert ok(kit, **rename("/memories/notes/a.md", "/b/c.md")) == (
        "Successfully renamed /memories/notes/a.md to /b/c.md")
    assert ok(kit, **rename("/b/c.md", "/memories/d/e.md")) == (
        "Successfully renamed /b/c.md to /memories/d/e.md")
    assert err(kit, **rename("/memories/d/e.md", "/d")) == "The destination /d already exists"
    assert ok(kit, command="append", path="/d/e.md", text="more") == "The file /d/e.md has been edited."
    assert ok(kit, command="replace", path="/memories/d/e.md", old_str="more", new_str="less") == (
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):\n     1\thello\n     2\tless")
    assert ok(kit, **delete("/d/")) == "Successfully deleted /d/"
    assert err(kit, **view("/memories/d/e.md")) == (
        "The path /memories/d/e.md does not exist. Please provide a valid path.")
    # /memoriesX is an ordinary name, not the root.
    assert ok(kit, **create("/memoriesX/a.md")) == "File created successfully at: /memoriesX/a.md"
    assert err(kit, **view("/memories/X/a.md")).startswith("The path /memories/X/a.md does not")
    response = kit.client.get(f"{BASE}/users/alice/documents/global/memoriesX/a.md")
    assert response.json()["path"] == "/memoriesX/a.md"


# --- Refused paths ---------------------------------------------------------------------------

REFUSED_PATHS = [
    "/memories//a.md", "//a.md", "/a//b", "/memories/./a.md", "/memories/../a.md", "/a/..",
    "/.hidden", "/memories/notes/.env", "/a\\b.md", "/100%.md", "/c:/a.md", "/a\x00b",
    "/a\tb", "/a\nb", "/a\x7fb", "/a\x85b", "notes/a.md", "memories/a.md", "",
    "/" + "a" * 255, "/a" * 17, "/memories" + "/a" * 17,
]
ALLOWED_EDGE_PATHS = ["/" + "a" * 254, "/a" * 16, "/memories" + "/a" * 16, "/é ü.md",
                      "/with space/and-dash_and.dot", "/memories/notes/"]


@pytest.mark.parametrize("path", REFUSED_PATHS)
def test_refused_paths_get_the_contracts_text_for_every_command(kit, globex, path) -> None:
    expected = f"Error: {path} is not an allowed path"
    for command in (view(path), create(path), str_replace(path, "a", "b"), insert(path, 0, "a"),
                    delete(path), {"command": "append", "path": path, "text": "a"},
                    rename(path, "/ok.md"), rename("/ok.md", path)):
        if path == "":
            assert err(kit, **command).startswith("Error: ")
            continue
        assert err(kit, **command) == expected, command


@pytest.mark.parametrize("path", ALLOWED_EDGE_PATHS)
def test_paths_at_the_limits_are_allowed(kit, globex, path) -> None:
    assert ok(kit, **create(path, "x")) == f"File created successfully at: {path}"
    assert ok(kit, **view(path)).endswith("     1\tx")


# --- Only some problems are HTTP errors ----------------------------------------------------------


@pytest.mark.parametrize("body", ["[]", '"view"', "42", "null", "true", ""])
def test_a_body_that_is_not_a_json_object_is_400(kit, globex, body) -> None:
    response = kit.client.post(f"{BASE}/users/alice/memory", body, content_type="application/json")
    assert_error(response, 400)


@pytest.mark.parametrize("body", [
    {}, {"command": "move", "path": "/a"}, {"command": 7}, {"command": "view"},
    {"command": "view", "path": 3}, {"command": "view", "path": "/a.md", "view_range": "1-2"},
    {"command": "create", "path": "/a.md"}, {"command": "create", "path": "/a.md", "file_text": 1},
    {"command": "create", "path": "/n.md", "file_text": "x", "description": "two\nlines"},
    {"command": "create", "path": "/n.md", "file_text": "x", "description": "d" * 201},
    {"command": "str_replace", "path": "/a.md", "old_str": "x"},
    {"command": "insert", "path": "/a.md", "insert_text": "x"},
    {"command": "insert", "path": "/a.md", "insert_line": "one", "insert_text": "x"},
    {"command": "rename", "old_path": "/a.md"}, {"command": "append", "path": "/a.md"},
    {"command": "view", "path": "/a", "scope": "everywhere"},
    {"command": "view", "path": "/a", "scope": "session"},
    {"command": "view", "path": "/a", "scope": "profile", "session_id": "s"},
    {"command": "view", "path": "/a", "session_id": "has space"},
    {"command": "view", "path": "/a", "turn_id": "t" * 129},
])
def test_problems_of_the_command_are_tool_errors_starting_with_error(kit, globex, body) -> None:
    ok(kit, **create("/a.md", "x"))
    content = err(kit, **body)
    assert content.startswith("Error: ") and len(content) > len("Error: ") + 10


# --- Scope ---------------------------------------------------------------------------------


def test_scope_resolution(kit, globex) -> None:
    conversation = {"session_id": "s-1", "profile": "cooking"}
    ok(kit, **create("/memories/a.md", "global a"))
    ok(kit, **create("/memories/a.md", "profile a", scope="profile", profile="cooking"))
    ok(kit, **create("/memories/a.md", "session a", scope="session", session_id="s-1"))
    ok(kit, **create("/memories/b.md", "profile b", scope="profile", profile="cooking"))
    ok(kit, **create("/memories/c.md", "global c", **conversation))  # create: global

    def seen(path: str, **where: str) -> str:
        return ok(kit, **view(path), **where).rsplit("\t", 1)[1]

    assert seen("/a.md", **conversation) == "session a"
    assert seen("/a.md", profile="cooking") == "profile a"
    assert seen("/a.md", session_id="s-2", profile="baking") == "global a"
    assert seen("/a.md", scope="global", **conversation) == "global a"
    assert seen("/b.md", **conversation) == "profile b"
    assert err(kit, **view("/b.md"), scope="session", **conversation).startswith("The path /b.md")
    assert seen("/c.md", scope="global") == "global c"
    assert err(kit, **view("/c.md"), scope="profile", profile="cooking").startswith("The path")
    # A directory view lists what the lookups resolve to, each path once.
    listing = ok(kit, **view("/"), **conversation)
    assert listing.split("\n")[1:] == ["4K\t/", "9B\t/a.md", "9B\t/b.md", "8B\t/c.md"]
    assert ok(kit, **view("/"), scope="profile", **conversation).split("\n")[2:] == [
        "9B\t/a.md", "9B\t/b.md"]
    # An edit changes the document the lookup found, and only that one.
    ok(kit, **str_replace("/a.md", "a", "A"), **conversation)
    assert seen("/a.md", **conversation) == "session A"
    assert seen("/a.md") == "global a"
    ok(kit, **delete("/a.md"), **conversation)
    assert seen("/a.md", **conversation) == "profile a"
    # Explicit scope without its key is an error, whatever the command.
    for command in (view("/a.md"), create("/n.md"), delete("/a.md")):
        assert err(kit, **command, scope="session").startswith("Error: ")
        assert err(kit, **command, scope="profile").startswith("Error: ")


def test_index_shows_where_create_wrote(kit, globex) -> None:
    ok(kit, **create("/g.md", "g", session_id="s-1"))
    ok(kit, **create("/s.md", "s", scope="session", session_id="s-1"))
    ok(kit, **create("/p.md", "p", scope="profile", profile="cooking"))
    entries = kit.client.get(f"{BASE}/users/alice/memory/index",
                             {"session_id": "s-1", "profile": "cooking"}).json()["entries"]
    assert {(e["path"], e["scope"]) for e in entries} == {
        ("/g.md", "global"), ("/s.md", "session"), ("/p.md", "profile")}


# --- Limits --------------------------------------------------------------------------------


def test_limits_are_tool_errors_that_say_what_to_do(kit, globex) -> None:
    set_limits(kit, max_document_bytes=10, max_scope_bytes=25, max_writes_per_turn=None)
    big = err(kit, **create("/a.md", "x" * 11))
    assert big.startswith("Error: ") and big.endswith("condense it first.")
    ok(kit, **create("/a.md", "x" * 10))
    ok(kit, **create("/b.md", "x" * 10))
    assert err(kit, command="append", path="/a.md", text="y").startswith("Error: ")
    full = err(kit, **create("/c.md", "x" * 6))
    assert full.startswith("Error: ")
    pressure = [e for e in events(kit) if e["type"] == "memory.pressure"]
    assert [e["data"] for e in pressure] == [
        {"scope": "global", "scope_key": None, "used_bytes": 20, "limit_bytes": 25}]
    assert pressure[0]["user_id"] == "alice" and pressure[0]["actor"] == "assistant"
    # Another scope has its own budget.
    ok(kit, **create("/c.md", "x" * 6), scope="session", session_id="s-1")


def test_a_new_persons_first_write_over_the_scope_limit_records_pressure(kit, globex) -> None:
    set_limits(kit, max_document_bytes=100, max_scope_bytes=10)
    assert err(kit, "newcomer", **create("/a.md", "x" * 11)).startswith("Error: ")
    pressure = [e for e in events(kit) if e["type"] == "memory.pressure"]
    assert [(e["user_id"], e["actor"], e["data"]) for e in pressure] == [
        ("newcomer", "assistant",
         {"scope": "global", "scope_key": None, "used_bytes": 0, "limit_bytes": 10})]
    assert err(kit, "newcomer", **view("/a.md")).startswith("The path /a.md does not exist")


def test_writes_per_turn(kit, globex) -> None:
    set_limits(kit, max_writes_per_turn=3)
    for n in range(3):
        ok(kit, **create(f"/t{n}.md"), turn_id="t-1")
    refused = err(kit, **create("/t3.md"), turn_id="t-1")
    assert refused.startswith("Error: ")
    ok(kit, **view("/t0.md"), turn_id="t-1")  # reads are not writes
    ok(kit, **create("/t3.md"), turn_id="t-2")
    for n in range(3):
        ok(kit, "bob", **create(f"/w{n}.md"), session_id="s-1")
    assert err(kit, "bob", **delete("/w0.md"), session_id="s-1").startswith("Error: ")
    ok(kit, "bob", **delete("/w0.md"), session_id="s-2")


def test_a_long_document_view_is_cut_and_says_how_to_read_on(kit, globex) -> None:
    set_limits(kit, max_document_bytes=None)
    lines = [f"{n:05d} " + "z" * 94 for n in range(1, 201)]  # 100 characters each
    ok(kit, **create("/long.md", "\n".join(lines)))
    shown = ok(kit, **view("/long.md"))
    rows = shown.split("\n")
    assert rows[0] == "Here's the content of /long.md with line numbers:"
    assert rows[1] == f"     1\t{lines[0]}"
    kept = len(rows) - 2
    assert 0 < kept < 200 and sum(len(line) + 1 for line in lines[:kept]) <= 16_000
    assert f"[{kept + 1}, 200]" in rows[-1] and "view_range" in rows[-1]
    rest = ok(kit, **view("/long.md", [kept + 1, 200]))
    assert rest.split("\n")[1] == f"{kept + 1:>6}\t{lines[kept]}"
    assert rest.endswith(lines[-1])


# --- Events and versions -------------------------------------------------------------------------


def test_every_change_records_an_event_with_the_actor(kit, globex) -> None:
    ok(kit, **create("/memories/d/a.md", "a"))
    ok(kit, **str_replace("/d/a.md", "a", "b"))
    ok(kit, **insert("/d/a.md", 1, "c"))
    ok(kit, command="append", path="/d/a.md", text="d")
    ok(kit, **create("/d/b.md", "b"))
    ok(kit, **rename("/d", "/e"))
    ok(kit, **delete("/e"))
    err(kit, **delete("/e"))
    ok(kit, **view("/"))
    feed = [(e["type"], e["actor"], e["user_id"], e["data"]["change"], e["data"]["path"],
             e["data"]["scope"]) for e in events(kit)]
    changed = [("memory.changed", "assistant", "alice")]
    assert feed == [
        (*changed[0], "created", "/d/a.md", "global"), (*changed[0], "updated", "/d/a.md", "global"),
        (*changed[0], "updated", "/d/a.md", "global"), (*changed[0], "updated", "/d/a.md", "global"),
        (*changed[0], "created", "/d/b.md", "global"), (*changed[0], "renamed", "/e/a.md", "global"),
        (*changed[0], "renamed", "/e/b.md", "global"), (*changed[0], "deleted", "/e/a.md", "global"),
        (*changed[0], "deleted", "/e/b.md", "global")]
    assert globex.client.get(f"{BASE}/events").json() == {"events": [], "next_cursor": None}


def test_versions_and_updated_by(kit, globex) -> None:
    ok(kit, **create("/v.md", "1"))
    ok(kit, **str_replace("/v.md", "1", "2"))
    ok(kit, **rename("/v.md", "/w.md"))
    document = kit.client.get(f"{BASE}/users/alice/documents/global/w.md")
    assert (document.json()["version"], document.json()["updated_by"]) == (3, "assistant")
    assert document.headers["ETag"] == '"3"'
    put_document(kit, "global/w.md", "3")
    ok(kit, **insert("/w.md", 0, "0"))
    document = kit.client.get(f"{BASE}/users/alice/documents/global/w.md").json()
    assert (document["version"], document["updated_by"], document["content"]) == (
        5, "assistant", "0\n3\n")


# --- Content rules on every write path ----------------------------------------------------------

CREDENTIALS = [
    "sk-ant-api03-" + "A1b2C3d4" * 12,
    "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8t" * 2,
    "AKIAIOSFODNN7EXAMPLE",
    "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
    "postgres://admin:hunter2secret@db.example.com:5432/app",
]


@pytest.mark.parametrize("secret", CREDENTIALS)
def test_credentials_are_refused_on_every_write_path(kit, globex, secret) -> None:
    ok(kit, **create("/a.md", "safe\n"))
    line = f"note: {secret}"
    for command in (create("/b.md", line), create("/b.md", "x", description=secret[:200]),
                    str_replace("/a.md", "safe", line),
                    {"command": "replace", "path": "/a.md", "old_str": "safe", "new_str": line},
                    insert("/a.md", 1, line), {"command": "append", "path": "/a.md", "text": line}):
        if "\n" in secret and "description" in command:
            continue
        assert err(kit, **command).startswith("Error: "), command
    assert ok(kit, **view("/a.md")).endswith("     1\tsafe\n     2\t")
    response = put_document(kit, "global/c.md", line)
    assert_error(response, 422, "credential_detected")
    response = put_document(kit, "session/s-1/a.md", line)
    assert_error(response, 422, "credential_detected")


def test_this_services_own_keys_are_refused(kit, globex) -> None:
    assert err(kit, **create("/k.md", f"the key is {kit.key}")).startswith("Error: ")
    assert_error(put_document(kit, "global/k.md", kit.memory_key), 422, "credential_detected")


def test_content_must_be_text(kit, globex) -> None:
    assert err(kit, **create("/n.md", "a\x00b")).startswith("Error: ")
    assert_error(put_document(kit, "global/n.md", "a\x00b"), 422, "not_text")
    # Bytes that are not UTF-8 inside the JSON body: refused by the content rule.
    body = b'{"command": "create", "path": "/u.md", "file_text": "caf\xe9"}'
    response = kit.client.post(f"{BASE}/users/alice/memory", body,
                               content_type="application/json")
    assert response.status_code == 200
    assert response.json()["is_error"] is True
    assert response.json()["content"].startswith("Error: ")
    response = kit.client.put(f"{BASE}/users/alice/documents/global/u.md", b'{"content": "\xff"}',
                              content_type="application/json")
    assert_error(response, 422, "not_text")
    # An escaped lone surrogate is not text either.
    response = kit.client.put(f"{BASE}/users/alice/documents/global/u.md",
                              b'{"content": "a\\ud800b"}', content_type="application/json")
    assert_error(response, 422, "not_text")
    assert kit.client.get(f"{BASE}/users/alice/documents").json()["documents"] == []


# --- Memory switched off ---------------------------------------------------------------------------

EVERY_COMMAND = [
    view("/memories"), view("/a.md"), create("/b.md"), str_replace("/a.md", "a", "b"),
    {"command": "replace", "path": "/a.md", "old_str": "a", "new_str": "b"},
    insert("/a.md", 0, "x"), {"command": "append", "path": "/a.md", "text": "x"},
    delete("/a.md"), rename("/a.md", "/c.md"),
    # ... even with arguments that would otherwise be refused
    view("/bad//path"), {"command": "create", "path": "/b.md"}, {"command": "view"},
    {"command": "view", "path": "/a.md", "scope": "session"},
]


def assert_all_disabled(kit: Any, **where: Any) -> None:
    for command in EVERY_COMMAND:
        content = err(kit, **command, **where)
        assert content.startswith("Error: memory is disabled "), (command, content)


def test_memory_off_for_tenant_profile_or_person_answers_disabled_to_every_command(
    kit, globex
) -> None:
    ok(kit, **create("/a.md", "a"))
    ok(kit, "bob", **create("/a.md", "a"))
    assert kit.client.patch(f"{BASE}/users/alice", {"memory_enabled": False},
                            format="json").status_code == 200
    assert_all_disabled(kit)
    ok(kit, "bob", **view("/a.md"))
    assert kit.client.patch(f"{BASE}/users/alice", {"memory_enabled": True},
                            format="json").status_code == 200
    assert kit.client.put(f"{BASE}/profiles/cooking", {"disabled": True},
                          format="json").status_code in (200, 201)
    assert_all_disabled(kit, profile="cooking")
    ok(kit, **view("/a.md"), profile="baking")
    assert kit.client.patch(f"{BASE}/tenant", {"memory_enabled": False},
                            format="json").status_code == 200
    for person in ("alice", "bob", "nobody"):
        for command in EVERY_COMMAND:
            assert err(kit, person, **command).startswith("Error: memory is disabled ")
    ok(globex, **create("/a.md", "globex is on"))
    assert kit.client.patch(f"{BASE}/tenant", {"memory_enabled": True},
                            format="json").status_code == 200
    assert ok(kit, **view("/a.md")).endswith("     1\ta")  # nothing was changed meanwhile
