"""What the API answers: the one definition of every response shape.

Each shape is declared once, as an output serializer: drf-spectacular documents it at
``/api/schema/`` from that declaration. Beside it stands the function that builds the JSON
the views answer (and the web page's "download everything" file, memoryhub/web/exports.py).
The functions build plain dicts rather than running the serializers: a serializer costs about
250 us for one document where the dict costs about 1.5 us, and documents GET, the prompt
index and the memory tool serve nearly every request. Dates stay ``datetime`` objects for
DRF's JSON encoder.

tests/api/test_openapi.py holds the two together: it validates the real answer of every
documented operation against the schema component of that operation, with every property
required and no other allowed, so a key added, dropped or retyped on one side fails there.

Lists are keyset pages (``keyset_page``): the selectors fetch ``limit + 1`` rows, the page
shows ``limit`` of them and ``next_cursor`` says whether there is another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from api.serializers import Page, next_cursor
from memoryhub.models import (
    Actor,
    Conversation,
    EventType,
    Fact,
    FactEvent,
    FactType,
    FactVersion,
    MemoryDocument,
    MemoryEvent,
    Message,
    MessageRole,
    PortalLink,
    Profile,
    Scope,
    WebhookEndpoint,
)
from memoryhub.selectors.conversations import ConversationRun, History
from memoryhub.selectors.people import EndUserExport, EndUserSummary
from memoryhub.selectors.recall import SCORE_PLACES, Recall
from memoryhub.selectors.turn_context import TurnContext
from memoryhub.services.conversations import Capture
from memoryhub.services.webhooks import secret_masked
from memoryhub.store.recall import RecallHit
from tenants.models import DEFAULT_LIMITS, ApiKey, Tenant

Row = TypeVar("Row")


def keyset_page(
    rows: Sequence[Row], page: Page, *, items: str, represent: Callable[[Row], dict[str, Any]],
    key: Callable[[Row], tuple[Any, ...]],
) -> dict[str, Any]:
    """``{items: [...], "next_cursor": ...}``: the first ``page.limit`` of the ``limit + 1``
    rows a selector fetched, and the cursor after the last one shown when there are more."""
    return {
        items: [represent(row) for row in rows[: page.limit]],
        "next_cursor": next_cursor(rows, page.limit, key),
    }


# --- Documents -----------------------------------------------------------------------------


class DocumentMetaSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="as the caller wrote it (lists: the stored form)")
    scope = serializers.ChoiceField(choices=Scope.values)
    scope_key = serializers.CharField(allow_null=True, help_text="session_id, profile, or null")
    description = serializers.CharField(allow_blank=True)
    bytes = serializers.IntegerField(help_text="UTF-8 length of content")
    version = serializers.IntegerField(help_text="1 on create, +1 on every change; the ETag")
    updated_by = serializers.ChoiceField(choices=Actor.values)
    confidence = serializers.FloatField(help_text="0-1, weighs recall ranking")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class DocumentSerializer(DocumentMetaSerializer):
    content = serializers.CharField(allow_blank=True)


class DocumentPageSerializer(serializers.Serializer):
    documents = DocumentMetaSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def document_representation(
    document: MemoryDocument, *, path: str | None = None, content: bool = True
) -> dict[str, Any]:
    """``DocumentSerializer`` (``DocumentMetaSerializer`` without ``content``); ``path`` is
    the caller's spelling when they wrote one."""
    body: dict[str, Any] = {
        "path": path if path is not None else document.path,
        "scope": document.scope,
        "scope_key": document.scope_key if document.scope != Scope.GLOBAL else None,
        "description": document.description,
        "bytes": document.bytes,
        "version": document.version,
        "updated_by": document.updated_by,
        "confidence": document.confidence,
        "created_at": document.created_at,
        "updated_at": document.updated_at,
    }
    if content:
        body["content"] = document.content
    return body


def _document_meta(document: MemoryDocument) -> dict[str, Any]:
    return document_representation(document, content=False)


def document_page_representation(rows: Sequence[MemoryDocument], page: Page) -> dict[str, Any]:
    """``DocumentPageSerializer``, in the order of the cursor: scope, scope_key, path."""
    return keyset_page(rows, page, items="documents", represent=_document_meta,
                       key=lambda d: (d.scope, d.scope_key, d.path))


# --- End users -----------------------------------------------------------------------------


class DocumentCountsSerializer(serializers.Serializer):
    session = serializers.IntegerField()
    profile = serializers.IntegerField()
    global_ = serializers.IntegerField()
    total = serializers.IntegerField()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["global"] = fields.pop("global_")  # a Python keyword, a JSON key
        return fields


class EndUserSerializer(serializers.Serializer):
    user_id = serializers.CharField()
    memory_enabled = serializers.BooleanField(help_text="the person's own switch")
    created_at = serializers.DateTimeField(allow_null=True, help_text="null: nothing stored")
    documents = DocumentCountsSerializer()
    bytes = serializers.IntegerField(help_text="total UTF-8 bytes of all documents")
    sessions = serializers.IntegerField(help_text="sessions with at least one document")
    profiles = serializers.IntegerField(help_text="profiles with at least one document")
    conversations = serializers.IntegerField(help_text="conversations captured")
    messages = serializers.IntegerField(help_text="messages in those conversations")


class EndUserPageSerializer(serializers.Serializer):
    users = EndUserSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def end_user_representation(summary: EndUserSummary) -> dict[str, Any]:
    """``EndUserSerializer``; ``documents`` is the selector's counts dict (``DocumentCounts``)."""
    return {
        "user_id": summary.user_id,
        "memory_enabled": summary.memory_enabled,
        "created_at": summary.created_at,
        "documents": summary.documents,
        "bytes": summary.bytes,
        "sessions": summary.sessions,
        "profiles": summary.profiles,
        "conversations": summary.conversations,
        "messages": summary.messages,
    }


def end_user_page_representation(rows: Sequence[EndUserSummary], page: Page) -> dict[str, Any]:
    """``EndUserPageSerializer``, by user_id."""
    return keyset_page(rows, page, items="users", represent=end_user_representation,
                       key=lambda s: (s.user_id,))


class PortalLinkSerializer(serializers.Serializer):
    url = serializers.URLField(help_text="absolute; opens /portal/<token> once")
    expires_at = serializers.DateTimeField()


def portal_link_representation(*, url: str, expires_at: datetime) -> dict[str, Any]:
    """``PortalLinkSerializer``: the link just minted (its token is in ``url`` only)."""
    return {"url": url, "expires_at": expires_at}


# --- The event feed ------------------------------------------------------------------------


class EventSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="the cursor")
    type = serializers.ChoiceField(choices=EventType.values)
    created_at = serializers.DateTimeField()
    actor = serializers.ChoiceField(choices=Actor.values)
    user_id = serializers.CharField()
    # DRF's metaclass takes declared fields out of the class: Serializer.data stays as it is.
    data = serializers.DictField()  # type: ignore[assignment]


class EventPageSerializer(serializers.Serializer):
    events = EventSerializer(many=True)
    next_cursor = serializers.IntegerField(
        allow_null=True, help_text="id of the last event returned; null when none was returned"
    )


def event_representation(event: MemoryEvent) -> dict[str, Any]:
    """``EventSerializer``: the model's ``feed_item``, which webhook deliveries send too."""
    return event.feed_item()


def event_page_representation(events: Sequence[MemoryEvent]) -> dict[str, Any]:
    """``EventPageSerializer``. API v1: "<cursor of the last event, or null when there are no
    more>". The feed is a tail that keeps growing, so a page that returned events always hands
    back where it stopped; only an empty page (nothing after ``after``) says null."""
    return {
        "events": [event_representation(e) for e in events],
        "next_cursor": events[-1].seq if events else None,
    }


# --- Tenant administration -------------------------------------------------------------------


class ProfileSerializer(serializers.Serializer):
    name = serializers.CharField()
    disabled = serializers.BooleanField()
    created_at = serializers.DateTimeField()


class ProfilePageSerializer(serializers.Serializer):
    profiles = ProfileSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def profile_representation(profile: Profile) -> dict[str, Any]:
    """``ProfileSerializer``."""
    return {"name": profile.name, "disabled": profile.disabled, "created_at": profile.created_at}


def profile_page_representation(rows: Sequence[Profile], page: Page) -> dict[str, Any]:
    """``ProfilePageSerializer``, by name."""
    return keyset_page(rows, page, items="profiles", represent=profile_representation,
                       key=lambda p: (p.name,))


def tenant_representation(tenant: Tenant) -> dict[str, Any]:
    """``api.serializers.TenantSerializer``: the same declaration validates the PATCH body."""
    return {
        "slug": tenant.slug,
        "name": tenant.name,
        "memory_enabled": tenant.memory_enabled,
        "limits": {**{name: getattr(tenant, name) for name in DEFAULT_LIMITS},
                   "max_message_bytes": tenant.max_message_bytes,
                   "max_history_tokens": tenant.max_history_tokens},
        "retention": {"session_days": tenant.session_days,
                      "conversation_days": tenant.conversation_days},
        "recall_threshold": tenant.recall_threshold,
        "capture": {"excluded_roles": tenant.capture_excluded_roles,
                    "drop_empty": tenant.capture_drop_empty,
                    "redact": tenant.capture_redact},
        "conversation_timeout_minutes": tenant.conversation_timeout_minutes,
        "max_message_bytes": tenant.max_message_bytes,
        "max_history_tokens": tenant.max_history_tokens,
        "augmentation_enabled": tenant.augmentation_enabled,
    }


# --- Webhooks ------------------------------------------------------------------------------


class WebhookSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    url = serializers.URLField()
    event_types = serializers.ListField(child=serializers.CharField())
    enabled = serializers.BooleanField()
    secret_hint = serializers.CharField()
    disabled_reason = serializers.CharField(allow_blank=True)
    last_status = serializers.IntegerField(allow_null=True, help_text="HTTP status of the last attempt")
    last_error = serializers.CharField(allow_blank=True)
    last_attempt_at = serializers.DateTimeField(allow_null=True)
    last_success_at = serializers.DateTimeField(allow_null=True)
    failing_since = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(help_text="shown once")


# A change that sets a new secret echoes it once, as the creation does.
WebhookChangedSerializer = PolymorphicProxySerializer(
    component_name="WebhookChanged", serializers=[WebhookSerializer, WebhookCreatedSerializer],
    resource_type_field_name=None,
)


class WebhookListSerializer(serializers.Serializer):
    webhooks = WebhookSerializer(many=True)


def webhook_representation(
    endpoint: WebhookEndpoint, *, secret: str | None = None
) -> dict[str, Any]:
    """``WebhookSerializer``; with the ``secret`` just set, ``WebhookCreatedSerializer`` (the
    answers that show it in full: the creation, and a change that sets a new one)."""
    body: dict[str, Any] = {
        "id": endpoint.pk, "url": endpoint.url, "event_types": endpoint.event_types,
        "enabled": endpoint.enabled, "secret_hint": secret_masked(endpoint.secret),
        "disabled_reason": endpoint.disabled_reason, "last_status": endpoint.last_status,
        "last_error": endpoint.last_error, "last_attempt_at": endpoint.last_attempt_at,
        "last_success_at": endpoint.last_success_at, "failing_since": endpoint.failing_since,
        "created_at": endpoint.created_at,
    }
    if secret is not None:
        body["secret"] = secret
    return body


def webhook_list_representation(endpoints: Iterable[WebhookEndpoint]) -> dict[str, Any]:
    """``WebhookListSerializer``."""
    return {"webhooks": [webhook_representation(e) for e in endpoints]}


# --- Recall --------------------------------------------------------------------------------


class FactSourceSerializer(serializers.Serializer):
    conversation_id = serializers.CharField(allow_null=True)
    message_ids = serializers.ListField(child=serializers.CharField())


def fact_source_representation(source: dict[str, Any]) -> dict[str, Any]:
    """``FactSourceSerializer``: a fact's source, whatever the stored JSON lacks as empty."""
    return {"conversation_id": source.get("conversation_id"),
            "message_ids": list(source.get("message_ids") or [])}


class RecallResultSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=("document", "fact", "message"))
    id = serializers.CharField(allow_null=True, help_text="a fact's or a message's; null for a document")
    conversation_id = serializers.CharField(
        allow_null=True, help_text="a message's conversation, a fact's source conversation")
    session_id = serializers.CharField(allow_null=True,
                                       help_text="that conversation's session; null for a document")
    path = serializers.CharField(allow_null=True, help_text="a document's; null otherwise")
    scope = serializers.ChoiceField(choices=("session", "profile", "global"), allow_null=True)
    snippet = serializers.CharField(
        help_text="the matching passage of a document, a fact's or a message's content")
    score = serializers.FloatField(help_text="similarity x confidence x recency, with lexical")
    similarity = serializers.FloatField(help_text="cosine similarity (lexical before embedding)")
    confidence = serializers.FloatField()
    updated_at = serializers.DateTimeField(help_text="a message's created_at")
    source = FactSourceSerializer(  # type: ignore[assignment]  # a field, not Field.source
        allow_null=True, help_text="a fact's source; null for documents and messages")


class RecallOutputSerializer(serializers.Serializer):
    results = RecallResultSerializer(many=True)
    # DRF's metaclass takes declared fields out of the class: Field.context stays as it is.
    context = serializers.CharField(  # type: ignore[assignment]
        allow_blank=True, help_text="<memori_context> block or ''")


def recall_result_representation(hit: RecallHit) -> dict[str, Any]:
    """``RecallResultSerializer``: scores to four places, enough to rank by and to read."""
    document = hit.kind == "document"
    return {
        "kind": hit.kind, "id": hit.record_id, "conversation_id": hit.conversation_id,
        "session_id": hit.session_id,
        "path": hit.path if document else None, "scope": hit.scope if document else None,
        "snippet": hit.snippet,
        "score": round(hit.score, SCORE_PLACES),
        "similarity": round(hit.similarity, SCORE_PLACES),
        "confidence": hit.confidence, "updated_at": hit.updated_at,
        "source": fact_source_representation(hit.source or {}) if hit.kind == "fact" else None,
    }


def recall_representation(recall: Recall) -> dict[str, Any]:
    """``RecallOutputSerializer``."""
    return {
        "results": [recall_result_representation(hit) for hit in recall.results],
        "context": recall.context,
    }


# --- The memory tool and the conversation's start ------------------------------------------


class MemoryToolResult(serializers.Serializer):
    content = serializers.CharField(help_text="The text for the model (the tool_result content).")
    is_error = serializers.BooleanField()


def tool_result_representation(content: str, is_error: bool) -> dict[str, Any]:
    """``MemoryToolResult``: what the SDK's tool runner puts in the ``tool_result``."""
    return {"content": content, "is_error": is_error}


class IndexEntry(serializers.Serializer):
    path = serializers.CharField()
    scope = serializers.ChoiceField(choices=["session", "profile", "global"])
    bytes = serializers.IntegerField()
    description = serializers.CharField(allow_blank=True)
    edited_by_user = serializers.BooleanField()
    updated_at = serializers.DateTimeField()


# Built whole by memoryhub.selectors.documents.index_build: its text and its entries come
# from one statement, and the index is the hottest read, so it is answered as built.
class MemoryIndex(serializers.Serializer):
    enabled = serializers.BooleanField()
    text = serializers.CharField(allow_blank=True)
    entries = IndexEntry(many=True)
    omitted = serializers.IntegerField()


class MemorySnapshot(serializers.Serializer):
    text = serializers.CharField(allow_blank=True)


def snapshot_representation(text: str) -> dict[str, Any]:
    """``MemorySnapshot``."""
    return {"text": text}


# --- Conversations ---------------------------------------------------------------------------


class CapturedMessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    client_id = serializers.CharField(allow_null=True, help_text="the caller's own id, or null")
    seq = serializers.IntegerField(help_text="position in the conversation, from 1")
    role = serializers.ChoiceField(choices=MessageRole.values)
    created_at = serializers.DateTimeField()


class DroppedSerializer(serializers.Serializer):
    excluded_role = serializers.IntegerField()
    empty = serializers.IntegerField()
    duplicate = serializers.IntegerField(help_text="an id already captured in this session")


class CaptureResultSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    conversation_id = serializers.UUIDField(allow_null=True)
    captured = CapturedMessageSerializer(many=True)
    dropped = DroppedSerializer()
    redacted = serializers.IntegerField(help_text="messages stored with something redacted")


def capture_representation(capture: Capture) -> dict[str, Any]:
    """``CaptureResultSerializer``."""
    return {
        "enabled": capture.enabled,
        "conversation_id": capture.conversation_id,
        "captured": [
            {"id": m.id, "client_id": m.client_id or None, "seq": m.seq, "role": m.role,
             "created_at": m.created_at}
            for m in capture.captured
        ],
        "dropped": dict(capture.dropped),
        "redacted": capture.redacted,
    }


class MessageSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    client_id = serializers.CharField(allow_null=True)
    conversation_id = serializers.UUIDField()
    seq = serializers.IntegerField()
    role = serializers.ChoiceField(choices=MessageRole.values)
    content = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    metadata = serializers.DictField()


class MessagePageSerializer(serializers.Serializer):
    messages = MessageSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def message_representation(message: Message) -> dict[str, Any]:
    """``MessageSerializer``."""
    return {
        "id": message.id, "client_id": message.client_id or None,
        "conversation_id": message.conversation_id, "seq": message.seq, "role": message.role,
        "content": message.content, "created_at": message.created_at,
        "metadata": message.metadata,
    }


def message_page_representation(rows: Sequence[Message], page: Page) -> dict[str, Any]:
    return keyset_page(rows, page, items="messages", represent=message_representation,
                       key=lambda m: (str(m.conversation_id), str(m.seq)))


class ConversationSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    session_id = serializers.CharField()
    profile = serializers.CharField(allow_null=True)
    process = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField()
    last_message_at = serializers.DateTimeField()
    message_count = serializers.IntegerField()
    summary = serializers.CharField(allow_null=True, allow_blank=True)
    summary_updated_at = serializers.DateTimeField(allow_null=True)


class ConversationPageSerializer(serializers.Serializer):
    conversations = ConversationSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True, help_text="pass it as `before`")


def conversation_representation(conversation: Conversation) -> dict[str, Any]:
    """``ConversationSerializer``: absent profile, process and summary are null."""
    return {
        "id": conversation.id, "session_id": conversation.session_id,
        "profile": conversation.profile or None, "process": conversation.process or None,
        "started_at": conversation.started_at, "last_message_at": conversation.last_message_at,
        "message_count": conversation.message_count,
        "summary": conversation.summary if conversation.summary_updated_at else None,
        "summary_updated_at": conversation.summary_updated_at,
    }


def conversation_page_representation(rows: Sequence[Conversation], page: Page) -> dict[str, Any]:
    return keyset_page(rows, page, items="conversations", represent=conversation_representation,
                       key=lambda c: (c.last_message_at.isoformat(), str(c.id)))


class HistorySerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    text = serializers.CharField(allow_blank=True, help_text="<conversation_history> block or ''")
    conversations = ConversationSerializer(many=True, help_text="those in `text`, newest first")


def history_representation(history: History) -> dict[str, Any]:
    """``HistorySerializer``."""
    return {"enabled": history.enabled, "text": history.text,
            "conversations": [conversation_representation(c) for c in history.conversations]}


class TurnContextSerializer(serializers.Serializer):
    enabled = serializers.BooleanField()
    index = MemoryIndex()
    recall = RecallOutputSerializer(allow_null=True, help_text="null without a query")
    history = HistorySerializer(allow_null=True, help_text="null when history is 0")


def turn_context_representation(context: TurnContext) -> dict[str, Any]:
    """``TurnContextSerializer``."""
    return {
        "enabled": context.enabled,
        "index": context.index,
        "recall": None if context.recall is None else recall_representation(context.recall),
        "history": None if context.history is None else history_representation(context.history),
    }


# --- API keys ------------------------------------------------------------------------------


class ApiKeySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    masked = serializers.CharField(help_text="mh_<tenant>_<lookup id>_…: the secret is never shown again")
    permissions = serializers.ListField(child=serializers.ChoiceField(choices=["memory", "admin"]))
    user_id = serializers.CharField(allow_null=True,
                                    help_text="the one end user a bound key reaches; null: any")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class ApiKeyCreatedSerializer(ApiKeySerializer):
    api_key = serializers.CharField(help_text="the key itself, shown once")


class ApiKeyListSerializer(serializers.Serializer):
    keys = ApiKeySerializer(many=True)


def api_key_representation(key: ApiKey, *, plaintext: str | None = None) -> dict[str, Any]:
    """``ApiKeySerializer``; with the key just minted, ``ApiKeyCreatedSerializer``."""
    body: dict[str, Any] = {
        "id": key.pk, "name": key.name, "masked": key.masked, "permissions": key.permissions,
        "user_id": key.user_id, "created_at": key.created_at, "last_used_at": key.last_used_at,
        "revoked_at": key.revoked_at,
    }
    if plaintext is not None:
        body["api_key"] = plaintext
    return body


def api_key_list_representation(keys: Iterable[ApiKey]) -> dict[str, Any]:
    """``ApiKeyListSerializer``."""
    return {"keys": [api_key_representation(key) for key in keys]}


# --- Facts -----------------------------------------------------------------------------------


class FactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    type = serializers.ChoiceField(choices=FactType.values)
    content = serializers.CharField()
    subject = serializers.CharField(allow_null=True)
    predicate = serializers.CharField(allow_null=True)
    object = serializers.CharField(allow_null=True)
    process = serializers.CharField(allow_null=True)
    confidence = serializers.FloatField()
    valid_at = serializers.DateTimeField()
    invalid_at = serializers.DateTimeField(allow_null=True, help_text="set: no longer true")
    source = FactSourceSerializer()  # type: ignore[assignment]  # a field, not Field.source
    version = serializers.IntegerField(help_text="1 on create, +1 on every change; the ETag")
    updated_by = serializers.ChoiceField(choices=Actor.values)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class FactPageSerializer(serializers.Serializer):
    facts = FactSerializer(many=True)
    next_cursor = serializers.CharField(allow_null=True)


def fact_representation(fact: Fact) -> dict[str, Any]:
    """``FactSerializer``: empty subject, predicate, object and process are null."""
    source = fact.source or {}
    return {
        "id": fact.id, "type": fact.type, "content": fact.content,
        "subject": fact.subject or None, "predicate": fact.predicate or None,
        "object": fact.object or None, "process": fact.process or None,
        "confidence": fact.confidence, "valid_at": fact.valid_at, "invalid_at": fact.invalid_at,
        "source": fact_source_representation(source),
        "version": fact.version, "updated_by": fact.updated_by,
        "created_at": fact.created_at, "updated_at": fact.updated_at,
    }


def fact_page_representation(rows: Sequence[Fact], page: Page) -> dict[str, Any]:
    return keyset_page(rows, page, items="facts", represent=fact_representation,
                       key=lambda f: (str(f.id),))


class FactVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    event = serializers.ChoiceField(choices=FactEvent.values)
    content = serializers.CharField()
    actor = serializers.ChoiceField(choices=Actor.values)
    at = serializers.DateTimeField()
    related_fact_id = serializers.UUIDField(
        allow_null=True, help_text="invalidated: the fact that replaced this one (a statement "
        "learnt after a newer one that contradicts it: that newer fact); else null")


class FactHistorySerializer(serializers.Serializer):
    history = FactVersionSerializer(many=True, help_text="oldest first")


def fact_history_representation(rows: Sequence[FactVersion]) -> dict[str, Any]:
    """``FactHistorySerializer``."""
    return {"history": [{"version": r.version, "event": r.event, "content": r.content,
                         "actor": r.actor, "at": r.at, "related_fact_id": r.related_fact_id}
                        for r in rows]}


# --- Export (last: it holds the shapes above) ----------------------------------------------


class PortalLinkRecordSerializer(serializers.Serializer):
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    used_at = serializers.DateTimeField(allow_null=True)


class ConversationExportSerializer(ConversationSerializer):
    messages = MessageSerializer(many=True, help_text="every message, in order (seq)")


class FactExportSerializer(FactSerializer):
    metadata = serializers.DictField(help_text="the app's own (mem0's metadata), {} for none")
    history = FactVersionSerializer(many=True, help_text="oldest first")


class DeletedFactExportSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    history = FactVersionSerializer(many=True, help_text="oldest first, ending with deleted")


class ExportSerializer(EndUserSerializer):
    # In place of their counts (a field, not the base class's attribute type the stubs see).
    documents = DocumentSerializer(many=True)  # type: ignore[assignment]
    account_email = serializers.CharField(allow_null=True, help_text="linked web account")
    events = EventSerializer(many=True)
    portal_links = PortalLinkRecordSerializer(many=True)
    conversations = ConversationExportSerializer(many=True)  # type: ignore[assignment]
    facts = FactExportSerializer(many=True, help_text="valid and invalid, oldest first")
    deleted_facts = DeletedFactExportSerializer(
        many=True, help_text="the history still stored of facts deleted since: events and times, no text")


def portal_link_record_representation(link: PortalLink) -> dict[str, Any]:
    """``PortalLinkRecordSerializer``: dates only, tokens are never stored."""
    return {"created_at": link.created_at, "expires_at": link.expires_at, "used_at": link.used_at}


def conversation_export_representation(run: ConversationRun) -> dict[str, Any]:
    """``ConversationExportSerializer``: the conversation as the API shows it, with its messages."""
    return {**conversation_representation(run.conversation),
            "messages": [message_representation(m) for m in run.messages]}


def export_representation(export: EndUserExport) -> dict[str, Any]:
    """``ExportSerializer``: everything stored for the person, for the API's export and the
    web page's download: the fields of ``EndUserSerializer``, with the documents and the
    conversations themselves in place of their counts."""
    return {
        **end_user_representation(export.summary),
        "account_email": export.account_email,
        "documents": [document_representation(d) for d in export.documents],
        "events": [event_representation(e) for e in export.events],
        "portal_links": [portal_link_record_representation(link) for link in export.portal_links],
        "conversations": [conversation_export_representation(r) for r in export.conversations],
        "facts": [{**fact_representation(r.fact), "metadata": r.fact.metadata,
                   **fact_history_representation(r.history)}
                  for r in export.facts if r.fact is not None],
        "deleted_facts": [{"id": r.fact_id, **fact_history_representation(r.history)}
                          for r in export.deleted_facts],
    }
