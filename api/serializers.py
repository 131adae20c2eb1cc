"""What goes in and out over HTTP: request bodies, response shapes, list parameters.

Output serializers here exist for two readers: the views, which turn models into the
contract's JSON, and drf-spectacular, which documents that JSON at ``/api/docs/``.

Pagination (documented once, used by every list of this API except the event feed, whose
cursor the contract fixes): ``?limit=`` (1-1000, default 100) and ``?cursor=`` (opaque, from
the previous page's ``next_cursor``). Lists are keyset-paginated in a fixed order, so a row
written or deleted between two pages never shifts another into or out of view; the last page
has ``next_cursor: null``.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from django.core.validators import ProhibitNullCharactersValidator
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.utils import json as drf_json
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from api.errors import ApiError
from memoryhub.models import Actor, EventType, Scope

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
    413: error_response("request_too_large: body over 1 MiB"),
    429: error_response("rate_limited (with Retry-After)"),
}


def with_errors(ok: dict[int, Any], **extra: str) -> dict[int, Any]:
    """``ok`` responses plus the common errors plus ``extra`` ones (``e404="why"``)."""
    responses: dict[int, Any] = {**ok, **COMMON_ERRORS}
    for key, description in extra.items():
        responses[int(key.removeprefix("e"))] = error_response(description)
    return responses


# --- Bodies ------------------------------------------------------------------------------


class TextRuleJSONParser(JSONParser):
    """JSON whose strings may hold bytes that are not UTF-8, for the bodies that carry content.

    The contract refuses invalid UTF-8 *as a content rule* (documents: 422 ``not_text``; the
    memory tool: a tool error), not as a malformed body. So undecodable bytes become lone
    surrogates (``surrogateescape``) and reach the services, whose text check refuses them
    with the contract's code; a path holding them is refused as ``invalid_path``.
    """

    def parse(self, stream: IO[bytes], media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = codecs.getreader(encoding)(stream, "surrogateescape").read()
            return drf_json.loads(
                text, parse_constant=drf_json.strict_constant if self.strict else None
            )
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc


def body_is_empty(request: Any) -> bool:
    """True when the request had no body at all (DRF then gives ``request.data == {}``)."""
    return request.stream is None


# --- Pagination ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Page:
    limit: int
    after: tuple[Any, ...] | None  # the sort key of the previous page's last row


LIMIT_PARAMETER = OpenApiParameter(
    "limit", int, description=f"page size, 1-{MAX_PAGE_SIZE} (default {DEFAULT_PAGE_SIZE})"
)
CURSOR_PARAMETER = OpenApiParameter(
    "cursor", str, description="the previous page's next_cursor; omit for the first page"
)


def parse_limit(query: Mapping[str, str], default: int = DEFAULT_PAGE_SIZE) -> int:
    raw = query.get("limit")
    if not raw:  # absent or empty
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE_SIZE:
        raise ApiError(400, "invalid_limit", f"limit must be an integer from 1 to {MAX_PAGE_SIZE}.")
    return int(raw)


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
    if not isinstance(key, list) or len(key) != arity or not all(isinstance(k, str) for k in key):
        raise ApiError(400, "invalid_cursor", "cursor must be a next_cursor this API returned.")
    return tuple(key)


def parse_page(query: Mapping[str, str], arity: int) -> Page:
    return Page(limit=parse_limit(query), after=decode_cursor(query.get("cursor"), arity))


def next_cursor(rows: list[Any], limit: int, key: Any) -> str | None:
    """Selectors fetch ``limit + 1`` rows: the extra one only says there is another page."""
    if len(rows) <= limit:
        return None
    return encode_cursor(key(rows[limit - 1]))


# --- Documents -----------------------------------------------------------------------------

SCOPES = tuple(Scope.values)  # session, profile, global


class DocumentMetaSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="as the caller wrote it (lists: the stored form)")
    scope = serializers.ChoiceField(choices=Scope.values)
    scope_key = serializers.CharField(allow_null=True, help_text="session_id, profile, or null")
    description = serializers.CharField(allow_blank=True)
    bytes = serializers.IntegerField(help_text="UTF-8 length of content")
    version = serializers.IntegerField(help_text="1 on create, +1 on every change; the ETag")
    updated_by = serializers.ChoiceField(choices=Actor.values)
    confidence = serializers.FloatField(help_text="0-1, weighs recall ranking")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DocumentSerializer(DocumentMetaSerializer):
    content = serializers.CharField(allow_blank=True)


class DocumentPageSerializer(serializers.Serializer):
    documents = DocumentMetaSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class StrictStringField(serializers.CharField):
    """A JSON string, unchanged: no coercion of numbers, no whitespace trimming.

    ``raw_text=True`` lets NUL and unpaired surrogates through (DRF answers 400 for them):
    content rules are the services' to enforce, with the contract's 422 ``not_text``.
    """

    def __init__(self, *, raw_text: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)
        if raw_text:
            self.validators = [
                v for v in self.validators
                if not isinstance(v, ProhibitNullCharactersValidator | ProhibitSurrogateCharactersValidator)
            ]

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError("Must be a string.")
        return data


class StrictBooleanField(serializers.BooleanField):
    """``true`` or ``false`` only: ``"no"`` or ``0`` is a client bug to report, not to guess."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise serializers.ValidationError("Must be true or false.")
        return data


class StrictFloatField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            raise serializers.ValidationError("Must be a number.")
        return super().to_internal_value(data)


class DocumentWriteSerializer(serializers.Serializer):
    """``PUT`` body. Omitted ``description``/``confidence`` keep their current values (on
    create: empty and 1.0)."""

    content = StrictStringField(raw_text=True)
    description = StrictStringField(
        required=False, allow_null=True, max_length=200,
        help_text="one line, at most 200 characters; null or empty: no description",
    )
    confidence = StrictFloatField(required=False, min_value=0.0, max_value=1.0)

    def validate_description(self, value: str | None) -> str:
        if value is None:
            return ""
        if "\n" in value or "\r" in value:
            raise serializers.ValidationError("description must be one line.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


def reject_unknown_fields(serializer: serializers.Serializer) -> None:
    """A misspelt field must not be silently ignored (``descripton`` would lose data)."""
    if not isinstance(serializer.initial_data, Mapping):
        return
    unknown = set(serializer.initial_data) - set(serializer.fields)
    if unknown:
        raise serializers.ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}.")


# --- End users -----------------------------------------------------------------------------


class DocumentCountsSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    profile = serializers.IntegerField()
    global_ = serializers.IntegerField()
    total = serializers.IntegerField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["global"] = fields.pop("global_")  # a Python keyword, a JSON key
        return fields


class EndUserSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    memory_enabled = serializers.BooleanField(help_text="the person's own switch")
    created_at = serializers.DateTimeField(allow_null=True, help_text="null: nothing stored")
    documents = DocumentCountsSerializer()
    bytes = serializers.IntegerField(help_text="total UTF-8 bytes of all documents")
    sessions = serializers.IntegerField(help_text="sessions with at least one document")
    profiles = serializers.IntegerField(help_text="profiles with at least one document")


class EndUserPageSerializer(serializers.Serializer):
    users = EndUserSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class EndUserPatchSerializer(serializers.Serializer):
    memory_enabled = StrictBooleanField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="the cursor")
    type = serializers.ChoiceField(choices=EventType.values)
    created_at = serializers.DateTimeField()
    actor = serializers.ChoiceField(choices=Actor.values)
    user_id = serializers.CharField()
    # DRF's metaclass takes declared fields out of the class: Serializer.data stays as it is.
    data = serializers.DictField()  # type: ignore[assignment]


class PortalLinkRecordSerializer(serializers.Serializer):
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    used_at = serializers.DateTimeField(allow_null=True)


class ExportSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    memory_enabled = serializers.BooleanField()
    created_at = serializers.DateTimeField(allow_null=True)
    account_email = serializers.CharField(allow_null=True, help_text="linked web account")
    documents = DocumentSerializer(many=True)
    events = EventSerializer(many=True)
    portal_links = PortalLinkRecordSerializer(many=True)


class PortalLinkSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="absolute; opens /portal/<token> once")
    expires_at = serializers.DateTimeField()


# --- Tenant administration -------------------------------------------------------------------


class ProfileSerializer(serializers.Serializer):
    name = serializers.CharField()
    disabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class ProfilePageSerializer(serializers.Serializer):
    profiles = ProfileSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class ProfilePutSerializer(serializers.Serializer):
    disabled = StrictBooleanField()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        reject_unknown_fields(self)
        return attrs


class EventPageSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    next_cursor = serializers.IntegerField(
        allow_null=True, help_text="id of the last event returned; null when none was returned"
    )
