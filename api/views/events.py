"""The tenant's event feed, for keys with ``admin``: ``GET /api/v1/events?after=&limit=``.

Not a keyset page like the other lists: the contract fixes its cursor, the id of the last
event returned, passed back as ``after``.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.permissions import HasAdminPermission
from api.representations import EventPageSerializer, event_page_representation
from api.serializers import limit_parameter, parse_limit, with_errors
from memoryhub.numbers import MAX_DIGITS, parse_natural
from memoryhub.selectors.events import events_after


def parse_event_cursor(raw: str | None) -> int | None:
    if not raw:  # absent or empty
        return None
    after = parse_natural(raw)  # at most 18 digits: a bigint, as event ids are
    if after is None:
        raise ApiError(400, "invalid_cursor", "after must be an event id (a non-negative integer).")
    return after


class EventListView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(
        summary="The tenant's event feed, oldest first",
        description="`memory.changed` (data: change, path, scope, scope_key; renamed adds "
        "old_path; a forgotten person leaves one event with change `forgotten` and no path) "
        "`memory.pressure` (data: scope, scope_key, used_bytes, limit_bytes) and "
        "`fact.changed` (data: change (created, updated, merged, invalidated or deleted), "
        "fact_id, type). Pass the "
        "last `next_cursor` (the id of the last event returned) as `after` to read on; "
        "`next_cursor` is null when there are no more events after `after` for now (keep "
        "your cursor and poll again later).",
        parameters=[
            OpenApiParameter("after", {"type": "integer", "minimum": 0,
                                       "maximum": 10**MAX_DIGITS - 1},
                             description="return events with a larger id"),
            limit_parameter(),
        ],
        responses=with_errors({200: EventPageSerializer}, e400="invalid_cursor or invalid_limit"),
        tags=["tenant administration"],
    )
    def get(self, request: Request) -> Response:
        after = parse_event_cursor(request.query_params.get("after"))
        limit = parse_limit(request.query_params)
        events = events_after(after=after, limit=limit)
        return Response(event_page_representation(events))
