"""The rule for an app's free-form ``metadata``: a JSON object of at most 4 KiB (as compact
UTF-8 JSON), its text UTF-8 without NUL (PostgreSQL's jsonb refuses it), its numbers finite.
One rule for captured messages (``memoryhub.services.conversations``) and facts
(``memoryhub.services.facts``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
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
    try:  # measured as its compact JSON, the object as a client would send it
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a number past a double's range (1e400) parses as infinity
        raise MetadataRefusal("invalid_message", f"{where} holds a number too large for JSON "
                              "(at most about 1.8e308).") from None
    try:
        encoded = text.encode("utf-8")
    except UnicodeEncodeError:
        raise MetadataRefusal("not_text", f"{where} holds text that is not UTF-8.") from None
    if len(encoded) > MAX_METADATA_BYTES:
        raise MetadataRefusal("invalid_message",
                              f"{where} is over {MAX_METADATA_BYTES} bytes of JSON.")
    # PostgreSQL's jsonb refuses a NUL. Looked for in the keys and strings themselves: in the
    # JSON text, ``\u0000`` is also how a backslash followed by "u0000" ends (quoted code).
    if any("\x00" in text for text in metadata_texts(value)):
        raise MetadataRefusal("not_text", f"{where} holds a NUL character.")
    return value


def metadata_texts(value: object) -> Iterator[str]:
    """Every key and string inside a JSON value, depth first: where a credential could hide
    (the API's bodies nest at most 64 deep, api/parsers.py)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from metadata_texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from metadata_texts(item)


def metadata_rewritten(value: Any, rewrite: Callable[[str], str]) -> Any:
    """The same JSON value with each key and string rewritten (two keys rewritten alike keep
    the later one's value)."""
    if isinstance(value, str):
        return rewrite(value)
    if isinstance(value, dict):
        return {rewrite(key): metadata_rewritten(item, rewrite) for key, item in value.items()}
    if isinstance(value, list):
        return [metadata_rewritten(item, rewrite) for item in value]
    return value
