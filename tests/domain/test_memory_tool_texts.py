"""The memory tool's texts equal the reference tool's, byte for byte.

Each scripted scenario runs twice: on the SDK's ``BetaLocalFilesystemMemoryTool`` over a
temporary directory (turned into tool_result text exactly as the SDK's tool runner does), and
on ``ToyMemory``, a dict-backed stand-in for the service that only strings together
``memoryhub.paths`` and ``memoryhub.memory_tool.texts``. Every ``(content, is_error)`` must match.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryhub.memory_tool.edits import apply_append, apply_insert, apply_str_replace
from memoryhub.memory_tool.texts import (
    DIRECTORY_SIZE,
    VIEW_CHAR_LIMIT,
    DirEntry,
    ToolError,
    already_exists,
    check_view_range,
    create_ok,
    delete_does_not_exist,
    delete_ok,
    delete_root,
    directory_entries,
    directory_view,
    does_not_exist,
    file_view,
    format_size,
    not_a_file,
    rename_destination_exists,
    rename_does_not_exist,
    rename_ok,
    rename_root,
    truncate_view,
    well_formed,
)
from memoryhub.paths import ROOT, is_under, normalize_path, reparent
from tests.memory_commands import Command, create, delete, insert, rename, str_replace, view
from tests.reference_tool import comparable, reference_outcome, reference_tool

Outcome = tuple[str, bool]


def sdk_outcome(tool: BetaLocalFilesystemMemoryTool, command: Command) -> Outcome:
    """What the SDK's tool runner puts in the tool_result: (content, is_error)."""
    content, is_error, _ = reference_outcome(tool, command)  # a crash is an error text too
    assert isinstance(content, str)
    return content, is_error


class ToyMemory:
    """The service's command logic in miniature: a dict of canonical path -> content."""

    def __init__(self) -> None:
        self.docs: dict[str, str] = {}

    def run(self, command: Command) -> Outcome:
        try:
            return getattr(self, command["command"])(command), False
        except ToolError as exc:
            return exc.message, True

    def _is_dir(self, path: str) -> bool:
        return path == ROOT or any(is_under(doc, path) for doc in self.docs)

    def _document(self, raw: str) -> tuple[str, str]:
        path = normalize_path(raw)
        if path in self.docs:
            return path, self.docs[path]
        if self._is_dir(path):
            raise ToolError(not_a_file(raw))
        raise ToolError(does_not_exist(raw))

    def view(self, command: Command) -> str:
        raw = command["path"]
        path = normalize_path(raw)
        if path in self.docs:
            return file_view(raw, self.docs[path], check_view_range(command.get("view_range")))
        if self._is_dir(path):
            sizes = [(doc, len(text.encode())) for doc, text in self.docs.items()]
            return directory_view(raw, directory_entries(path, sizes))
        raise ToolError(does_not_exist(raw))

    def create(self, command: Command) -> str:
        raw = command["path"]
        path = normalize_path(raw)
        if path in self.docs or self._is_dir(path):
            raise ToolError(already_exists(raw))
        self.docs[path] = command["file_text"]
        return create_ok(raw)

    def str_replace(self, command: Command) -> str:
        path, content = self._document(command["path"])
        self.docs[path], text = apply_str_replace(
            content, command["old_str"], command["new_str"], command["path"]
        )
        return text

    def insert(self, command: Command) -> str:
        path, content = self._document(command["path"])
        self.docs[path], text = apply_insert(
            content, command["insert_line"], command["insert_text"], command["path"]
        )
        return text

    def delete(self, command: Command) -> str:
        raw = command["path"]
        path = normalize_path(raw)
        if path == ROOT:
            raise ToolError(delete_root())
        doomed = [doc for doc in self.docs if doc == path or is_under(doc, path)]
        if not doomed:
            raise ToolError(delete_does_not_exist(raw))
        for doc in doomed:
            del self.docs[doc]
        return delete_ok(raw)

    def rename(self, command: Command) -> str:
        old_raw, new_raw = command["old_path"], command["new_path"]
        old, new = normalize_path(old_raw), normalize_path(new_raw)
        if old == ROOT:
            raise ToolError(rename_root())
        if new in self.docs or self._is_dir(new):
            raise ToolError(rename_destination_exists(new_raw))
        if old in self.docs:
            self.docs[new] = self.docs.pop(old)
        elif self._is_dir(old):
            for doc in [doc for doc in self.docs if is_under(doc, old)]:
                self.docs[reparent(doc, old, new)] = self.docs.pop(doc)
        else:
            raise ToolError(rename_does_not_exist(old_raw))
        return rename_ok(old_raw, new_raw)


@pytest.fixture
def reference() -> Iterator[BetaLocalFilesystemMemoryTool]:
    with reference_tool() as tool:
        yield tool


def assert_same_run(reference: BetaLocalFilesystemMemoryTool, script: list[Command]) -> None:
    ours, root = ToyMemory(), reference.memory_root
    for step, command in enumerate(script):
        expected_text, expected_error = sdk_outcome(reference, command)
        actual_text, actual_error = ours.run(command)
        context = f"step {step}: {command}"
        assert comparable(actual_text, root) == comparable(expected_text, root), context
        assert actual_error == expected_error, context


FILE = "/memories/notes.md"
SIX_LINES = "one\ntwo\nthree\nfour\nfive\nsix\n"


class TestViewsMatchReference:
    @pytest.mark.parametrize(
        "content",
        [
            "",
            "\n",
            "single",
            "one\ntwo",
            SIX_LINES,
            "crlf\r\nline\r\n",
            "trailing blank\n\n",
            "tab\there",
        ],
    )
    def test_whole_file(self, reference: BetaLocalFilesystemMemoryTool, content: str) -> None:
        assert_same_run(reference, [create(FILE, content), view(FILE)])

    @pytest.mark.parametrize(
        "view_range",
        [
            [1, 2],
            [2, -1],
            [0, 1],
            [-5, 3],
            [5, 2],
            [3, 100],
            [1, -2],
            [7, 7],
            [8, -1],
            [],
            [1],
            [1, 2, 3],
        ],
    )
    def test_view_range(
        self, reference: BetaLocalFilesystemMemoryTool, view_range: list[int]
    ) -> None:
        assert_same_run(reference, [create(FILE, SIX_LINES), view(FILE, view_range)])

    def test_missing_path_and_trailing_slash(
        self, reference: BetaLocalFilesystemMemoryTool
    ) -> None:
        assert_same_run(
            reference,
            [
                view("/memories/nothing.md"),
                create(FILE, "x"),
                view(FILE + "/"),
                view("/memories/a/b"),
            ],
        )


class TestStrReplaceMatchesReference:
    @pytest.mark.parametrize(
        ("old", "new"),
        [
            ("three", "THREE"),  # middle: two lines of context each side
            ("one", "uno\nein"),  # first line, new_str grows the file
            ("six\n", ""),  # last line removed
            ("two\nthree", "2-3"),  # old_str spans lines
            ("five\nsix\n", "5\n6\n7\n8\n"),
        ],
    )
    def test_success_snippet(
        self, reference: BetaLocalFilesystemMemoryTool, old: str, new: str
    ) -> None:
        assert_same_run(
            reference, [create(FILE, SIX_LINES), str_replace(FILE, old, new), view(FILE)]
        )

    def test_no_match(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(reference, [create(FILE, SIX_LINES), str_replace(FILE, "seven", "7")])

    @pytest.mark.parametrize("old", ["o", "e\n", "aa", ""])
    def test_multiple(self, reference: BetaLocalFilesystemMemoryTool, old: str) -> None:
        content = SIX_LINES + "aaa aaa\n"
        assert_same_run(reference, [create(FILE, content), str_replace(FILE, old, "X"), view(FILE)])

    def test_overlapping_counts_once(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(
            reference, [create(FILE, "aaa\n"), str_replace(FILE, "aa", "b"), view(FILE)]
        )

    def test_empty_old_str_in_empty_file(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(reference, [create(FILE, ""), str_replace(FILE, "", "filled"), view(FILE)])

    def test_missing_file_and_directory(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(
            reference,
            [
                str_replace("/memories/none.md", "a", "b"),
                create("/memories/dir/a.md", "a"),
                str_replace("/memories/dir", "a", "b"),
            ],
        )


class TestInsertMatchesReference:
    @pytest.mark.parametrize(
        ("content", "line", "text"),
        [
            (SIX_LINES, 0, "zero"),
            (SIX_LINES, 3, "between"),
            (SIX_LINES, 6, "at the end"),
            (SIX_LINES, 2, "two lines\nof text\n\n"),
            ("no final newline", 1, "added"),
            ("no final newline", 0, "added"),
            ("", 0, "first"),
            ("", 0, ""),
            ("\n", 1, "after an empty line"),
            ("crlf\r\nline\r\n", 1, "mid"),
        ],
    )
    def test_valid(
        self, reference: BetaLocalFilesystemMemoryTool, content: str, line: int, text: str
    ) -> None:
        assert_same_run(reference, [create(FILE, content), insert(FILE, line, text), view(FILE)])

    @pytest.mark.parametrize(
        ("content", "line"), [(SIX_LINES, 7), (SIX_LINES, -1), ("", 1), ("a", 2)]
    )
    def test_invalid_line(
        self, reference: BetaLocalFilesystemMemoryTool, content: str, line: int
    ) -> None:
        assert_same_run(reference, [create(FILE, content), insert(FILE, line, "x"), view(FILE)])

    def test_missing_file_and_directory(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(
            reference,
            [
                insert("/memories/none.md", 0, "x"),
                create("/memories/d/a.md", ""),
                insert("/memories/d", 0, "x"),
            ],
        )


class TestCreateDeleteRenameMatchReference:
    def test_create_existing(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(
            reference,
            [
                create("/memories/a/b.md", "b"),
                create("/memories/a/b.md", "again"),
                create("/memories/a", "a directory"),
                create("/memories", "the root"),
                create("/memories/", "the root"),
                view("/memories/a/b.md"),
            ],
        )

    def test_delete(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(
            reference,
            [
                create("/memories/a/b.md", "b"),
                create("/memories/a/c/d.md", "d"),
                create("/memories/e.md", "e"),
                delete("/memories"),
                delete("/memories/"),
                delete("/memories/missing.md"),
                delete("/memories/e.md"),
                delete("/memories/e.md"),
                delete("/memories/a"),
                view("/memories/a"),
                view("/memories"),
            ],
        )

    def test_rename(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(
            reference,
            [
                create("/memories/a.md", "a"),
                create("/memories/b.md", "b"),
                create("/memories/dir/x.md", "x"),
                create("/memories/dir/y/z.md", "z"),
                rename("/memories/a.md", "/memories/b.md"),  # destination exists
                rename("/memories/missing.md", "/memories/b.md"),  # destination checked first
                rename("/memories/missing.md", "/memories/c.md"),
                rename("/memories", "/memories/new"),
                rename("/memories/a.md", "/memories"),  # the root always exists
                rename("/memories/a.md", "/memories/dir"),
                rename("/memories/a.md", "/memories/deep/er/a.md"),
                rename("/memories/dir", "/memories/moved"),
                view("/memories"),
                view("/memories/deep/er/a.md"),
            ],
        )


def reference_tree(root: Path, documents: dict[str, str]) -> None:
    """Write documents straight into the reference's folder (hidden names included)."""
    for path, content in documents.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


NESTED = {
    "/notes.md": "top",
    "/notes/a.md": "a" * 1536,
    "/notes/b.md": "",
    "/notes/deep/er/file.md": "too deep to list",
    "/notes/deep/sibling.md": "depth 3",
    "/notes-old/x.md": "x" * 2048,
    "/notes.d/y.md": "y",
    "/Zebra.md": "capitals sort first",
    "/é.md": "é is two bytes",
    "/.hidden.md": "skipped",
    "/.git/config": "skipped with its directory",
    "/notes/.draft.md": "skipped at depth 2",
    "/visible/.secret/z.md": "hidden directory at depth 2",
    "/big.md": "b" * (3 * 1024 * 1024 + 100),
}


class TestDirectoryViewsMatchReference:
    @pytest.mark.parametrize(
        ("directory", "written"),
        [
            (ROOT, "/memories"),
            (ROOT, "/memories/"),
            ("/notes", "/memories/notes"),
            ("/notes", "/memories/notes/"),
            ("/notes/deep", "/memories/notes/deep"),
            ("/visible", "/memories/visible"),
        ],
    )
    def test_listing(
        self, reference: BetaLocalFilesystemMemoryTool, directory: str, written: str
    ) -> None:
        reference_tree(reference.memory_root, NESTED)
        expected, is_error = sdk_outcome(reference, view(written))
        assert not is_error
        sizes = [(path, len(text.encode())) for path, text in NESTED.items()]
        ours = directory_view(written, directory_entries(directory, sizes))
        root = reference.memory_root
        assert comparable(ours, root) == comparable(expected, root)

    def test_empty_root(self, reference: BetaLocalFilesystemMemoryTool) -> None:
        assert_same_run(reference, [view("/memories")])

    def test_entries_order_depth_and_sizes(self) -> None:
        sizes = [(path, len(text.encode())) for path, text in NESTED.items()]
        entries = directory_entries("/notes", sizes)
        assert entries == [
            DirEntry("a.md", 1536, False),
            DirEntry("b.md", 0, False),
            DirEntry("deep", DIRECTORY_SIZE, True),
            DirEntry("deep/er", DIRECTORY_SIZE, True),
            DirEntry("deep/sibling.md", 7, False),
        ]

    def test_unprefixed_paths_do_not_double_the_slash(self) -> None:
        entries = [DirEntry("notes", DIRECTORY_SIZE, True), DirEntry("notes/a.md", 3, False)]
        assert directory_view("/", entries).splitlines()[1:] == [
            "4K\t/",
            "4K\t/notes/",
            "3B\t/notes/a.md",
        ]
        assert directory_view("/x/", []).splitlines()[1:] == ["4K\t/x/"]


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0B"),
        (1, "1B"),
        (1000, "1000B"),
        (1023, "1023B"),
        (1024, "1K"),
        (1536, "1.5K"),
        (4096, "4K"),
        (1024**2 - 1, "1024.0K"),
        (1024**2, "1M"),
        (5 * 1024**3, "5G"),
        (3 * 1024**4, "3072G"),
    ],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


class TestTruncatedView:
    def test_within_limit_is_the_plain_view(self) -> None:
        content = "x" * (VIEW_CHAR_LIMIT - 1) + "\n"
        assert truncate_view(FILE, content) == file_view(FILE, content)

    def test_over_limit_shows_whole_lines_and_how_to_continue(self) -> None:
        # 300 lines of exactly 100 characters with their newline: 160 fit in 16,000.
        content = "".join(f"line {n:04d} " + "." * 89 + "\n" for n in range(1, 301))
        text = truncate_view(FILE, content)
        lines = text.split("\n")
        assert lines[0] == f"Here's the content of {FILE} with line numbers:"
        assert lines[1] == "     1\t" + content.split("\n")[0]
        assert lines[160] == "   160\t" + content.split("\n")[159]
        assert lines[-1] == (
            '... (file truncated at line 160 of 301; call view with "view_range": [161, 301] to read more)'
        )
        assert len(lines) == 162
        # The suggested range shows exactly the lines left out, numbered on from there.
        rest = file_view(FILE, content, (161, 301)).split("\n")[1:]
        assert rest[0].startswith("   161\tline 0161")
        assert [row.split("\t", 1)[1] for row in lines[1:161] + rest] == content.split("\n")

    def test_a_huge_first_line_shows_no_line(self) -> None:
        text = truncate_view(FILE, "y" * (VIEW_CHAR_LIMIT + 1), limit=VIEW_CHAR_LIMIT)
        assert text == (
            f"Here's the content of {FILE} with line numbers:\n"
            '... (file truncated at line 0 of 1; call view with "view_range": [1, 1] to read more)'
        )


class TestViewRangeChecks:
    @pytest.mark.parametrize("value", [None, [], [1], [1, 2, 3], (1, 2, 3), 0, False, "", {}])
    def test_ignored_like_the_reference(self, value: object) -> None:
        assert check_view_range(value) is None

    @pytest.mark.parametrize("value", [[1, 5], (2, -1), [-3, 0]])
    def test_two_integers_pass_unchanged(self, value: list[int]) -> None:
        assert check_view_range(value) == tuple(value)

    @pytest.mark.parametrize(
        "value", ["12", 5, {"a": 1, "b": 2}, ["1", 2], [1.0, 2], [True, 2], [None, None]]
    )
    def test_malformed_is_our_own_error(self, value: object) -> None:
        with pytest.raises(ToolError) as info:
            check_view_range(value)
        assert info.value.message.startswith("Error: view_range must be a list of two integers")


class TestAppend:
    @pytest.mark.parametrize(
        ("content", "text", "expected"),
        [
            ("", "new", "new"),
            ("old\n", "new", "old\nnew"),
            ("old", "new\n", "old\nnew\n"),
            ("old\n\n", "new", "old\n\nnew"),
            ("old", "", "old\n"),
        ],
    )
    def test_append(self, content: str, text: str, expected: str) -> None:
        assert apply_append(content, text) == expected


def test_well_formed_folds_lone_surrogates_only() -> None:
    assert well_formed("ok \ud800 é") == "ok \ufffd é"


# --- properties: random content, same edits as the reference -----------------------------

_TEXT = st.text(alphabet="ab \n\r", max_size=40)


@pytest.fixture(scope="module")
def shared_reference() -> Iterator[BetaLocalFilesystemMemoryTool]:
    with reference_tool() as tool:
        yield tool


def _fresh(reference: BetaLocalFilesystemMemoryTool, content: str) -> None:
    target = reference.memory_root / "p.md"
    target.unlink(missing_ok=True)
    assert sdk_outcome(reference, create("/memories/p.md", content)) == (
        create_ok("/memories/p.md"),
        False,
    )


def assert_same_edit(reference: BetaLocalFilesystemMemoryTool, content: str, command: Command,
                     edit: Callable[[], tuple[str, str]]) -> None:
    """On ``/memories/p.md`` holding ``content``, the pure ``edit`` (new content, text) gives the
    reference's outcome for ``command`` and leaves the file as the reference leaves it."""
    _fresh(reference, content)
    expected = sdk_outcome(reference, command)
    try:
        new_content, text = edit()
        assert (text, False) == expected
        assert (reference.memory_root / "p.md").read_bytes().decode() == new_content
    except ToolError as exc:
        assert (exc.message, True) == expected


_PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_PROPERTY_SETTINGS
@given(content=_TEXT, old=st.text(alphabet="ab \n", max_size=4), new=_TEXT)
def test_str_replace_property(
    shared_reference: BetaLocalFilesystemMemoryTool, content: str, old: str, new: str
) -> None:
    assert_same_edit(shared_reference, content, str_replace("/memories/p.md", old, new),
                     lambda: apply_str_replace(content, old, new, "/memories/p.md"))


@_PROPERTY_SETTINGS
@given(content=_TEXT, line=st.integers(min_value=-2, max_value=12), text=_TEXT)
def test_insert_property(
    shared_reference: BetaLocalFilesystemMemoryTool, content: str, line: int, text: str
) -> None:
    assert_same_edit(shared_reference, content, insert("/memories/p.md", line, text),
                     lambda: apply_insert(content, line, text, "/memories/p.md"))


@_PROPERTY_SETTINGS
@given(
    content=_TEXT,
    view_range=st.one_of(
        st.none(), st.lists(st.integers(min_value=-3, max_value=12), min_size=0, max_size=3)
    ),
)
def test_view_property(
    shared_reference: BetaLocalFilesystemMemoryTool, content: str, view_range: list[int] | None
) -> None:
    _fresh(shared_reference, content)
    expected = sdk_outcome(shared_reference, view("/memories/p.md", view_range))
    assert (file_view("/memories/p.md", content, check_view_range(view_range)), False) == expected
