"""End users (spec: End users), for keys with ``memory``.

An unknown ``user_id`` reads as a person with nothing stored: ``GET`` shows zero counts and
``created_at: null``, export is empty, ``DELETE`` is a 204 with nothing done. Another
tenant's person is indistinguishable from that.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.params import valid_session_id, valid_user_id
from api.representations import (
    EndUserPageSerializer,
    EndUserSerializer,
    ExportSerializer,
    PortalLinkSerializer,
    end_user_page_representation,
    end_user_representation,
    export_representation,
    portal_link_representation,
)
from api.serializers import (
    CURSOR_PARAMETER,
    LIMIT_PARAMETER,
    EndUserPatchSerializer,
    parse_page,
    with_errors,
)
from memoryhub.models import Actor
from memoryhub.selectors.people import end_user_export, end_user_summary, end_users_page
from memoryhub.services.people import (
    end_user_forget,
    end_user_memory_set,
    portal_link_create,
    session_forget,
)
from tenants.services import audit_record

TAGS = ["end users"]
NO_CONTENT = {204: OpenApiResponse(description="done (also when there was nothing to delete)")}


class UserListView(TenantAPIView):
    serves_bound_keys = True  # a key bound to one end user lists only them

    @extend_schema(
        operation_id="users_list",
        summary="List end users",
        description="End users by user_id, with their document and conversation counts. "
        "Paginated with limit and cursor.",
        parameters=[LIMIT_PARAMETER, CURSOR_PARAMETER],
        responses=with_errors({200: EndUserPageSerializer}),
        tags=TAGS,
    )
    def get(self, request: Request) -> Response:
        page = parse_page(request.query_params, arity=1)
        rows = end_users_page(after=page.after_value, limit=page.limit,
                              only=self.principal.user_id)
        return Response(end_user_page_representation(rows, page))


class UserView(TenantAPIView):
    @extend_schema(
        operation_id="users_retrieve",
        summary="Show an end user with counts",
        description="Documents per scope, total bytes, how many sessions and profiles "
        "have documents, and how many conversations and messages were captured. An unknown "
        "user_id shows zero counts and created_at null (not 404).",
        responses=with_errors({200: EndUserSerializer}),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str) -> Response:
        summary = end_user_summary(user_id=valid_user_id(user_id), end_user=self.end_user)
        return Response(end_user_representation(summary))

    @extend_schema(
        summary="Switch the person's memory on or off",
        description="The person's own switch: when off, their index is disabled and every "
        "memory tool command answers `Error: memory is disabled`. Creates the end user.",
        request=EndUserPatchSerializer,
        responses=with_errors({200: EndUserSerializer}, body=True),
        tags=TAGS,
    )
    def patch(self, request: Request, user_id: str) -> Response:
        user_id = valid_user_id(user_id)
        body = EndUserPatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        end_user = end_user_memory_set(
            tenant=self.tenant, user_id=user_id, enabled=body.validated_data["memory_enabled"]
        )
        return Response(end_user_representation(end_user_summary(user_id=user_id,
                                                                  end_user=end_user)))

    @extend_schema(
        summary="Forget the person",
        description="Deletes, in one transaction, every document of every scope and "
        "session, the search passages, every conversation and its messages, write tallies, "
        "portal links, the end user itself, and every event naming them. One `memory.changed` event remains, with data "
        '`{"change": "forgotten", "path": null, "scope": null, "scope_key": null}`, so feed '
        "readers drop their copies, and the audit log records which key forgot them "
        "(`end_user.forgotten`). 204 also for an unknown user_id (nothing is recorded).",
        request=None,
        responses=with_errors(NO_CONTENT),
        tags=TAGS,
    )
    def delete(self, request: Request, user_id: str) -> Response:
        user_id = valid_user_id(user_id)
        if end_user_forget(tenant=self.tenant, user_id=user_id, actor=Actor.APP):
            # As the dashboard does: the erasure, who asked for it and when (README, "Forget
            # everything"); the audit log holds no memory content.
            audit_record(tenant=self.tenant, actor=self.principal.actor_label,
                         action="end_user.forgotten", target=user_id)
        return Response(status=204)


class SessionView(TenantAPIView):
    @extend_schema(
        summary="Delete one session's memory",
        description="Deletes the session-scope documents of that session, recording a "
        "`memory.changed` `deleted` event for each. 204 also when there were none.",
        request=None,
        responses=with_errors(NO_CONTENT, e400="invalid_user_id or invalid_session_id"),
        tags=TAGS,
    )
    def delete(self, request: Request, user_id: str, session_id: str) -> Response:
        session_forget(
            tenant=self.tenant, user_id=valid_user_id(user_id),
            session_id=valid_session_id(session_id), actor=Actor.APP,
        )
        return Response(status=204)


class ExportView(TenantAPIView):
    def writes_end_user(self, request: Request) -> bool:
        # The export reads the person in several statements, each seeing what had committed
        # when it began: it holds the person's write lock (the key's statement takes it), which
        # every writer and forget of the person takes first, so none commits half-way
        # through it and the export is the person at one moment. A bound key's other person
        # is locked for nothing: it reads as absent (api.authentication).
        return request.method == "GET"

    @extend_schema(
        summary="Export everything stored for the person",
        description="The person, every document with its content, every event naming them, "
        "their portal links (dates only; tokens are never stored), and every conversation "
        "(in the order they started) with its messages in order. Search passages are copies "
        "of content and are left out. An unknown user_id exports as empty.",
        responses=with_errors({200: ExportSerializer}),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str) -> Response:
        export = end_user_export(user_id=valid_user_id(user_id), end_user=self.end_user)
        return Response(export_representation(export))


class PortalLinkView(TenantAPIView):
    @extend_schema(
        summary="Mint a one-time sign-in link to the person's memory page",
        description="The URL opens the person's memory page on the web once, without a "
        "password, until expires_at (PORTAL_LINK_MAX_AGE seconds, 10 minutes by default). "
        "Hand it to that person only. Creates the end user.",
        request=None,
        responses=with_errors({201: PortalLinkSerializer}),
        tags=TAGS,
    )
    def post(self, request: Request, user_id: str) -> Response:
        link = portal_link_create(tenant=self.tenant, user_id=valid_user_id(user_id))
        url = request.build_absolute_uri(reverse("web:portal_redeem", args=[link.token]))
        return Response(portal_link_representation(url=url, expires_at=link.expires_at),
                        status=201)
