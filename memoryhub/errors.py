"""Domain errors of the memory service.

Each carries a snake_case ``code`` (the documents API answers 422 with it) and a ``message``
for the model (the memory tool answers ``{"content": message, "is_error": true}``). Messages
of this service's own start with ``Error: `` and say what to do next.
"""

from __future__ import annotations

# An error text quotes what the caller sent (a path, an identifier, old_str, a field name) up
# to this many characters: more than the longest identifier (128) and the longest path the
# service accepts as written (``/memories``, 255 bytes and a trailing slash: 265), so a text
# about an accepted value is never cut and the memory tool's texts stay the reference's. A
# 100 KB turn_id no longer comes back whole in its error.
ECHO_LIMIT = 300


def echo(text: str) -> str:
    """``text`` as an error message may quote it: whole up to ``ECHO_LIMIT`` characters, else
    its beginning and ``…``. Every message that quotes the caller's input goes through here."""
    return text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + "…"


class MemoryRefusal(Exception):
    """A memory operation refused: the base of every error below (not Python's MemoryError)."""

    code = "memory_error"
    http_status = 422

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolError(MemoryRefusal):
    """A reference-tool error (texts from memoryhub/memory_tool/texts.py)."""

    code = "tool_error"


class InvalidPathError(MemoryRefusal):
    code = "invalid_path"


class NotText(MemoryRefusal):
    code = "not_text"


class CredentialDetected(MemoryRefusal):
    code = "credential_detected"


class DocumentTooLarge(MemoryRefusal):
    code = "document_too_large"


class ScopeFull(MemoryRefusal):
    code = "scope_full"


class TooManyWrites(MemoryRefusal):
    code = "too_many_writes"
    http_status = 429


class MemoryDisabled(MemoryRefusal):
    code = "memory_disabled"
    http_status = 403


class InvalidScope(MemoryRefusal):
    code = "invalid_scope"
    http_status = 400


class VersionMismatch(MemoryRefusal):
    code = "version_mismatch"
    http_status = 412


class DocumentNotFound(MemoryRefusal):
    code = "not_found"
    http_status = 404


class FactTooLarge(MemoryRefusal):
    code = "fact_too_large"


class FactTimesOutOfOrder(MemoryRefusal):
    """``invalid_at`` before ``valid_at``: a fact no longer true before it was true."""

    code = "invalid_request"
    http_status = 400


class FactNotFound(MemoryRefusal):
    code = "not_found"
    http_status = 404
