"""``POST /api/v1/users/{user_id}/recall``: the memory most relevant to a query.

Ranking is documented in memoryhub/store/recall.py. The response carries a
``Server-Timing`` header (``embed``: the provider call for the query; ``search``: the
database; ``app``: the whole request in the view, authentication included, before the
response is rendered), so a client can tell model time from search time.
"""

from __future__ import annotations

import time
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.params import valid_profile, valid_session_id, valid_user_id
from api.representations import RecallOutputSerializer, recall_representation
from api.serializers import RecallInputSerializer, with_errors
from memoryhub.selectors.recall import memory_recall
from memoryhub.services.usage import usage_recall_count


def _optional(value: str | None, validator: Any) -> str | None:
    return validator(value) if value not in (None, "") else None


class RecallView(TenantAPIView):
    reading_methods = frozenset({"POST"})  # a search: it changes nothing

    @extend_schema(
        summary="Recall the memory most relevant to a query",
        description="Searches what `sources` names (default documents and facts): the "
        "documents this session can see (its session, its profile, global), the person's "
        "valid facts (invalid ones too with `include_invalid`) and the person's captured "
        "messages, by vector similarity and lexically (full text and trigrams), ranks them by "
        "similarity x confidence x recency, and drops those under `threshold` unless "
        "`relaxed`. Each result has a `kind`; facts and messages carry `id`, "
        "`conversation_id` and `session_id` (path and scope null), facts their `source`. "
        "`context` is the `<memori_context>` block of the results that pass, or "
        "empty. Memory switched off (tenant, profile or person) gives no results.",
        request=RecallInputSerializer,
        responses=with_errors({200: RecallOutputSerializer}, body=True),
        tags=["recall"],
    )
    def post(self, request: Request, user_id: str) -> Response:
        valid_user_id(user_id)  # the person came with the key; a bad user_id is still a 400
        body = RecallInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        recall = memory_recall(
            tenant=self.tenant, end_user=self.end_user, query=data["query"], limit=data["limit"],
            threshold=data.get("threshold"), relaxed=data["relaxed"],
            session_id=_optional(data.get("session_id"), valid_session_id),
            profile=_optional(data.get("profile"), valid_profile),
            sources=data["sources"], include_invalid=data["include_invalid"],
        )
        usage_recall_count()  # the dashboard's usage chart; last, so its row lock is brief
        response = Response(recall_representation(recall))
        handled = time.perf_counter() - self.started
        response["Server-Timing"] = (
            f"embed;dur={recall.embed_seconds * 1000:.3f}, "
            f"search;dur={recall.search_seconds * 1000:.3f}, app;dur={handled * 1000:.3f}"
        )
        return response
