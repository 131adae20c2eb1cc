"""Numbers written as text: one strict reading for every number a request carries as text.

The page size and the event cursor in query strings, entity tags (``If-Match: "3"``), the
tenant part of API keys and invitation tokens, ``Content-Length``, webhook timestamps and the
ids in URLs all arrive as text. ``str.isdigit()`` and ``int()`` are too lenient for them:
``"²".isdigit()`` is True but ``int("²")`` raises (an HTTP 500), ``int("١٢")`` reads
Arabic-Indic digits as 12 (a second spelling of an invitation link or a page size), and
``int(" +1_0 ")`` is 10.

``parse_natural`` accepts 1 to ``MAX_DIGITS`` ASCII digits and nothing else, so it never
raises and what it returns always fits PostgreSQL's ``bigint``. ``IdConverter`` is the same
rule for ids in URL paths (``<id:pk>``).
"""

from __future__ import annotations

import re

# Every number of 18 digits fits a bigint (at most 9,223,372,036,854,775,807); 19 may not.
MAX_DIGITS = 18
DIGITS_PATTERN = f"[0-9]{{1,{MAX_DIGITS}}}"  # [0-9], not \d: \d matches every script's digits
_NATURAL = re.compile(DIGITS_PATTERN)


def parse_natural(text: str) -> int | None:
    """The number ``text`` spells in 1-18 ASCII digits (leading zeros allowed); None for
    anything else: other scripts' digits, signs, spaces, underscores, an empty string."""
    if _NATURAL.fullmatch(text) is None:
        return None
    return int(text)


class IdConverter:
    """The URL converter ``<id:...>`` (registered in ``memoryhub.apps``): a database id.

    Django's ``<int:...>`` matches any number of digits, and a 25-digit id reached PostgreSQL
    as an out-of-range bigint (HTTP 500); here such a URL matches no route (404).
    """

    regex = DIGITS_PATTERN

    def to_python(self, value: str) -> int:
        return int(value)  # the regex admits ASCII digits only

    def to_url(self, value: int) -> str:
        return str(value)
