"""mem0's request bodies, as ``mem0ai``'s ``MemoryClient`` (2.2.x) sends them.

The client sends the person either at the top level (``add``'s ``user_id=``) or in
``filters`` (``search``, ``get_all``; ``{"user_id": ...}``, or ``AND`` or ``OR`` of such).
MemoryHub's memories belong to a person (``user_id``): ``agent_id``, ``app_id`` and ``run_id``
are entity names too and are accepted (``run_id`` is an added conversation's session); any
other filter is refused, as a filter silently ignored would return memories the caller
meant to leave out, and so are the options that filter beside ``filters`` (search's and
get_all's ``categories`` and ``metadata``). Options of mem0's that MemoryHub has no
counterpart for (``rerank``, ``custom_categories``, ``output_format``...) are not filters
and are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import UTC, date, datetime, timedelta
from typing import Any

from rest_framework import serializers

from api.errors import ApiError
from api.serializers import (
    MAX_QUERY_CHARS,
    StrictBooleanField,
    StrictFloatField,
    StrictIntegerField,
    StrictStringField,
)

ENTITY_KEYS = ("user_id", "agent_id", "app_id", "run_id")
MAX_BATCH = 1000  # mem0's own limit of a batch
MAX_TIMESTAMP = 253402300799  # 9999-12-31T23:59:59Z, the last second a datetime holds
DEFAULT_TOP_K = 10


def _invalid(message: str) -> ApiError:
    return ApiError(400, "invalid_request", message)


def _filter_items(filters: object) -> Iterator[tuple[str, object]]:
    """The (key, value) pairs of a mem0 filter: a flat object, or ``AND`` or ``OR`` of such
    objects. An ``OR`` names its person as an ``AND`` does: agents, apps and runs hold no
    memories of their own here, so ``{"OR": [{"user_id": "alice"}, {"agent_id": "bot"}]}``
    is alice's memories, and an ``OR`` of two people names one twice, differently (400)."""
    if not isinstance(filters, dict):
        raise _invalid("filters must be a JSON object, such as {\"user_id\": \"alice\"}.")
    for key, value in filters.items():
        if key in ("AND", "OR") and isinstance(value, list):
            for part in value:
                yield from _filter_items(part)
        elif key in ENTITY_KEYS:
            yield key, value
        else:
            raise _invalid(f"Unsupported filter {key!r}: MemoryHub's mem0 API filters by "
                           "user_id (agent_id, app_id and run_id are accepted and ignored).")


def named_entities(body: object) -> dict[str, object]:
    """The entities a body names, at its top level or in ``filters``; 400 when the body is
    not an object, a filter is unsupported, or one entity is named twice differently."""
    if not isinstance(body, Mapping):
        raise _invalid("The body must be a JSON object.")
    named: dict[str, object] = {}
    top = [(key, body[key]) for key in ENTITY_KEYS if body.get(key) is not None]
    filters = body.get("filters")
    for key, value in top + ([] if filters is None else list(_filter_items(filters))):
        if key in named and named[key] != value:
            raise _invalid(f"{key} is named twice, differently.")
        named[key] = value
    return named


# Options of search and get_all that filter what they return, sent beside ``filters``
# (mem0ai's SearchMemoryOptions and GetAllMemoryOptions).
FILTER_OPTIONS = ("categories", "metadata")


def read_entities(body: object) -> dict[str, object]:
    """``named_entities`` of a search or a get_all, whose options must not filter: each of
    ``FILTER_OPTIONS`` given is 400, as a filter by it is, never ignored (ignoring it would
    return memories the caller meant to leave out)."""
    named = named_entities(body)  # 400 for a body that is not an object
    for key in FILTER_OPTIONS:
        if isinstance(body, Mapping) and body.get(key):  # None, [] and {} filter nothing
            raise _invalid(f"Unsupported option {key!r}: MemoryHub's mem0 API does not filter "
                           f"by {key}; leave it out and pick from the results by their {key}.")
    return named


def created_between(body: Mapping[str, object]) -> tuple[datetime | None, datetime | None]:
    """``get_all``'s ``start_date`` and ``end_date`` (ISO 8601: memories created on or after
    the one, on or before the other) as a half-open range [from, until). A date alone is its
    whole day (UTC), so ``end_date="2026-11-06"`` keeps that day's memories; a time without
    an offset is UTC. Either may be absent or null. Refused rather than ignored, as a filter:
    ignoring it would return memories the caller meant to leave out."""
    start, end = (_moment_of(body, name) for name in ("start_date", "end_date"))
    since = start[0] if start is not None else None
    until = None
    if end is not None:
        moment, whole_day = end
        try:
            until = moment + (timedelta(days=1) if whole_day else timedelta(microseconds=1))
        except OverflowError:  # the end of 9999-12-31: nothing is later, so no bound
            until = None
    return since, until


def _moment_of(body: Mapping[str, object], name: str) -> tuple[datetime, bool] | None:
    """The option's time and whether it named a whole day; None when absent or null."""
    value = body.get(name)
    if value is None:
        return None
    found = _iso_moment(value) if isinstance(value, str) else None
    if found is not None:
        return found
    raise _invalid(f"{name}: an ISO 8601 date or time, such as 2026-11-06 or "
                   f"2026-11-06T17:02:11Z.")


def _iso_moment(value: str) -> tuple[datetime, bool] | None:
    """An ISO 8601 date (its midnight, UTC) or time (UTC without an offset), in UTC, and
    whether it was a date alone; None when it is neither, or out of datetime's range in UTC."""
    try:
        return datetime.combine(date.fromisoformat(value), datetime.min.time(), UTC), True
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value)
        # In UTC, as stored: a time whose offset takes it past year 1 or 9999 is none.
        return (moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)), False
    except (ValueError, OverflowError):
        return None


def person_of(body: object) -> object:
    """The ``user_id`` a body names, whatever JSON value it is (checked later: a malformed one
    is 400, never the bound key's person); None when it names none or cannot be read (the
    handler then says what is wrong with ``named_entities``)."""
    try:
        return named_entities(body).get("user_id")
    except ApiError:
        return None


# Unix seconds written out: ASCII digits (not any script's, as str.isdigit takes), at most
# twelve before an optional fraction. Eight digits alone are an ISO 8601 date (20260301), which
# is read first.
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?")


class TimestampField(serializers.Field):
    """mem0's ``timestamp``, when a memory was stated, as a time: Unix seconds (a number), or
    an ISO 8601 string, which mem0's update documents and its client types
    (``Union[int, float, str]``), or Unix seconds as a string of digits. A date alone is its
    midnight, a time without an offset UTC, as ``get_all``'s dates; anything else is 400."""

    default_error_messages = {"invalid": "Must be a Unix time in seconds or an ISO 8601 date "
                                         "or time, such as 2026-11-06T17:02:11Z."}

    def to_internal_value(self, data: Any) -> datetime:
        if isinstance(data, int | float) and not isinstance(data, bool):
            if not 0 <= data <= MAX_TIMESTAMP:  # also NaN
                self.fail("invalid")
            return datetime.fromtimestamp(data, UTC)
        if isinstance(data, str):
            found = _iso_moment(data)
            if found is not None:
                return found[0]
            if _UNIX_SECONDS.fullmatch(data):  # "1772323200": a number a client sent as text
                return self.to_internal_value(float(data))
        self.fail("invalid")

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


class AddInput(serializers.Serializer):
    """``POST v3/memories/add/``. ``messages`` and ``metadata`` are checked by the services'
    own rules (the captured messages', at most 100 of them; 4 KiB of metadata)."""

    messages = serializers.JSONField()
    metadata = serializers.JSONField(required=False, allow_null=True)
    infer = StrictBooleanField(default=True)
    timestamp = TimestampField(required=False, allow_null=True)


class SearchInput(serializers.Serializer):
    """``POST v3/memories/search/``: ``top_k`` has recall's bounds (``limit``, 1-50)."""

    query = StrictStringField(allow_blank=False, max_length=MAX_QUERY_CHARS)
    top_k = StrictIntegerField(min_value=1, max_value=50, default=DEFAULT_TOP_K)
    threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False, allow_null=True)

    def validate_query(self, value: str) -> str:
        if not value.strip():
            raise serializers.ValidationError("query must not be blank.")
        return value


class UpdateInput(serializers.Serializer):
    """``PUT v1/memories/{id}/``: ``text`` is the memory's new content, ``timestamp`` (Unix
    seconds or ISO 8601) when it was stated, as in an add. ``expiration_date`` has no
    counterpart and is ignored."""

    text = StrictStringField(required=False, raw_text=True)
    metadata = serializers.JSONField(required=False, allow_null=True)
    timestamp = TimestampField(required=False, allow_null=True)


class BatchItem(UpdateInput):
    memory_id = StrictStringField()


class BatchInput(serializers.Serializer):
    """``PUT|DELETE v1/batch/``: at most ``MAX_BATCH`` memories, all or nothing."""

    memories = serializers.ListField(child=BatchItem(), min_length=1, max_length=MAX_BATCH)


def update_fields(data: Mapping[str, Any]) -> dict[str, Any]:
    """What an update changes, as ``fact_update``'s arguments (absent: unchanged)."""
    fields = {"content": data["text"]} if "text" in data else {}
    if "metadata" in data:
        fields["metadata"] = data["metadata"]
    if data.get("timestamp") is not None:
        fields["valid_at"] = data["timestamp"]
    return fields
