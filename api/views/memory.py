"""The memory tool and what a conversation starts from (API v1, "The memory tool", "The prompt
index"):

- ``POST /api/v1/users/{user_id}/memory``: one memory tool command -> ``{"content", "is_error"}``;
- ``GET  /api/v1/users/{user_id}/memory/index?session_id=&profile=``: the prompt index;
- ``GET  /api/v1/users/{user_id}/memory/snapshot?session_id=&profile=``: every visible document.

Every outcome of a tool command is HTTP 200; only auth, a body that is not a JSON object, an
invalid user_id, size and rate limits are HTTP errors. Reading an unknown user (or another
tenant's) gives empty memory, exactly like a person who never wrote anything.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
)
from rest_framework.exceptions import APIException
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer

from api.base import TenantAPIView
from api.errors import ApiError
from api.params import optional, valid_profile, valid_session_id, valid_user_id
from api.parsers import TextRuleJSONParser
from api.representations import (
    MemoryIndex,
    MemorySnapshot,
    MemoryToolResult,
    snapshot_representation,
    tool_result_representation,
)
from api.serializers import MemoryToolInput, body_is_empty, with_errors
from memoryhub.memory_tool.commands import command_writes, tool_run
from memoryhub.selectors.documents import index_build, snapshot_build

_CONTEXT_PARAMETERS = [
    OpenApiParameter("session_id", OpenApiTypes.STR, description="This conversation's session."),
    OpenApiParameter("profile", OpenApiTypes.STR, description="The conversation's profile."),
]


class MemoryToolView(TenantAPIView):
    parser_classes = [TextRuleJSONParser]
    _body_error: APIException | None = None

    def writes_end_user(self, request: Request) -> bool:
        # The one request that needs its body before authentication: whether the command
        # writes (``view`` does not, ``create`` does) decides whether the key's statement
        # takes the person's write lock, which keeps a command to one round trip for the
        # person. So the body is parsed before the key's statement, but only for a key of the
        # right form (perform_authentication asks after request_key), and parsing is bounded
        # (1 MiB, JSON nesting, api/parsers.py) and raises nothing but DRF's errors. A body
        # DRF cannot parse is kept for the handler: an unknown key still gets its 401 first,
        # and the handler then answers the parse error (DRF would give empty data on a second
        # read).
        if request.method != "POST":
            return False
        try:
            return command_writes(request.data)
        except APIException as exc:
            self._body_error = exc
            return False

    def reads_only(self, request: Request) -> bool:
        # A command that does not write (view, or one the handler will refuse whatever the
        # person) reads: with a key bound to another person it sees an absent person.
        return request.method == "POST" and not self.writes_end_user(request)

    @extend_schema(
        request=MemoryToolInput,
        responses=with_errors(
            {200: MemoryToolResult}, body=True,
            e400="invalid_user_id, invalid_json, or invalid_body (the body is not a JSON object)",
        ),
        summary="Run one memory tool command",
        description="Every outcome of the command, success or failure, is HTTP 200 with "
        "`is_error`; error texts match the reference memory tool byte for byte.",
    )
    def post(self, request: Request, user_id: str) -> Response:
        if self._body_error is not None:
            raise self._body_error
        user_id = valid_user_id(user_id)
        if not isinstance(request.data, dict) or body_is_empty(request):
            raise ApiError(400, "invalid_body", "The body must be a JSON object: the memory "
                           "tool's input, plus optional session_id, profile, scope and turn_id.")
        content, is_error = tool_run(
            tenant=self.tenant, user_id=user_id, end_user=self.end_user,
            end_user_locked=self.end_user_locked, payload=request.data,
        )
        return Response(tool_result_representation(content, is_error))


class _ContextReadView(TenantAPIView):
    """A read of what one conversation sees; ``session_id`` and ``profile`` from the query."""

    def _context(self, request: Request, user_id: str) -> dict:
        valid_user_id(user_id)  # the person came with the key; a bad user_id is still a 400
        return {
            "tenant": self.tenant,
            "session_id": optional(request.query_params, "session_id", valid_session_id),
            "profile": optional(request.query_params, "profile", valid_profile),
            "end_user": self.end_user,
        }


def _context_read_schema(shape: type[Serializer], summary: str) -> Any:
    """The same OpenAPI annotations on both reads of what a conversation sees."""
    return extend_schema(
        parameters=_CONTEXT_PARAMETERS,
        responses=with_errors({200: shape},
                              e400="invalid_user_id, invalid_session_id or invalid_profile"),
        summary=summary,
    )


class MemoryIndexView(_ContextReadView):
    @_context_read_schema(MemoryIndex, "The prompt index of a conversation's memory")
    def get(self, request: Request, user_id: str) -> Response:
        return Response(index_build(**self._context(request, user_id)))


class MemorySnapshotView(_ContextReadView):
    @_context_read_schema(MemorySnapshot, "Every document a conversation sees, as text")
    def get(self, request: Request, user_id: str) -> Response:
        text = snapshot_build(**self._context(request, user_id))
        return Response(snapshot_representation(text))
