"""Reads behind the web pages. Each runs inside the caller's tenant context unless it says
otherwise (the account-wide ones use ``web_user_context``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import timedelta
from uuid import UUID

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import Page, Paginator
from django.db.models import Count, F, QuerySet, Sum
from django.utils import timezone

from memoryhub.models import (
    AugmentationFailure,
    Conversation,
    EndUser,
    EventType,
    Fact,
    FactVersion,
    MemoryDocument,
    MemoryEvent,
    Message,
    Profile,
    Scope,
    WebhookDelivery,
    WebhookEndpoint,
)
from memoryhub.selectors.conversations import conversations_per_person, facts_per_person
from memoryhub.selectors.keys import api_keys_listed
from memoryhub.selectors.usage import DayUsage, usage_day, usage_days
from memoryhub.services.webhooks import secret_masked
from tenants.context import web_user_context
from tenants.models import ApiKey, AuditEntry, Invitation, Membership

# The person's page and the admin overview list groups in this order.
SCOPE_ORDER: dict[str, int] = {Scope.GLOBAL: 0, Scope.PROFILE: 1, Scope.SESSION: 2}


# --- The signed-in account, across tenants ---------------------------------------------------


def account_memberships(*, user: AbstractBaseUser) -> list[Membership]:
    with web_user_context(user.pk):
        return list(
            Membership.unscoped_objects.select_related("tenant")
            .filter(user_id=user.pk)
            .order_by("tenant__name")
        )


def account_end_users(*, user: AbstractBaseUser) -> list[EndUser]:
    """The end users (in any tenant) whose memory page this account may open."""
    with web_user_context(user.pk):
        return list(
            EndUser.unscoped_objects.select_related("tenant")
            .filter(account_id=user.pk)
            .order_by("tenant__name", "user_id")
        )


# --- The person's page -------------------------------------------------------------------------


@dataclass
class ScopeGroup:
    scope: str
    scope_key: str
    documents: list[MemoryDocument] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.scope == Scope.GLOBAL:
            return "Global"
        return f"{self.scope.title()}: {self.scope_key}"

    @property
    def bytes(self) -> int:
        return sum(doc.bytes for doc in self.documents)

    @property
    def dom_id(self) -> str:
        # scope_key may hold characters an HTML id should not; a digest is stable and safe.
        return f"scope-{self.scope}-{hashlib.sha256(self.scope_key.encode()).hexdigest()[:12]}"


def end_user_memory(*, end_user: EndUser) -> list[ScopeGroup]:
    """Every document of the person, grouped by scope (global, profiles, sessions), by path.

    Content is left out: the list shows metadata, a document is opened one at a time.
    """
    documents = (
        MemoryDocument.objects.filter(end_user=end_user)
        .defer("content")
        .order_by("scope", "scope_key", "path")
    )
    groups: dict[tuple[str, str], ScopeGroup] = {}
    for doc in documents:
        key = (doc.scope, doc.scope_key)
        groups.setdefault(key, ScopeGroup(doc.scope, doc.scope_key)).documents.append(doc)
    return sorted(groups.values(), key=lambda g: (SCOPE_ORDER.get(g.scope, 9), g.scope_key))


def end_user_document(*, end_user: EndUser, document_id: int) -> MemoryDocument | None:
    return MemoryDocument.objects.filter(end_user=end_user, pk=document_id).first()


def end_user_has_session(*, end_user: EndUser, session_id: str) -> bool:
    return MemoryDocument.objects.filter(
        end_user=end_user, scope=Scope.SESSION, scope_key=session_id
    ).exists()


# --- The tenant admin dashboard ---------------------------------------------------------------


@dataclass(frozen=True)
class ScopeTotals:
    scope: str
    documents: int
    bytes: int


USAGE_DAYS = 30  # the overview's charts


@dataclass(frozen=True)
class Overview:
    end_users: int
    scopes: list[ScopeTotals]
    pressure_7d: int
    recent: list[MemoryEvent]
    usage: list[DayUsage]  # the last USAGE_DAYS days, today last

    @property
    def writes_today(self) -> int:
        return self.usage[-1].writes

    @property
    def documents(self) -> int:
        return sum(s.documents for s in self.scopes)

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.scopes)


def tenant_overview() -> Overview:
    now = timezone.now()
    totals = {
        row["scope"]: row
        for row in MemoryDocument.objects.values("scope").annotate(
            documents=Count("id"), bytes=Sum("bytes")
        )
    }
    scopes = [
        ScopeTotals(scope, totals.get(scope, {}).get("documents", 0),
                    totals.get(scope, {}).get("bytes") or 0)
        for scope in SCOPE_ORDER
    ]
    pressure_7d = MemoryEvent.objects.filter(
        type=EventType.PRESSURE, created_at__gte=now - timedelta(days=7)
    ).count()
    stored = sum(s.bytes for s in scopes)
    return Overview(
        end_users=EndUser.objects.count(),
        scopes=scopes,
        pressure_7d=pressure_7d,
        recent=list(MemoryEvent.objects.filter(type=EventType.CHANGED).order_by("-seq")[:10]),
        usage=usage_days(last=usage_day(now), days=USAGE_DAYS, stored_today=stored),
    )


# Rows a page of the dashboard's long lists shows: a tenant may have a bound key for every
# person (MCP clients, devices) and any number of profiles set through the API.
LIST_PAGE = 50


def profiles_all() -> QuerySet[Profile]:
    return Profile.objects.order_by("name")


def api_keys_all() -> QuerySet[ApiKey]:
    return api_keys_listed()


def members_all() -> list[Membership]:
    return list(Membership.objects.select_related("user").order_by("user__email"))


def invitations_pending() -> list[Invitation]:
    return list(
        Invitation.objects.filter(
            accepted_at=None, revoked_at=None, expires_at__gt=timezone.now()
        ).order_by("-created_at")
    )


PEOPLE_PAGE = 50


def end_users_search(*, query: str) -> QuerySet[EndUser]:
    """End users whose user_id contains ``query``, with counts and sizes (never content)."""
    people = EndUser.objects.annotate(
        document_count=Count("documents"), bytes_total=Sum("documents__bytes"),
        conversation_count=conversations_per_person(Count("id")),
        message_count=conversations_per_person(Sum("message_count")),
        fact_count=facts_per_person(),
    ).order_by("user_id")
    if query:
        people = people.filter(user_id__icontains=query)
    return people


def audit_entries() -> QuerySet[AuditEntry]:
    return AuditEntry.objects.order_by("-created_at", "-id")


RECENT_DELIVERIES = 10  # per endpoint, on the webhooks page


@dataclass(frozen=True)
class WebhookRow:
    """An endpoint on the webhooks page, with its latest deliveries (newest first)."""

    endpoint: WebhookEndpoint
    deliveries: list[WebhookDelivery]

    @property
    def secret_hint(self) -> str:
        return secret_masked(self.endpoint.secret)


def webhook_row(endpoint: WebhookEndpoint) -> WebhookRow:
    # Deliveries are written with their event, so the event's id orders them, and the
    # (tenant, endpoint, event) unique index reads the latest few backwards.
    deliveries = (WebhookDelivery.objects.filter(endpoint=endpoint).select_related("event")
                  .order_by("-event_id")[:RECENT_DELIVERIES])
    return WebhookRow(endpoint=endpoint, deliveries=list(deliveries))


def webhook_rows() -> list[WebhookRow]:
    """Every endpoint, oldest first (at most 20: the API's limit), one query each."""
    return [webhook_row(e) for e in WebhookEndpoint.objects.order_by("created_at", "id")]


@dataclass(frozen=True)
class AugmentationStatus:
    """The dashboard's augmentation card: the tenant's switch, the deployment's provider,
    the backlog (conversations with messages after their cursor) and the latest failures."""

    enabled: bool
    provider: str
    backlog: int
    failures: list[AugmentationFailure]
    off_because: str = ""  # why nothing is learnt although the tenant's switch is on

    @property
    def running(self) -> bool:
        return self.enabled and not self.off_because


RECENT_FAILURES = 10


def conversations_waiting() -> QuerySet[Conversation]:
    """The tenant's conversations with messages after augmentation's cursor: the rows of the
    partial index ``conversation_waiting``, so counting them costs the backlog, not the
    tenant's history (``make bench-backlog``)."""
    return Conversation.objects.filter(message_count__gt=F("augmented_seq"))


def _augmentation_off_because(*, memory_enabled: bool, provider: str) -> str:
    # The run skips a batch for these too (memoryhub/services/augmentation.py), so a card
    # saying "on" beside them promised facts that never came.
    if provider == "none":
        return "This deployment's provider is none (AUGMENTATION_PROVIDER)."
    if not memory_enabled:
        return "Memory is off for the tenant."
    return ""


def augmentation_status(*, enabled: bool, memory_enabled: bool) -> AugmentationStatus:
    provider = settings.AUGMENTATION_PROVIDER
    return AugmentationStatus(
        enabled=enabled, provider=provider,
        off_because=_augmentation_off_because(memory_enabled=memory_enabled, provider=provider),
        backlog=conversations_waiting().count(),
        failures=list(AugmentationFailure.objects.order_by("-created_at", "-id")[:RECENT_FAILURES]),
    )


# --- the person's facts ---------------------------------------------------------------------

FACT_GROUP_LABELS = {"profile": "About you", "preference": "What you like and dislike",
                     "triple": "People and pets", "fact": "Other facts",
                     "process_attribute": "Progress"}


@dataclass(frozen=True)
class FactSource:
    conversation_id: UUID
    message_id: UUID
    seq: int


@dataclass(frozen=True)
class FactRow:
    fact: Fact
    sources: list[FactSource]
    history: list[FactVersion]


@dataclass(frozen=True)
class FactGroup:
    type: str
    label: str
    rows: list[FactRow]


@dataclass(frozen=True)
class PersonFacts:
    """The facts section: a page of the valid facts grouped by type (in FACT_GROUP_LABELS'
    order), and a page of the ones no longer true apart, each with the messages it came from
    (the ones still kept)."""

    groups: list[FactGroup]
    invalid: list[FactRow]
    page: Page[Fact]
    invalid_page: Page[Fact]


# Facts a page shows of each kind (valid, no longer true), newest first: augmentation makes
# hundreds over months, and 400 facts with their history made a page of 700 KB.
FACTS_PAGE = 50


def _message_id(value: object) -> UUID | None:
    """A source message id as a message's id, or None: the API keeps any string an app names
    as a source (its own id, "m-1"), which names no message here."""
    try:
        return UUID(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _fact_rows(end_user: EndUser, facts: list[Fact]) -> list[FactRow]:
    """Each fact with where its source messages are and its history, oldest change first (one
    query for each, for them all); a source that is not one of the person's messages is not
    shown."""
    ids = {m for f in facts for m in (f.source or {}).get("message_ids") or []}
    uuids = [uuid for uuid in map(_message_id, ids) if uuid is not None]
    located = {str(m_id): FactSource(conversation_id, m_id, seq) for m_id, conversation_id, seq in
               Message.objects.filter(end_user=end_user, id__in=uuids)
               .values_list("id", "conversation_id", "seq")}
    history: dict[UUID, list[FactVersion]] = {f.pk: [] for f in facts}
    for version in FactVersion.objects.filter(end_user=end_user,
                                              fact_id__in=list(history)).order_by("id"):
        history[version.fact_id].append(version)
    return [FactRow(f, [located[m] for m in (f.source or {}).get("message_ids") or []
                        if m in located], history[f.pk]) for f in facts]


def person_facts(*, end_user: EndUser, page_number: int | str | None = None,
                 invalid_page_number: int | str | None = None,
                 showing: Fact | None = None) -> PersonFacts:
    """A page of each (a bad or too large number gives the first or the last): the counts,
    the pages, where their source messages are and their history. ``showing``: a fact the
    person is working on (an edit without htmx), shown in its place whatever the page."""
    facts = Fact.objects.filter(end_user=end_user).order_by("-id")
    page = Paginator(facts.filter(invalid_at__isnull=True), FACTS_PAGE).get_page(page_number)
    invalid_page = Paginator(facts.filter(invalid_at__isnull=False),
                             FACTS_PAGE).get_page(invalid_page_number)
    shown = [*page.object_list, *invalid_page.object_list]
    if showing is not None and showing.pk not in {f.pk for f in shown}:
        shown.insert(0, showing)
    rows = _fact_rows(end_user, shown)
    valid = [r for r in rows if r.fact.invalid_at is None]
    groups = [FactGroup(kind, label, [r for r in valid if r.fact.type == kind])
              for kind, label in FACT_GROUP_LABELS.items()]
    return PersonFacts(groups=[g for g in groups if g.rows],
                       invalid=[r for r in rows if r.fact.invalid_at is not None],
                       page=page, invalid_page=invalid_page)


def person_fact(*, end_user: EndUser, fact: Fact) -> FactRow:
    """One fact as its section shows it (its partial, alone)."""
    [row] = _fact_rows(end_user, [fact])
    return row
