"""Capture's redaction skips a credential detector when the text lacks the literal every
match of it holds (``memoryhub.capture_policy._needed_text``): the result must be exactly
that of running every detector, on secrets, on prose that nearly matches, and on both mixed.
"""

from __future__ import annotations

import re

import pytest

from memoryhub.capture_policy import (
    REDACTED,
    REDACTED_CREDENTIAL,
    _needed_text,
    policy_for,
    redacted,
)
from memoryhub.credentials import DETECTORS
from tests.domain.test_credentials import SECRETS

POLICY = policy_for(excluded_roles=["system"], drop_empty=True, redact=[r"secret-\d+"])
PROSE = [
    "",
    "Why is the build red again on the release branch?",
    "She loves sk-ills like sk-iing; the task-list and the desk-lamp order.",
    "Google keys start with AIza, like AIzaShort; AKIA123 is too short.",
    "ghp_abc is not a token, xoxb-1-2 is not one, and eyJ alone is nothing.",
    "-----BEGIN PUBLIC KEY----- and postgres://app:****@db:5432/app are fine.",
    "Visit https://example.com:8080/path?a=b@c or mailto:someone@example.com.",
    "mh_ABCD1234_" + "x" * 40,
    "The order number is secret-42, the hash 3f786850e387550fdab836ed7e6dc881de23001b.",
]


def every_detector(content: str) -> tuple[str, int]:
    """Redaction as it was before the screen: every detector, then the tenant's patterns."""
    count = 0
    for detector in DETECTORS:
        content, found = detector.pattern.subn(REDACTED_CREDENTIAL, content)
        count += found
    for pattern in POLICY.redact:
        content, found = pattern.subn(REDACTED, content)
        count += found
    return content, count


TEXTS = [*SECRETS.values(), *PROSE,
         *(f"{prose} {secret} and then {other}." for prose, secret, other in
           zip(PROSE, SECRETS.values(), reversed(SECRETS.values()), strict=False))]


@pytest.mark.parametrize("text", TEXTS)
def test_the_screen_changes_nothing(text: str) -> None:
    assert redacted(POLICY, text) == every_detector(text)


@pytest.mark.parametrize("secret", SECRETS.values(), ids=SECRETS.keys())
def test_every_secret_is_still_redacted(secret: str) -> None:
    content, count = redacted(POLICY, f"my key is {secret}, keep it safe")
    assert count >= 1 and secret not in content and REDACTED_CREDENTIAL in content


def test_every_detector_has_a_needed_text() -> None:
    """Otherwise the screen would not spare any text that detector's scan."""
    assert all(_needed_text(detector.pattern) for detector in DETECTORS)


@pytest.mark.parametrize(("pattern", "needed"), [
    (r"(?<![a-z])sk-ant-[a-z]{20,}", "sk-ant-"),
    (r"x(?:ab|cd)yz", "yz"),  # an alternation ends the run
    (r"ab(cd)e", "abcde"),  # a group's text is part of every match
    (r"ab(cd)?e", "ab"),  # an optional one is not
    (r"abc|abd", "ab"),  # the alternatives' common prefix
    (r"foo|bar", ""),  # nothing every match holds: always scanned
    (r"(?i:abc)defg", "defg"),  # case-insensitive text is not a literal
    (r"(?i)abcdef", ""),
])
def test_needed_text(pattern: str, needed: str) -> None:
    assert _needed_text(re.compile(pattern)) == needed
