"""Domain errors of the memory service.

Each carries a snake_case ``code`` (the documents API answers 422 with it) and a ``message``
for the model (the memory tool answers ``{"content": message, "is_error": true}``). Messages
of this service's own start with ``Error: `` and say what to do next.
"""

from __future__ import annotations


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


class FactNotFound(MemoryRefusal):
    code = "not_found"
    http_status = 404
