"""Reads about end users for the app-facing API: lists with counts, their documents, export.

An unknown ``user_id`` is not an error anywhere here: reading a person the tenant never
wrote for gives empty memory (spec: Conventions), which is also exactly what addressing
another tenant's person gives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce, Collate

from memoryhub import paths
from memoryhub.models import (
    Conversation,
    EndUser,
    Fact,
    FactVersion,
    MemoryDocument,
    MemoryEvent,
    PortalLink,
    Scope,
)
from memoryhub.selectors.conversations import (
    ConversationRun,
    conversations_per_person,
    conversations_with_messages,
)
from memoryhub.selectors.documents import lookup_locations
from memoryhub.selectors.events import events_of_person

# --- Counts --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndUserSummary:
    user_id: str
    memory_enabled: bool = True  # the person's own switch starts on
    created_at: datetime | None = None  # None: nothing was ever stored for them
    documents: dict[str, int] = field(
        default_factory=lambda: {"session": 0, "profile": 0, "global": 0, "total": 0}
    )
    bytes: int = 0
    sessions: int = 0
    profiles: int = 0
    conversations: int = 0
    messages: int = 0


def _counts() -> dict[str, Any]:
    """The counts of one person, as annotations of their EndUser row: documents joined,
    conversations in subqueries."""
    return {
        "n_session": Count("documents", filter=Q(documents__scope=Scope.SESSION)),
        "n_profile": Count("documents", filter=Q(documents__scope=Scope.PROFILE)),
        "n_global": Count("documents", filter=Q(documents__scope=Scope.GLOBAL)),
        "n_bytes": Coalesce(Sum("documents__bytes"), 0),
        "n_sessions": Count("documents__scope_key", distinct=True,
                            filter=Q(documents__scope=Scope.SESSION)),
        "n_profiles": Count("documents__scope_key", distinct=True,
                            filter=Q(documents__scope=Scope.PROFILE)),
        "n_conversations": conversations_per_person(Count("id")),
        "n_messages": conversations_per_person(Sum("message_count")),
    }


def _summaries(end_users: list[EndUser]) -> list[EndUserSummary]:
    """Counts for a page of people in one query: documents, conversations and messages.

    Paging the people first and counting after keeps a page's cost independent of the
    tenant's size (a join-then-group over every person would not be).
    """
    counts = {
        row["pk"]: row
        for row in EndUser.objects.filter(pk__in=[end_user.pk for end_user in end_users])
        .values("pk").annotate(**_counts()).order_by()
    }
    return [_summary(end_user, counts.get(end_user.pk)) for end_user in end_users]


def _summary(end_user: EndUser, counts: dict[str, int] | None) -> EndUserSummary:
    if counts is None:
        return EndUserSummary(user_id=end_user.user_id, memory_enabled=end_user.memory_enabled,
                             created_at=end_user.created_at)
    per_scope = {"session": counts["n_session"], "profile": counts["n_profile"],
                 "global": counts["n_global"]}
    return EndUserSummary(
        user_id=end_user.user_id,
        memory_enabled=end_user.memory_enabled,
        created_at=end_user.created_at,
        documents={**per_scope, "total": sum(per_scope.values())},
        bytes=counts["n_bytes"],
        sessions=counts["n_sessions"],
        profiles=counts["n_profiles"],
        conversations=counts["n_conversations"],
        messages=counts["n_messages"],
    )


def end_user_summary(*, user_id: str, end_user: EndUser | None) -> EndUserSummary:
    """The person ``user_id`` names, as the caller read them (None: unknown), with document
    counts; zero counts for an unknown person."""
    return _summaries([end_user])[0] if end_user else EndUserSummary(user_id=user_id)


def end_users_page(
    *, after: str | None, limit: int, only: str | None = None
) -> list[EndUserSummary]:
    """Up to ``limit + 1`` people by user_id after ``after``, with counts, in two queries;
    ``only``: just the person with that user_id (a key bound to them)."""
    end_users = EndUser.objects.order_by("user_id")
    if only is not None:
        end_users = end_users.filter(user_id=only)
    if after is not None:
        end_users = end_users.filter(user_id__gt=after)
    return _summaries(list(end_users[: limit + 1]))


def end_users_with_fact_counts(*, only: str | None = None,
                               after: str | None = None) -> QuerySet[EndUser]:
    """Every person by user_id, each with ``n_facts`` (their valid facts), for a paginator
    (mem0's entities, api/mem0); ``only``: just the person with that user_id (a bound key);
    ``after``: those whose user_id sorts after it (a keyset, in the order of the list)."""
    valid_facts = (Fact.objects.filter(end_user=OuterRef("pk"), invalid_at__isnull=True)
                   .order_by().values("end_user").annotate(n=Count("id")).values("n"))
    people = EndUser.objects.order_by("user_id")
    if only is not None:
        people = people.filter(user_id=only)
    if after is not None:
        people = people.filter(user_id__gt=after)
    return people.annotate(n_facts=Coalesce(Subquery(valid_facts), 0))


# --- Documents -----------------------------------------------------------------------------

# Keyset order: (scope, scope_key, path) in code-point order ("C" collation), the same on
# every database whatever its locale, and the order the snapshot uses for paths. One
# person's documents are few (max_scope_bytes), so sorting them needs no index.
DOCUMENT_ORDER = ("c_scope", "c_scope_key", "c_path")


def _in_code_point_order(documents: QuerySet[MemoryDocument]) -> QuerySet[MemoryDocument]:
    return documents.alias(
        c_scope=Collate("scope", "C"), c_scope_key=Collate("scope_key", "C"),
        c_path=Collate("path", "C"),
    ).order_by(*DOCUMENT_ORDER)


@dataclass(frozen=True)
class DocumentFilter:
    """``GET .../documents`` filters.

    - ``scope`` keeps one scope; with it, ``session_id``/``profile`` narrow that scope to one
      session or profile (and are ignored for the other scopes).
    - Without ``scope``, ``session_id`` and/or ``profile`` describe a conversation and the
      list is what it can see: its session, its profile, and global (like the prompt index).
    - Neither: every document of the person.
    - ``prefix``: the canonical path starts with it (a plain string prefix, S3-like; end it
      with ``/`` to mean a directory). ``/memories`` in front is the root, as in paths.
    """

    scope: str | None = None
    session_id: str | None = None
    profile: str | None = None
    prefix: str | None = None


def canonical_prefix(raw: str) -> str:
    """``/memories/notes/`` -> ``/notes/``; the caller has checked it starts with ``/``."""
    if paths.has_memories_prefix(raw):
        return raw[len(paths.MEMORIES_PREFIX):] or paths.ROOT
    return raw


def _scope_condition(filters: DocumentFilter) -> Q:
    if filters.scope is not None:
        condition = Q(scope=filters.scope)
        key = {Scope.SESSION: filters.session_id, Scope.PROFILE: filters.profile}.get(
            Scope(filters.scope)
        )
        return condition & Q(scope_key=key) if key is not None else condition
    if filters.session_id is None and filters.profile is None:
        return Q()
    visible = Q(pk__in=[])
    for scope, scope_key in lookup_locations(session_id=filters.session_id, profile=filters.profile):
        visible |= Q(scope=scope, scope_key=scope_key)
    return visible


def _after(key: tuple[Any, ...]) -> Q:
    scope, scope_key, path = key
    return (
        Q(c_scope__gt=scope)
        | Q(c_scope=scope, c_scope_key__gt=scope_key)
        | Q(c_scope=scope, c_scope_key=scope_key, c_path__gt=path)
    )


def end_user_documents_page(
    *, end_user: EndUser | None, filters: DocumentFilter, after: tuple[Any, ...] | None,
    limit: int,
) -> list[MemoryDocument]:
    """Up to ``limit + 1`` of the person's documents' metadata (no content) in (scope,
    scope_key, path) order; none for an unknown person (None)."""
    if end_user is None:
        return []
    documents = _in_code_point_order(
        MemoryDocument.objects.filter(_scope_condition(filters), end_user=end_user)
    ).defer("content")
    if filters.prefix is not None:
        documents = documents.filter(path__startswith=canonical_prefix(filters.prefix))
    if after is not None:
        documents = documents.filter(_after(after))
    return list(documents[: limit + 1])


# --- Export --------------------------------------------------------------------------------


@dataclass(frozen=True)
class EndUserExport:
    summary: EndUserSummary
    account_email: str | None = None
    documents: list[MemoryDocument] = field(default_factory=list)
    events: list[MemoryEvent] = field(default_factory=list)
    portal_links: list[PortalLink] = field(default_factory=list)
    conversations: list[ConversationRun] = field(default_factory=list)
    facts: list[FactRecord] = field(default_factory=list)
    deleted_facts: list[FactRecord] = field(default_factory=list)  # their history: fact None


@dataclass(frozen=True)
class FactRecord:
    """A fact (None once deleted: its history is still stored) with its history, oldest first."""

    fact_id: UUID
    fact: Fact | None
    history: list[FactVersion]


def _fact_records(end_user: EndUser) -> tuple[list[FactRecord], list[FactRecord]]:
    """The person's facts (valid and invalid, oldest first) and the deleted ones' history."""
    history: dict[UUID, list[FactVersion]] = {}
    for row in FactVersion.objects.filter(end_user=end_user).order_by("id"):
        history.setdefault(row.fact_id, []).append(row)
    facts = list(Fact.objects.filter(end_user=end_user).order_by("id"))
    kept = [FactRecord(f.id, f, history.pop(f.id, [])) for f in facts]
    return kept, [FactRecord(fact_id, None, rows) for fact_id, rows in history.items()]


def end_user_export(*, user_id: str, end_user: EndUser | None) -> EndUserExport:
    """Everything stored for the person ``user_id`` names, as the caller read them (None:
    unknown). Passages are left out: they are copies of content.
    Conversations come in the order they started, each with every message in order.

    An unknown person exports as empty, even if the feed still names them (the one
    ``forgotten`` event a forgotten person leaves behind holds nothing of theirs).
    """
    if end_user is None:
        return EndUserExport(summary=EndUserSummary(user_id=user_id))
    facts, deleted = _fact_records(end_user)
    return EndUserExport(
        summary=_summaries([end_user])[0],
        account_email=end_user.account.email if end_user.account else None,
        documents=list(_in_code_point_order(MemoryDocument.objects.filter(end_user=end_user))),
        events=events_of_person(user_id=user_id),
        portal_links=list(PortalLink.objects.filter(end_user=end_user).order_by("created_at")),
        conversations=conversations_with_messages(
            list(Conversation.objects.filter(end_user=end_user).order_by("started_at", "id"))
        ),
        facts=facts, deleted_facts=deleted,
    )
