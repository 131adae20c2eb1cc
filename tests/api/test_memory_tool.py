"""``POST /api/v1/users/{user_id}/memory``: the memory tool, through HTTP, against the real DB.

Every command's texts, its own errors, scopes, disabled memory, credentials, events and the
cross-tenant matrix. Byte parity with the reference on random sequences is in
``test_memory_differential.py``; limits in ``test_memory_limits.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.models import EndUser, MemoryDocument, MemoryEvent, Profile
from tenants.context import tenant_context
from tests.api.helpers import documents, end_user_exists
from tests.factories import ApiKeyFactory
from tests.spec.api_client import DIRECTORY_HEADER, err, ok, tool

HEADER = DIRECTORY_HEADER


def memory_url(user_id: str) -> str:
    return f"/api/v1/users/{user_id}/memory"


def events(kit: Any) -> list[tuple[str, str, dict]]:
    with tenant_context(kit.tenant.id):
        return list(MemoryEvent.objects.order_by("id").values_list("type", "actor", "data"))


# --- every command, every reference text -------------------------------------------------------


class TestCommands:
    def test_create_then_view_file_and_directory(self, acme, globex) -> None:
        assert ok(acme, command="create", path="/memories/notes/diet.md",
                  file_text="vegetarian\nno nuts\n") == (
            "File created successfully at: /memories/notes/diet.md")
        assert ok(acme, command="view", path="/memories/notes/diet.md") == (
            "Here's the content of /memories/notes/diet.md with line numbers:\n"
            "     1\tvegetarian\n     2\tno nuts\n     3\t")
        ok(acme, command="create", path="/memories/todo.md", file_text="call mum")
        assert ok(acme, command="view", path="/memories") == "\n".join([
            HEADER.format("/memories"),
            "4K\t/memories",
            "4K\t/memories/notes/",
            "19B\t/memories/notes/diet.md",
            "8B\t/memories/todo.md",
        ])
        assert ok(acme, command="view", path="/memories/notes") == "\n".join([
            HEADER.format("/memories/notes"), "4K\t/memories/notes",
            "19B\t/memories/notes/diet.md",
        ])
        assert documents(globex) == []

    def test_view_range_and_missing_path(self, acme) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="one\ntwo\nthree")
        assert ok(acme, command="view", path="/memories/a.md", view_range=[2, -1]) == (
            "Here's the content of /memories/a.md with line numbers:\n     2\ttwo\n     3\tthree")
        assert err(acme, command="view", path="/memories/none.md") == (
            "The path /memories/none.md does not exist. Please provide a valid path.")
        assert err(acme, command="view", path="/memories/a.md", view_range=["one", 2]).startswith(
            "Error: view_range must be a list of two integers")

    def test_paths_without_the_prefix_name_the_same_document(self, acme) -> None:
        ok(acme, command="create", path="/notes/a.md", file_text="x")
        assert err(acme, command="create", path="/memories/notes/a.md", file_text="y") == (
            "File /memories/notes/a.md already exists")
        assert ok(acme, command="view", path="/notes/a.md") == (
            "Here's the content of /notes/a.md with line numbers:\n     1\tx")
        assert documents(acme) == [("global", "", "/notes/a.md", "x")]

    def test_create_refuses_existing_document_directory_and_root(self, acme) -> None:
        ok(acme, command="create", path="/memories/d/a.md", file_text="a")
        for path in ["/memories/d/a.md", "/memories/d", "/memories", "/memories/"]:
            assert err(acme, command="create", path=path, file_text="b") == (
                f"File {path} already exists")
        assert err(acme, command="create", path="/memories/d/a.md/b.md", file_text="b") == (
            "Error: /memories/d/a.md is a document, not a directory, so /memories/d/a.md/b.md "
            "cannot be written under it; choose another path.")

    def test_str_replace_snippet_and_refusals(self, acme) -> None:
        ok(acme, command="create", path="/memories/s.md",
           file_text="one\ntwo\nthree\nfour\nfive\nsix\n")
        assert ok(acme, command="str_replace", path="/memories/s.md", old_str="four",
                  new_str="FOUR") == (
            "The memory file has been edited. Here is the snippet showing the change (with line "
            "numbers):\n     2\ttwo\n     3\tthree\n     4\tFOUR\n     5\tfive\n     6\tsix")
        assert err(acme, command="str_replace", path="/memories/s.md", old_str="seven",
                   new_str="7") == (
            "No replacement was performed, old_str `seven` did not appear verbatim in "
            "/memories/s.md.")
        assert err(acme, command="str_replace", path="/memories/s.md", old_str="o",
                   new_str="0") == (
            "No replacement was performed. Multiple occurrences of old_str `o` in lines: 1, 2. "
            "Please ensure it is unique")
        assert err(acme, command="str_replace", path="/memories/x.md", old_str="a",
                   new_str="b") == (
            "The path /memories/x.md does not exist. Please provide a valid path.")
        ok(acme, command="create", path="/memories/dir/a.md", file_text="a")
        assert err(acme, command="str_replace", path="/memories/dir", old_str="a",
                   new_str="b") == "The path /memories/dir is not a file."
        assert err(acme, command="str_replace", path="/memories", old_str="a",
                   new_str="b") == "The path /memories is not a file."

    def test_replace_is_str_replace(self, acme) -> None:
        ok(acme, command="create", path="/memories/r.md", file_text="meat")
        assert ok(acme, command="replace", path="/memories/r.md", old_str="meat",
                  new_str="fish").endswith("     1\tfish")
        assert documents(acme)[0][3] == "fish"

    def test_insert_and_append(self, acme) -> None:
        ok(acme, command="create", path="/memories/i.md", file_text="a\nb")
        assert ok(acme, command="insert", path="/memories/i.md", insert_line=1,
                  insert_text="between\n") == "The file /memories/i.md has been edited."
        assert documents(acme)[0][3] == "a\nbetween\nb\n"
        assert err(acme, command="insert", path="/memories/i.md", insert_line=9,
                   insert_text="x") == (
            "Invalid `insert_line` parameter: 9. It should be within the range [0, 3].")
        assert ok(acme, command="append", path="/memories/i.md", text="end") == (
            "The file /memories/i.md has been edited.")
        assert documents(acme)[0][3] == "a\nbetween\nb\nend"
        ok(acme, command="append", path="/memories/i.md", text="more\n")
        assert documents(acme)[0][3] == "a\nbetween\nb\nend\nmore\n"
        assert err(acme, command="append", path="/memories/no.md", text="x") == (
            "The path /memories/no.md does not exist. Please provide a valid path.")

    def test_delete_file_directory_and_root(self, acme) -> None:
        ok(acme, command="create", path="/memories/d/a.md", file_text="a")
        ok(acme, command="create", path="/memories/d/e/b.md", file_text="b")
        ok(acme, command="create", path="/memories/keep.md", file_text="k")
        assert ok(acme, command="delete", path="/memories/keep.md") == (
            "Successfully deleted /memories/keep.md")
        assert ok(acme, command="delete", path="/memories/d") == "Successfully deleted /memories/d"
        assert documents(acme) == []
        assert err(acme, command="delete", path="/memories/d") == (
            "The path /memories/d does not exist")
        assert err(acme, command="delete", path="/memories") == (
            "Cannot delete the /memories directory itself")
        assert err(acme, command="delete", path="/memories/") == (
            "Cannot delete the /memories directory itself")

    def test_rename_file_and_directory(self, acme) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="a")
        ok(acme, command="create", path="/memories/d/x.md", file_text="x")
        ok(acme, command="create", path="/memories/d/y/z.md", file_text="z")
        assert ok(acme, command="rename", old_path="/memories/a.md",
                  new_path="/memories/archive/a.md") == (
            "Successfully renamed /memories/a.md to /memories/archive/a.md")
        ok(acme, command="rename", old_path="/memories/d", new_path="/memories/e")
        assert [row[2] for row in documents(acme)] == ["/archive/a.md", "/e/x.md", "/e/y/z.md"]
        assert err(acme, command="rename", old_path="/memories/e",
                   new_path="/memories/archive") == "The destination /memories/archive already exists"
        assert err(acme, command="rename", old_path="/memories/nope",
                   new_path="/memories/archive/a.md") == (
            "The destination /memories/archive/a.md already exists")
        assert err(acme, command="rename", old_path="/memories/nope",
                   new_path="/memories/new") == "The path /memories/nope does not exist"
        assert err(acme, command="rename", old_path="/memories",
                   new_path="/memories/x") == "Cannot rename the /memories directory itself"
        assert err(acme, command="rename", old_path="/memories/e",
                   new_path="/memories/e/inner").startswith("Error: cannot move /memories/e into")
        assert err(acme, command="rename", old_path="/memories/archive/a.md",
                   new_path="/memories/archive/a.md/b") == (
            "Error: /memories/archive/a.md is a document, not a directory, so "
            "/memories/archive/a.md/b cannot be written under it; choose another path.")

    def test_versions_actor_and_events(self, acme, globex) -> None:
        ok(acme, command="create", path="/memories/v.md", file_text="1")
        ok(acme, command="str_replace", path="/memories/v.md", old_str="1", new_str="2")
        ok(acme, command="append", path="/memories/v.md", text="3")
        ok(acme, command="rename", old_path="/memories/v.md", new_path="/memories/w.md")
        with tenant_context(acme.tenant.id):
            document = MemoryDocument.objects.get()
        assert (document.version, document.updated_by, document.bytes) == (4, "assistant", 3)
        ok(acme, command="delete", path="/memories/w.md")
        changes = [(kind, actor, data["change"], data["path"]) for kind, actor, data in events(acme)]
        assert changes == [
            ("memory.changed", "assistant", "created", "/v.md"),
            ("memory.changed", "assistant", "updated", "/v.md"),
            ("memory.changed", "assistant", "updated", "/v.md"),
            ("memory.changed", "assistant", "renamed", "/w.md"),
            ("memory.changed", "assistant", "deleted", "/w.md"),
        ]
        assert events(acme)[3][2]["old_path"] == "/v.md"
        assert events(globex) == []

    def test_failed_commands_change_nothing(self, acme) -> None:
        ok(acme, command="create", path="/memories/f.md", file_text="same")
        err(acme, command="str_replace", path="/memories/f.md", old_str="zz", new_str="y")
        err(acme, command="insert", path="/memories/f.md", insert_line=-1, insert_text="y")
        with tenant_context(acme.tenant.id):
            assert MemoryDocument.objects.get().version == 1
        assert len(events(acme)) == 1

    def test_long_document_view_is_cut_and_says_how_to_read_on(self, acme) -> None:
        lines = [f"line {n:04d} " + "x" * 90 for n in range(1, 161)]  # 100 chars each
        acme.client.patch("/api/v1/tenant", {"limits": {"max_document_bytes": 20000}},
                          format="json")
        ok(acme, command="create", path="/memories/long.md", file_text="\n".join(lines))
        text = ok(acme, command="view", path="/memories/long.md")
        shown = text.split("\n")[1:-1]
        assert len(shown) == 158 and shown[-1].endswith(lines[157])
        assert text.split("\n")[-1] == (
            '... (file truncated at line 158 of 160; call view with "view_range": [159, 160] '
            "to read more)")
        rest = ok(acme, command="view", path="/memories/long.md", view_range=[159, 160])
        assert rest.split("\n")[1:] == [f"   159\t{lines[158]}", f"   160\t{lines[159]}"]


# --- malformed input: tool errors, never HTTP errors ------------------------------------------


class TestMalformedInput:
    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            ({}, "Error: the input needs a `command`: one of view, create, str_replace, insert, "
                 "delete, rename, append, replace."),
            ({"command": "shred"}, "Error: unknown command 'shred'; use one of view, create, "
                                   "str_replace, insert, delete, rename, append, replace."),
            ({"command": 7}, "Error: unknown command 7; use one of view, create, str_replace, "
                             "insert, delete, rename, append, replace."),
            ({"command": "view"}, "Error: the view command needs `path` (a path such as "
                                  "/memories/notes.md); send it and try again."),
            ({"command": "create", "path": "/memories/a.md"},
             "Error: the create command needs `file_text` (a string); send it and try again."),
            ({"command": "create", "path": "/memories/a.md", "file_text": 5},
             "Error: `file_text` must be a string, not a number."),
            ({"command": "insert", "path": "/memories/a.md", "insert_line": "two",
              "insert_text": "x"},
             "Error: `insert_line` must be a line number (0 inserts at the top), not a string."),
            ({"command": "insert", "path": "/memories/a.md", "insert_line": 2.5,
              "insert_text": "x"},
             "Error: `insert_line` must be a line number (0 inserts at the top), not a decimal "
             "number (write it without a point or exponent)."),
            ({"command": "create", "path": "/memories/a.md", "file_text": 1.5},
             "Error: `file_text` must be a string, not a decimal number."),
            ({"command": "insert", "path": "/memories/a.md", "insert_line": [2],
              "insert_text": "x"},
             "Error: `insert_line` must be a line number (0 inserts at the top), not an array."),
            ({"command": "str_replace", "path": "/memories/a.md", "old_str": "a"},
             "Error: the str_replace command needs `new_str` (a string); send it and try again."),
            ({"command": "rename", "old_path": "/memories/a.md"},
             "Error: the rename command needs `new_path` (a path such as /memories/notes.md); "
             "send it and try again."),
            ({"command": "delete", "path": ""},
             "Error: the delete command needs `path` (a path such as /memories/notes.md); send "
             "it and try again."),
            ({"command": "view", "path": ["/memories"]},
             "Error: `path` must be a path such as /memories/notes.md, not an array."),
            ({"command": "view", "path": "/memories/../etc"},
             "Error: /memories/../etc is not an allowed path"),
            ({"command": "create", "path": "/memories/.hidden", "file_text": "x"},
             "Error: /memories/.hidden is not an allowed path"),
            ({"command": "view", "path": "memories/a"}, "Error: memories/a is not an allowed path"),
            ({"command": "view", "path": "/a\\b"}, "Error: /a\\b is not an allowed path"),
            ({"command": "view", "path": "/memories", "session_id": "bad id"},
             "Error: session_id must be 1-128 characters of A-Z a-z 0-9 . _ @ : + | -; "
             "got 'bad id'."),
            ({"command": "view", "path": "/memories", "profile": "Cooking"},
             "Error: profile must be 1-64 characters of a-z 0-9 _ -; got 'Cooking'."),
            ({"command": "view", "path": "/memories", "turn_id": "t 1"},
             "Error: turn_id must be 1-128 characters of A-Z a-z 0-9 . _ @ : + | -; got 't 1'."),
            ({"command": "view", "path": "/memories", "scope": "team"},
             "Error: scope must be one of session, profile, global (or left out); got 'team'."),
            ({"command": "view", "path": "/memories", "scope": "session"},
             'Error: scope "session" needs a session_id; send one or leave scope out.'),
            ({"command": "view", "path": "/memories", "scope": "profile"},
             'Error: scope "profile" needs a profile; send one or leave scope out.'),
            ({"command": "create", "path": "/memories/d.md", "file_text": "x",
              "description": "two\nlines"},
             "Error: description must be one line of text of at most 200 characters; shorten "
             "it and try again."),
        ],
    )
    def test_tool_error_says_what_was_wrong(self, acme, body: dict, expected: str) -> None:
        assert err(acme, **body) == expected
        assert documents(acme) == []

    def test_content_must_be_text(self, acme) -> None:
        assert err(acme, command="create", path="/memories/n.md", file_text="a\x00b") == (
            "Error: the content contains a NUL character; memory stores text only. Remove it "
            "and try again.")
        response = acme.client.post(
            memory_url("alice"),
            data='{"command": "create", "path": "/memories/s.md", "file_text": "a\\ud800b"}',
            content_type="application/json",
        )
        assert response.json() == {"is_error": True, "content": (
            "Error: the content is not valid UTF-8 (it contains an unpaired surrogate); send "
            "plain text and try again.")}
        assert documents(acme) == []

    def test_unpaired_surrogates_in_echoed_text_are_folded(self, acme) -> None:
        response = acme.client.post(
            memory_url("alice"), data='{"command": "view", "path": "/memories/\\udc00"}',
            content_type="application/json",
        )
        assert response.json() == {"is_error": True,
                                   "content": "Error: /memories/\ufffd is not an allowed path"}

    @pytest.mark.parametrize("body", ['["view"]', '"view"', "3", "null"])
    def test_body_that_is_not_an_object_is_400(self, acme, body: str) -> None:
        response = acme.client.post(memory_url("alice"), data=body,
                                    content_type="application/json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_body"

    def test_invalid_json_is_400(self, acme) -> None:
        response = acme.client.post(memory_url("alice"), data="{nope",
                                    content_type="application/json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_json"

    @pytest.mark.parametrize("user_id", ["a b", "x" * 129, "é", "a%3Cb"])
    def test_invalid_user_id_is_400(self, acme, user_id: str) -> None:
        response = acme.client.post(memory_url(user_id), {"command": "view", "path": "/memories"},
                                    format="json")
        assert response.status_code == 400
        assert response.json()["error"]["code"] == "invalid_user_id"

    def test_auth_errors(self, acme) -> None:
        body = {"command": "view", "path": "/memories"}
        anonymous = acme.client_with("")
        anonymous.credentials()
        assert anonymous.post(memory_url("alice"), body, format="json").status_code == 401
        assert acme.client_with("mh_1_abcdefgh_nope").post(
            memory_url("alice"), body, format="json").status_code == 401
        admin_only = ApiKeyFactory(tenant=acme.tenant, name="admin", permissions=["admin"])
        response = acme.client_with(admin_only.plaintext).post(memory_url("alice"), body,
                                                              format="json")
        assert response.status_code == 403
        assert acme.client_with(acme.memory_key).post(
            memory_url("alice"), body, format="json").status_code == 200

    def test_body_over_one_mib_is_413(self, acme) -> None:
        body = {"command": "create", "path": "/memories/big.md", "file_text": "x" * (1 << 20)}
        response = acme.client.post(memory_url("alice"), body, format="json")
        assert response.status_code == 413
        assert documents(acme) == []


# --- credentials -------------------------------------------------------------------------------


class TestCredentials:
    @pytest.mark.parametrize(
        ("text", "name"),
        [
            ("key: sk-ant-api03-" + "A1b2" * 10, "anthropic_api_key"),
            ("AKIAIOSFODNN7EXAMPLE is the id", "aws_access_key_id"),
            ("postgres://app:hunter2@db.internal/prod", "connection_string_password"),
        ],
    )
    def test_refused_on_create_and_edit(self, acme, text: str, name: str) -> None:
        expected = (f"Error: the content looks like a credential ({name}); memory must not store "
                    "secrets. Remove it and try again.")
        assert err(acme, command="create", path="/memories/c.md", file_text=text) == expected
        ok(acme, command="create", path="/memories/c.md", file_text="placeholder")
        assert err(acme, command="str_replace", path="/memories/c.md", old_str="placeholder",
                   new_str=text) == expected
        assert err(acme, command="append", path="/memories/c.md", text=text) == expected
        assert documents(acme) == [("global", "", "/c.md", "placeholder")]

    def test_own_api_key_refused(self, acme) -> None:
        assert "memoryhub_api_key" in err(acme, command="create", path="/memories/k.md",
                                          file_text=f"my key {acme.key}")


# --- scopes ------------------------------------------------------------------------------------


class TestScopes:
    def test_create_defaults_to_global_and_scope_chooses(self, acme) -> None:
        ok(acme, command="create", path="/memories/g.md", file_text="g", session_id="s1")
        ok(acme, command="create", path="/memories/s.md", file_text="s", session_id="s1",
           scope="session")
        ok(acme, command="create", path="/memories/p.md", file_text="p", profile="cooking",
           scope="profile")
        assert documents(acme) == [
            ("global", "", "/g.md", "g"), ("profile", "cooking", "/p.md", "p"),
            ("session", "s1", "/s.md", "s"),
        ]

    def test_lookup_order_session_profile_global(self, acme) -> None:
        context = {"session_id": "s1", "profile": "cooking"}
        ok(acme, command="create", path="/memories/n.md", file_text="global")
        ok(acme, command="create", path="/memories/n.md", file_text="profile", scope="profile",
           profile="cooking")
        ok(acme, command="create", path="/memories/n.md", file_text="session", scope="session",
           session_id="s1")

        def seen(**extra: Any) -> str:
            return ok(acme, command="view", path="/memories/n.md", **extra).split("\t")[1]

        assert seen(**context) == "session"
        assert seen(session_id="other", profile="cooking") == "profile"
        assert seen() == "global"
        assert seen(scope="global", **context) == "global"
        assert seen(scope="profile", **context) == "profile"
        # An edit without scope changes the first match only.
        ok(acme, command="str_replace", path="/memories/n.md", old_str="session", new_str="S",
           **context)
        assert sorted(row[3] for row in documents(acme)) == ["S", "global", "profile"]
        ok(acme, command="delete", path="/memories/n.md", **context)
        assert seen(**context) == "profile"

    def test_other_sessions_and_profiles_see_nothing(self, acme) -> None:
        ok(acme, command="create", path="/memories/s.md", file_text="s", scope="session",
           session_id="s1")
        assert err(acme, command="view", path="/memories/s.md", session_id="s2") == (
            "The path /memories/s.md does not exist. Please provide a valid path.")
        assert err(acme, command="view", path="/memories/s.md") == (
            "The path /memories/s.md does not exist. Please provide a valid path.")
        assert err(acme, command="view", path="/memories/s.md", session_id="s1",
                   scope="global").startswith("The path /memories/s.md does not exist")

    def test_directory_view_merges_what_lookups_resolve_to(self, acme) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="global a")
        ok(acme, command="create", path="/memories/b.md", file_text="global b")
        ok(acme, command="create", path="/memories/a.md", file_text="s", scope="session",
           session_id="s1")
        assert ok(acme, command="view", path="/memories", session_id="s1") == "\n".join([
            HEADER.format("/memories"), "4K\t/memories", "1B\t/memories/a.md",
            "8B\t/memories/b.md",
        ])
        assert ok(acme, command="view", path="/memories", session_id="s1",
                  scope="session") == "\n".join([
            HEADER.format("/memories"), "4K\t/memories", "1B\t/memories/a.md"])

    def test_rename_and_create_stay_in_their_scope(self, acme) -> None:
        ok(acme, command="create", path="/memories/d/x.md", file_text="x", scope="session",
           session_id="s1")
        ok(acme, command="create", path="/memories/d/x.md", file_text="gx")
        ok(acme, command="rename", old_path="/memories/d", new_path="/memories/e",
           session_id="s1")
        assert documents(acme) == [("global", "", "/d/x.md", "gx"),
                                   ("session", "s1", "/e/x.md", "x")]


# --- unknown people, disabled memory, other tenants ----------------------------------------------


class TestPeopleAndSwitches:
    def test_reading_an_unknown_user_is_empty_and_creates_nothing(self, acme) -> None:
        assert ok(acme, "nobody", command="view", path="/memories") == "\n".join([
            HEADER.format("/memories"), "4K\t/memories"])
        err(acme, "nobody", command="view", path="/memories/a.md")
        err(acme, "nobody", command="str_replace", path="/memories/a.md", old_str="a",
            new_str="b")
        err(acme, "nobody", command="delete", path="/memories/a.md")
        err(acme, "nobody", command="create", path="/memories/a.md", file_text="\x00")
        assert not end_user_exists(acme, "nobody")
        ok(acme, "nobody", command="create", path="/memories/a.md", file_text="a")
        assert end_user_exists(acme, "nobody")

    def test_tenant_switch(self, acme, globex) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="a")
        response = acme.client.patch("/api/v1/tenant", {"memory_enabled": False}, format="json")
        assert response.status_code == 200
        for body in [{"command": "view", "path": "/memories"},
                     {"command": "create", "path": "/memories/b.md", "file_text": "b"},
                     {"command": "delete", "path": "/memories/a.md"}]:
            assert err(acme, **body) == (
                "Error: memory is disabled for this app; continue without reading or saving "
                "memories.")
        assert ok(globex, command="view", path="/memories").startswith("Here're")
        assert [row[2] for row in documents(acme)] == ["/a.md"]

    def test_profile_switch(self, acme) -> None:
        with tenant_context(acme.tenant.id):
            Profile.objects.create(tenant=acme.tenant, name="kids", disabled=True)
        assert err(acme, command="view", path="/memories", profile="kids") == (
            "Error: memory is disabled for this profile; continue without reading or saving "
            "memories.")
        assert ok(acme, command="view", path="/memories", profile="adults").startswith("Here're")

    def test_person_switch(self, acme) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="a")
        with tenant_context(acme.tenant.id):
            EndUser.objects.filter(user_id="alice").update(memory_enabled=False)
        assert err(acme, command="append", path="/memories/a.md", text="b") == (
            "Error: memory is disabled by the user; continue without reading or saving "
            "memories.")
        assert ok(acme, "bob", command="view", path="/memories").startswith("Here're")

    def test_another_tenants_user_looks_like_an_absent_one(self, acme, globex) -> None:
        ok(acme, command="create", path="/memories/secret.md", file_text="acme only")
        commands = [
            {"command": "view", "path": "/memories"},
            {"command": "view", "path": "/memories/secret.md"},
            {"command": "str_replace", "path": "/memories/secret.md", "old_str": "acme",
             "new_str": "x"},
            {"command": "delete", "path": "/memories/secret.md"},
            {"command": "rename", "old_path": "/memories/secret.md", "new_path": "/memories/b"},
        ]
        for body in commands:
            as_alice = tool(globex, "alice", **body)
            as_nobody = tool(globex, "never-seen", **body)
            assert as_alice == tuple(text.replace("never-seen", "alice") if isinstance(text, str)
                                     else text for text in as_nobody)
        assert documents(acme) == [("global", "", "/secret.md", "acme only")]
        assert not end_user_exists(globex, "alice")
        ok(globex, command="create", path="/memories/secret.md", file_text="globex's own")
        assert documents(acme) == [("global", "", "/secret.md", "acme only")]
        assert documents(globex) == [("global", "", "/secret.md", "globex's own")]
