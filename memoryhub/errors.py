"""Domain errors of the memory service.

Each carries a snake_case ``code`` (the documents API answers 422 with it) and a ``message``
for the model (the memory tool answers ``{"content": message, "is_error": true}``). Messages
of this service's own start with ``Error: `` and say what to do next.
"""

from __future__ import annotations


class MemoryError_(Exception):  # avoid shadowing the builtin MemoryError
    code = "memory_error"
    http_status = 422

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolError(MemoryError_):
    """A reference-tool error (texts from memoryhub/memory_tool/texts.py)."""

    code = "tool_error"


class InvalidPathError(MemoryError_):
    code = "invalid_path"


class NotText(MemoryError_):
    code = "not_text"


class CredentialDetected(MemoryError_):
    code = "credential_detected"


class DocumentTooLarge(MemoryError_):
    code = "document_too_large"


class ScopeFull(MemoryError_):
    code = "scope_full"


class TooManyWrites(MemoryError_):
    code = "too_many_writes"
    http_status = 429


class MemoryDisabled(MemoryError_):
    code = "memory_disabled"
    http_status = 403


class InvalidScope(MemoryError_):
    code = "invalid_scope"
    http_status = 400


class VersionMismatch(MemoryError_):
    code = "version_mismatch"
    http_status = 412


class DocumentNotFound(MemoryError_):
    code = "not_found"
    http_status = 404
