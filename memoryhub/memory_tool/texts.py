"""Every text of the memory tool, byte for byte as the reference implementation writes it.

The contract says results and error texts equal those of ``BetaLocalFilesystemMemoryTool``
(``anthropic.lib.tools._beta_builtin_memory_tool``, SDK 2.16.0, the same file as in 2.14.0)
for the same commands on paths under ``/memories``. This module holds those texts as pure
functions of plain data, so the service layer decides *what happened* and this module only
says it. It does not import the SDK (a dev dependency);
``tests/domain/test_memory_tool_texts.py`` runs the real reference next to these functions.

How the reference surfaces outcomes, and so what ``{"content", "is_error"}`` must carry:

- Success: the command returns a ``str``; the SDK's tool runner sends it as the
  ``tool_result`` content unchanged (``tool_result_content``: only unpaired surrogates are
  folded to U+FFFD, see ``well_formed``), without ``is_error``.
- Failure: the command raises ``ToolError(message)``; the runner sends ``message`` as the
  content with ``is_error: true``. The reference's messages do *not* start with ``Error:``.
  Any other exception (a type error on a malformed argument, ``NotADirectoryError``...) is
  sent as ``repr(exc)`` cut to 4096 characters; we never imitate those and answer with this
  service's own ``Error: ...`` texts instead.
- Here: functions named after an outcome return its text; the ``apply_*`` edits
  (``memoryhub.memory_tool.edits``) return the new content and the success text, or raise
  ``ToolError`` whose ``message`` is the error text.

Reference behaviour -> function here:

- view, file: ``Here's the content of <path> with line numbers:`` then ``<n:>6>\\t<line>``
  lines -> ``file_view``. The content is split on ``"\\n"`` only, so a trailing newline shows
  as a last, empty numbered line (``"a\\n"`` views as lines 1 ``a`` and 2 empty). Over 999,999
  lines -> ``ToolError(too_many_lines)``. ``view_range`` is *not validated* by the reference:
  it is used only when truthy and of length 2, ``start`` is clamped to at least 1, ``end ==
  -1`` means the last line, and Python slicing does the rest (``[5, 2]`` gives a header and
  nothing else; ``[1, -2]`` drops the last two lines). ``file_view`` does exactly that;
  ``check_view_range`` only refuses values the reference would crash on (non-integers).
- view, over 16,000 characters without view_range (this service's rule) -> ``truncate_view``.
- view, directory -> ``directory_view`` + ``directory_entries`` (ordering and sizes there).
- view/str_replace/insert on a missing path: ``The path <p> does not exist. Please provide a
  valid path.`` -> ``does_not_exist``; on a directory: ``The path <p> is not a file.`` ->
  ``not_a_file``; a file vanishing mid-read -> ``vanished``.
- create: ``File created successfully at: <p>`` -> ``create_ok``; ``File <p> already exists``
  (also for an existing directory, and for ``/memories`` itself) -> ``already_exists``.
- str_replace: no match, several matches, success snippet -> ``edits.apply_str_replace`` (texts:
  ``str_replace_no_match``, ``str_replace_multiple``, ``str_replace_ok``).
- insert: ``Invalid `insert_line` parameter ...``, ``The file <p> has been edited.`` ->
  ``edits.apply_insert`` (``insert_invalid_line``, ``insert_ok``).
- delete: ``Cannot delete the /memories directory itself``, ``The path <p> does not exist``
  (no "Please provide..." here), ``Successfully deleted <p>`` (file and directory alike) ->
  ``delete_root``, ``delete_does_not_exist``, ``delete_ok``.
- rename: ``Cannot rename the /memories directory itself``, ``The destination <new> already
  exists`` (checked before the source exists; renaming onto ``/memories`` hits it),
  ``The path <old> does not exist``, ``Successfully renamed <old> to <new>`` ->
  ``rename_root``, ``rename_destination_exists``, ``rename_does_not_exist``, ``rename_ok``.
- The reference's ``Path must start with /memories, got: ...`` and ``... would escape
  /memories directory`` have no equivalent: this service accepts ``/notes/a.md`` and refuses
  bad paths with ``memoryhub.paths.invalid_path_message``.
- Not in the reference: ``append`` -> ``edits.apply_append`` / ``append_ok``.

Every ``path`` argument below is the path *as the caller wrote it*, because the reference
echoes ``command.path`` verbatim (``/memories/`` stays ``/memories/``). Paths reach these texts
only once accepted, so they are shorter than ``memoryhub.errors.ECHO_LIMIT``; ``old_str`` and
``view_range`` are quoted through ``echo`` (the one difference from the reference: an
``old_str`` over 300 characters is quoted cut).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

# One ToolError for the whole service: a failed command, ``message`` is the text for the model
# (sent with ``is_error: true``). The domain's class, so the memory tool catches one family.
from memoryhub.errors import ToolError, echo
from memoryhub.paths import has_memories_prefix, is_under, relative_path

__all__ = [
    "DIRECTORY_SIZE",
    "LINE_NUMBER_WIDTH",
    "MAX_LINES",
    "VIEW_CHAR_LIMIT",
    "DirEntry",
    "ToolError",
    "already_exists",
    "append_ok",
    "check_view_range",
    "create_ok",
    "delete_does_not_exist",
    "delete_ok",
    "delete_root",
    "directory_entries",
    "directory_view",
    "does_not_exist",
    "file_view",
    "format_size",
    "insert_invalid_line",
    "insert_ok",
    "not_a_file",
    "number_lines",
    "rename_destination_exists",
    "rename_does_not_exist",
    "rename_ok",
    "rename_root",
    "str_replace_multiple",
    "str_replace_no_match",
    "str_replace_ok",
    "too_many_lines",
    "truncate_view",
    "vanished",
    "view_range_invalid",
    "well_formed",
]

MAX_LINES = 999_999
LINE_NUMBER_WIDTH = len(str(MAX_LINES))  # 6, as in the reference
VIEW_CHAR_LIMIT = 16_000
# The reference prints a directory's own st_size. Our directories are implied by documents and
# have no size, so we print what an ordinary directory on ext4 (and most Linux filesystems with
# 4 KiB blocks) reports: 4096 bytes, shown as "4K". That is what a client running the reference
# tool on a typical Linux disk sends the model, so listings stay byte-identical there.
DIRECTORY_SIZE = 4096

_LONE_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class DirEntry(NamedTuple):
    """One line of a directory view: ``relative_path`` is below the viewed directory, no slashes
    at either end; ``size`` is in bytes (UTF-8 length for a document)."""

    relative_path: str
    size: int
    is_dir: bool


def well_formed(text: str) -> str:
    """Fold unpaired surrogates to U+FFFD, as the SDK does to every tool_result it sends."""
    return _LONE_SURROGATE_RE.sub("\ufffd", text)


def format_size(size: int) -> str:
    """The reference's human size: ``0B``, ``12B``, ``4K``, ``1.5K``, ``2.0M`` (1024-based).

    Whole values print without a decimal, others with one digit, and the unit is picked from
    the bit length, so 1000 bytes is ``1000B`` and 1536 is ``1.5K``.
    """
    if size == 0:
        return "0B"
    units = ["B", "K", "M", "G"]
    index = min((size.bit_length() - 1) // 10, len(units) - 1)
    value = size / (1024**index)
    if value == int(value):
        return f"{int(value)}{units[index]}"
    return f"{value:.1f}{units[index]}"


# --- plain outcome texts -------------------------------------------------------------------


def does_not_exist(path: str) -> str:
    """view, str_replace and insert on a path that names nothing."""
    return f"The path {path} does not exist. Please provide a valid path."


def not_a_file(path: str) -> str:
    """str_replace and insert on a directory."""
    return f"The path {path} is not a file."


def vanished(path: str) -> str:
    """A document deleted or renamed between lookup and read (the reference's race text)."""
    return f"The file {path} no longer exists (may have been deleted or renamed concurrently)."


def too_many_lines(path: str) -> str:
    """view of a document with more than 999,999 lines (unreachable under default limits)."""
    return f"File {path} exceeds maximum line limit of 999,999 lines."


def create_ok(path: str) -> str:
    return f"File created successfully at: {path}"


def already_exists(path: str) -> str:
    """create onto an existing document, an existing directory, or the root."""
    return f"File {path} already exists"


def str_replace_no_match(old_str: str, path: str) -> str:
    """The reference quotes ``old_str`` whole; here one over ``ECHO_LIMIT`` characters is cut."""
    return (f"No replacement was performed, old_str `{echo(old_str)}` did not appear verbatim "
            f"in {path}.")


def str_replace_multiple(old_str: str, line_numbers: Sequence[int]) -> str:
    """Several matches; the reference names the lines but not the path, and has no final dot."""
    lines = ", ".join(map(str, line_numbers))
    return (
        f"No replacement was performed. Multiple occurrences of old_str `{echo(old_str)}` in "
        "lines: "
        f"{lines}. Please ensure it is unique"
    )


def str_replace_ok(snippet: str) -> str:
    """Success; the reference's text does not name the path."""
    return (
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):\n" + snippet
    )


def insert_invalid_line(insert_line: int, line_count: int) -> str:
    return (
        f"Invalid `insert_line` parameter: {insert_line}. "
        f"It should be within the range [0, {line_count}]."
    )


def insert_ok(path: str) -> str:
    return f"The file {path} has been edited."


def append_ok(path: str) -> str:
    """append is this service's own command; it reports like insert, its nearest relative."""
    return insert_ok(path)


def delete_root() -> str:
    return "Cannot delete the /memories directory itself"


def delete_does_not_exist(path: str) -> str:
    """Note: shorter than ``does_not_exist`` (no "Please provide a valid path.")."""
    return f"The path {path} does not exist"


def delete_ok(path: str) -> str:
    """Same text for a document and for a directory with everything under it."""
    return f"Successfully deleted {path}"


def rename_root() -> str:
    return "Cannot rename the /memories directory itself"


def rename_destination_exists(new_path: str) -> str:
    """Checked before the source's existence, and true of the root as destination."""
    return f"The destination {new_path} already exists"


def rename_does_not_exist(old_path: str) -> str:
    return f"The path {old_path} does not exist"


def rename_ok(old_path: str, new_path: str) -> str:
    return f"Successfully renamed {old_path} to {new_path}"


def view_range_invalid(view_range: object) -> str:
    """This service's own error for a view_range the reference would crash on."""
    return (
        f"Error: view_range must be a list of two integers [start, end], got "
        f"{echo(repr(view_range))}. "
        "Lines are numbered from 1; use -1 as end to read to the last line."
    )


# --- file views ----------------------------------------------------------------------------


def number_lines(lines: Sequence[str], first_number: int) -> list[str]:
    """The reference's ``<number right-aligned in 6>\\t<line>`` rows."""
    return [
        f"{str(index + first_number).rjust(LINE_NUMBER_WIDTH)}\t{line}"
        for index, line in enumerate(lines)
    ]


def _file_header(path: str) -> str:
    return f"Here's the content of {path} with line numbers:\n"


def _view_lines(path: str, content: str) -> list[str]:
    """Split like the reference view (LF only, a trailing newline leaves an empty last line)."""
    lines = content.split("\n")
    if len(lines) > MAX_LINES:
        raise ToolError(too_many_lines(path))
    return lines


def check_view_range(view_range: object) -> tuple[int, int] | None:
    """Turn the model's ``view_range`` into what ``file_view`` uses, or raise ``ToolError``.

    Mirrors the reference, which applies a range only when it is truthy and has two items and
    otherwise shows the whole file: ``None``, every other falsy value (``[]``, ``0``,
    ``false``, ``""``, ``{}``) or a list of another length give ``None``. Two integers are
    returned unchecked (out-of-range values slice like the reference does). Anything else
    (a string, a number, an object, a pair of non-integers) is answered with
    ``view_range_invalid``. What the reference's lax input model turns into integers (``"2"``,
    ``2.0``, ``true``) is turned so before this check (``commands.reference_input``); what it
    cannot turn makes the reference raise a bare ``TypeError``.
    """
    if not view_range:  # the reference's own test: `if command.view_range and ...`
        return None
    if not isinstance(view_range, list | tuple):
        raise ToolError(view_range_invalid(view_range))
    if len(view_range) != 2:
        return None
    start, end = view_range
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in (start, end)):
        raise ToolError(view_range_invalid(view_range))
    return (start, end)


def file_view(path: str, content: str, view_range: Sequence[int] | None = None) -> str:
    """The reference view of a document, with optional ``view_range`` (see ``check_view_range``).

    No size limit here: the reference has none; ``truncate_view`` adds this service's.
    """
    lines = _view_lines(path, content)
    shown: Sequence[str] = lines
    first_number = 1
    if view_range and len(view_range) == 2:
        start_index = max(1, view_range[0]) - 1
        end_index = len(lines) if view_range[1] == -1 else view_range[1]
        shown = lines[start_index:end_index]
        first_number = start_index + 1
    return _file_header(path) + "\n".join(number_lines(shown, first_number))


def truncate_view(path: str, content: str, limit: int = VIEW_CHAR_LIMIT) -> str:
    """A whole-document view held to ``limit`` characters of content (the contract's 16,000).

    A document within the limit views exactly as in the reference. A longer one shows, under
    the same header, the first whole lines whose characters plus their newlines fit in
    ``limit``, then one line telling the model which ``view_range`` reads the rest, e.g.
    ``... (file truncated at line 310 of 702; call view with "view_range": [311, 702] to read
    more)``. Line counts follow the reference's numbering (a trailing newline counts as a
    last empty line), so that view_range returns exactly the remaining lines. A first line
    longer than ``limit`` leaves no line shown ("truncated at line 0"); view_range can still
    fetch it, since explicit ranges are never truncated.
    """
    if len(content) <= limit:
        return file_view(path, content)
    lines = _view_lines(path, content)
    used = 0
    shown = 0
    for line in lines:
        cost = len(line) + 1  # the line and its newline
        if used + cost > limit:
            break
        used += cost
        shown += 1
    # shown < len(lines) always: if every line fitted, the content would be within the limit.
    total = len(lines)
    notice = (
        f"... (file truncated at line {shown} of {total}; "
        f'call view with "view_range": [{shown + 1}, {total}] to read more)'
    )
    return _file_header(path) + "\n".join([*number_lines(lines[:shown], 1), notice])


# --- directory views -----------------------------------------------------------------------


def directory_entries(
    directory: str,
    documents: Iterable[tuple[str, int]],
    directory_size: int = DIRECTORY_SIZE,
) -> list[DirEntry]:
    """The entries of a directory view, filtered and ordered like the reference's walk.

    ``directory`` is canonical (``/`` for the root); ``documents`` are ``(canonical path,
    UTF-8 size)`` pairs, any of them (those not under ``directory`` are ignored).

    The reference walks the tree depth first: each directory's children sorted by name
    (plain ``str`` order), a subdirectory listed right before its own children, two levels
    deep at most (a directory at depth 2 is listed, its contents are not), and every name
    starting with ``.`` skipped along with everything under it. Sorting entries by their
    tuple of segments gives exactly that pre-order: ``notes/`` < ``notes/a.md`` <
    ``notes-old/`` even though ``"notes/"`` > ``"notes-old/"`` as strings.

    Sizes: a document's own byte size; a directory ``directory_size`` (see
    ``DIRECTORY_SIZE``: the reference shows the directory inode's st_size, 4096 on ext4,
    which has no meaning for implied directories). A name that is both a document and a
    directory (impossible on the reference's filesystem) lists the document first.
    """
    entries: dict[tuple[tuple[str, ...], bool], DirEntry] = {}
    for path, size in documents:
        if not is_under(path, directory):
            continue
        parts = relative_path(path, directory).split("/")
        for depth, name in enumerate(parts[:2], start=1):
            if name.startswith("."):
                break  # hidden: skipped, and never descended into
            key_parts = tuple(parts[:depth])
            is_dir = depth < len(parts)
            entries[(key_parts, is_dir)] = DirEntry(
                relative_path="/".join(key_parts),
                size=directory_size if is_dir else size,
                is_dir=is_dir,
            )
    return [entries[key] for key in sorted(entries)]


def directory_view(path: str, entries: Iterable[DirEntry], size: int = DIRECTORY_SIZE) -> str:
    """The reference's directory listing.

    ``Here're the files and directories up to 2 levels deep in <path>, excluding hidden
    items:`` then ``<size>\\t<path>`` for the directory itself and ``<size>\\t<path>/<entry>``
    per entry, directories suffixed ``/``, sizes by ``format_size``; lines joined by ``\\n``,
    no trailing newline. ``entries`` come from ``directory_entries``.

    The reference joins ``command.path + "/" + entry`` verbatim, so ``/memories/`` lists
    ``/memories//notes/``; we keep that for paths written under ``/memories`` (byte
    parity), and for paths written without the prefix (``/`` or ``/notes/``, which the
    reference refuses) drop the trailing slash first, so ``/`` lists ``/notes/``.
    """
    prefix = path if has_memories_prefix(path) else path.rstrip("/")
    header = (
        f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
    )
    lines = [f"{format_size(size)}\t{path}"]
    for entry in entries:
        suffix = "/" if entry.is_dir else ""
        lines.append(f"{format_size(entry.size)}\t{prefix}/{entry.relative_path}{suffix}")
    return f"{header}\n" + "\n".join(lines)
