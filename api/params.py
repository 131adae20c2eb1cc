"""Identifiers from the URL or the body, as the API answers for them (spec: Conventions).

The rules are the domain's (``memoryhub.identifiers``); this module only translates a
refusal into the contract's 400 with its code (``invalid_user_id``, ``invalid_session_id``,
``invalid_profile``) and message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from api.errors import ApiError
from memoryhub.identifiers import (
    USER_ID_RULE,
    InvalidIdentifier,
    is_user_id,
    profile_checked,
    session_id_checked,
    user_id_checked,
)


def _api_error(exc: InvalidIdentifier) -> ApiError:
    return ApiError(400, exc.code, exc.message)


def valid_user_id(value: object) -> str:
    try:
        return user_id_checked(value)
    except InvalidIdentifier as exc:
        raise _api_error(exc) from exc


def valid_session_id(value: object) -> str:
    try:
        return session_id_checked(value)
    except InvalidIdentifier as exc:
        raise _api_error(exc) from exc


def valid_profile(value: object) -> str:
    try:
        return profile_checked(value)
    except InvalidIdentifier as exc:
        raise _api_error(exc) from exc


def optional(query: Mapping[str, str], name: str, validator: Callable[[str], str]) -> str | None:
    """A query parameter that may be absent or empty."""
    value = query.get(name)
    return validator(value) if value else None  # absent or empty


def valid_process(value: object) -> str:
    """A ``process`` tag (a fact's, a capture's): the user_id character set."""
    if not is_user_id(value):
        raise ApiError(400, "invalid_process", f"process must be {USER_ID_RULE}.")
    return value
