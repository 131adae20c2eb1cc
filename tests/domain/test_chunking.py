"""Documents are split into passages that lose nothing and point back into the document."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryhub.chunking import Passage, split_passages


def _squeeze(text: str) -> str:
    return "".join(text.split())


def assert_invariants(text: str, passages: list[Passage], max_chars: int) -> None:
    assert [p.index for p in passages] == list(range(len(passages)))
    assert "".join(_squeeze(p.text) for p in passages) == _squeeze(text)
    previous_end = 0
    for passage in passages:
        assert passage.text == text[passage.start : passage.end]
        assert passage.text and passage.text == passage.text.strip()
        assert len(passage.text) <= max_chars
        assert passage.start >= previous_end
        previous_end = passage.end


# Markdown-ish material: words, sentence ends, headings, fences, blank lines, odd spaces.
_PIECES = st.sampled_from(
    [
        "word",
        "Vegetarian",
        "x" * 30,
        ". ",
        "! ",
        "? ",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\n\n\n",
        "# ",
        "## Heading\n",
        "#tag",
        "```",
        "~~~\n",
        "\t",
        "\r\n",
        "\u00a0",
        "\u2028",
        "é",
        "日本語",
    ]
)
_MARKDOWNISH = st.lists(_PIECES, max_size=80).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=_MARKDOWNISH, max_chars=st.integers(min_value=1, max_value=120))
def test_markdownish_text_keeps_every_character(text: str, max_chars: int) -> None:
    assert_invariants(text, split_passages(text, max_chars), max_chars)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400), max_chars=st.integers(min_value=1, max_value=60))
def test_arbitrary_unicode_keeps_every_character(text: str, max_chars: int) -> None:
    assert_invariants(text, split_passages(text, max_chars), max_chars)


@settings(max_examples=100, deadline=None)
@given(paragraphs=st.lists(st.text("abc .", min_size=1, max_size=30), min_size=1, max_size=12))
def test_small_paragraphs_merge_when_they_fit(paragraphs: list[str]) -> None:
    text = "\n\n".join(paragraphs)
    if not text.strip():
        return
    assert len(split_passages(text, max_chars=len(text))) == 1


@pytest.mark.parametrize("text", ["", " ", "\n\n\t \n"])
def test_blank_text_has_no_passages(text: str) -> None:
    assert split_passages(text) == []


def test_heading_starts_a_passage_and_stays_with_its_text() -> None:
    text = "Intro line.\n# Diet\nShe is vegetarian.\n\n## Work\n\nNurse in Berlin."
    passages = split_passages(text, max_chars=200)
    assert [p.text for p in passages] == [
        "Intro line.",
        "# Diet\nShe is vegetarian.",
        "## Work\n\nNurse in Berlin.",
    ]


def test_heading_keeps_the_start_of_an_overlong_paragraph() -> None:
    text = "# Title\n\n" + "One sentence here. " * 20
    passages = split_passages(text, max_chars=80)
    assert passages[0].text.startswith("# Title\n\nOne sentence here.")
    assert_invariants(text, passages, 80)


def test_neighbouring_paragraphs_merge_up_to_the_cap() -> None:
    text = "aaaa\n\nbbbb\n\ncccc\n\ndddd"
    assert [p.text for p in split_passages(text, max_chars=10)] == ["aaaa\n\nbbbb", "cccc\n\ndddd"]


def test_overlong_paragraph_is_cut_at_a_sentence_end() -> None:
    text = "The first sentence is here. The second one follows it. And a third."
    passages = split_passages(text, max_chars=40)
    assert passages[0].text == "The first sentence is here."
    assert_invariants(text, passages, 40)


def test_without_sentence_ends_it_cuts_at_whitespace() -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta"
    passages = [p.text for p in split_passages(text, max_chars=12)]
    assert passages == ["alpha beta", "gamma delta", "epsilon zeta", "eta theta"]


def test_a_giant_word_is_hard_cut_without_loss() -> None:
    text = "x" * 25
    assert [p.text for p in split_passages(text, max_chars=10)] == ["x" * 10, "x" * 10, "x" * 5]


def test_code_fence_is_not_split_on_blank_lines_or_comment_headings() -> None:
    text = "Setup:\n\n```sh\n# install\n\npip install x\n```\n\n# Real heading\nBody."
    passages = split_passages(text, max_chars=200)
    assert [p.text for p in passages] == [
        "Setup:\n\n```sh\n# install\n\npip install x\n```",
        "# Real heading\nBody.",
    ]


def test_offsets_point_into_the_original_text() -> None:
    text = "  \n\n# H\n\n  para one.  \n\npara two\n"
    for passage in split_passages(text, max_chars=9):
        assert text[passage.start : passage.end] == passage.text


def test_rejects_a_non_positive_cap() -> None:
    with pytest.raises(ValueError, match="max_chars"):
        split_passages("text", max_chars=0)
