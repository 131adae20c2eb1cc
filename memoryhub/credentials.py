"""Credential detection: memory must never store secrets, whoever writes them.

Memory documents are replayed into prompts, exported, shown on web pages and searched, so a
key pasted into one leaks everywhere at once. Every write (memory tool, documents API, web
pages) runs ``find_credential`` on the content and refuses a match.

The detectors are an ordered registry: ``find_credential`` returns the name of the first one
that matches, so more specific patterns come first (``sk-ant-`` before the generic ``sk-``).
``register_detector`` adds one at the end (for a tenant-specific token format, or a test).

False positives cost a refused write, so each pattern demands a realistic shape: a known
prefix, a token boundary before it (``task-list`` does not contain the token ``sk-list``),
and a minimum length, plus a digit for the ``sk-`` family, whose prefix also begins ordinary
hyphenated words. Known holes: secrets without a recognisable shape (a bare password, a hex
key) are not detected; this is a seatbelt, not a scanner.

The leading lookbehinds also keep the scan linear: a pattern may only start at a token
boundary, so a long run like ``eyJeyJeyJ...`` is not re-scanned from every position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DETECTORS",
    "Detector",
    "credential_message",
    "find_credential",
    "register_detector",
]

# A token character in the base64url/identifier sense; a token starts where none precedes.
_B = r"(?<![A-Za-z0-9_-])"


@dataclass(frozen=True)
class Detector:
    """One named credential shape."""

    name: str
    pattern: re.Pattern[str]


DETECTORS: list[Detector] = []


def register_detector(name: str, pattern: str | re.Pattern[str]) -> Detector:
    """Add a detector at the end of the registry; names are unique so messages stay unambiguous."""
    if any(detector.name == name for detector in DETECTORS):
        raise ValueError(f"a credential detector named {name!r} is already registered")
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    detector = Detector(name=name, pattern=compiled)
    DETECTORS.append(detector)
    return detector


def find_credential(text: str) -> str | None:
    """The name of the first detector matching ``text``, or ``None`` when it looks clean."""
    for detector in DETECTORS:
        if detector.pattern.search(text):
            return detector.name
    return None


def credential_message(name: str) -> str:
    """The memory-tool error text for content refused as a credential."""
    return (
        f"Error: the content looks like a credential ({name}); memory must not store secrets. "
        "Remove it and try again."
    )


# This service's own API keys: mh_<tenant id>_<8 lowercase alnum lookup id>_<32+ urlsafe
# secret chars> (tenants.services.api_key_create); the tenant id part is optional here so a
# key pasted without it is caught too.
register_detector(
    "memoryhub_api_key", r"(?<![A-Za-z0-9])mh_(?:[0-9]+_)?[a-z0-9]{8}_[A-Za-z0-9_-]{32,}"
)
# The body of a key after its prefix must hold a digit: random keys always do (all but ~2e-4
# of them), hyphenated prose does not.
_KEY_BODY = r"(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]"
# Anthropic: sk-ant-api03-..., sk-ant-admin01-..., sk-ant-oat01-... (long urlsafe bodies). The
# prefix is a key's alone, so a short one (a truncated or made-up key, sk-ant-api03-abc123) is
# refused too.
register_detector("anthropic_api_key", _B + r"sk-ant-" + _KEY_BODY + "{8,}")
# OpenAI: legacy sk-<48 alnum>, sk-proj-..., sk-svcacct-..., sk-admin-...: short after one of
# the named prefixes (sk-proj-abc123def456), else 20 characters ("sk-short1" is prose).
register_detector(
    "openai_api_key",
    _B + r"sk-(?:(?:proj|svcacct|admin)-" + _KEY_BODY + "{8,}|" + _KEY_BODY + "{20,})",
)
# AWS access key ids: long-term AKIA, temporary ASIA, then 16 upper-case base32-ish characters.
register_detector("aws_access_key_id", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")
# Google API keys: AIza + 35 urlsafe characters.
register_detector("google_api_key", _B + r"AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])")
# GitHub: classic tokens ghp_/gho_/ghu_/ghs_/ghr_ + 36 alnum, fine-grained github_pat_...
register_detector(
    "github_token",
    r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
)
# Slack tokens: xoxb-/xoxp-/xoxa-/xoxr-/xoxs-, refresh tokens xoxe-, then a numeric id and
# dash-separated parts (xoxb-<team>-<bot>-<secret>, xoxp-<team>-<user>-<team>-<secret>,
# xoxe-1-<secret>); app-level tokens the same after xapp- (xapp-1-<app>-<number>-<hex>), a
# detector of their own so that each keeps its prefix for capture's screen. The body is at
# least 20 characters, so "xoxb-1-2" in prose passes.
_SLACK_BODY = r"-(?=[A-Za-z0-9-]{20,})[0-9]+(?:-[A-Za-z0-9]+)+"
register_detector("slack_token", _B + r"xox[abeprs]" + _SLACK_BODY)
register_detector("slack_app_token", _B + r"xapp" + _SLACK_BODY)
# Slack incoming webhooks: https://hooks.slack.com/services/T.../B.../secret (and workflows).
register_detector(
    "slack_webhook",
    r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_]+/[A-Za-z0-9_/]{16,}",
)
# JWTs: base64url JSON header (always "eyJ" = '{"'), payload, and a signature. Unsigned
# ("alg": "none") tokens with an empty signature carry no secret and are let through.
register_detector(
    "jwt", _B + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}(?![A-Za-z0-9_-])"
)
# PEM private keys of any kind: RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, PGP ... BLOCK.
register_detector("pem_private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# scheme://user:password@host, the user possibly empty (redis://:password@host). Redacted or
# templated passwords (***, xxx, <password>, ${DB_PASSWORD}, {password}, $PASSWORD, %s) are
# documentation, not secrets, and pass.
register_detector(
    "connection_string_password",
    r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://"
    r"[^\s:/@?#]*:"
    r"(?!(?:\*+|x+|X+|<[^>\s@]*>|\$\{[^}\s@]*\}|\{[^}\s@]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%s)@)"
    r"[^\s/@?#]+@[A-Za-z0-9\[]",
)
# The other connection strings' password field: ADO.NET's "Password=...;", libpq's
# "password=..." and a URL's "?password=...", and a .env's DB_PASSWORD=... The "=" with no
# space around it is a connection string's or a config file's; code puts spaces there, or a
# call or a name after it, and templated values pass as above, as do None, null, true and
# false and a dotted name (settings.DB_PASSWORD).
register_detector(
    "connection_string_password_field",
    # Spelt out rather than case-insensitive, so that capture's screen has "=" to look for.
    r"(?<![A-Za-z0-9])(?:[Pp](?:ass(?:word|wd)|wd)|P(?:ASS(?:WORD|WD)|WD))="
    r"(?!(?i:\*+|x+|<[^>\s]*>|\$\{[^}\s]*\}|\{[^}\s]*\}|\$[a-z_][a-z0-9_]*|%s|%\([a-z_]+\)s"
    r"|none|null|true|false|[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+)(?:$|[\s;&'\",=]))"
    # No "=" inside the value (base64's padding ends it), so that one value's scan cannot
    # run into the next field's: "password=" repeated 60,000 times is one short match, not
    # 60,000 scans to the end of the text.
    r"[^\s;&'\",=<>()\[\]{}]{4,}(?=$|[\s;&'\",=])",
)
