"""Paths: the contract's "Paths" paragraph, and the directory arithmetic built on it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryhub.errors import ECHO_LIMIT
from memoryhub.paths import (
    InvalidPath,
    display_path,
    has_memories_prefix,
    invalid_path_message,
    is_under,
    normalize_path,
    parent_dirs,
    parent_of,
    relative_depth,
    relative_path,
    reparent,
    segments,
    written_as_directory,
)


class TestNormalize:
    @pytest.mark.parametrize(
        ("raw", "canonical"),
        [
            ("/memories/notes/a.md", "/notes/a.md"),
            ("/notes/a.md", "/notes/a.md"),
            ("/memories", "/"),
            ("/memories/", "/"),
            ("/", "/"),
            ("/memories/notes/", "/notes"),  # one trailing slash is dropped, as the reference does
            ("/notes/", "/notes"),
            # only "/memories" alone or followed by "/" is the root
            ("/memoriesX/a", "/memoriesX/a"),
            ("/Memories/a", "/Memories/a"),
            ("/notes/a b.md", "/notes/a b.md"),
            ("/notes/é/日本.md", "/notes/é/日本.md"),
            ("/a..b/c.", "/a..b/c."),  # dots inside or at the end of a segment are fine
            ("/a-b_c+d@e!(f)", "/a-b_c+d@e!(f)"),
        ],
    )
    def test_canonical_form(self, raw: str, canonical: str) -> None:
        assert normalize_path(raw) == canonical

    @pytest.mark.parametrize(
        "raw",
        [
            "",
            "memories/a.md",
            "notes/a.md",
            "/memories//a.md",  # empty segment
            "//a.md",
            "/a//b",
            "/notes//",  # two trailing slashes leave an empty segment
            "/memories//",
            "/./a",
            "/a/./b",
            "/../a",
            "/memories/../etc/passwd",
            "/a/..",
            "/.hidden",
            "/notes/.draft.md",
            "/memories/.git/config",
            "/a\\b",
            "/a%2e%2e/b",
            "/c:/x",
            "/a:b",
            "/a\x00b",
            "/a\nb",
            "/a\tb",
            "/a\rb",
            "/a\x1fb",
            "/a\x7fb",  # DEL
            "/a\x85b",  # C1 control
            "/a\u2028b",  # line separator
            "/a\u202eb",  # right-to-left override
            "/a\ud800b",  # lone surrogate: not storable as UTF-8
            "/memories/memories/a.md",  # would be stored as /memories/a.md, which means /a.md
            "/memories/memories",
        ],
    )
    def test_refused(self, raw: str) -> None:
        with pytest.raises(InvalidPath) as info:
            normalize_path(raw)
        assert info.value.path == raw
        assert str(info.value) == f"Error: {raw} is not an allowed path"

    @pytest.mark.parametrize("raw", [
        "/notes\uff0fdiet.md",  # fullwidth solidus: reads as /notes/diet.md
        "/notes\u2215diet.md",  # division slash
        "/notes\u2044diet.md",  # fraction slash
        "/notes\u29f8diet.md", "/notes\u2571diet.md", "/notes\u27cbdiet.md",
        "/notes/diet\u2024md",  # one-dot leader: reads as diet.md
        "/notes/diet\uff0emd",  # fullwidth full stop
        "/notes/\u2024env",  # reads as the hidden /notes/.env
        "/notes/\u2025/x",  # two-dot leader: reads as /notes/../x
        "/notes/diet\ufe52md", "/notes/diet\u0701md", "/notes/diet\ua60emd",
        "/no\u200btes/a.md",  # zero-width space: /notes/a.md and /no-tes/a.md look alike
        "/a\u200cb", "/a\u200db", "/a\u2060b", "/\ufeffa.md", "/a\u00adb",  # ZWNJ, ZWJ...
        "/a\u200eb", "/a\u200fb", "/a\u061cb",  # bidi marks
        "/a\u202ab", "/a\u2066b", "/a\u2069b",  # bidi embedding and isolates
        "/a\U000e0041b",  # a tag character
        "/a\u3164b", "/\u115f.md", "/a\u034fb",  # Hangul filler, grapheme joiner
    ])
    def test_invisible_characters_and_lookalikes_of_slash_and_dot_are_refused(
        self, raw: str
    ) -> None:
        with pytest.raises(InvalidPath) as info:
            normalize_path(raw)
        assert str(info.value) == f"Error: {raw} is not an allowed path"

    @pytest.mark.parametrize("raw", ["/notes/diet.md", "/ノート/食事.md", "/café/ü·ß.md",
                                     "/notes/wait….md", "/math/a÷b×c.md", "/a-b – c — d.md"])
    def test_ordinary_letters_and_punctuation_stay_allowed(self, raw: str) -> None:
        assert normalize_path(raw) == raw

    @pytest.mark.parametrize("raw", [None, 5, b"/a.md", ["/a.md"], {"path": "/a"}])
    def test_non_strings_are_refused(self, raw: object) -> None:
        with pytest.raises(InvalidPath) as info:
            normalize_path(raw)
        assert info.value.path is raw

    def test_invalid_path_is_a_value_error(self) -> None:
        assert issubclass(InvalidPath, ValueError)

    def test_sixteen_segments_at_most(self) -> None:
        sixteen = "/" + "/".join(["s"] * 16)
        assert normalize_path(sixteen) == sixteen
        assert normalize_path("/memories" + sixteen) == sixteen
        with pytest.raises(InvalidPath):
            normalize_path(sixteen + "/s")

    def test_255_bytes_at_most_measured_on_the_canonical_form(self) -> None:
        longest = "/" + "a" * 254
        assert normalize_path(longest) == longest
        assert normalize_path("/memories" + longest) == longest  # 264 bytes as written
        with pytest.raises(InvalidPath):
            normalize_path(longest + "a")

    def test_bytes_not_characters(self) -> None:
        two_byte = "/" + "é" * 127  # 255 bytes
        assert normalize_path(two_byte) == two_byte
        with pytest.raises(InvalidPath):
            normalize_path(two_byte + "a")

    @given(st.lists(st.text(alphabet="abc.-_ é", min_size=1, max_size=5), min_size=0, max_size=5))
    def test_idempotent_and_display_round_trip(self, parts: list[str]) -> None:
        raw = "/" + "/".join(parts)
        try:
            canonical = normalize_path(raw)
        except InvalidPath:
            return
        assert normalize_path(canonical) == canonical
        assert normalize_path(display_path(canonical)) == canonical


def test_invalid_path_message_echoes_the_raw_path() -> None:
    assert invalid_path_message("/memories/../x") == "Error: /memories/../x is not an allowed path"


def test_every_accepted_path_is_quoted_whole_and_a_longer_one_cut() -> None:
    longest = "/memories/" + "a" * 254 + "/"  # the longest accepted as written: 265 characters
    assert normalize_path(longest) == "/" + "a" * 254
    assert len(longest) <= ECHO_LIMIT
    assert invalid_path_message(longest) == f"Error: {longest} is not an allowed path"
    huge = "/" + "x" * 100_000
    assert invalid_path_message(huge) == f"Error: /{'x' * (ECHO_LIMIT - 1)}… is not an allowed path"


def test_display_path() -> None:
    assert display_path("/") == "/memories"
    assert display_path("/notes/a.md") == "/memories/notes/a.md"


def test_prefix_and_directory_spelling() -> None:
    assert has_memories_prefix("/memories")
    assert has_memories_prefix("/memories/a")
    assert not has_memories_prefix("/memoriesX")
    assert not has_memories_prefix("/a/memories")
    assert written_as_directory("/memories/notes/")
    assert written_as_directory("/memories")
    assert not written_as_directory("/memories/notes")


class TestDirectoryArithmetic:
    def test_segments_and_parents(self) -> None:
        assert segments("/") == []
        assert segments("/a/b/c.md") == ["a", "b", "c.md"]
        assert parent_of("/a/b/c.md") == "/a/b"
        assert parent_of("/a.md") == "/"
        assert parent_of("/") == "/"
        assert parent_dirs("/a/b/c.md") == ["/", "/a", "/a/b"]
        assert parent_dirs("/a.md") == ["/"]
        assert parent_dirs("/") == []

    @pytest.mark.parametrize(
        ("path", "directory", "expected"),
        [
            ("/notes/a.md", "/notes", True),
            ("/notes/x/a.md", "/notes", True),
            ("/notes", "/notes", False),
            ("/notes-old/a.md", "/notes", False),
            ("/notesa", "/notes", False),
            ("/a.md", "/", True),
            ("/", "/", False),
        ],
    )
    def test_is_under(self, path: str, directory: str, expected: bool) -> None:
        assert is_under(path, directory) is expected

    def test_relative(self) -> None:
        assert relative_path("/notes/x/a.md", "/notes") == "x/a.md"
        assert relative_path("/notes/x/a.md", "/") == "notes/x/a.md"
        assert relative_depth("/notes/a.md", "/notes") == 1
        assert relative_depth("/notes/x/y/a.md", "/notes") == 3
        assert relative_depth("/a.md", "/") == 1
        with pytest.raises(ValueError):
            relative_path("/other/a.md", "/notes")
        with pytest.raises(ValueError):
            relative_depth("/notes", "/notes")

    def test_reparent(self) -> None:
        assert reparent("/notes/x/a.md", "/notes", "/archive/2024") == "/archive/2024/x/a.md"
        assert reparent("/notes/a.md", "/notes", "/") == "/a.md"
        assert reparent("/a.md", "/", "/sub") == "/sub/a.md"
