"""Profiles, for keys with ``admin``: ``GET /api/v1/profiles``, ``PUT /api/v1/profiles/{name}``.

The tenant's other administration: its settings in api/views/tenant.py, the event feed in
api/views/events.py, webhooks in api/views/webhooks.py.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.params import valid_profile
from api.permissions import HasAdminPermission
from api.representations import (
    ProfilePageSerializer,
    ProfileSerializer,
    profile_page_representation,
    profile_representation,
)
from api.serializers import (
    CURSOR_PARAMETER,
    LIMIT_PARAMETER,
    ProfilePutSerializer,
    parse_page,
    with_errors,
)
from memoryhub.selectors.profiles import profiles_page
from memoryhub.services.profiles import profile_set


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
        rows = profiles_page(after=page.after_value, limit=page.limit)
        return Response(profile_page_representation(rows, page))


class ProfileView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(
        summary="Enable or disable a profile",
        description="Creates the profile if it does not exist (201), else updates it (200). "
        "A disabled profile's sessions get no memory: an empty index and `Error: memory is "
        "disabled` from every memory tool command.",
        request=ProfilePutSerializer,
        responses=with_errors({200: ProfileSerializer, 201: ProfileSerializer}, body=True,
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
