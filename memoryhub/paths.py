"""Memory document paths: one validator, one canonical form, and the directory arithmetic.

Contract (API v1, "Paths"):

- A path starts with ``/`` and its segments are separated by ``/``.
- ``/memories`` alone, or followed by ``/``, is the root. ``/memories/notes/a.md`` and
  ``/notes/a.md`` name the same document, stored in the *canonical* form ``/notes/a.md``;
  the root itself is ``/``. ``display_path`` gives back the ``/memories/...`` form the memory
  tool's model-facing texts use. Responses echo the path the way the caller wrote it, so the
  raw spelling is kept by callers and only the canonical form is stored.
- Refused: a segment that is empty, ``.`` or ``..`` or starts with ``.``; a backslash, ``%``,
  ``:``, NUL or any control character; over 255 UTF-8 bytes or over 16 segments.

Decisions where the contract is silent (documented here because callers depend on them):

- **Trailing slash.** One trailing slash is accepted and dropped, for any path:
  ``/memories/notes/`` is ``/notes`` and ``/memories/`` is the root. This is what the reference
  tool does (it resolves paths through ``pathlib``, which forgets the slash; it even creates
  the file ``a.md`` for ``create /memories/a.md/``). ``written_as_directory`` tells a caller
  that wants to be stricter for writes that the caller wrote a directory-looking path. Two
  trailing slashes leave an empty segment and are refused.
- **Limits are measured on the canonical form** (255 bytes, 16 segments), so the two
  spellings of one document are either both valid or both refused.
- **A first segment named ``memories`` is refused.** ``/memories/memories/a`` would be stored as
  ``/memories/a``, and that canonical path, written back by an app, would mean ``/a``: the same
  string would name two documents. Refusing it keeps ``normalize_path`` idempotent on its
  own output.
- **Characters refused besides the contract's:** unpaired surrogates (not encodable in UTF-8,
  so not storable), the line and paragraph separators U+2028/U+2029, every format character
  (Unicode category ``Cf``: zero-width spaces and joiners, the bidi marks, embeddings,
  overrides and isolates, the BOM, soft hyphens, tags), the Hangul fillers and the combining
  grapheme joiner (letters and marks that print nothing), and lookalikes of ``/`` and ``.``
  (fullwidth solidus U+FF0F, division slash U+2215, fraction slash U+2044, one-dot leader
  U+2024, fullwidth full stop U+FF0E...: ``_SLASH_LOOKALIKES``, ``_DOT_LOOKALIKES``). Paths
  are printed one per line in tool texts, the prompt index and web pages: these characters
  break or reorder such lines, or make one path read as another (``/notes／diet.md`` as
  ``/notes/diet.md``). Control characters are Unicode category ``Cc`` (which includes DEL and
  the C1 range). The price: an emoji joined with U+200D, or a Persian name that needs the
  zero-width non-joiner, cannot be a path.
- No Unicode normalisation: ``é`` precomposed and decomposed are two names, as on the
  reference tool's filesystem.
"""

from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache

from memoryhub.errors import echo

__all__ = [
    "MAX_PATH_BYTES",
    "MAX_SEGMENTS",
    "MEMORIES_PREFIX",
    "ROOT",
    "InvalidPath",
    "display_path",
    "document_path_pattern",
    "has_memories_prefix",
    "invalid_path_message",
    "document_path_max_length",
    "is_under",
    "normalize_path",
    "parent_dirs",
    "parent_of",
    "relative_depth",
    "relative_path",
    "reparent",
    "segments",
    "written_as_directory",
]

ROOT = "/"
MEMORIES_PREFIX = "/memories"
MAX_PATH_BYTES = 255
MAX_SEGMENTS = 16

# What imitates the two characters that give a path its shape (Unicode's confusables of "/"
# and "."), so that no segment can look like two, or a name like a hidden one or "..".
_SLASH_LOOKALIKES = (
    "\u2044\u2215\u2571\u27cb\u29f8\uff0f\u1735\u2f03\u3033\U0001d23a"
)  # fraction, division, box-drawing, rising diagonal, big, fullwidth solidus...
_DOT_LOOKALIKES = (
    "\u2024\u2025\ufe52\uff0e\u0701\u0702\ua60e\U00010a50"
)  # one- and two-dot leader, small and fullwidth full stop, Syriac, Vai, Kharoshthi dots
# Letters and marks that print nothing (the format characters are refused by category).
_INVISIBLE = "\u115f\u1160\u3164\uffa0\u034f"  # Hangul fillers, combining grapheme joiner
# Characters refused anywhere in a path, on top of the categories below.
_FORBIDDEN_CHARS = frozenset(
    "\\%:\u2028\u2029" + _SLASH_LOOKALIKES + _DOT_LOOKALIKES + _INVISIBLE
)
# Cc: control characters (C0, DEL, C1). Cf: format characters, invisible by design (zero-width
# spaces and joiners, bidi controls, the BOM). Cs: unpaired surrogates, not UTF-8 encodable.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})


class InvalidPath(ValueError):
    """A path the service refuses; ``path`` is the value exactly as the caller sent it.

    ``str(exc)`` is the model-facing text (``Error: <path> is not an allowed path``);
    ``reason`` is a short explanation for logs and tests, never shown to the model because the
    contract fixes the text.
    """

    def __init__(self, path: object, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(invalid_path_message(path))


def invalid_path_message(raw: object) -> str:
    """The contract's refusal text, echoing the path as the caller wrote it (a path too long to
    be accepted is cut: ``memoryhub.errors.echo``)."""
    return f"Error: {echo(str(raw))} is not an allowed path"


def has_memories_prefix(raw: str) -> bool:
    """True when ``raw`` is ``/memories`` or starts with ``/memories/`` (not ``/memoriesX``)."""
    return raw == MEMORIES_PREFIX or raw.startswith(MEMORIES_PREFIX + "/")


def written_as_directory(raw: str) -> bool:
    """True when the caller ended the path with ``/`` (or wrote the bare root).

    ``normalize_path`` accepts such paths for every command, like the reference tool; a
    service that wants to refuse creating a *file* named by a directory-looking path asks here.
    """
    return raw.endswith("/") or raw == MEMORIES_PREFIX


def _check_characters(raw: str) -> None:
    """Refuse characters that cannot be stored or that would break one-line displays."""
    for char in raw:
        if char in _FORBIDDEN_CHARS or unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise InvalidPath(raw, f"forbidden character U+{ord(char):04X}")


def _strip_root_prefix(raw: str) -> str:
    """``/memories`` -> ``/``, ``/memories/x`` -> ``/x``; anything else unchanged."""
    if has_memories_prefix(raw):
        return raw[len(MEMORIES_PREFIX) :] or ROOT
    return raw


def _check_segment(raw: str, segment: str) -> None:
    """Refuse empty, ``.``, ``..`` and hidden (dot-leading) segments."""
    if segment == "":
        raise InvalidPath(raw, "empty segment")
    if segment.startswith("."):
        raise InvalidPath(raw, f"segment {segment!r} starts with '.'")


def normalize_path(raw: object) -> str:
    """Validate a path as the caller wrote it and return its canonical stored form.

    ``/memories/notes/a.md`` and ``/notes/a.md`` both give ``/notes/a.md``; ``/memories``,
    ``/memories/`` and ``/`` give ``/``. Raises ``InvalidPath`` (a ``ValueError``) for
    anything the contract refuses, including a value that is not a string.
    """
    if not isinstance(raw, str):
        raise InvalidPath(raw, "not a string")
    if not raw.startswith("/"):
        raise InvalidPath(raw, "does not start with '/'")
    _check_characters(raw)

    rest = _strip_root_prefix(raw)
    if rest == ROOT:
        return ROOT
    if rest.endswith("/"):
        rest = rest[:-1]  # one trailing slash is allowed; a second leaves an empty segment

    parts = rest[1:].split("/")
    for segment in parts:
        _check_segment(raw, segment)
    if parts[0] == "memories":
        raise InvalidPath(raw, "a document cannot be named /memories inside the root")
    if len(parts) > MAX_SEGMENTS:
        raise InvalidPath(raw, f"more than {MAX_SEGMENTS} segments")
    if len(rest.encode("utf-8")) > MAX_PATH_BYTES:
        raise InvalidPath(raw, f"more than {MAX_PATH_BYTES} bytes")
    return rest


def display_path(canonical: str) -> str:
    """The ``/memories/...`` spelling of a canonical path, as the memory tool shows paths."""
    return MEMORIES_PREFIX if canonical == ROOT else MEMORIES_PREFIX + canonical


def segments(canonical: str) -> list[str]:
    """The segments of a canonical path; the root has none."""
    return [] if canonical == ROOT else canonical[1:].split("/")


def parent_of(canonical: str) -> str:
    """The directory containing ``canonical`` (the root is its own parent)."""
    if canonical == ROOT:
        return ROOT
    head = canonical.rsplit("/", 1)[0]
    return head or ROOT


def parent_dirs(canonical: str) -> list[str]:
    """Every directory above ``canonical``, root first: ``/a/b/c.md`` -> ``['/', '/a', '/a/b']``.

    Directories exist only because documents are under them, so this is the set of
    directories a document keeps alive.
    """
    if canonical == ROOT:
        return []
    parts = segments(canonical)
    return [ROOT] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


def is_under(canonical: str, directory: str) -> bool:
    """True when ``canonical`` is strictly below ``directory`` (never the directory itself).

    Compares whole segments, so ``/notes-old/a.md`` is not under ``/notes``.
    """
    if directory == ROOT:
        return canonical != ROOT
    return canonical.startswith(directory + "/")


def relative_path(canonical: str, directory: str) -> str:
    """``canonical`` relative to ``directory`` without a leading slash (``notes/a.md``)."""
    if not is_under(canonical, directory):
        raise ValueError(f"{canonical} is not under {directory}")
    return canonical[1:] if directory == ROOT else canonical[len(directory) + 1 :]


def relative_depth(canonical: str, directory: str) -> int:
    """How many levels below ``directory`` ``canonical`` is: 1 for a direct child.

    A directory view shows depths 1 and 2 only, as the reference tool does.
    """
    return relative_path(canonical, directory).count("/") + 1


def reparent(canonical: str, old_directory: str, new_directory: str) -> str:
    """Where ``canonical`` lands when ``old_directory`` is renamed to ``new_directory``.

    The result can break the length limits; callers re-validate it with ``normalize_path``.
    """
    tail = relative_path(canonical, old_directory)
    return "/" + tail if new_directory == ROOT else f"{new_directory}/{tail}"


# --- The rule as a regular expression (the documents API's OpenAPI schema) ------------------


def _refused_ranges() -> list[tuple[int, int]]:
    """Every character ``_check_characters`` refuses, as ranges of code points. Surrogates are
    left out: they cannot be written in UTF-8, so no URL or JSON text can carry one."""
    ranges: list[tuple[int, int]] = []
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        category = unicodedata.category(char)
        if category != "Cs" and (char in _FORBIDDEN_CHARS or category in _FORBIDDEN_CATEGORIES):
            if ranges and ranges[-1][1] == point - 1:
                ranges[-1] = (ranges[-1][0], point)
            else:
                ranges.append((point, point))
    return ranges


def _class_char(point: int) -> str:
    char = chr(point)
    return "\\" + char if char in "\\]^-[" else char


@lru_cache(maxsize=1)
def document_path_pattern() -> str:
    """The paths ``normalize_path`` accepts for a document, written without their leading
    ``/`` (as the documents API's URL carries them), as one regular expression that Python and
    ECMAScript (JSON Schema) read alike: 1-16 segments of allowed characters, none empty or
    starting with ``.``, no trailing ``/``, after an optional ``memories/``, and a first
    segment other than ``memories``. The byte limit is not in it (a regex counts characters):
    ``document_path_max_length`` is its bound in characters."""
    refused = "".join(_class_char(a) + ("" if a == b else "-" + _class_char(b))
                      for a, b in _refused_ranges())
    segment = f"[^/.{refused}][^/{refused}]*"
    prefix = MEMORIES_PREFIX[1:]
    return (f"^(?:{prefix}/)?(?!{prefix}(?:/|$)){segment}"
            f"(?:/{segment}){{0,{MAX_SEGMENTS - 1}}}$")


def document_path_max_length() -> int:
    """The longest such path in characters: ``memories/`` and a canonical path of
    ``MAX_PATH_BYTES`` ASCII bytes less its leading ``/``. Any character past ASCII takes
    more than one byte, so a path this long may still be refused for its bytes."""
    return len(MEMORIES_PREFIX) + MAX_PATH_BYTES - 1
