"""Identifiers from the URL or the body, as the API answers for them (spec: Conventions).

The rules are the domain's (``memoryhub.identifiers``, ``memoryhub.paths``); this module
translates a refusal into the contract's 400 with its code (``invalid_user_id``,
``invalid_session_id``, ``invalid_profile``) and message, and states the same rules as the
OpenAPI schemas of the parameters that carry them (``parameter_schemas``, applied by
``api.schema.AutoSchema``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from api.errors import ApiError
from memoryhub import paths
from memoryhub.identifiers import (
    PROFILE,
    SESSION_ID,
    USER_ID,
    USER_ID_RULE,
    CharacterRule,
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


# --- The same rules for the OpenAPI schema ---------------------------------------------------


def identifier_schema(rule: CharacterRule, *, empty_is_absent: bool = False) -> dict[str, Any]:
    """A string parameter or field holding an identifier of ``rule``. ``empty_is_absent``: an
    empty value is read as not given (``optional`` above), so the empty string is valid."""
    if not empty_is_absent:
        return {"type": "string", "pattern": rule.pattern, "minLength": 1,
                "maxLength": rule.max_length}
    return {"type": "string", "pattern": f"^(?:{rule.pattern[1:-1]})?$",
            "maxLength": rule.max_length}


@lru_cache(maxsize=1)
def parameter_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(name, location) -> schema. Every view validates these parameters by their name with
    the functions above (a document's path with memoryhub.paths, in api/views/documents.py).
    Built on the first schema request: the path pattern scans every code point."""
    return {
        ("user_id", "path"): identifier_schema(USER_ID),
        ("session_id", "path"): identifier_schema(SESSION_ID),
        ("profile", "path"): identifier_schema(PROFILE),
        ("session_id", "query"): identifier_schema(SESSION_ID, empty_is_absent=True),
        ("exclude_session", "query"): identifier_schema(SESSION_ID, empty_is_absent=True),
        ("profile", "query"): identifier_schema(PROFILE, empty_is_absent=True),
        ("process", "query"): identifier_schema(USER_ID, empty_is_absent=True),
        ("path", "path"): {"type": "string", "pattern": paths.document_path_pattern(),
                           "minLength": 1, "maxLength": paths.document_path_max_length()},
        # The ids the API hands out (Conversation.id, Fact.id); any other text names nothing
        # (404, memoryhub.selectors.conversations.parse_uuid), and an empty one another route.
        ("conversation_id", "path"): {"type": "string", "format": "uuid"},
        ("fact_id", "path"): {"type": "string", "format": "uuid"},
    }
