"""The memory tool's edits as pure functions of text: str_replace, insert and append.

Each returns the new content (and, for the reference's commands, its success text from
``memoryhub.memory_tool.texts``) or raises ``ToolError`` with the reference's error text; the
documents service decides where the content comes from and stores the result.
"""

from __future__ import annotations

from memoryhub.errors import ToolError
from memoryhub.memory_tool.texts import (
    insert_invalid_line,
    insert_ok,
    number_lines,
    str_replace_multiple,
    str_replace_no_match,
    str_replace_ok,
)


def _match_lines(content: str, old_str: str) -> list[int]:
    """1-based line of every match, overlapping ones included (the reference advances by 1)."""
    line_numbers: list[int] = []
    start = 0
    while (position := content.find(old_str, start)) != -1:
        line_numbers.append(content[:position].count("\n") + 1)
        start = position + 1
    return line_numbers


def _snippet(new_content: str, changed_line_index: int) -> str:
    """Five lines of the new content around the first changed line (2 before, 2 after).

    The window starts from the line where ``old_str`` *began*, whatever ``new_str``'s length.
    """
    new_lines = new_content.split("\n")
    first = max(0, changed_line_index - 2)
    last = min(len(new_lines), changed_line_index + 3)
    return "\n".join(number_lines(new_lines[first:last], first + 1))


def apply_str_replace(content: str, old_str: str, new_str: str, path: str) -> tuple[str, str]:
    """Replace the single occurrence of ``old_str``; return ``(new content, success text)``.

    Uniqueness is ``str.count`` (non-overlapping), as in the reference: ``"aa"`` in ``"aaa"``
    counts once and is replaced, although the multiple-match message would list overlapping
    positions. An empty ``old_str`` matches everywhere (so fails as multiple), except in
    empty content where it matches once and the content becomes ``new_str``.
    """
    count = content.count(old_str)
    if count == 0:
        raise ToolError(str_replace_no_match(old_str, path))
    if count > 1:
        raise ToolError(str_replace_multiple(old_str, _match_lines(content, old_str)))
    changed_line_index = content[: content.find(old_str)].count("\n")
    new_content = content.replace(old_str, new_str)
    return new_content, str_replace_ok(_snippet(new_content, changed_line_index))


def _lines_for_insert(content: str) -> list[str]:
    """Split on LF only (CR kept), dropping the empty tail a final newline leaves.

    Unlike a view, ``"a\\n"`` is one line here, so insert_line ranges over [0, 1].
    """
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def apply_insert(content: str, insert_line: int, insert_text: str, path: str) -> tuple[str, str]:
    """Insert ``insert_text`` after line ``insert_line`` (0 = at the top), like the reference.

    The text loses its trailing newlines and becomes one or more whole lines; the result is
    joined with ``\\n`` and always ends with a newline (even if the original did not).
    """
    lines = _lines_for_insert(content)
    if insert_line < 0 or insert_line > len(lines):
        raise ToolError(insert_invalid_line(insert_line, len(lines)))
    lines.insert(insert_line, insert_text.rstrip("\n"))
    new_content = "\n".join(lines)
    if not new_content.endswith("\n"):
        new_content += "\n"
    return new_content, insert_ok(path)


def apply_append(content: str, text: str) -> str:
    """Add ``text`` at the end (this service's ``append``; the reference has none).

    A ``"\\n"`` goes between when the content is non-empty and does not already end with one,
    so appended text always starts on its own line; nothing else is added or removed (the
    text's own trailing newline, or its absence, is kept as given).
    """
    separator = "\n" if content and not content.endswith("\n") else ""
    return content + separator + text
