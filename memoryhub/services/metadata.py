"""The rule for an app's free-form ``metadata``: a JSON object of at most 4 KiB (UTF-8 JSON),
text that is UTF-8 without NUL (PostgreSQL's jsonb refuses it). One rule for captured
messages (``memoryhub.services.conversations``) and facts (``memoryhub.services.facts``)."""

from __future__ import annotations

import json
from typing import Any

from memoryhub.errors import MemoryRefusal

MAX_METADATA_BYTES = 4096


class MetadataRefusal(MemoryRefusal):
    """Metadata the rule refuses: 400 ``invalid_message`` (its shape or size) or ``not_text``."""

    http_status = 400

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def metadata_checked(value: object, where: str) -> dict[str, Any]:
    """``value`` as stored (``{}`` for None); ``where`` names it in the refusal."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MetadataRefusal("invalid_message", f"{where} must be a JSON object.")
    try:
        encoded = json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError):
        raise MetadataRefusal("not_text", f"{where} holds text that is not UTF-8.") from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise MetadataRefusal("invalid_message",
                              f"{where} is over {MAX_METADATA_BYTES} bytes of JSON.")
    if b"\\u0000" in encoded:  # json escapes NUL; PostgreSQL's jsonb refuses it
        raise MetadataRefusal("not_text", f"{where} holds a NUL character.")
    return value
