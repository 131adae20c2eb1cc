"""Conversation history (spec: Conversations), for keys with ``memory``:

- ``POST|GET /api/v1/users/{u}/sessions/{s}/messages``: capture messages; read them in order;
- ``GET /api/v1/users/{u}/conversations``, ``GET|DELETE .../conversations/{id}``,
  ``PUT .../conversations/{id}/summary``;
- ``GET /api/v1/users/{u}/history``: the ``<conversation_history>`` text for a new session;
- ``POST /api/v1/users/{u}/context``: the prompt index, recall and history in one request
  (one transaction, so the three agree with each other).

A conversation id that is malformed, unknown, or another person's or tenant's is the same 404.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.params import optional, valid_profile, valid_session_id, valid_user_id
from api.parsers import TextRuleJSONParser
from api.representations import (
    CaptureResultSerializer,
    ConversationPageSerializer,
    ConversationSerializer,
    HistorySerializer,
    MessagePageSerializer,
    TurnContextSerializer,
    capture_representation,
    conversation_page_representation,
    conversation_representation,
    history_representation,
    message_page_representation,
    turn_context_representation,
)
from api.serializers import (
    MAX_HISTORY_CONVERSATIONS,
    CaptureInput,
    Page,
    SummaryPutSerializer,
    TurnContextInputSerializer,
    decode_cursor,
    limit_parameter,
    parse_limit,
    with_errors,
)
from memoryhub.identifiers import USER_ID_RULE, is_user_id
from memoryhub.models import Actor
from memoryhub.numbers import parse_natural
from memoryhub.selectors.conversations import (
    conversation_find,
    conversations_page,
    history_build,
    parse_uuid,
    session_messages_page,
)
from memoryhub.selectors.turn_context import turn_context_build
from memoryhub.services.conversations import (
    conversation_delete,
    conversation_summary_put,
    messages_capture,
    messages_checked,
)
from memoryhub.services.usage import usage_recall_count

TAGS = ["conversations"]
MESSAGE_PAGE_DEFAULT, MESSAGE_PAGE_MAX = 100, 500
CONVERSATION_PAGE_DEFAULT, CONVERSATION_PAGE_MAX = 20, 100
HISTORY_DEFAULT = 10
NOT_FOUND = "No conversation with this id."
CAPTURE_FIELDS = frozenset({"messages", "profile", "process", "new_conversation"})


def _not_found() -> ApiError:
    return ApiError(404, "not_found", NOT_FOUND)


def _valid_process(value: object) -> str:
    if not is_user_id(value):
        raise ApiError(400, "invalid_process", f"process must be {USER_ID_RULE}.")
    return value


def _nullable(body: dict[str, Any], name: str, validator: Any) -> Any:
    value = body.get(name)
    return None if value is None else validator(value)


def _page_schema(summary: str, shape: Any, narrow: OpenApiParameter, *, cursor: str,
                 default: int, maximum: int, operation_id: str | None = None) -> Any:
    """The OpenAPI annotations of a keyset page: one filter, a cursor and the limit."""
    return extend_schema(
        operation_id=operation_id,
        summary=summary,
        parameters=[
            narrow,
            OpenApiParameter(cursor, str, description="the previous page's next_cursor"),
            limit_parameter(maximum, default),
        ],
        responses=with_errors({200: shape}, e400="invalid_user_id, invalid_session_id, "
                              "invalid_limit or invalid_cursor"),
        tags=TAGS,
    )


# --- Capture and the session's messages ----------------------------------------------------


class SessionMessagesView(TenantAPIView):
    parser_classes = [TextRuleJSONParser]
    writing_methods = frozenset({"POST"})  # capture holds the person's write lock

    @extend_schema(
        summary="Capture messages into the session's history",
        description="Appends the messages, in order, to the session's latest conversation, "
        "or starts one after the tenant's conversation_timeout_minutes (or with "
        "`new_conversation`). All or nothing: one refused message stores none. A message "
        "whose `id` was already captured in this session is not stored again. The tenant's "
        "capture policy drops excluded roles, then empty messages, then redacts credentials "
        "and its patterns. 201 with what was stored; with memory off (tenant, profile or "
        "person) 200 with `enabled: false` and nothing stored.",
        request=CaptureInput,
        responses=with_errors(
            {201: CaptureResultSerializer, 200: CaptureResultSerializer}, body=True,
            e400="invalid_user_id, invalid_session_id, invalid_message, invalid_role, not_text, "
            "too_many_messages, invalid_profile, invalid_process, invalid_request or invalid_json",
            e422="message_too_large (over the tenant's max_message_bytes)",
        ),
        tags=TAGS,
    )
    def post(self, request: Request, user_id: str, session_id: str) -> Response:
        user_id, session_id = valid_user_id(user_id), valid_session_id(session_id)
        body = request.data
        # A body without a `messages` list is invalid_message (the contract's letter), also
        # when it holds other fields, known or not ({"message": [...]}, a misspelling).
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            raise ApiError(400, "invalid_message", "The body must be a JSON object with a "
                           "`messages` list.")
        unknown = set(body) - CAPTURE_FIELDS
        if unknown:
            raise ApiError(400, "invalid_request", f"Unknown fields: {', '.join(sorted(unknown))}.")
        new_conversation = body.get("new_conversation", False)
        if not isinstance(new_conversation, bool):
            raise ApiError(400, "invalid_request", "new_conversation must be true or false.")
        profile = _nullable(body, "profile", valid_profile)
        process = _nullable(body, "process", _valid_process)
        messages = messages_checked(body.get("messages"),
                                    max_message_bytes=self.tenant.max_message_bytes)
        capture = messages_capture(
            tenant=self.tenant, user_id=user_id, end_user=self.end_user, session_id=session_id,
            messages=messages, profile=profile, process=process,
            new_conversation=new_conversation,
        )
        return Response(capture_representation(capture), status=201 if capture.enabled else 200)

    @_page_schema("Read the session's messages in capture order", MessagePageSerializer,
                  OpenApiParameter("conversation_id", str, description="only this conversation"),
                  cursor="after", default=MESSAGE_PAGE_DEFAULT, maximum=MESSAGE_PAGE_MAX)
    def get(self, request: Request, user_id: str, session_id: str) -> Response:
        valid_user_id(user_id)
        session_id = valid_session_id(session_id)
        query = request.query_params
        limit = parse_limit(query, default=MESSAGE_PAGE_DEFAULT, maximum=MESSAGE_PAGE_MAX)
        after = _message_cursor(query.get("after"))
        raw_conversation = query.get("conversation_id")
        conversation_id = parse_uuid(raw_conversation) if raw_conversation else None
        if raw_conversation and conversation_id is None:
            rows = []  # no conversation has that id
        else:
            rows = session_messages_page(end_user=self.end_user, session_id=session_id,
                                         conversation_id=conversation_id, after=after, limit=limit)
        return Response(message_page_representation(rows, Page(limit=limit, after=None)))


def _bad_cursor() -> ApiError:
    return ApiError(400, "invalid_cursor", "cursor must be a next_cursor this API returned.")


def _message_cursor(raw: str | None) -> tuple[UUID, int] | None:
    key = decode_cursor(raw, arity=2)
    if key is None:
        return None
    conversation_id, seq = parse_uuid(key[0]), parse_natural(key[1])
    if conversation_id is None or seq is None:
        raise _bad_cursor()
    return conversation_id, seq


# --- Conversations ---------------------------------------------------------------------------


class ConversationListView(TenantAPIView):
    # A list, not a retrieve: drf-spectacular would give both GETs one operationId.
    @extend_schema(operation_id="v1_users_conversations_list")
    @_page_schema("List the person's conversations, newest first", ConversationPageSerializer,
                  OpenApiParameter("session_id", str, description="only this session's"),
                  cursor="before", default=CONVERSATION_PAGE_DEFAULT,
                  maximum=CONVERSATION_PAGE_MAX,
                  operation_id="users_conversations_list")  # else it collides with one conversation's
    def get(self, request: Request, user_id: str) -> Response:
        valid_user_id(user_id)
        query = request.query_params
        limit = parse_limit(query, default=CONVERSATION_PAGE_DEFAULT, maximum=CONVERSATION_PAGE_MAX)
        rows = conversations_page(
            end_user=self.end_user, session_id=optional(query, "session_id", valid_session_id),
            before=_conversation_cursor(query.get("before")), limit=limit,
        )
        return Response(conversation_page_representation(rows, Page(limit=limit, after=None)))


def _conversation_cursor(raw: str | None) -> tuple[datetime, UUID] | None:
    key = decode_cursor(raw, arity=2)
    if key is None:
        return None
    try:
        at = datetime.fromisoformat(key[0])
    except ValueError:
        raise _bad_cursor() from None
    conversation_id = parse_uuid(key[1])
    if conversation_id is None or at.tzinfo is None:
        raise _bad_cursor()
    return at, conversation_id


class ConversationView(TenantAPIView):
    writing_methods = frozenset({"DELETE"})

    @extend_schema(summary="Show one conversation", tags=TAGS,
                   responses=with_errors({200: ConversationSerializer},
                                         e400="invalid_user_id", e404="not_found"))
    def get(self, request: Request, user_id: str, conversation_id: str) -> Response:
        valid_user_id(user_id)
        conversation = conversation_find(end_user=self.end_user, conversation_id=conversation_id)
        if conversation is None:
            raise _not_found()
        return Response(conversation_representation(conversation))

    @extend_schema(summary="Delete one conversation and its messages", tags=TAGS,
                   description="Records a memory.changed event (change deleted, with the "
                   "conversation_id).",
                   responses=with_errors({204: None}, e400="invalid_user_id", e404="not_found"))
    def delete(self, request: Request, user_id: str, conversation_id: str) -> Response:
        user_id = valid_user_id(user_id)
        conversation_delete(tenant=self.tenant, user_id=user_id, conversation_id=conversation_id,
                            actor=Actor.APP)
        return Response(status=204)


class ConversationSummaryView(TenantAPIView):
    parser_classes = [TextRuleJSONParser]

    @extend_schema(
        summary="Store the conversation's rolling summary (replaces the previous one)",
        request=SummaryPutSerializer, tags=TAGS,
        responses=with_errors({200: ConversationSerializer}, body=True,
                              e400="invalid_user_id, not_text or invalid_request",
                              e403="memory_disabled", e404="not_found",
                              e422="summary_too_large"),
    )
    def put(self, request: Request, user_id: str, conversation_id: str) -> Response:
        valid_user_id(user_id)
        body = SummaryPutSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        conversation = conversation_summary_put(
            tenant=self.tenant, end_user=self.end_user, conversation_id=conversation_id,
            summary=body.validated_data["summary"],
        )
        return Response(conversation_representation(conversation))


# --- History and the turn context ----------------------------------------------------------


class HistoryView(TenantAPIView):
    @extend_schema(
        summary="The last conversations as a <conversation_history> text, for a new session",
        parameters=[
            limit_parameter(MAX_HISTORY_CONVERSATIONS, HISTORY_DEFAULT, "conversations"),
            OpenApiParameter("exclude_session", str, description="leave this session out"),
            OpenApiParameter("profile", str, description="only those captured with it"),
        ],
        responses=with_errors({200: HistorySerializer},
                              e400="invalid_user_id, invalid_limit, invalid_session_id or "
                              "invalid_profile"),
        tags=TAGS,
    )
    def get(self, request: Request, user_id: str) -> Response:
        valid_user_id(user_id)
        query = request.query_params
        history = history_build(
            tenant=self.tenant, end_user=self.end_user,
            limit=parse_limit(query, default=HISTORY_DEFAULT, maximum=MAX_HISTORY_CONVERSATIONS),
            exclude_session=optional(query, "exclude_session", valid_session_id),
            profile=optional(query, "profile", valid_profile),
        )
        return Response(history_representation(history))


class TurnContextView(TenantAPIView):
    reading_methods = frozenset({"POST"})  # index, recall and history: it changes nothing

    @extend_schema(
        summary="The whole turn context in one request: index, recall and history",
        description="`index` is the prompt index reply; `recall` the recall reply for `query` "
        "(null without one); `history` the history reply for the last `history` "
        "conversations other than this session's (null when 0). One transaction.",
        request=TurnContextInputSerializer,
        responses=with_errors({200: TurnContextSerializer}, body=True,
                              e400="invalid_user_id, invalid_session_id, invalid_profile or "
                              "invalid_request"),
        tags=TAGS,
    )
    def post(self, request: Request, user_id: str) -> Response:
        valid_user_id(user_id)
        body = TurnContextInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        context = turn_context_build(
            tenant=self.tenant, end_user=self.end_user,
            session_id=_nullable(data, "session_id", valid_session_id),
            profile=_nullable(data, "profile", valid_profile),
            query=data.get("query"), limit=data["limit"], threshold=data.get("threshold"),
            history=data["history"],
        )
        if context.recall is not None:
            usage_recall_count()  # the dashboard's usage chart; last, so its row lock is brief
        return Response(turn_context_representation(context))
