"""mem0's platform API at ``/mem0/``, for ``mem0ai``'s ``MemoryClient`` and
``AsyncMemoryClient`` (2.2.x) with ``host="https://<this server>/mem0"``. Each view translates
one of mem0's requests to the services the REST API calls, so the rules are the REST API's:
keys and their permissions, bound keys, limits, the content rules (the credential filter),
events, isolation and the rate limit. A memory is one of the person's facts.

- ``GET v1/ping/``: the client's check of its key when it is constructed.
- ``POST v3/memories/add/``: ``infer: false`` stores each message that is not the system's
  as a fact at once; ``infer: true`` (mem0's default) captures the messages into a
  conversation of the session ``run_id`` (else ``mem0``), and augmentation learns facts
  from them in the worker.
- ``POST v3/memories/search/``: recall over the person's facts; ``POST v3/memories/``: their
  valid facts, newest first, in pages.
- ``GET|PUT|DELETE v1/memories/{id}/``, ``GET v1/memories/{id}/history/``: one fact.
- ``DELETE v1/memories/?user_id=``: the person's facts (documents and history stay).
- ``GET v1/entities/``: the people; ``DELETE v2/entities/user/{user_id}/``: forget one.
- ``PUT|DELETE v1/batch/``: up to 1,000 facts, all or nothing.

Left out of ``/api/schema/`` (``schema = None``): this is mem0's API, described by mem0's own
reference; the README ("Moving from mem0") says how MemoryHub's differs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from django.http import HttpResponseBase, StreamingHttpResponse
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder

from api.errors import ApiError
from api.mem0.base import Mem0Pagination, Mem0View
from api.mem0.representations import (
    added_representation,
    entity_representation,
    history_representation,
    memory_representation,
    message_representation,
    pending_representation,
    ping_representation,
    search_representation,
)
from api.mem0.serializers import (
    AddInput,
    BatchInput,
    SearchInput,
    UpdateInput,
    created_between,
    named_entities,
    read_entities,
    update_fields,
)
from api.params import valid_session_id, valid_user_id
from api.parsers import TextRuleJSONParser
from api.serializers import MAX_PAGE_SIZE
from memoryhub.errors import echo
from memoryhub.models import Actor, Fact
from memoryhub.selectors.conversations import parse_uuid
from memoryhub.selectors.facts import fact_get, fact_history, facts_get, facts_listed
from memoryhub.selectors.people import end_users_with_fact_counts
from memoryhub.selectors.recall import facts_recall
from memoryhub.services.conversations import messages_capture, messages_checked
from memoryhub.services.documents import end_user_get_or_create
from memoryhub.services.facts import FactInput, fact_create, fact_delete, fact_update, facts_forget
from memoryhub.services.metadata import metadata_checked
from memoryhub.services.people import end_user_forget
from tenants.context import tenant_context

DEFAULT_SESSION = "mem0"  # the session of an add's conversation without run_id
NOT_FOUND = "Memory not found."


def _not_found(memory_id: object = None) -> ApiError:
    named = f" {echo(str(memory_id))}" if memory_id is not None else ""
    return ApiError(404, "not_found", f"Memory not found:{named}." if named else NOT_FOUND)


class PingView(Mem0View):
    person_in = "nowhere"

    def get(self, request: Request) -> Response:
        return Response(ping_representation(self.tenant))


def _as_captured(messages: object, metadata: dict[str, Any], at: str | None) -> object:
    """mem0's messages as the capture API takes them: role and content (other keys of chat
    formats, such as ``name``, are not kept), the add's metadata and time on each."""
    if not isinstance(messages, list):
        return messages  # messages_checked refuses it with the capture API's words
    extra: dict[str, Any] = {"metadata": metadata} if metadata else {}
    if at is not None:
        extra["created_at"] = at
    return [{**{k: m[k] for k in ("role", "content") if k in m}, **extra}
            if isinstance(m, Mapping) else m for m in messages]


class AddView(Mem0View):
    parser_classes = [TextRuleJSONParser]
    person_in = "body"
    writing_methods = frozenset({"POST"})  # a capture or facts: the person's write lock

    def post(self, request: Request) -> Response:
        raw = self.body(request)
        named = named_entities(raw)
        body = AddInput(data=raw)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user_id = self.person()
        at = data.get("timestamp")
        metadata = metadata_checked(data.get("metadata"), "metadata")
        messages = messages_checked(
            _as_captured(data["messages"], metadata, at.isoformat() if at else None),
            max_message_bytes=self.tenant.max_message_bytes)
        if data["infer"]:
            session = named.get("run_id")
            capture = messages_capture(
                tenant=self.tenant, user_id=user_id, end_user=self.end_user,
                session_id=DEFAULT_SESSION if session is None else valid_session_id(session),
                messages=messages)
            return Response(pending_representation(
                capture.conversation_id if capture.captured else None))
        end_user = self.end_user or end_user_get_or_create(tenant=self.tenant, user_id=user_id)
        stored = [
            fact_create(tenant=self.tenant, end_user=end_user, actor=Actor.APP, data=FactInput(
                content=message.content, metadata=message.metadata, valid_at=message.created_at))
            for message in messages if message.role != "system"
        ]
        return Response(added_representation(stored))


class SearchView(Mem0View):
    person_in = "body"
    reading_methods = frozenset({"POST"})  # a search: it changes nothing

    def post(self, request: Request) -> Response:
        raw = self.body(request)
        read_entities(raw)
        body = SearchInput(data=raw)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        self.person()
        found = facts_recall(tenant=self.tenant, end_user=self.end_user, query=data["query"],
                             limit=data["top_k"], threshold=data.get("threshold"))
        return Response(search_representation(found))


class MemoryListView(Mem0View):
    """``get_all``: mem0 sends it as ``POST v3/memories/?page=&page_size=`` with the filters."""

    person_in = "body"
    reading_methods = frozenset({"POST"})

    def post(self, request: Request) -> Response:
        body = self.body(request)
        read_entities(body)
        since, until = created_between(body)
        self.person()
        pages = Mem0Pagination()
        facts = facts_listed(end_user=self.end_user, created_since=since, created_until=until)
        page = pages.paginate_queryset(facts, request, view=self)
        return pages.get_paginated_response([memory_representation(f) for f in page or []])


class PersonMemoriesView(Mem0View):
    """``delete_all``: ``DELETE v1/memories/?user_id=``, the person's facts only."""

    person_in = "query"
    writing_methods = frozenset({"DELETE"})

    def delete(self, request: Request) -> Response:
        self.person()
        if self.end_user is not None:
            facts_forget(end_user=self.end_user, actor=Actor.APP)
        return Response(message_representation("Memories deleted successfully!"))


class _OneMemory(Mem0View):
    person_in = "nowhere"  # the memory names its person

    def _find(self, memory_id: str, *, lock: bool = False) -> Fact:
        fact = fact_get(fact_id=memory_id, only_user_id=self.only_user_id, for_update=lock)
        if fact is None:
            raise _not_found()
        return fact


class MemoryView(_OneMemory):
    parser_classes = [TextRuleJSONParser]

    def get(self, request: Request, memory_id: str) -> Response:
        return Response(memory_representation(self._find(memory_id)))

    def put(self, request: Request, memory_id: str) -> Response:
        body = UpdateInput(data=request.data)
        body.is_valid(raise_exception=True)
        fact = self._find(memory_id, lock=True)
        fact = fact_update(end_user=fact.end_user, fact=fact, actor=Actor.APP,
                           **update_fields(body.validated_data))
        return Response(memory_representation(fact))

    def delete(self, request: Request, memory_id: str) -> Response:
        fact = self._find(memory_id, lock=True)
        fact_delete(end_user=fact.end_user, fact=fact, actor=Actor.APP)
        return Response(message_representation("Memory deleted successfully!"))


class MemoryHistoryView(_OneMemory):
    def get(self, request: Request, memory_id: str) -> Response:
        fact = self._find(memory_id)
        rows = fact_history(end_user=fact.end_user, fact_id=fact.id) or []
        return Response(history_representation(fact, rows))


ENTITY_CHUNK = MAX_PAGE_SIZE  # people read per statement when users() streams them all


def _everyone(tenant_id: int, only: str | None) -> Iterator[str]:
    """Every person, as mem0's page holding them all, read in keyset chunks of
    ``ENTITY_CHUNK``: the server holds one chunk at a time, however many people there are.
    The response streams after the view's transaction has ended, so each chunk is read in a
    short transaction of its own (tenant_context: the tenant's RLS). ``count`` comes last,
    so it is the number of people sent even when someone is added or forgotten meanwhile."""
    yield '{"results": ['
    sent, after = 0, None
    while True:
        with tenant_context(tenant_id):
            chunk = list(end_users_with_fact_counts(only=only, after=after)[:ENTITY_CHUNK])
        for person in chunk:
            yield ("," if sent else "") + json.dumps(entity_representation(person),
                                                     cls=JSONEncoder)
            sent += 1
        if len(chunk) < ENTITY_CHUNK:
            break
        after = chunk[-1].user_id
    yield f'], "count": {sent}, "next": null, "previous": null}}'


class EntityListView(Mem0View):
    """``users()``: the tenant's people (a bound key: its own). mem0's client asks once, with
    no ``page`` or ``page_size``, and ``delete_users()`` and ``reset()`` forget whoever that
    answer lists: then it lists everyone, streamed. Asked with either, mem0's pages."""

    person_in = "nowhere"

    def get(self, request: Request) -> HttpResponseBase:
        if not {"page", "page_size"} & request.query_params.keys():
            return StreamingHttpResponse(_everyone(self.tenant_id, self.principal.user_id),
                                         content_type="application/json")
        pages = Mem0Pagination()
        people = end_users_with_fact_counts(only=self.principal.user_id)
        page = pages.paginate_queryset(people, request, view=self)
        return pages.get_paginated_response([entity_representation(p) for p in page or []])


class EntityView(Mem0View):
    """``delete_users(user_id=)``: forget everything about the person, as
    ``DELETE /api/v1/users/{user_id}`` does (also when there was nothing)."""

    def delete(self, request: Request, user_id: str) -> Response:
        end_user_forget(tenant=self.tenant, user_id=valid_user_id(user_id), actor=Actor.APP)
        return Response(message_representation("Entity deleted successfully!"))


class BatchView(Mem0View):
    parser_classes = [TextRuleJSONParser]
    person_in = "nowhere"

    def _found(self, request: Request) -> list[tuple[Fact, dict[str, Any]]]:
        """Every memory the batch names, locked; 404 (and nothing done) if one is missing."""
        body = BatchInput(data=request.data)
        body.is_valid(raise_exception=True)
        items: list[dict[str, Any]] = body.validated_data["memories"]
        ids = [parse_uuid(item["memory_id"]) for item in items]
        known = [i for i in ids if i is not None]
        if len(set(known)) < len(known):
            raise ApiError(400, "invalid_request", "The batch names a memory more than once.")
        facts = facts_get(fact_ids=[item["memory_id"] for item in items],
                          only_user_id=self.only_user_id, for_update=True)
        for fact_id, item in zip(ids, items, strict=True):
            if fact_id not in facts:
                raise _not_found(item["memory_id"])
        return [(facts[fact_id], item) for fact_id, item in zip(ids, items, strict=True)
                if fact_id is not None]

    def put(self, request: Request) -> Response:
        found = self._found(request)
        for fact, item in found:
            fact_update(end_user=fact.end_user, fact=fact, actor=Actor.APP, **update_fields(item))
        return Response(message_representation(f"Successfully updated {len(found)} memories"))

    def delete(self, request: Request) -> Response:
        found = self._found(request)
        for fact, _ in found:
            fact_delete(end_user=fact.end_user, fact=fact, actor=Actor.APP)
        return Response(message_representation(f"Successfully deleted {len(found)} memories"))
