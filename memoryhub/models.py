"""The memory domain: end users, profiles, documents, passages for recall, and events.

Every table here is tenant-owned: a ``tenant_id`` column, RLS, and indexes and unique
constraints that begin with ``tenant_id`` (so the schema can be distributed by tenant).
Foreign keys to other tenant-owned rows carry ``db_index=False`` for the same reason; the
composite indexes below cover their lookups.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.utils import timezone
from pgvector.django import HalfVectorField

from memoryhub.identifiers import uuid7
from memoryhub.infra.embeddings.base import PROVIDER_KEY_MAX
from tenants.managers import TenantOwned
from tenants.references import SameTenant
from tenants.rls import TenantRowLevelSecurity

EMBEDDING_DIMENSION = 384  # fixed per deployment; a change needs a migration and `reembed`
# The full-text vector of facts and messages, like Passage.search ('simple': any language).
RECALL_SEARCH = SearchVector("content", config="simple")
# Recall's columns of facts and messages, which reads that only show rows leave out (defer).
RECALL_COLUMNS = ("search", "embedding")


class Scope(models.TextChoices):
    SESSION = "session"
    PROFILE = "profile"
    GLOBAL = "global"


class Actor(models.TextChoices):
    ASSISTANT = "assistant"  # the memory tool
    USER = "user"  # the person, on the web pages
    APP = "app"  # the tenant's application, through the documents API
    AUGMENTATION = "augmentation"  # facts learnt from conversations by the worker


class EndUser(TenantOwned):
    """A person in a tenant's app, known by the app's own identifier."""

    user_id = models.CharField(max_length=128)
    memory_enabled = models.BooleanField(default=True)
    account = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="end_users", db_index=False,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user_id"], name="enduser_unique_user_id"),
            models.UniqueConstraint(fields=["tenant", "id"], name="enduser_tenant_key"),
            TenantRowLevelSecurity(
                name="enduser_rls",
                # A signed-in account finds the end users linked to it, in any tenant.
                extra_using="account_id = NULLIF(current_setting('app.web_user_id', true), '')::bigint",
            ),
        ]

    def __str__(self) -> str:
        return self.user_id


class Profile(TenantOwned):
    name = models.CharField(max_length=64)
    disabled = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="profile_unique_name"),
            TenantRowLevelSecurity(name="profile_rls"),
        ]

    def __str__(self) -> str:
        return self.name


class MemoryDocument(TenantOwned):
    end_user = models.ForeignKey(
        EndUser, on_delete=models.CASCADE, related_name="documents", db_index=False
    )
    scope = models.CharField(max_length=16, choices=Scope.choices)
    scope_key = models.CharField(max_length=128, blank=True, default="")  # "" for global
    path = models.CharField(max_length=255)  # canonical form, without the /memories prefix
    description = models.CharField(max_length=200, blank=True, default="")
    content = models.TextField(blank=True, default="")
    bytes = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=1)
    updated_by = models.CharField(max_length=16, choices=Actor.choices)
    confidence = models.FloatField(default=1.0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Not a field: the total size of the document's location, which document_resolve(lock=True)
    # reads in the locking statement for the max_scope_bytes check (annotation only).
    scope_bytes: int

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "end_user", "scope", "scope_key", "path"],
                name="document_unique_path",
            ),
            models.UniqueConstraint(fields=["tenant", "id"], name="document_tenant_key"),
            SameTenant(field="end_user", name="document_end_user_same_tenant"),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1),
                name="document_confidence_range",
            ),
            TenantRowLevelSecurity(name="document_rls"),
        ]
        indexes = [
            models.Index(
                fields=["tenant", "end_user", "-updated_at"], name="document_user_recent"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope}:{self.scope_key}:{self.path}"


class Passage(TenantOwned):
    """A chunk of a document for recall: lexical index at once, vector once a worker embeds it.

    ``end_user``, ``scope`` and ``scope_key`` are copied from the document so that recall can
    filter by a B-tree index before ordering by distance, with no join.
    """

    document = models.ForeignKey(
        MemoryDocument, on_delete=models.CASCADE, related_name="passages", db_index=False
    )
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="+", db_index=False)
    scope = models.CharField(max_length=16, choices=Scope.choices)
    scope_key = models.CharField(max_length=128, blank=True, default="")
    document_version = models.PositiveIntegerField()
    ordinal = models.PositiveIntegerField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    search = SearchVectorField(null=True)
    embedding = HalfVectorField(dimensions=EMBEDDING_DIMENSION, null=True)
    embedding_provider = models.CharField(max_length=PROVIDER_KEY_MAX, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "document", "ordinal"], name="passage_unique_ordinal"
            ),
            SameTenant(field="document", name="passage_document_same_tenant"),
            SameTenant(field="end_user", name="passage_end_user_same_tenant"),
            TenantRowLevelSecurity(name="passage_rls"),
        ]
        indexes = [
            models.Index(fields=["tenant", "end_user", "scope", "scope_key"], name="passage_visible"),
            models.Index(fields=["tenant", "document"], name="passage_document"),
            # The embedding sweep's work list stays small: only passages still waiting.
            models.Index(
                fields=["tenant", "document"], condition=models.Q(embedding__isnull=True),
                name="passage_unembedded",
            ),
        ]


class MessageRole(models.TextChoices):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Conversation(TenantOwned):
    """One conversation of a session: the history side, kept apart from searchable memory.

    A session holds one or more conversations; capture starts a new one after the tenant's
    inactivity timeout or on request. Only ``summary`` (and the counters capture keeps) ever
    change; messages are append-only. ``id`` is a UUID v7, so ordering by id is ordering by
    start, and ``(end_user, session_id, id)`` finds a session's latest conversation.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    end_user = models.ForeignKey(
        EndUser, on_delete=models.CASCADE, related_name="conversations", db_index=False
    )
    session_id = models.CharField(max_length=128)
    profile = models.CharField(max_length=64, blank=True, default="")
    process = models.CharField(max_length=128, blank=True, default="")
    started_at = models.DateTimeField()
    last_message_at = models.DateTimeField()
    message_count = models.PositiveIntegerField(default=0)
    summary = models.TextField(blank=True, default="")
    summary_updated_at = models.DateTimeField(null=True, blank=True)
    # Who wrote the summary: empty (nobody yet), "augmentation" (the extractor's rolling
    # summary, which each run may replace) or "app" (the API's PUT, which augmentation never
    # overwrites: an app's summary wins).
    summary_by = models.CharField(max_length=16, blank=True, default="")
    # Augmentation's durable cursor: the messages up to this seq have been learnt from.
    augmented_seq = models.PositiveIntegerField(default=0)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "id"], name="conversation_tenant_key"),
            SameTenant(field="end_user", name="conversation_end_user_same_tenant"),
            TenantRowLevelSecurity(name="conversation_rls"),
        ]
        indexes = [
            # Capture: the session's latest conversation; reads of one session's conversations.
            models.Index(fields=["tenant", "end_user", "session_id", "id"],
                         name="conversation_session"),
            # The person's conversations newest first: the list, history, the pages.
            models.Index(fields=["tenant", "end_user", "-last_message_at"],
                         name="conversation_user_recent"),
            # Retention: conversations whose last message is older than the cutoff.
            models.Index(fields=["tenant", "last_message_at"], name="conversation_tenant_last"),
            # The dashboard's "conversations waiting" for augmentation: only those rows, so
            # counting them costs the backlog, not the tenant's whole history.
            models.Index(fields=["tenant"], condition=models.Q(message_count__gt=models.F("augmented_seq")),
                         name="conversation_waiting"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}/{self.id}"


class Message(TenantOwned):
    """One captured message, never rewritten. ``seq`` counts the conversation's messages
    from 1 without gaps; ``client_id`` is the caller's own id, unique in the session, which
    makes a retried capture harmless.

    Messages outnumber everything else, so the table carries four full indexes only: the
    primary key (a UUID v7, so appended in order) and three beginning with ``tenant_id``: the
    conversation's order (which also serves deletes by conversation), the session's order
    (and the person's rows, which recall over messages reads), and the retry key; plus a
    partial one of the messages still waiting for their vector.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="+", db_index=False)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages", db_index=False
    )
    session_id = models.CharField(max_length=128)
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField()
    client_id = models.CharField(max_length=128, blank=True, default="")
    metadata = models.JSONField(default=dict)
    created_at = models.DateTimeField()  # the caller's time of the message, else capture's
    captured_at = models.DateTimeField()
    # Recall over messages (memoryhub/store/recall.py): the full-text vector is computed by
    # PostgreSQL on insert, the vector by the embedding worker after the capture commits.
    search = models.GeneratedField(expression=RECALL_SEARCH, output_field=SearchVectorField(),
                                   db_persist=True)
    embedding = HalfVectorField(dimensions=EMBEDDING_DIMENSION, null=True)
    embedding_provider = models.CharField(max_length=PROVIDER_KEY_MAX, blank=True, default="")

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "conversation", "seq"],
                                    name="message_conversation_seq"),
            models.UniqueConstraint(
                fields=["tenant", "end_user", "session_id", "client_id"],
                condition=~models.Q(client_id=""), name="message_unique_client_id",
            ),
            SameTenant(field="end_user", name="message_end_user_same_tenant"),
            SameTenant(field="conversation", name="message_conversation_same_tenant"),
            TenantRowLevelSecurity(name="message_rls"),
        ]
        indexes = [
            # A session's messages in capture order (conversation ids are time-ordered), and
            # everything of one person (forget-everything, export).
            models.Index(fields=["tenant", "end_user", "session_id", "conversation", "seq"],
                         name="message_session_order"),
            # The embedding sweep's work list: only messages still waiting (a small index).
            models.Index(fields=["tenant", "conversation"],
                         condition=models.Q(embedding__isnull=True), name="message_unembedded"),
        ]


class EventType(models.TextChoices):
    CHANGED = "memory.changed"
    PRESSURE = "memory.pressure"
    FACT_CHANGED = "fact.changed"


class MemoryEvent(TenantOwned):
    """An entry of the tenant's event feed; ``seq`` is its public id and the feed's cursor.

    ``seq`` counts the tenant's own events (``EventFeed``), so it tells a tenant nothing of
    the others' volume, as ``id`` (one sequence for every tenant) would.
    ``user_id`` is the end user's identifier as text, not a foreign key: the feed keeps
    telling what happened after the person is forgotten (it holds paths, never content).
    """

    seq = models.BigIntegerField()
    type = models.CharField(max_length=32, choices=EventType.choices)
    user_id = models.CharField(max_length=128, blank=True, default="")
    actor = models.CharField(max_length=16, choices=Actor.choices)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            # The feed's order and cursor (a unique B-tree on both).
            models.UniqueConstraint(fields=["tenant", "seq"], name="event_tenant_seq"),
            models.UniqueConstraint(fields=["tenant", "id"], name="event_tenant_key"),
            TenantRowLevelSecurity(name="event_rls"),
        ]
        indexes = [
            # A person's events: export and forget-everything.
            models.Index(fields=["tenant", "user_id", "seq"], name="event_tenant_user_seq"),
        ]

    def feed_item(self) -> dict[str, Any]:
        """The event as the event feed, the export and every webhook delivery show it (one
        definition: the API's ``Event`` shape documents it, and its schema test checks it)."""
        return {"id": self.seq, "type": self.type, "created_at": self.created_at,
                "actor": self.actor, "user_id": self.user_id, "data": self.data}


class EventFeed(TenantOwned):
    """The tenant's last event and webhook delivery numbers: their ``seq``, their public ids.

    Every event insert updates this row (``memoryhub.store.events``), and its row lock, held to
    the commit, is the tenant's feed lock: the tenant's events commit in ``seq`` order, so a
    reader of "the events after N" never misses one that commits later. A counter rather than
    ``max(seq) + 1``: forgetting a person deletes their events, and a number must never be
    given twice (a consumer's cursor may be past it).
    """

    tenant = models.OneToOneField("tenants.Tenant", on_delete=models.CASCADE, primary_key=True,
                                  related_name="+")
    last_event = models.BigIntegerField(default=0)
    last_delivery = models.BigIntegerField(default=0)

    class Meta(TenantOwned.Meta):
        constraints = [TenantRowLevelSecurity(name="eventfeed_rls")]


class WriteTally(TenantOwned):
    """Counts writes per turn (or per minute window) for the ``max_writes_per_turn`` limit."""

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=200)  # "turn:<turn_id>" (a counter) or "window/<session>/<uuid>" (one row per write)
    count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "end_user", "key"], name="tally_unique_key"),
            SameTenant(field="end_user", name="tally_end_user_same_tenant"),
            TenantRowLevelSecurity(name="tally_rls"),
        ]


class UsageDay(TenantOwned):
    """A tenant's usage on one day (UTC), for the dashboard's charts.

    ``writes`` (memory changes: ``memory.changed`` events) is counted by the statement that
    records the event (``memoryhub.store.events``), ``recalls`` by one upsert per recall
    (``memoryhub.services.usage``): counters, so deleting what was counted (forget-everything,
    retention) never rewrites the past. ``stored_bytes`` is the tenant's documents' size at
    the day's last reading (the hourly ``usage_snapshot_all`` task); None: no reading that day.
    """

    day = models.DateField()
    writes = models.PositiveBigIntegerField(default=0)
    recalls = models.PositiveBigIntegerField(default=0)
    stored_bytes = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "day"], name="usageday_unique_day"),
            TenantRowLevelSecurity(name="usageday_rls"),
        ]


class PortalLink(TenantOwned):
    """A one-time sign-in link for one end user's memory page; the token is signed, this row
    makes it single-use."""

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="+", db_index=False)
    nonce = models.CharField(max_length=64)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "nonce"], name="portallink_unique_nonce"),
            SameTenant(field="end_user", name="portallink_end_user_same_tenant"),
            TenantRowLevelSecurity(name="portallink_rls"),
        ]


class WebhookEndpoint(TenantOwned):
    """Where a tenant wants its events POSTed (admin API ``/api/v1/webhooks``).

    ``secret`` signs every delivery (HMAC-SHA256), so it must be readable when sending: it is
    stored, shown in full once at creation, and masked afterwards. An endpoint that keeps
    failing for ``MEMORYHUB_WEBHOOKS['disable_after']`` seconds is switched off with
    ``disabled_reason`` saying why; an admin switches it back on.
    """

    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=128)
    event_types = models.JSONField(default=list)  # a non-empty subset of EventType values
    enabled = models.BooleanField(default=True)
    disabled_reason = models.CharField(max_length=500, blank=True, default="")
    last_status = models.PositiveIntegerField(null=True, blank=True)  # HTTP status, or None
    last_error = models.CharField(max_length=500, blank=True, default="")
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "id"], name="webhookendpoint_tenant_key"),
            TenantRowLevelSecurity(name="webhookendpoint_rls"),
        ]
        indexes = [models.Index(fields=["tenant", "created_at"], name="webhook_tenant_created")]

    def __str__(self) -> str:
        return self.url


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    ABANDONED = "abandoned"  # the endpoint was switched off or deleted before success


class WebhookDelivery(TenantOwned):
    """One event for one endpoint: written with the event (an outbox), sent by a worker.

    Unique per (endpoint, event), so enqueuing twice cannot send twice; a worker claims the
    row for its attempt (a lease on ``next_attempt_at``), so two workers never send it at once
    (memoryhub.services.webhooks.webhook_deliver).
    """

    # The tenant's own delivery number (EventFeed), sent as X-MemoryHub-Delivery.
    seq = models.BigIntegerField()
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    event = models.ForeignKey(MemoryEvent, on_delete=models.CASCADE, related_name="+", db_index=False)
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    last_status = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True, default="")
    delivered_at = models.DateTimeField(null=True, blank=True)
    # While an attempt is out: its lease, cleared when the attempt is recorded. What counts
    # against the endpoint's WEBHOOK_MAX_IN_FLIGHT.
    sending_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    @property
    def sending(self) -> bool:
        """An attempt is out now (its lease has not run out): the dashboard says so, where
        ``next_attempt_at`` would read as a time it is due."""
        return (self.status == DeliveryStatus.PENDING and self.sending_until is not None
                and self.sending_until > timezone.now())

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "endpoint", "event"], name="delivery_unique_event"
            ),
            models.UniqueConstraint(fields=["tenant", "seq"], name="delivery_tenant_seq"),
            SameTenant(field="endpoint", name="delivery_endpoint_same_tenant"),
            SameTenant(field="event", name="delivery_event_same_tenant"),
            TenantRowLevelSecurity(name="webhookdelivery_rls"),
        ]
        indexes = [
            # The retry sweep's work list: pending deliveries by due time.
            models.Index(
                fields=["tenant", "next_attempt_at"],
                condition=models.Q(status="pending"), name="delivery_due",
            ),
            # An endpoint's next delivery waiting for a place, and its attempts out.
            models.Index(
                fields=["tenant", "endpoint", "next_attempt_at"],
                condition=models.Q(status="pending"), name="delivery_endpoint_due",
            ),
            models.Index(
                fields=["tenant", "endpoint"],
                condition=models.Q(sending_until__isnull=False), name="delivery_sending",
            ),
        ]


class FactType(models.TextChoices):
    FACT = "fact"
    PREFERENCE = "preference"
    PROFILE = "profile"
    TRIPLE = "triple"
    PROCESS_ATTRIBUTE = "process_attribute"


class FactEvent(models.TextChoices):
    CREATED = "created"
    UPDATED = "updated"
    MERGED = "merged"
    INVALIDATED = "invalidated"
    DELETED = "deleted"


class Fact(TenantOwned):
    """A short statement about the end user, kept for recall (spec: Facts).

    ``id`` is a UUID v7, so ordering by id is newest first by creation. ``normalized`` is
    the content's comparison form (``memoryhub.facts.normalized_text``): a valid fact with the
    same one is a duplicate. ``subject``/``predicate``/``object`` are empty when the fact is
    not structured. An invalid fact (``invalid_at`` set) is kept, never deleted by
    augmentation: contradictions invalidate.
    """

    id = models.UUIDField(primary_key=True, default=uuid7, editable=False)
    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="facts",
                                 db_index=False)
    type = models.CharField(max_length=32, choices=FactType.choices)
    content = models.TextField()
    normalized = models.TextField()
    subject = models.CharField(max_length=200, blank=True, default="")
    predicate = models.CharField(max_length=200, blank=True, default="")
    object = models.CharField(max_length=500, blank=True, default="")
    process = models.CharField(max_length=128, blank=True, default="")
    confidence = models.FloatField(default=1.0)
    valid_at = models.DateTimeField()
    invalid_at = models.DateTimeField(null=True, blank=True)
    source = models.JSONField(default=dict)  # {"conversation_id": ..., "message_ids": [...]}
    # The app's own key-value pairs (mem0's ``metadata``: api/mem0), at most 4 KiB of JSON
    # like a captured message's; shown by mem0's API and the export.
    metadata = models.JSONField(default=dict)
    version = models.PositiveIntegerField(default=1)
    updated_by = models.CharField(max_length=16, choices=Actor.choices)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Recall over facts: the full-text vector follows ``content`` (PostgreSQL computes it);
    # the vector is augmentation's (it embeds what it learns) or the embedding worker's, and
    # is cleared when the content changes.
    search = models.GeneratedField(expression=RECALL_SEARCH, output_field=SearchVectorField(),
                                   db_persist=True)
    embedding = HalfVectorField(dimensions=EMBEDDING_DIMENSION, null=True)
    embedding_provider = models.CharField(max_length=PROVIDER_KEY_MAX, blank=True, default="")

    class Meta(TenantOwned.Meta):
        constraints = [
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1),
                name="fact_confidence_range",
            ),
            SameTenant(field="end_user", name="fact_end_user_same_tenant"),
            TenantRowLevelSecurity(name="fact_rls"),
        ]
        indexes = [
            # The person's facts newest first (the list and its cursor), and all of them
            # (forget-everything).
            models.Index(fields=["tenant", "end_user", "-id"], name="fact_user_recent"),
            # Duplicates: the same normalised text.
            models.Index(fields=["tenant", "end_user", "normalized"], name="fact_user_text"),
            # Merges and contradictions: the same predicate.
            models.Index(fields=["tenant", "end_user", "predicate"], name="fact_user_predicate"),
            # The embedding sweep's work list: only facts still waiting.
            models.Index(fields=["tenant", "end_user"], condition=models.Q(embedding__isnull=True),
                         name="fact_unembedded"),
        ]

    def __str__(self) -> str:
        return self.content


class FactVersion(TenantOwned):
    """One change of a fact, oldest first by id. ``fact_id`` is not a foreign key: the
    history outlives a deleted fact (the API no longer shows it, like the fact), until
    forget-everything removes every row of the person."""

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="+",
                                 db_index=False)
    fact_id = models.UUIDField()
    version = models.PositiveIntegerField()
    event = models.CharField(max_length=16, choices=FactEvent.choices)
    content = models.TextField()
    actor = models.CharField(max_length=16, choices=Actor.choices)
    # For invalidated and merged: the fact that replaced this one, or that was merged in.
    related_fact_id = models.UUIDField(null=True, blank=True)
    at = models.DateTimeField()

    class Meta(TenantOwned.Meta):
        constraints = [
            SameTenant(field="end_user", name="factversion_end_user_same_tenant"),
            TenantRowLevelSecurity(name="factversion_rls"),
        ]
        indexes = [
            models.Index(fields=["tenant", "end_user", "fact_id", "id"], name="factversion_fact"),
        ]


class FactSourceKey(TenantOwned):
    """What augmentation already learnt: one stable key per (message, statement), written
    with the fact it made or merged into. Augmentation skips a key it finds, so the same
    messages never change anything twice, and a fact the person or the app deleted or edited
    is not made again from the same messages (the key outlives the fact: a tombstone)."""

    end_user = models.ForeignKey(EndUser, on_delete=models.CASCADE, related_name="+",
                                 db_index=False)
    key = models.CharField(max_length=64)
    fact_id = models.UUIDField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [
            models.UniqueConstraint(fields=["tenant", "end_user", "key"], name="factsourcekey_unique"),
            SameTenant(field="end_user", name="factsourcekey_end_user_same_tenant"),
            TenantRowLevelSecurity(name="factsourcekey_rls"),
        ]


class AugmentationFailure(TenantOwned):
    """An augmentation run that failed after its last retry (or whose extractor answered with
    something that is not an extraction), kept for the tenant's admins (the dashboard).
    The conversation's cursor did not move: its messages are read again by the next run.
    ``user_id`` is text, like the event feed's; ``error`` names what went wrong, never a
    message's or the model's text. Forget-everything removes the person's rows."""

    conversation_id = models.UUIDField()
    user_id = models.CharField(max_length=128)
    provider = models.CharField(max_length=32)
    error = models.TextField()
    malformed = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta(TenantOwned.Meta):
        constraints = [TenantRowLevelSecurity(name="augmentationfailure_rls")]
        indexes = [
            # The dashboard: the tenant's latest failures.
            models.Index(fields=["tenant", "-created_at"], name="augfailure_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}: {self.error[:60]}"
