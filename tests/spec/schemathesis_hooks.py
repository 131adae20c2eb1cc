"""Schemathesis hooks of tests/spec/test_schemathesis.py: the failures accepted, each with why.

Every check runs on every case; these hooks drop only failures whose cause is known and is a
rule the OpenAPI document (3.0) cannot state, or the state the run itself builds up. A
dropped failure is still counted in the run's summary ("dropped by filter_failure"). Nothing
here drops a server error (5xx), a response that breaks its documented shape, content type
or headers, or an undocumented status code.

Loaded by the Schemathesis CLI through ``SCHEMATHESIS_HOOKS`` (a separate process: no
Django here, only the pure rules of memoryhub.paths).
"""

from __future__ import annotations

import json
import os
from typing import Any

import schemathesis

from memoryhub import paths

REJECTED_VALID = "ST202"  # positive_data_acceptance: a request the schema allows was refused
ACCEPTED_INVALID = "ST201"  # negative_data_rejection: a request the schema forbids was accepted

# Operations whose ``If-Match`` names a version the generator cannot know: 412 is the answer
# to a valid request whose precondition does not hold.
_PRECONDITIONS = ("/documents/", "/facts/{fact_id}")
# Query parameters holding an opaque cursor (``next_cursor`` of a page): one the generator
# invents is refused as invalid_cursor by design; only a cursor the API handed out is valid.
_CURSORS = ("cursor", "before", "after")  # after: a session's messages (the event feed's is an id)


_URL_REFUSALS = ("url: Enter a valid URL.", "The URL must be", "Put no credentials")
_SPELT_TWICE = "are one setting; they differ here."
_TIMES_OUT_OF_ORDER = ") is before valid_at ("
_NUL_IN_METADATA = "metadata holds a NUL character."
_STATE_LIMITS = frozenset({"document_too_large", "scope_full", "message_too_large",
                           "fact_too_large", "summary_too_large", "credential_detected"})


def _error(response: Any) -> dict[str, Any]:
    try:
        error = json.loads(response.content)["error"]
    except (ValueError, KeyError, TypeError):
        return {}
    return error if isinstance(error, dict) else {}


def _error_code(response: Any) -> str | None:
    code = _error(response).get("code")
    return str(code) if code is not None else None


def _message(response: Any) -> str:
    return str(_error(response).get("message", ""))


def _path_over_byte_limit(case: Any) -> bool:
    """A document path over ``MAX_PATH_BYTES`` UTF-8 bytes: the schema's ``maxLength`` counts
    characters, and no JSON Schema keyword counts bytes."""
    raw = (case.path_parameters or {}).get("path")
    if not isinstance(raw, str):
        return False
    written = "/" + raw
    canonical = written[len(paths.MEMORIES_PREFIX):] if paths.has_memories_prefix(written) else written
    return len(canonical.encode("utf-8")) > paths.MAX_PATH_BYTES


def _accepted_refusal(case: Any, response: Any) -> str | None:
    """Why a refusal of a valid request is expected (None: it is a real failure)."""
    code, label = _error_code(response), case.operation.path
    if code == "invalid_path" and _path_over_byte_limit(case):
        return "the path's byte limit"
    if code == "invalid_cursor" and (case.query or {}).keys() & set(_CURSORS):
        return "an invented cursor"
    if code == "precondition_failed" and any(part in label for part in _PRECONDITIONS):
        return "If-Match of an unknown version"
    if code in _STATE_LIMITS:
        # The tenant's limits (which the run reaches by writing) and the credential filter
        # (memoryhub/credentials.py: content that looks like a secret) judge content, and a
        # fact's size is counted in bytes: none of these is a schema's to state.
        return f"{code}: a content rule"
    if code == "webhook_limit":
        return "the tenant's 20 webhook endpoints, filled by the run itself"
    if code in {"invalid_request", "invalid_url"} and _message(response).startswith(_URL_REFUSALS):
        # Django's URLValidator (host labels, TLDs, 253-character hosts, IDNA) and the
        # webhook rule (http or https, a host, no credentials): `format: uri` is looser.
        return "a URL the webhook rules refuse"
    if code == "not_text" and _message(response).endswith(_NUL_IN_METADATA):
        # A message's metadata is free-form JSON: OpenAPI 3.0 has no propertyNames, so no
        # schema can refuse NUL in its keys (nor, without a recursive schema, in its values).
        return "NUL in free-form metadata"
    if code == "invalid_request" and _message(response).startswith("capture: redact: "):
        # A redact pattern is a regular expression that RE2 must compile, that nests no
        # quantifier and matches no empty string (memoryhub/capture_policy.py): what a regex
        # means is no JSON Schema's to say (its lengths are in the schema).
        return "a redact pattern the pattern rules refuse"
    if code == "invalid_request" and _message(response).endswith(_SPELT_TWICE):
        # max_message_bytes and max_history_tokens are spelt twice (top level and in
        # `limits`) and must agree: no JSON Schema keyword compares two values.
        return "one setting spelt twice with two values"
    if code == "invalid_request" and _TIMES_OUT_OF_ORDER in _message(response):
        # A fact's invalid_at must not precede its valid_at (memoryhub/services/facts.py): no
        # JSON Schema keyword compares two values either.
        return "a fact's end before its start"
    return None


def _accepted_acceptance(case: Any, response: Any) -> str | None:
    """Why an accepted request the schema forbids is expected (None: a real failure)."""
    if case.operation.path.endswith("/memory") and case.operation.method.upper() == "POST":
        # The memory tool's contract: a malformed command is a tool error (the reference
        # tool's texts) in an HTTP 200, never an HTTP 4xx; the schema documents the input
        # the tool understands.
        try:
            return "a tool error" if json.loads(response.content)["is_error"] is True else None
        except (ValueError, KeyError, TypeError):
            return None
    return None


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Keep the failure (True) unless it is one of the known, stated causes above; each
    dropped one is counted by its reason in ``MEMORYHUB_FUZZ_ACCEPTED`` (one line each)."""
    reason = None
    if failure.code == REJECTED_VALID:
        reason = _accepted_refusal(case, response)
    elif failure.code == ACCEPTED_INVALID:
        reason = _accepted_acceptance(case, response)
    if reason is not None and os.environ.get("MEMORYHUB_FUZZ_ACCEPTED"):
        with open(os.environ["MEMORYHUB_FUZZ_ACCEPTED"], "a", encoding="utf-8") as log:
            log.write(f"{failure.code} {case.operation.label}: {reason}\n")
    return reason is None


def _own_key_ids() -> set[str]:
    return {pk for pk in os.environ.get("MEMORYHUB_FUZZ_KEEP_KEYS", "").split(",") if pk}


@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    """Not generated: revoking the run's own key, which would make every later request 401
    (revoking is tested in tests/isolation/test_api_keys.py; the run still revokes the keys it
    mints)."""
    if case.operation.path == "/api/v1/keys/{key_id}" and case.method.upper() == "DELETE":
        # The coverage phase reuses ids read from earlier answers, as text or as numbers.
        return str((case.path_parameters or {}).get("key_id")) not in _own_key_ids()
    return True
