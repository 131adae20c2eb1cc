"""Tenant administration with an ``admin`` key: profiles and the event feed.

``GET|PATCH /api/v1/tenant`` lives in api/views/tenant.py.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.params import valid_profile
from api.permissions import HasAdminPermission
from api.serializers import (
    CURSOR_PARAMETER,
    LIMIT_PARAMETER,
    EventPageSerializer,
    ProfilePageSerializer,
    ProfilePutSerializer,
    ProfileSerializer,
    next_cursor,
    parse_limit,
    parse_page,
    with_errors,
)
from memoryhub.models import MemoryEvent, Profile
from memoryhub.selectors.events import events_after
from memoryhub.selectors.profiles import profiles_page
from memoryhub.services.profiles import profile_set


def profile_representation(profile: Profile) -> dict:
    return {"name": profile.name, "disabled": profile.disabled, "created_at": profile.created_at}


def event_representation(event: MemoryEvent) -> dict:
    return {
        "id": event.id,
        "type": event.type,
        "created_at": event.created_at,
        "actor": event.actor,
        "user_id": event.user_id,
        "data": event.data,
    }


class ProfileListView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(
        summary="List the tenant's profiles",
        description="Profiles an admin has set, by name. Paginated with limit and cursor. "
        "A profile without a row here is enabled.",
        parameters=[LIMIT_PARAMETER, CURSOR_PARAMETER],
        responses=with_errors({200: ProfilePageSerializer}),
        tags=["tenant administration"],
    )
    def get(self, request: Request) -> Response:
        page = parse_page(request.query_params, arity=1)
        rows = profiles_page(after=page.after[0] if page.after else None, limit=page.limit)
        return Response({
            "profiles": [profile_representation(p) for p in rows[: page.limit]],
            "next_cursor": next_cursor(rows, page.limit, lambda p: (p.name,)),
        })


class ProfileView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(
        summary="Enable or disable a profile",
        description="Creates the profile if it does not exist (201), else updates it (200). "
        "A disabled profile's sessions get no memory: an empty index and `Error: memory is "
        "disabled` from every memory tool command.",
        request=ProfilePutSerializer,
        responses=with_errors({200: ProfileSerializer, 201: ProfileSerializer},
                              e400="invalid_profile or invalid_request"),
        tags=["tenant administration"],
    )
    def put(self, request: Request, profile: str) -> Response:
        name = valid_profile(profile)
        body = ProfilePutSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        row, created = profile_set(
            tenant=self.tenant, name=name, disabled=body.validated_data["disabled"],
            actor=self.principal.actor_label,
        )
        return Response(profile_representation(row), status=201 if created else 200)


def parse_event_cursor(raw: str | None) -> int | None:
    if not raw:  # absent or empty
        return None
    if not raw.isdigit() or len(raw) > 18:  # bigint ids; more digits cannot be one of ours
        raise ApiError(400, "invalid_cursor", "after must be an event id (a non-negative integer).")
    return int(raw)


class EventListView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(
        summary="The tenant's event feed, oldest first",
        description="`memory.changed` (data: change, path, scope, scope_key; renamed adds "
        "old_path; a forgotten person leaves one event with change `forgotten` and no path) "
        "and `memory.pressure` (data: scope, scope_key, used_bytes, limit_bytes). Pass the "
        "last `next_cursor` (the id of the last event returned) as `after` to read on; "
        "`next_cursor` is null when there are no more events after `after` for now (keep "
        "your cursor and poll again later).",
        parameters=[
            OpenApiParameter("after", int, description="return events with a larger id"),
            OpenApiParameter("limit", int, description="1-1000 (default 100)"),
        ],
        responses=with_errors({200: EventPageSerializer}, e400="invalid_cursor or invalid_limit"),
        tags=["tenant administration"],
    )
    def get(self, request: Request) -> Response:
        after = parse_event_cursor(request.query_params.get("after"))
        limit = parse_limit(request.query_params)
        events = events_after(after=after, limit=limit)
        # API v1: "<cursor of the last event, or null when there are no more>". The feed is
        # a tail that keeps growing, so a page that returned events always hands back where
        # it stopped; only an empty page (nothing after ``after``) says null.
        return Response({
            "events": [event_representation(e) for e in events],
            "next_cursor": events[-1].id if events else None,
        })
