"""The capture policy's pure rules for what an admin saves: the roles and the patterns."""

from __future__ import annotations

from memoryhub.capture_policy import (
    MAX_PATTERNS,
    ROLES,
    excluded_roles_problem,
    redact_patterns_problem,
)
from memoryhub.models import MessageRole


def test_the_roles_are_the_message_roles() -> None:
    assert list(ROLES) == MessageRole.values


def test_excluded_roles_name_the_first_unknown_role() -> None:
    assert excluded_roles_problem([]) is None
    assert excluded_roles_problem(list(ROLES)) is None
    assert excluded_roles_problem(["user", "bot", "human"]) == (
        "'bot' is not a role; the roles are system, developer, user, assistant, tool.")


def test_patterns_are_counted_then_checked_one_by_one() -> None:
    assert redact_patterns_problem([]) is None
    assert redact_patterns_problem([f"p{i}" for i in range(MAX_PATTERNS)]) is None
    assert redact_patterns_problem(["p"] * (MAX_PATTERNS + 1)) == (
        f"at most {MAX_PATTERNS} redact patterns, not {MAX_PATTERNS + 1}.")
    assert redact_patterns_problem(["fine", "(a*)*", "a("]) == (
        "'(a*)*' nests a quantifier inside another, such as (a+)+, which can take exponential "
        "time to match; write it without the nesting.")
