"""Identifiers from the URL or the body, validated as the spec says (Conventions)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from api.errors import ApiError

_USER_ID = re.compile(r"[A-Za-z0-9._@:+|\-]{1,128}")
_PROFILE = re.compile(r"[a-z0-9_\-]{1,64}")


def valid_user_id(value: object) -> str:
    if not isinstance(value, str) or not _USER_ID.fullmatch(value):
        raise ApiError(400, "invalid_user_id",
                       "user_id must be 1-128 characters of A-Z a-z 0-9 . _ @ : + | -")
    return value


def is_session_id(value: object) -> bool:
    return isinstance(value, str) and _USER_ID.fullmatch(value) is not None


def is_profile_name(value: object) -> bool:
    return isinstance(value, str) and _PROFILE.fullmatch(value) is not None


def valid_session_id(value: object) -> str:
    if not is_session_id(value):
        raise ApiError(400, "invalid_session_id",
                       "session_id must be 1-128 characters of A-Z a-z 0-9 . _ @ : + | -")
    return value  # type: ignore[return-value]


def valid_profile(value: object) -> str:
    if not is_profile_name(value):
        raise ApiError(400, "invalid_profile", "profile must be 1-64 characters of a-z 0-9 _ -")
    return value  # type: ignore[return-value]


def optional(query: Mapping[str, str], name: str,
             validator: Callable[[str], str]) -> str | None:
    """A query parameter that may be absent or empty."""
    value = query.get(name)
    return validator(value) if value else None  # absent or empty
