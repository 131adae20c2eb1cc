"""What comes in over HTTP: request bodies, list parameters, and the error body's schema.

Each body serializer is one declaration for two readers: the view, which validates with it,
and drf-spectacular, which documents it at ``/api/docs/``. What the API answers is declared
in api/representations.py.

Pagination (documented once, used by every list of this API except the event feed, whose
cursor the contract fixes): ``?limit=`` (1-1000, default 100) and ``?cursor=`` (opaque, from
the previous page's ``next_cursor``). Lists are keyset-paginated in a fixed order, so a row
written or deleted between two pages never shifts another into or out of view; the last page
has ``next_cursor: null``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema_field
from rest_framework import serializers
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from api.errors import ApiError
from api.params import identifier_schema, valid_process
from memoryhub.capture_policy import MAX_PATTERN_CHARS, MAX_PATTERNS, ROLES
from memoryhub.errors import echo
from memoryhub.facts import FACT_TYPES, MAX_FACT_BYTES
from memoryhub.identifiers import NOT_ONE_LINE, PROFILE, SESSION_ID, USER_ID, CharacterRule
from memoryhub.memory_tool.commands import COMMANDS
from memoryhub.models import MessageRole, Scope
from memoryhub.numbers import parse_natural
from memoryhub.selectors.recall import DEFAULT_SOURCES as DEFAULT_RECALL_SOURCES
from memoryhub.selectors.recall import SOURCES as RECALL_SOURCES
from memoryhub.services.conversations import MAX_MESSAGES_PER_REQUEST
from memoryhub.services.documents import DESCRIPTION_MAX_CHARS
from memoryhub.services.facts import FactInput
from memoryhub.services.metadata import MAX_METADATA_BYTES
from memoryhub.services.webhooks import EVENT_TYPES, MIN_SECRET_LENGTH
from tenants.services import (
    MAX_COLUMN_INTEGER,
    MAX_CONVERSATION_DAYS,
    MAX_CONVERSATION_TIMEOUT_MINUTES,
    MAX_MESSAGE_BYTES,
    MAX_SESSION_DAYS,
    tenant_setting_problem,
)

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000

# --- Errors ------------------------------------------------------------------------------


class ApiErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="snake_case, stable: branch on this")
    message = serializers.CharField(help_text="for people: may change")


class ErrorSerializer(serializers.Serializer):
    error = ApiErrorDetailSerializer()


def error_response(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


# The errors any endpoint can answer, for the OpenAPI document.
COMMON_ERRORS: dict[int, OpenApiResponse] = {
    400: error_response("invalid_user_id, invalid_request or another invalid parameter"),
    401: error_response("not_authenticated or invalid_api_key"),
    403: error_response("permission_denied: the key lacks the permission"),
    411: error_response("length_required: a chunked body on a server that does not decode "
                        "chunks (Django's runserver; gunicorn does)"),
    413: error_response("request_too_large: body over 1 MiB"),
    429: error_response("rate_limited (with Retry-After)"),
}
# The errors of an operation that reads a JSON body, besides those.
BODY_ERRORS: dict[int, OpenApiResponse] = {
    415: error_response("unsupported_media_type: the body is not application/json"),
}


def with_errors(ok: dict[int, Any], *, body: bool = False, **extra: str) -> dict[int, Any]:
    """``ok`` responses plus the common errors (and ``BODY_ERRORS`` for an operation that reads
    a body) plus ``extra`` ones (``e404="why"``)."""
    responses: dict[int, Any] = {**ok, **COMMON_ERRORS, **(BODY_ERRORS if body else {})}
    for key, description in extra.items():
        responses[int(key.removeprefix("e"))] = error_response(description)
    return responses


# --- Bodies ------------------------------------------------------------------------------


def body_is_empty(request: Any) -> bool:
    """True when the request had no body at all (DRF then gives ``request.data == {}``)."""
    return request.stream is None


# --- Pagination ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    limit: int
    after: tuple[Any, ...] | None  # the sort key of the previous page's last row

    @property
    def after_value(self) -> Any:
        """``after`` of a list ordered by one column: its one value (None on the first page)."""
        return self.after[0] if self.after else None


def limit_parameter(maximum: int = MAX_PAGE_SIZE, default: int = DEFAULT_PAGE_SIZE,
                    what: str = "page size") -> OpenApiParameter:
    """``?limit=`` as ``parse_limit`` reads it with the same ``maximum`` and ``default``."""
    return OpenApiParameter(
        "limit", {"type": "integer", "minimum": 1, "maximum": maximum, "default": default},
        description=f"{what}, 1-{maximum} (default {default})",
    )


LIMIT_PARAMETER = limit_parameter()
CURSOR_PARAMETER = OpenApiParameter(
    "cursor", str, description="the previous page's next_cursor; omit for the first page"
)


def parse_limit(query: Mapping[str, str], default: int = DEFAULT_PAGE_SIZE,
                maximum: int = MAX_PAGE_SIZE) -> int:
    raw = query.get("limit")
    if not raw:  # absent or empty
        return default
    limit = parse_natural(raw)
    if limit is None or not 1 <= limit <= maximum:
        raise ApiError(400, "invalid_limit", f"limit must be an integer from 1 to {maximum}.")
    return limit


def encode_cursor(key: tuple[Any, ...]) -> str:
    raw = json.dumps(list(key), separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(raw: str | None, arity: int) -> tuple[Any, ...] | None:
    """The sort key inside a cursor of ours; 400 for anything we did not hand out."""
    if not raw:  # absent or empty
        return None
    try:
        padded = raw + "=" * (-len(raw) % 4)
        key = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        key = None
    if not isinstance(key, list) or len(key) != arity or not all(map(_cursor_part, key)):
        raise ApiError(400, "invalid_cursor", "cursor must be a next_cursor this API returned.")
    return tuple(key)


def _cursor_part(value: object) -> bool:
    """A string a statement can take: JSON also spells a NUL and lone surrogates, which no
    key of ours holds and which PostgreSQL and UTF-8 refuse with an error (a 500)."""
    if not isinstance(value, str) or "\x00" in value:
        return False
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


def parse_page(query: Mapping[str, str], arity: int) -> Page:
    return Page(limit=parse_limit(query), after=decode_cursor(query.get("cursor"), arity))


def next_cursor(
    rows: Sequence[Any], limit: int, key: Callable[[Any], tuple[Any, ...]]
) -> str | None:
    """Selectors fetch ``limit + 1`` rows: the extra one only says there is another page."""
    if len(rows) <= limit:
        return None
    return encode_cursor(key(rows[limit - 1]))


# --- Documents -----------------------------------------------------------------------------

SCOPES = tuple(Scope.values)  # session, profile, global


@lru_cache(maxsize=2)
def text_pattern(*, blank: bool = True) -> str:
    """The OpenAPI pattern of text: no NUL (PostgreSQL's text cannot hold it: DRF refuses it
    with 400, the content rules with 422 ``not_text``) and, unless ``blank``, one character
    that ``str.strip`` keeps (the whitespace set is Python's, read from ``str.isspace``)."""
    if blank:
        return "^[^\\u0000]*$"
    space = "".join(f"\\u{point:04x}" for point in range(0x10000) if chr(point).isspace())
    return f"^[^\\u0000]*[^\\u0000{space}][^\\u0000]*$"


@lru_cache(maxsize=2)
def one_line_pattern(*, blank: bool = True) -> str:
    """The OpenAPI pattern of a document's description, ``description_check``'s rule: no
    character of the categories it refuses (controls, tab included; line and paragraph
    separators), read from ``unicodedata`` as that check reads them. Its fourth category,
    unpaired surrogates, has no class in an ECMAScript pattern (which sees a valid pair as
    two surrogates); the check refuses them in a description (422 not_text), DRF in a
    tenant's name (400). Unless ``blank``, one character is not
    whitespace either (a tenant's name: ``text_pattern``'s rule too)."""
    refused = [point for point in range(0x10000)
               if unicodedata.category(chr(point)) in NOT_ONE_LINE - {"Cs"}]
    ranges: list[list[int]] = []
    for point in refused:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    spelt = "".join(f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}"
                    for low, high in ranges)
    if blank:
        return f"^[^{spelt}]*$"
    space = "".join(f"\\u{point:04x}" for point in range(0x10000) if chr(point).isspace())
    return f"^[^{spelt}]*[^{spelt}{space}][^{spelt}]*$"


class StrictStringField(serializers.CharField):
    """A JSON string, unchanged: no coercion of numbers, no whitespace trimming.

    ``raw_text=True`` lets NUL and unpaired surrogates through (DRF answers 400 for them):
    content rules are the services' to enforce, with the contract's 422 ``not_text``.
    ``blank=False``: a string of whitespace only is refused too. ``openapi``: what the schema
    says besides, for a rule a service applies with its own code (a fact's content).
    """

    def __init__(self, *, raw_text: bool = False, blank: bool = True,
                 openapi: dict[str, Any] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", blank)
        if not kwargs["allow_blank"]:
            kwargs.setdefault("min_length", 1)  # for the schema: "" is refused as blank first
        super().__init__(**kwargs)
        self.blank = blank
        self.openapi_schema = {"pattern": text_pattern(blank=blank), **(openapi or {})}
        if raw_text:
            self.validators = [
                v for v in self.validators
                if not isinstance(v, ProhibitNullCharactersValidator | ProhibitSurrogateCharactersValidator)
            ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        if not self.blank and not data.strip():
            raise serializers.ValidationError(f"{self.field_name} must not be blank.")
        return data


class IdentifierField(StrictStringField):
    """A string the view checks by an identifier rule, with that rule's own 400 code
    (``invalid_session_id``...): the field takes any string, and ``openapi_schema`` states the
    rule for the schema (``api.schema.AutoSchema``). ``empty_is_absent``: the view reads an
    empty string as not given."""

    def __init__(self, rule: CharacterRule, *, empty_is_absent: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(allow_blank=empty_is_absent, **kwargs)
        self.openapi_schema = identifier_schema(rule, empty_is_absent=empty_is_absent)


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` only: ``"no"`` or ``0`` is a client bug to report, not to guess."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer only, within bounds: DRF's IntegerField also takes strings, which int()
    reads in any script's digits (``"١٠٠"`` is 100), and an unbounded number failed the
    database's column check as an HTTP 500."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError("Must be a whole number.")
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("Must be a number.")
        return super().to_internal_value(data)


class FlatSerializer(serializers.Serializer):
    """A body of plain fields (no nested serializer) whose fields are shallow copies.

    DRF deep-copies a serializer's declared fields for every instance: each field's
    ``__init__`` runs again on deep copies of its arguments (validators, choices), half of the
    0.6 ms a recall body's validation took here. A declared field is never bound itself and
    keeps nothing of a request, so a shallow copy, bound to the new instance, is the same
    field, except for a mutable default (a list), which the copy gets a copy of: validated
    data holds the default object itself, and a request's change to it would reach the next.
    A nested serializer would be shared with its bound fields, so it is refused."""

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = {}
        for name, field in self._declared_fields.items():
            child = getattr(field, "child", None)
            if isinstance(field, serializers.BaseSerializer) or isinstance(
                    child, serializers.BaseSerializer):
                raise TypeError(f"{type(self).__name__}.{name}: a FlatSerializer nests no "
                                "serializer")
            fields[name] = copy.copy(field)
            if isinstance(field.default, list | dict | set):
                fields[name].default = copy.copy(field.default)
        return fields


class DocumentWriteSerializer(FlatSerializer):
    """``PUT`` body. Omitted ``description``/``confidence`` keep their current values (on
    create: empty and 1.0)."""

    content = StrictStringField(raw_text=True)
    # The one-line rule and the 200 characters are a document's rules (the contract's
    # "Memory documents"): the service's description_check applies them, with 422 not_text
    # whatever breaks them, as for the memory tool; the schema states them.
    description = StrictStringField(
        required=False, allow_null=True, raw_text=True,
        openapi={"pattern": one_line_pattern(), "maxLength": DESCRIPTION_MAX_CHARS},
        help_text="one line, at most 200 characters; null or empty: no description",
    )
    confidence = StrictFloatField(required=False, min_value=0.0, max_value=1.0)

    def validate_description(self, value: str | None) -> str:
        return "" if value is None else value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


def reject_unknown_fields(serializer: serializers.Serializer) -> None:
    """A misspelt field must not be silently ignored (``descripton`` would lose data)."""
    if not isinstance(serializer.initial_data, Mapping):
        return
    unknown = set(serializer.initial_data) - set(serializer.fields)
    if unknown:
        raise serializers.ValidationError(f"Unknown fields: {echo(', '.join(sorted(unknown)))}.")


# --- End users -----------------------------------------------------------------------------


class EndUserPatchSerializer(FlatSerializer):
    whole_on_patch = True  # the one field is the change: a PATCH without it is 400
    memory_enabled = StrictBooleanField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


# --- Tenant administration -------------------------------------------------------------------


class ProfilePutSerializer(serializers.Serializer):
    disabled = StrictBooleanField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


class ClosedSerializer(serializers.Serializer):
    """A nested object whose unknown keys are refused, like the body's own: a misspelt limit
    (``max_doc_bytes``) must not be silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = set(data) - set(self.fields)
            if unknown:
                raise serializers.ValidationError(
                    f"Unknown fields: {echo(', '.join(sorted(map(str, unknown))))}.")
        return super().to_internal_value(data)


def checked_by_service(field: str) -> Callable[[Any, Any], Any]:
    """A ``validate_<name>`` that applies the tenant setting's own rule, the one the settings
    page and tenants.services.tenant_settings_update apply (tenant_setting_problem)."""
    def validate(self: serializers.Serializer, value: Any) -> Any:
        problem = tenant_setting_problem(field, value)
        if problem is not None:
            raise serializers.ValidationError(problem)
        return value
    return validate


# max_message_bytes and max_history_tokens are spelt twice (the spec lists them beside
# the limits and apart from them): top level and inside "limits", one setting either way.
_TWICE = " Also spelt {other}: both spellings read and write the one setting."
MESSAGE_BYTES_HELP = (
    f"bytes of one captured message's content, 1-{MAX_MESSAGE_BYTES} (a body is at most "
    "1 MiB); over it, capture is 422 message_too_large. null switches the check off. Default "
    "65536." + _TWICE
)
HISTORY_TOKENS_HELP = (
    "the history text's budget (4 characters a token): older conversations that do not fit "
    "are left out. null switches it off. Default 2000." + _TWICE
)


def _max_message_bytes(other: str) -> StrictIntegerField:
    return StrictIntegerField(min_value=1, max_value=MAX_MESSAGE_BYTES, allow_null=True,
                              required=False, help_text=MESSAGE_BYTES_HELP.format(other=other))


def _max_history_tokens(other: str) -> StrictIntegerField:
    return StrictIntegerField(min_value=1, max_value=MAX_COLUMN_INTEGER, allow_null=True,
                              required=False, help_text=HISTORY_TOKENS_HELP.format(other=other))


@extend_schema_field({"type": "array", "items": {"type": "string", "enum": list(ROLES)}})
class RoleListField(serializers.ListField):
    """Roles, refused by the settings' own rule (excluded_roles_problem names the role)."""

    child = StrictStringField()


def _limit_field() -> StrictIntegerField:
    # The columns are PostgreSQL integers (the dashboard's form has the same bound).
    return StrictIntegerField(min_value=1, max_value=MAX_COLUMN_INTEGER, allow_null=True,
                              required=False)


class LimitsSerializer(ClosedSerializer):
    max_document_bytes = _limit_field()
    max_index_entries = _limit_field()
    max_index_tokens = _limit_field()
    max_scope_bytes = _limit_field()
    max_writes_per_turn = _limit_field()
    max_message_bytes = _max_message_bytes("the top-level max_message_bytes")
    max_history_tokens = _max_history_tokens("the top-level max_history_tokens")


class RetentionSerializer(ClosedSerializer):
    # 100 years, as on the dashboard: retention subtracts this many days from today, and a
    # few million days go past year 1 (OverflowError in the hourly purge).
    session_days = StrictIntegerField(min_value=1, max_value=MAX_SESSION_DAYS, allow_null=True,
                                      required=False)
    conversation_days = StrictIntegerField(
        min_value=1, max_value=MAX_CONVERSATION_DAYS, allow_null=True, required=False,
        help_text="conversations whose last message is older are deleted (hourly, with "
                  "events); null keeps them. Default null.",
    )


class CaptureSerializer(ClosedSerializer):
    """The capture policy, applied in this order: excluded roles, empty messages, redaction.
    A PATCH changes only the keys it sends."""

    excluded_roles = RoleListField(
        required=False,
        help_text=f"messages of these roles ({', '.join(ROLES)}) are not stored. "
                  'Default ["system"].',
    )
    drop_empty = StrictBooleanField(
        required=False, help_text="drop messages with only whitespace. Default true.")
    redact = serializers.ListField(
        # redact_pattern_problem's lengths; what RE2 and the nesting rule refuse is no schema's.
        child=StrictStringField(openapi={"minLength": 1, "maxLength": MAX_PATTERN_CHARS}),
        max_length=MAX_PATTERNS, required=False,
        error_messages={"max_length": f"at most {MAX_PATTERNS} redact patterns."},
        help_text=f"up to {MAX_PATTERNS} regular expressions (RE2: no backreferences or "
                  f"lookarounds), each at most {MAX_PATTERN_CHARS} characters, with no nested "
                  "quantifier such as (a+)+ and not matching the empty string; their matches "
                  "are stored as [redacted]. Default [].",
    )

    validate_excluded_roles = checked_by_service("capture_excluded_roles")
    validate_redact = checked_by_service("capture_redact")


# The PATCH /api/v1/tenant body (every field optional) and the declaration of what GET and
# PATCH answer (built by api.representations.tenant_representation). Not a docstring: that
# would become the schema's description.
class TenantSerializer(serializers.Serializer):
    slug = serializers.CharField(read_only=True)
    name = StrictStringField(blank=False, max_length=200, required=False,
                             openapi={"pattern": one_line_pattern(blank=False)})  # one line
    memory_enabled = StrictBooleanField(required=False)
    limits = LimitsSerializer(required=False)
    retention = RetentionSerializer(required=False)
    recall_threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False)
    capture = CaptureSerializer(required=False)
    conversation_timeout_minutes = StrictIntegerField(
        min_value=1, max_value=MAX_CONVERSATION_TIMEOUT_MINUTES, required=False,
        help_text="a message this long after the session's last one starts a new "
                  "conversation. Default 30.",
    )
    max_message_bytes = _max_message_bytes("limits.max_message_bytes")
    max_history_tokens = _max_history_tokens("limits.max_history_tokens")
    augmentation_enabled = StrictBooleanField(
        required=False, help_text="extract facts and summaries after capture. Default true.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError(
                f"Unknown fields: {echo(', '.join(sorted(unknown)))}.")
        # Read-only: DRF drops it, and a 200 said nothing of a rename that did not happen.
        # The slug it already has passes, so GET's body sent back as a PATCH still works.
        if self.initial_data.get("slug", self.context.get("slug")) != self.context.get("slug"):
            raise serializers.ValidationError(
                {"slug": "The slug cannot be changed: API keys and URLs name the tenant by it."})
        for name in ("max_message_bytes", "max_history_tokens"):  # spelt twice: must agree
            limits = attrs.get("limits", {})
            if name in attrs and name in limits and attrs[name] != limits[name]:
                raise serializers.ValidationError(
                    {name: f"{name} and limits.{name} are one setting; they differ here."})
        return attrs


# --- Webhooks ------------------------------------------------------------------------------


class WebhookInputSerializer(serializers.Serializer):
    url = serializers.URLField(max_length=2000)
    event_types = serializers.ListField(
        # DRF's message quotes the value whole; this one names what is allowed instead.
        child=serializers.ChoiceField(choices=EVENT_TYPES, error_messages={
            "invalid_choice": f"must be one of {', '.join(EVENT_TYPES)}."}),
        allow_empty=False,
        default=list(EVENT_TYPES),
    )
    secret = StrictStringField(
        required=False, allow_blank=False, min_length=MIN_SECRET_LENGTH, max_length=128,
        help_text="omit to have one generated (shown once)",
    )
    enabled = StrictBooleanField(default=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


# --- Recall --------------------------------------------------------------------------------

MAX_QUERY_CHARS = 10_000


class RecallInputSerializer(FlatSerializer):
    query = StrictStringField(blank=False, max_length=MAX_QUERY_CHARS)
    limit = StrictIntegerField(min_value=1, max_value=50, default=10)
    threshold = StrictFloatField(
        min_value=0.0, max_value=1.0, required=False, allow_null=True,
        help_text="drop results scoring below this; default: the tenant's recall_threshold",
    )
    relaxed = StrictBooleanField(default=False, help_text="keep results under the threshold")
    session_id = IdentifierField(SESSION_ID, empty_is_absent=True, required=False,
                                 allow_null=True)
    profile = IdentifierField(PROFILE, empty_is_absent=True, required=False, allow_null=True)
    sources = serializers.ListField(
        child=serializers.ChoiceField(choices=list(RECALL_SOURCES)), min_length=1, max_length=3,
        default=list(DEFAULT_RECALL_SOURCES),
        help_text="what to search: documents, facts, messages (default documents and facts)",
    )
    include_invalid = StrictBooleanField(default=False,
                                         help_text="also facts that are no longer true")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


# --- The memory tool -----------------------------------------------------------------------


class MemoryToolInput(serializers.Serializer):
    """The tool input as the model sent it, plus optional context fields (documentation only:
    the command's own problems, a missing or unknown command among them, come back as tool
    errors in a 200, not as HTTP 400; unknown keys are ignored, as the reference tool does)."""

    accepts_unknown_fields = True  # api/schema.py: the object stays open
    body_required = True  # no body at all is 400 invalid_body
    command = serializers.ChoiceField(choices=COMMANDS, required=False)
    path = serializers.CharField(required=False, help_text="view, create, str_replace, insert, "
                                 "delete, append: /memories/... or /...")
    view_range = serializers.ListField(child=serializers.IntegerField(), required=False,
                                       min_length=2, max_length=2)
    file_text = serializers.CharField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True, max_length=200)
    old_str = serializers.CharField(required=False, allow_blank=True)
    new_str = serializers.CharField(required=False, allow_blank=True)
    insert_line = serializers.IntegerField(required=False)
    insert_text = serializers.CharField(required=False, allow_blank=True)
    text = serializers.CharField(required=False, allow_blank=True, help_text="append")
    old_path = serializers.CharField(required=False)
    new_path = serializers.CharField(required=False)
    session_id = serializers.CharField(required=False)
    profile = serializers.CharField(required=False)
    scope = serializers.ChoiceField(choices=["session", "profile", "global"], required=False)
    turn_id = serializers.CharField(required=False)


# --- Conversations ---------------------------------------------------------------------------
# The capture body is checked by memoryhub.services.conversations (each message's problem has
# its own code); these declarations document it.


class CaptureMessageInput(serializers.Serializer):
    role = serializers.ChoiceField(choices=MessageRole.values)
    content = StrictStringField(help_text="text; credentials are redacted")
    id = IdentifierField(USER_ID, required=False, allow_null=True,
                         help_text="your own message id: a retry with it stores nothing")
    created_at = serializers.DateTimeField(required=False, allow_null=True,
                                           help_text="default: capture time")
    metadata = serializers.DictField(
        required=False, allow_null=True,
        help_text=f"a JSON object, at most {MAX_METADATA_BYTES} bytes as JSON, no NUL")


class CaptureInput(serializers.Serializer):
    messages = serializers.ListField(
        child=CaptureMessageInput(), min_length=1, max_length=MAX_MESSAGES_PER_REQUEST,
        help_text=f"1-{MAX_MESSAGES_PER_REQUEST} messages, in order")
    profile = IdentifierField(PROFILE, required=False, allow_null=True)
    process = IdentifierField(USER_ID, required=False, allow_null=True,
                              help_text="the agent or workflow, e.g. support-agent")
    new_conversation = StrictBooleanField(required=False, default=False)


class SummaryPutSerializer(serializers.Serializer):
    summary = StrictStringField(raw_text=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


MAX_HISTORY_CONVERSATIONS = 50


class TurnContextInputSerializer(FlatSerializer):
    session_id = IdentifierField(SESSION_ID, required=False, allow_null=True)
    profile = IdentifierField(PROFILE, required=False, allow_null=True)
    query = StrictStringField(required=False, allow_null=True, max_length=MAX_QUERY_CHARS,
                              help_text="recall runs only with a query")
    limit = StrictIntegerField(min_value=1, max_value=50, default=10)
    threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True)
    history = StrictIntegerField(
        min_value=0, max_value=MAX_HISTORY_CONVERSATIONS, default=0,
        help_text="how many earlier conversations to include (this session's left out)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


# --- API keys ------------------------------------------------------------------------------


class ApiKeyInputSerializer(serializers.Serializer):
    # A key bound to one end user never has admin (400 invalid_permissions).
    openapi_constraints = {"anyOf": [
        {"not": {"required": ["user_id"]}},
        {"properties": {"user_id": {"not": {"type": "string"}}}},  # null
        {"properties": {"permissions": {"items": {"enum": ["memory"]}}}},
    ]}
    name = StrictStringField(blank=False, max_length=100)  # as the dashboard and create_api_key
    permissions = serializers.ListField(
        child=serializers.ChoiceField(choices=["memory", "admin"]), allow_empty=False,
        default=["memory"],
    )
    user_id = IdentifierField(
        USER_ID, required=False, allow_null=True,
        help_text="bind the key to this end user: it reaches no one else (memory only)",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


# --- Facts -----------------------------------------------------------------------------------


class FactSourceInput(ClosedSerializer):
    conversation_id = StrictStringField(required=False, allow_null=True, max_length=64)
    message_ids = serializers.ListField(child=StrictStringField(max_length=64), required=False,
                                        max_length=100)


# memoryhub.services.facts.fact_content_check: blank is 422 not_text, over MAX_FACT_BYTES
# 422 fact_too_large (a limit in bytes, so no longer than as many characters).
FACT_CONTENT = {"pattern": text_pattern(blank=False), "maxLength": MAX_FACT_BYTES}


class FactCreateSerializer(serializers.Serializer):
    content = StrictStringField(raw_text=True, openapi=FACT_CONTENT,
                                help_text=f"at most {MAX_FACT_BYTES:,} bytes of text, not blank")
    # Every optional field may be null, meaning "not given": a client that sends the fact's
    # own shape back (``"process": null, "invalid_at": null``) creates it as it reads.
    type = serializers.ChoiceField(choices=list(FACT_TYPES), default="fact", allow_null=True)
    subject = StrictStringField(required=False, allow_null=True, max_length=200)
    predicate = StrictStringField(required=False, allow_null=True, max_length=200)
    object = StrictStringField(required=False, allow_null=True, max_length=500)
    process = IdentifierField(USER_ID, empty_is_absent=True, required=False, allow_null=True)
    confidence = StrictFloatField(required=False, allow_null=True, min_value=0.0, max_value=1.0,
                                  default=1.0)
    valid_at = serializers.DateTimeField(required=False, allow_null=True, help_text="default: now")
    invalid_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="no longer true since then (a fact of the past); default: null, true now")
    source = FactSourceInput(required=False, allow_null=True)  # type: ignore[assignment]  # a field, not Field.source

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        for name, default in (("type", "fact"), ("confidence", 1.0)):
            if attrs.get(name) is None:
                attrs[name] = default
        return {name: value for name, value in attrs.items() if value is not None}

    def fact_input(self) -> FactInput:
        """The valid body as the service's input (``POST .../facts`` and MCP's ``remember``);
        ``ApiError`` 400 ``invalid_process`` for a process tag outside its rule."""
        data: dict[str, Any] = self.validated_data
        process = data.get("process")
        source = data.get("source") or {}
        return FactInput(
            content=data["content"], type=data["type"], subject=data.get("subject") or "",
            predicate=data.get("predicate") or "", object=data.get("object") or "",
            process=valid_process(process) if process else "",
            confidence=data["confidence"], valid_at=data.get("valid_at"),
            invalid_at=data.get("invalid_at"),
            source={"conversation_id": source.get("conversation_id"),
                    "message_ids": list(source.get("message_ids") or [])},
        )


class FactPatchSerializer(serializers.Serializer):
    content = StrictStringField(raw_text=True, required=False, openapi=FACT_CONTENT)
    confidence = StrictFloatField(required=False, min_value=0.0, max_value=1.0)
    invalid_at = serializers.DateTimeField(required=False, allow_null=True,
                                           help_text="a time: no longer true since then; null: true again")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs
