"""The tenant's capture policy for conversations (spec: Conversations), as pure rules.

Applied to each captured message in this order: a message of an excluded role is dropped,
then an empty one (only whitespace) when ``drop_empty`` is on, then what is left is redacted:
credential-shaped text (the detectors of :mod:`memoryhub.credentials`, the same that refuse
documents) becomes ``[redacted credential]``, and each match of a tenant's ``redact``
pattern becomes ``[redacted]``. History keeps the message, minus the secret.

The tenant's patterns run on every message, so an admin's typo must not be able to stall
capture. They are compiled with RE2 (``google-re2``), which matches in time linear in the
text whatever the pattern: no catastrophic backtracking is possible. On save each pattern is
checked (:func:`redact_pattern_problem`): it must compile under RE2 (so no backreferences
or lookarounds), be at most 500 characters, and hold no nested quantifier such as
``(a+)+``. RE2 would run those fast too, but they are the classic shape of a pattern that
hangs other engines (a copy of the policy pasted into a backtracking tool, a future engine),
and a redaction pattern never needs one.
"""

from __future__ import annotations

import functools
import re
import re._parser as sre_parse  # type: ignore[import-not-found]  # the parser behind re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import re2  # type: ignore[import-untyped]

from memoryhub.credentials import DETECTORS

REDACTED_CREDENTIAL = "[redacted credential]"
REDACTED = "[redacted]"
MAX_PATTERNS = 20
# The roles a message can have (memoryhub.models.MessageRole, which this pure module cannot
# import; tests/domain/test_capture_policy.py keeps the two equal).
ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_PATTERN_CHARS = 500

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is an answer to the admin, not a log line
_REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)}


@dataclass(frozen=True)
class CapturePolicy:
    """A tenant's policy, with its patterns compiled (see :func:`policy_for`)."""

    excluded_roles: frozenset[str]
    drop_empty: bool
    redact: tuple[Any, ...]  # compiled RE2 patterns


def policy_for(*, excluded_roles: Iterable[str], drop_empty: bool,
               redact: Sequence[str]) -> CapturePolicy:
    return CapturePolicy(frozenset(excluded_roles), drop_empty, _compiled(tuple(redact)))


@functools.lru_cache(maxsize=256)
def _compiled(patterns: tuple[str, ...]) -> tuple[Any, ...]:
    """Patterns are checked when saved; one that no longer compiles (an RE2 upgrade) is
    skipped rather than refusing every capture of the tenant."""
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re2.compile(pattern, options=_RE2_OPTIONS))
        except re2.error:
            continue
    return tuple(compiled)


def dropped_reason(policy: CapturePolicy, *, role: str, content: str) -> str | None:
    """``"excluded_role"`` or ``"empty"`` when the policy drops the message, else None."""
    if role in policy.excluded_roles:
        return "excluded_role"
    if policy.drop_empty and not content.strip():
        return "empty"
    return None


def redacted(policy: CapturePolicy, content: str) -> tuple[str, int]:
    """The content with credentials and the tenant's patterns replaced, and how many
    replacements were made."""
    count = 0
    for detector in DETECTORS:
        needed = _needed_texts.get(id(detector.pattern))
        if needed is None or needed[0] is not detector.pattern:
            needed = _needed_texts[id(detector.pattern)] = (detector.pattern,
                                                            _needed_text(detector.pattern))
        if needed[1] not in content:
            continue  # it cannot match: skip the scan
        content, found = detector.pattern.subn(REDACTED_CREDENTIAL, content)
        count += found
    for pattern in policy.redact:
        content, found = pattern.subn(REDACTED, content)
        count += found
    return content, count


# Each detector's pattern (kept, so that its id stays its own) and its needed text; keyed by
# id because hashing a compiled pattern hashes its whole program, which cost more than the
# substring tests saved.
_needed_texts: dict[int, tuple[re.Pattern[str], str]] = {}


def _needed_text(pattern: re.Pattern[str]) -> str:
    """The longest run of literal text that every match of ``pattern`` holds ("" if none is
    known). Text without it cannot match, which a substring test tells many times faster
    than the scan: the detectors begin with a lookbehind, which keeps ``re`` from skipping
    ahead to their prefix, so each scans every position of every message (about 15 µs per
    detector for 250 characters). Read from the pattern's top-level sequence and the groups
    in it (each of their items is part of every match); anything else ends a run."""
    if pattern.flags & re.IGNORECASE:
        return ""
    try:
        parsed = sre_parse.parse(pattern.pattern, pattern.flags)
    except (re.error, ValueError, OverflowError, RecursionError):
        return ""
    runs = [""]

    def walk(items: Any) -> None:
        for op, arg in items:
            if op is sre_parse.LITERAL:
                runs[-1] += chr(arg)
            elif op is sre_parse.SUBPATTERN and not arg[1] and not arg[2]:  # no flag changes
                walk(arg[3])
            else:
                runs.append("")

    walk(parsed)
    return max(runs, key=len)


# --- checking a pattern when an admin saves it ---------------------------------------------


def redact_pattern_problem(pattern: object) -> str | None:
    """Why ``pattern`` cannot be a redaction pattern, as a sentence for the admin; None if fine."""
    if not isinstance(pattern, str) or not pattern:
        return "each redact pattern must be a non-empty string."
    if len(pattern) > MAX_PATTERN_CHARS:
        return (f"{_shown(pattern)} is {len(pattern)} characters long; a redact pattern is at "
                f"most {MAX_PATTERN_CHARS}.")
    try:
        re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        return f"{_shown(pattern)} is not a valid pattern ({_reason(exc)})."
    if _has_nested_quantifier(pattern):
        return (f"{_shown(pattern)} nests a quantifier inside another, such as (a+)+, which can "
                "take exponential time to match; write it without the nesting.")
    if re2.compile(pattern, options=_RE2_OPTIONS).search("") is not None:
        return f"{_shown(pattern)} matches the empty string, so it would redact nothing useful."
    return None


def redact_patterns_problem(patterns: Sequence[object]) -> str | None:
    """Why a tenant's list of redaction patterns cannot be saved (the first problem), or None."""
    if len(patterns) > MAX_PATTERNS:
        return f"at most {MAX_PATTERNS} redact patterns, not {len(patterns)}."
    return next(filter(None, map(redact_pattern_problem, patterns)), None)


def excluded_roles_problem(roles: Sequence[object]) -> str | None:
    """Why ``roles`` cannot be the excluded roles (the first unknown one), or None."""
    for role in roles:
        if role not in ROLES:
            return f"{role!r} is not a role; the roles are {', '.join(ROLES)}."
    return None


def _shown(pattern: str) -> str:
    return repr(pattern if len(pattern) <= 60 else pattern[:60] + "…")


def _reason(exc: Exception) -> str:
    text = exc.args[0] if exc.args else str(exc)
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


def _has_nested_quantifier(pattern: str) -> bool:
    """Whether a repeat that can match more than once holds another such repeat (the shape
    of catastrophic backtracking). Read with Python's own parser; RE2 accepted the pattern,
    and the few RE2 spellings Python cannot parse are judged by RE2 alone."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, ValueError, OverflowError, RecursionError):
        return False
    return _nested(parsed, inside_repeat=False)


def _nested(items: Any, *, inside_repeat: bool) -> bool:
    for op, arg in items:
        if op in _REPEATS:
            low, high, body = arg
            repeats = high > 1  # MAXREPEAT (unbounded) included
            if inside_repeat and repeats and low != high:  # (\d{3}-)+ is fine, (a+)+ is not
                return True
            if _nested(body, inside_repeat=inside_repeat or repeats):
                return True
        elif op is sre_parse.SUBPATTERN:
            if _nested(arg[-1], inside_repeat=inside_repeat):
                return True
        elif op is sre_parse.BRANCH:
            if any(_nested(branch, inside_repeat=inside_repeat) for branch in arg[1]):
                return True
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT, getattr(sre_parse, "ATOMIC_GROUP", None)):
            body = arg[-1] if isinstance(arg, tuple) else arg
            if _nested(body, inside_repeat=inside_repeat):
                return True
    return False
