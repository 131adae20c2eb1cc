"""Split a markdown document into passages small enough to embed and to quote in recall.

Guarantees, relied on by indexing and recall:
- every passage is `original[start:end]`, trimmed of surrounding whitespace, at most
  `max_chars` long, and passages come in document order without overlapping;
- no non-whitespace character is lost: the passages' texts, whitespace removed, concatenate
  to the input with whitespace removed;
- a markdown heading starts a new passage and stays with the text under it;
- blank-line paragraphs are the units; small neighbours merge up to `max_chars`; an
  over-long paragraph is cut at a sentence end or line break, else at whitespace, else
  (one giant "word") hard at `max_chars`.

Fenced code blocks are kept whole where they fit: their blank lines do not split them and
their `#` comment lines are not headings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_HEADING = re.compile(r" {0,3}#{1,6}(?:\s|$)")
_FENCE = re.compile(r" {0,3}(?:```|~~~)")
# A sentence ends at ., ! or ? (optionally closed by quotes or brackets) before whitespace.
_SENTENCE_END = re.compile(r"[.!?\u2026][\"')\]\u201d\u2019]*(?=\s)|\n")
_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class Passage:
    """A slice of a document: `text == document[start:end]`."""

    index: int
    start: int
    end: int
    text: str


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    heading: bool = False


def split_passages(text: str, max_chars: int = 1200) -> list[Passage]:
    """Split `text` into passages of at most `max_chars` characters (see module docstring)."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    spans = [
        span
        for section in _sections(_blocks(text))
        for span in _pack_section(text, section, max_chars)
    ]
    return [Passage(i, s.start, s.end, text[s.start : s.end]) for i, s in enumerate(spans)]


def _lines(text: str) -> Iterator[tuple[int, str]]:
    offset = 0
    for line in text.splitlines(keepends=True):
        yield offset, line
        offset += len(line)


def _blocks(text: str) -> list[_Span]:
    """Paragraphs (runs of non-blank lines) and heading lines, trimmed, in order."""
    blocks: list[_Span] = []
    current: _Span | None = None
    in_fence = False
    for offset, line in _lines(text):
        stripped = line.strip()
        line_span = _trim(text, offset, offset + len(line))
        if in_fence and not stripped:
            continue  # A blank line inside a code fence does not end the block.
        if in_fence or (stripped and not _HEADING.match(line)):
            if _FENCE.match(line):
                in_fence = not in_fence
            current = line_span if current is None else _Span(current.start, line_span.end)
            continue
        if current is not None:
            blocks.append(current)
            current = None
        if stripped:  # A heading is a block of its own.
            blocks.append(_Span(line_span.start, line_span.end, heading=True))
    if current is not None:
        blocks.append(current)
    return blocks


def _sections(blocks: list[_Span]) -> list[list[_Span]]:
    """Group blocks so that each heading begins a new group."""
    sections: list[list[_Span]] = []
    for block in blocks:
        if block.heading or not sections:
            sections.append([])
        sections[-1].append(block)
    return sections


def _pack_section(text: str, blocks: list[_Span], max_chars: int) -> list[_Span]:
    """Greedily merge a section's blocks into spans of at most max_chars."""
    done: list[_Span] = []
    current: _Span | None = None
    for block in blocks:
        if current is not None and block.end - current.start <= max_chars:
            current = _Span(current.start, block.end)
            continue
        if current is not None and current.heading:
            # Keep the heading with its text: fill the heading's passage with the start of
            # the paragraph that would not fit whole.
            cut = _cut(text, current.start, block.end, max_chars)
            done.append(_trim(text, current.start, cut))
            block = _trim(text, cut, block.end)
        elif current is not None:
            done.append(current)
        pieces = _split_long(text, block, max_chars)
        done.extend(pieces[:-1])
        current = pieces[-1]
    if current is not None:
        done.append(current)
    return done


def _split_long(text: str, block: _Span, max_chars: int) -> list[_Span]:
    """Cut a block into pieces of at most max_chars; the last piece may be short."""
    pieces: list[_Span] = []
    start = block.start
    while block.end - start > max_chars:
        cut = _cut(text, start, block.end, max_chars)
        pieces.append(_trim(text, start, cut))
        start = _trim(text, cut, block.end).start
    pieces.append(_Span(start, block.end, heading=block.heading))
    return pieces


def _cut(text: str, start: int, end: int, max_chars: int) -> int:
    """Where to end a piece that begins at start: the best boundary within max_chars."""
    limit = min(end, start + max_chars)
    if limit == end:
        return end
    window = text[start : limit + 1]  # +1: whitespace right after the limit is a boundary.
    # Prefer a sentence end, unless it would leave a piece under half the budget.
    sentence_cuts = [m.end() for m in _SENTENCE_END.finditer(window) if m.end() <= max_chars]
    if sentence_cuts and sentence_cuts[-1] > max_chars // 2:
        return start + sentence_cuts[-1]
    space_cuts = [m.start() for m in _WHITESPACE.finditer(window) if 0 < m.start() <= max_chars]
    if space_cuts:
        return start + space_cuts[-1]
    return limit  # One unbroken run longer than max_chars: a hard cut loses nothing.


def _trim(text: str, start: int, end: int) -> _Span:
    """Shrink [start, end) to exclude surrounding whitespace (empty if all whitespace)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return _Span(start, end)
