"""The memory tool endpoint and the SDK's reference tool give the same texts, byte for byte.

Each sequence of commands runs on ``BetaLocalFilesystemMemoryTool`` (anthropic 2.16.0) over a
temporary directory and on ``POST /api/v1/users/{user_id}/memory``; every step's ``content``
and ``is_error`` must match. The reference's outcome is what the SDK's tool runner sends the
model: ``tool_result_content(result)``, or ``tool_error_content(exc)`` with ``is_error``
for any exception.

Two differences are by design, and the comparison allows exactly these:

- Directories exist here only through documents. The reference leaves an empty directory
  behind a deleted or moved last file (and a failed rename creates the destination's
  parents), so empty directories are pruned from its tree after every step.
- Where the reference crashes with a non-``ToolError`` exception (it then sends
  ``repr(exc)``, e.g. ``NotADirectoryError(20, 'Not a directory')`` when creating below a
  file), this service answers its own ``Error: ...`` text: only ``is_error`` must match.

The limits are switched off for these tenants except ``max_document_bytes`` (texts are small).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.memory_commands import Command, create, delete, insert, rename, str_replace, view
from tests.reference_tool import (
    comparable,
    prune_empty_directories,
    reference_outcome,
    reference_tool,
)
from tests.spec.api_client import set_limits, tool

_users = itertools.count()


def assert_same(kit: Any, script: list[Command]) -> None:
    user_id = f"diff-{next(_users)}"
    with reference_tool() as reference:
        for step, command in enumerate(script):
            expected, expected_error, crashed = reference_outcome(reference, command)
            prune_empty_directories(reference.memory_root)
            actual, actual_error = tool(kit, user_id, **command)
            where = f"step {step} of {script}"
            assert actual_error == expected_error, f"{where}: {actual!r} vs {expected!r}"
            if crashed:
                assert actual.startswith("Error: ") or not actual.startswith("Here"), where
                continue
            root = reference.memory_root
            assert comparable(actual, root) == comparable(expected, root), where


@pytest.fixture
def kit(acme: Any) -> Any:
    set_limits(acme, max_scope_bytes=None, max_writes_per_turn=None)
    return acme


_LONGEST = "/memories/" + "a" * 100 + "/" + "b" * 100 + "/" + "c" * 52  # 255 bytes stored

SCRIPTS = {
    "listing order and depth": [
        create("/memories/notes-old/a.md"), create("/memories/notes/z.md", "zz"),
        create("/memories/notes.md", "n"), create("/memories/notes/deep/er/x.md"),
        create("/memories/B.md"), view("/memories"), view("/memories/"), view("/memories/notes"),
        view("/memories/notes/deep"),
    ],
    "file views": [
        create("/memories/f.md", "one\ntwo\nthree\n"), view("/memories/f.md"),
        view("/memories/f.md/"), view("/memories/f.md", [2, -1]), view("/memories/f.md", [0, 1]),
        view("/memories/f.md", [3, 2]), view("/memories/f.md", [2, 99]), view("/memories/nope"),
        view("/memories/f.md/child"), create("/memories/empty.md", ""), view("/memories/empty.md"),
    ],
    # The reference applies view_range only when it is truthy: a falsy one shows the whole
    # file (it was this service's "view_range must be a list" error).
    "falsy view_range": [
        create("/memories/f.md", "one\ntwo\n"),
        *({"command": "view", "path": "/memories/f.md", "view_range": falsy}
          for falsy in (0, False, "", {}, [], None)),
    ],
    # The reference's call reads its input into the SDK's pydantic model, lax, and runs the
    # coerced values when that succeeds: "2", 2.0, true or " 3 " as a line number, each item
    # of view_range alike (they were this service's "must be a line number" errors); an
    # input that fails anywhere runs as sent (here, a crash and our own error).
    "arguments the reference coerces": [
        create("/memories/c.md", "one\ntwo\nthree\n"),
        {**insert("/memories/c.md", 0, "A"), "insert_line": "2"},
        {**insert("/memories/c.md", 0, "B"), "insert_line": 1.0},
        {**insert("/memories/c.md", 0, "C"), "insert_line": True},
        {**insert("/memories/c.md", 0, "D"), "insert_line": " 3 "},
        {**insert("/memories/c.md", 0, "E"), "insert_line": "+1"},
        {**insert("/memories/c.md", 0, 5), "insert_line": "2"},
        {**insert("/memories/c.md", 0, "F"), "insert_line": "2.5"},
        {**insert("/memories/c.md", 0, "G"), "insert_line": "99"},
        {"command": "view", "path": "/memories/c.md", "view_range": ["2", "3"]},
        {"command": "view", "path": "/memories/c.md", "view_range": [True, 2.0]},
        {"command": "view", "path": "/memories/c.md", "view_range": [1.5, 2]},
        {"command": "view", "path": "/memories/c.md", "view_range": ["2", "-1"]},
        view("/memories/c.md"),
    ],
    "edits": [
        create("/memories/e.md", "a\nb\nc\nd\ne\nf\ng"), str_replace("/memories/e.md", "d", "D\nD2"),
        str_replace("/memories/e.md", "\n", "-"), str_replace("/memories/e.md", "zz", "y"),
        str_replace("/memories/e.md", "", "y"), insert("/memories/e.md", 0, "top\n\n"),
        insert("/memories/e.md", 9, "end"), insert("/memories/e.md", -1, "x"),
        insert("/memories/e.md", 99, "x"), view("/memories/e.md"),
        str_replace("/memories", "a", "b"), insert("/memories/none", 0, "x"),
    ],
    "create collisions": [
        create("/memories/d/a.md"), create("/memories/d"), create("/memories/d/"),
        create("/memories"), create("/memories/"), create("/memories/d/a.md"),
        create("/memories/d/a.md/b.md"), create("/memories/new/"), view("/memories"),
    ],
    "delete": [
        create("/memories/d/a.md"), create("/memories/d/b/c.md"), create("/memories/k.md"),
        delete("/memories/d/b/"), view("/memories"), delete("/memories/d"), delete("/memories/d"),
        delete("/memories"), delete("/memories/"), delete("/memories/k.md/x"),
        delete("/memories/k.md"), view("/memories"),
    ],
    "rename": [
        create("/memories/a.md"), create("/memories/d/x.md"), create("/memories/d/y/z.md"),
        rename("/memories/a.md", "/memories/b/c/a.md"), rename("/memories/d", "/memories/e"),
        rename("/memories/e", "/memories/b"), rename("/memories/nope", "/memories/b"),
        rename("/memories/nope", "/memories/new/place"), rename("/memories", "/memories/x"),
        rename("/memories/", "/memories/x"), rename("/memories/e", "/memories"),
        rename("/memories/e", "/memories/e/inner"), rename("/memories/b/c/a.md", "/memories/e/y/z.md/q"),
        rename("/memories/e/", "/memories/f/"), view("/memories"),
    ],
    # The longest values quoted whole (memoryhub.errors.ECHO_LIMIT): a path of 255 bytes (the
    # limit) as written, with /memories and a slash, and an old_str of 300 characters.
    "long values": [
        create(_LONGEST, ("q" * 300 + "\n") * 2), view(_LONGEST), view(_LONGEST + "/"),
        view(_LONGEST[:-1] + "d"), create(_LONGEST), str_replace(_LONGEST, "z" * 300, "y"),
        str_replace(_LONGEST, "q" * 300, "y"), insert(_LONGEST, 99, "x"),
        str_replace(_LONGEST[:-1] + "d", "q", "y"), delete(_LONGEST[:-1] + "d"),
        rename(_LONGEST[:-1] + "d", _LONGEST), view("/memories"),
    ],
}


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripted(kit: Any, name: str) -> None:
    assert_same(kit, SCRIPTS[name])


# A small pool of paths, so that commands often meet what earlier ones created: every path of
# one to three names from a, b, c.md, a few with a trailing slash, and the root once each way.
_NAMES = ["a", "b", "c.md"]
_BELOW = ["/memories/" + "/".join(parts) for depth in (1, 2, 3)
          for parts in itertools.product(_NAMES, repeat=depth)]
_PATHS = _BELOW + [path + "/" for path in _BELOW[:6]] + ["/memories", "/memories/"]
_paths = st.sampled_from(_PATHS)
_text = st.text(alphabet="ab \n", max_size=12)
_needle = st.text(alphabet="ab\n", max_size=2)
_view_range = st.one_of(st.none(), st.lists(st.integers(-2, 6), min_size=2, max_size=2))
_creates = st.builds(create, _paths, _text)


def _commands(paths: st.SearchStrategy[str]) -> st.SearchStrategy[Command]:
    return st.one_of(
        st.builds(create, paths, _text),
        st.builds(view, paths, _view_range),
        st.builds(str_replace, paths, _needle, _needle),
        st.builds(insert, paths, st.integers(-1, 5), _text),
        st.builds(delete, paths),
        st.builds(rename, paths, _paths),
    )


@st.composite
def _scripts(draw: st.DrawFn) -> list[Command]:
    """A few creates, then commands that mostly name what was created (or its directories)."""
    first = draw(st.lists(_creates, min_size=1, max_size=4))
    created = {c["path"].rstrip("/") for c in first} - {"/memories"}
    known = sorted(created | {path.rsplit("/", 1)[0] for path in created} or {"/memories"})
    paths = st.one_of(st.sampled_from(known), st.sampled_from(known), _paths)
    return first + draw(st.lists(_commands(paths), min_size=1, max_size=10))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(script=_scripts())
def test_generated_sequences(kit: Any, script: list[Command]) -> None:
    assert_same(kit, script)
