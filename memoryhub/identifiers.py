"""The identifiers the service accepts (API v1, Conventions), for every way in.

``user_id`` and ``session_id`` are 1-128 characters of ``A-Z a-z 0-9 . _ @ : + | -``; a
profile name is 1-64 characters of ``a-z 0-9 _ -``. The API (``api/params.py`` turns the
refusal into its 400), the memory tool (a tool error naming the field) and the web pages (a
form error) apply the same rules from here, so no way in can store what another refuses.
"""

from __future__ import annotations

import os
import re
import threading
import time
import unicodedata
import uuid
from dataclasses import dataclass
from typing import TypeGuard

from memoryhub.errors import MemoryRefusal

# Characters that would break a one-line display (a document's description in the index, a
# tenant's name in a mail's subject): controls, line and paragraph separators, unpaired
# surrogates (api.serializers.one_line_pattern states it in the OpenAPI schema).
NOT_ONE_LINE = frozenset({"Cc", "Zl", "Zp", "Cs"})


def is_one_line(text: str) -> bool:
    return not any(unicodedata.category(char) in NOT_ONE_LINE for char in text)


@dataclass(frozen=True)
class CharacterRule:
    """Identifiers of 1 to ``max_length`` characters out of ``parts`` (ranges such as ``a-z``
    and single characters). One declaration gives the validator's regex, the text of its
    refusal and the OpenAPI pattern (``api/schema.py``), so the three cannot drift apart."""

    parts: tuple[str, ...]
    max_length: int

    @property
    def character_class(self) -> str:
        """The parts as the inside of a regex ``[...]``, read alike by Python and ECMAScript."""
        return "".join(part if _is_range(part) else re.escape(part) for part in self.parts)

    @property
    def pattern(self) -> str:
        """The whole value, anchored (``fullmatch`` in Python, ``^...$`` in JSON Schema)."""
        return f"^[{self.character_class}]{{1,{self.max_length}}}$"

    def __str__(self) -> str:
        return f"1-{self.max_length} characters of {' '.join(self.parts)}"


def _is_range(part: str) -> bool:
    return len(part) == 3 and part[1] == "-"


USER_ID = CharacterRule(("A-Z", "a-z", "0-9", ".", "_", "@", ":", "+", "|", "-"), 128)
PROFILE = CharacterRule(("a-z", "0-9", "_", "-"), 64)
SESSION_ID = USER_ID  # a session_id follows the user_id rule (and so does a turn_id)
USER_ID_RULE = str(USER_ID)  # "1-128 characters of A-Z a-z 0-9 . _ @ : + | -"
PROFILE_RULE = str(PROFILE)

_USER_ID = re.compile(USER_ID.pattern)
_PROFILE = re.compile(PROFILE.pattern)


class InvalidIdentifier(MemoryRefusal):
    """An identifier outside its rule; ``code`` names which one (``invalid_user_id``, ...)."""

    http_status = 400

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def is_user_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _USER_ID.fullmatch(value) is not None


def is_session_id(value: object) -> TypeGuard[str]:
    """A session_id follows the user_id rule (and so does a memory tool ``turn_id``)."""
    return is_user_id(value)


def is_profile_name(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _PROFILE.fullmatch(value) is not None


def user_id_checked(value: object) -> str:
    if not is_user_id(value):
        raise InvalidIdentifier("invalid_user_id", f"user_id must be {USER_ID_RULE}")
    return value


def session_id_checked(value: object) -> str:
    if not is_session_id(value):
        raise InvalidIdentifier("invalid_session_id", f"session_id must be {USER_ID_RULE}")
    return value


def profile_checked(value: object) -> str:
    if not is_profile_name(value):
        raise InvalidIdentifier("invalid_profile", f"profile must be {PROFILE_RULE}")
    return value


# --- time-ordered ids ----------------------------------------------------------------------

_uuid7_last = (0, 0)  # (milliseconds, counter) of the last id this process made
_uuid7_lock = threading.Lock()


def uuid7() -> uuid.UUID:
    """A UUID version 7 (RFC 9562): 48 bits of Unix milliseconds, a 12-bit counter, random bits.

    Conversations and messages are keyed by it: the ids are opaque to callers (unlike a
    shared sequence, they tell nothing of other tenants' volume), new rows land at the right
    end of the primary key's B-tree instead of at random pages, and ordering by id is
    ordering by creation, which the session's message order relies on. The counter
    (RFC 9562 method 1) keeps ids of one process strictly increasing within a millisecond.
    Python 3.14's ``uuid.uuid7`` does the same; this is for 3.11.
    """
    global _uuid7_last
    with _uuid7_lock:
        millis = time.time_ns() // 1_000_000
        last_millis, counter = _uuid7_last
        if millis <= last_millis:
            millis, counter = last_millis, counter + 1
            if counter > 0xFFF:  # 4096 ids in one millisecond: borrow the next one
                millis, counter = millis + 1, 0
        else:
            counter = 0
        _uuid7_last = (millis, counter)
    random_bits = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | random_bits
    return uuid.UUID(int=value)
