"""Facts (spec: Facts), for keys with ``memory``:

- ``GET|POST /api/v1/users/{u}/facts``: the person's facts newest first (``type``,
  ``process``, ``include_invalid``, ``limit``, ``cursor``); create one (201, or 200 with
  the valid fact of the same normalised text);
- ``GET|PATCH|DELETE .../facts/{id}``: with ``ETag: "<version>"``; ``If-Match`` makes PATCH
  and DELETE conditional (412 ``precondition_failed``), ``If-None-Match`` on GET answers 304;
- ``GET .../facts/{id}/history``: the fact's changes, oldest first.

A fact id that is malformed, unknown, deleted, or another person's or tenant's is the same 404.
Writes through this API are the app's (``updated_by: app``).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.params import optional, valid_process, valid_user_id
from api.parsers import TextRuleJSONParser
from api.preconditions import IF_MATCH, etag, parse_entity_tags, precondition_failed
from api.representations import (
    FactHistorySerializer,
    FactPageSerializer,
    FactSerializer,
    fact_history_representation,
    fact_page_representation,
    fact_representation,
)
from api.serializers import (
    CURSOR_PARAMETER,
    LIMIT_PARAMETER,
    FactCreateSerializer,
    FactPatchSerializer,
    Page,
    decode_cursor,
    parse_limit,
    with_errors,
)
from memoryhub.errors import VersionMismatch
from memoryhub.facts import FACT_TYPES
from memoryhub.models import Actor, Fact
from memoryhub.selectors.conversations import parse_uuid
from memoryhub.selectors.facts import fact_find, fact_history, facts_page
from memoryhub.services.documents import end_user_get_or_create
from memoryhub.services.facts import UNSET, fact_create, fact_delete, fact_update

TAGS = ["facts"]
NOT_FOUND = "No fact with this id."
RULES_422 = "not_text, credential_detected or fact_too_large"
ETAG_HEADER = OpenApiParameter("ETag", str, OpenApiParameter.HEADER, response=[200, 201, 304],
                               description='"<version>" of the fact returned')


def _not_found() -> ApiError:
    return ApiError(404, "not_found", NOT_FOUND)


def _respond(fact: Fact, status: int = 200) -> Response:
    response = Response(fact_representation(fact), status=status)
    response["ETag"] = etag(fact)
    return response


def _valid_type(value: str) -> str:
    if value not in FACT_TYPES:
        raise ApiError(400, "invalid_type", f"type must be one of {', '.join(FACT_TYPES)}.")
    return value


def _flag(raw: str | None) -> bool:
    if raw in (None, "", "false", "0"):
        return False
    if raw in ("true", "1"):
        return True
    raise ApiError(400, "invalid_request", "include_invalid must be true or false.")


class FactListView(TenantAPIView):
    parser_classes = [TextRuleJSONParser]
    writing_methods = frozenset({"POST"})

    @extend_schema(
        operation_id="users_facts_list",
        summary="List the person's facts, newest first",
        parameters=[
            OpenApiParameter("type", str, enum=list(FACT_TYPES)),
            OpenApiParameter("process", str),
            OpenApiParameter("include_invalid", bool, description="default false"),
            LIMIT_PARAMETER,
            CURSOR_PARAMETER,
        ],
        responses=with_errors({200: FactPageSerializer},
                              e400="invalid_user_id, invalid_type, invalid_process, "
                              "invalid_limit or invalid_cursor"),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str) -> Response:
        valid_user_id(user_id)
        query = request.query_params
        limit = parse_limit(query)
        cursor = decode_cursor(query.get("cursor"), arity=1)
        before = parse_uuid(cursor[0]) if cursor else None
        if cursor and before is None:
            raise ApiError(400, "invalid_cursor", "cursor must be a next_cursor this API returned.")
        rows = facts_page(
            end_user=self.end_user, type=optional(query, "type", _valid_type),
            process=optional(query, "process", valid_process),
            include_invalid=_flag(query.get("include_invalid")), before=before, limit=limit,
        )
        return Response(fact_page_representation(rows, Page(limit=limit, after=None)))

    @extend_schema(
        summary="Create a fact",
        description="updated_by becomes `app`. A valid fact with the same normalised text "
        "(case, spacing and final punctuation aside) is a duplicate: 200 with it, unchanged.",
        request=FactCreateSerializer,
        responses=with_errors(
            {201: OpenApiResponse(FactSerializer, description="created"),
             200: OpenApiResponse(FactSerializer, description="the existing duplicate")},
            body=True,
            e400="invalid_user_id, invalid_process or invalid_request",
            e403="permission_denied, or memory_disabled", e422=RULES_422),
        tags=TAGS,
    )
    def post(self, request: Request, user_id: str) -> Response:
        user_id = valid_user_id(user_id)
        body = FactCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.fact_input()
        end_user = self.end_user or end_user_get_or_create(tenant=self.tenant, user_id=user_id)
        fact, created = fact_create(tenant=self.tenant, end_user=end_user, actor=Actor.APP,
                                    data=data)
        return _respond(fact, status=201 if created else 200)


class FactView(TenantAPIView):
    parser_classes = [TextRuleJSONParser]
    writing_methods = frozenset({"PATCH", "DELETE"})

    def _find(self, fact_id: str, *, lock: bool = False) -> Fact:
        fact = fact_find(end_user=self.end_user, fact_id=fact_id, for_update=lock)
        if fact is None:
            raise _not_found()
        fact.end_user = self.end_user  # type: ignore[assignment]  # found, so not None
        return fact

    def _expected_version(self, request: Request, fact: Fact) -> int | None:
        header = request.headers.get("If-Match")
        if header is None:
            return None
        versions = parse_entity_tags(header, strong=True)  # If-Match compares strongly
        if versions is not None and fact.version not in versions:
            raise precondition_failed("If-Match: the fact is not at that version.")
        return fact.version

    @extend_schema(
        summary="Show one fact",
        parameters=[OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER,
                                     description='"<version>": 304 while that version is current'),
                    ETAG_HEADER],
        responses=with_errors({200: FactSerializer,
                               304: OpenApiResponse(description="still that version")},
                              e400="invalid_user_id", e404="not_found"),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str, fact_id: str) -> Response:
        valid_user_id(user_id)
        fact = self._find(fact_id)
        cached = request.headers.get("If-None-Match")
        if cached is not None:
            versions = parse_entity_tags(cached)
            if versions is None or fact.version in versions:
                return Response(status=304, headers={"ETag": etag(fact)})
        return _respond(fact)

    @extend_schema(
        summary="Edit a fact: content, confidence, invalid_at",
        description="updated_by becomes `app`, version +1, one history row; setting "
        "invalid_at marks it no longer true (event invalidated), null makes it true again.",
        parameters=[IF_MATCH, ETAG_HEADER],
        request=FactPatchSerializer,
        responses=with_errors({200: FactSerializer}, body=True,
                              e400="invalid_user_id or invalid_request",
                              e404="not_found", e412="precondition_failed", e422=RULES_422),
        tags=TAGS,
    )
    def patch(self, request: Request, user_id: str, fact_id: str) -> Response:
        valid_user_id(user_id)
        body = FactPatchSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        fact = self._find(fact_id, lock=True)
        try:
            fact = fact_update(
                end_user=fact.end_user, fact=fact, actor=Actor.APP,
                expected_version=self._expected_version(request, fact),
                content=data.get("content", UNSET), confidence=data.get("confidence", UNSET),
                invalid_at=data.get("invalid_at", UNSET),
            )
        except VersionMismatch as exc:
            raise precondition_failed(exc.message) from exc
        return _respond(fact)

    @extend_schema(
        summary="Delete a fact",
        description="Its history is no longer shown (404, like the fact); augmentation does "
        "not learn it again from the messages it came from.",
        parameters=[IF_MATCH], request=None,
        responses=with_errors({204: OpenApiResponse(description="deleted")},
                              e400="invalid_user_id", e404="not_found",
                              e412="precondition_failed"),
        tags=TAGS,
    )
    def delete(self, request: Request, user_id: str, fact_id: str) -> Response:
        valid_user_id(user_id)
        fact = self._find(fact_id, lock=True)
        fact_delete(end_user=fact.end_user, fact=fact, actor=Actor.APP,
                    expected_version=self._expected_version(request, fact))
        return Response(status=204)


class FactHistoryView(TenantAPIView):
    @extend_schema(
        summary="A fact's history, oldest first",
        responses=with_errors({200: FactHistorySerializer}, e400="invalid_user_id",
                              e404="not_found"),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str, fact_id: str) -> Response:
        valid_user_id(user_id)
        rows = fact_history(end_user=self.end_user, fact_id=fact_id)
        if rows is None:
            raise _not_found()
        return Response(fact_history_representation(rows))
