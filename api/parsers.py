"""How the API reads request bodies: JSON, bounded in depth, with a text rule for content.

Its own module because DRF reads ``DEFAULT_PARSER_CLASSES`` (``JSONBodyParser``) while
``rest_framework.views`` loads, which api/serializers.py imports.
"""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json

# No body of this API nests more than a few levels: 64 leaves free-form JSON (metadata) room
# and stays far below Python's recursion limit, whatever the stack depth of the view.
MAX_JSON_DEPTH = 64
TOO_DEEP_MESSAGE = f"JSON parse error - arrays and objects nest more than {MAX_JSON_DEPTH} deep."


class JSONBodyParser(JSONParser):
    """Every API body (``DEFAULT_PARSER_CLASSES``): UTF-8 JSON nesting at most
    ``MAX_JSON_DEPTH`` arrays and objects, else 400 ``invalid_json``.

    Python's json module recurses once per level: about 1,000 levels raised RecursionError
    (HTTP 500) while parsing, and a few hundred parsed but could exhaust the stack further on
    (``repr`` of a value in a tool error).
    """

    undecodable = "strict"  # what the UTF-8 decoder does with bytes that are not UTF-8

    def parse(self, stream: IO[bytes], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        # Always UTF-8, whatever a charset parameter says (DRF decodes with it): the contract's
        # bodies are UTF-8, and RFC 8259 defines no charset for application/json. Honouring it
        # stored UTF-8 sent as "charset=latin-1" as mojibake, and a codec that is not a text
        # encoding ("charset=rot13", "zlib", "base64") raised TypeError or zlib.error: a 500.
        try:
            text = codecs.getreader("utf-8")(stream, self.undecodable).read()
            data = drf_json.loads(
                text, parse_constant=drf_json.strict_constant if self.strict else None
            )
        except RecursionError as exc:
            raise ParseError(TOO_DEEP_MESSAGE) from exc
        except ValueError as exc:  # UnicodeDecodeError too
            raise ParseError(f"JSON parse error - {exc}") from exc
        if nests_deeper_than(data, MAX_JSON_DEPTH):
            raise ParseError(TOO_DEEP_MESSAGE)
        return data


def nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether parsed JSON nests more than ``limit`` arrays and objects (without recursion)."""
    pending = [(value, 1)] if isinstance(value, dict | list) else []
    while pending:
        item, depth = pending.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        pending.extend((child, depth + 1) for child in children
                       if isinstance(child, dict | list))
    return False


class TextRuleJSONParser(JSONBodyParser):
    """JSON whose strings may hold bytes that are not UTF-8, for the bodies that carry content.

    The contract refuses invalid UTF-8 *as a content rule* (documents: 422 ``not_text``; the
    memory tool: a tool error), not as a malformed body. So undecodable bytes become lone
    surrogates (``surrogateescape``) and reach the services, whose text check refuses them
    with the contract's code; a path holding them is refused as ``invalid_path``.
    """

    undecodable = "surrogateescape"
