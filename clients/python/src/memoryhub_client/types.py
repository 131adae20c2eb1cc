"""What the API answers, as TypedDicts: the JSON as it comes, keys and values unchanged.

Times are ISO 8601 strings (UTC) and ids are strings, exactly as the server sends them; the
shapes follow the server's own declarations (``/api/schema/``).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

Scope = Literal["session", "profile", "global"]
Role = Literal["system", "developer", "user", "assistant", "tool"]


class ToolResult(TypedDict):
    """One memory tool command's outcome: the text for the model, and whether it failed."""

    content: str
    is_error: bool


class IndexEntry(TypedDict):
    path: str
    scope: Scope
    bytes: int
    description: str
    edited_by_user: bool
    updated_at: str


class MemoryIndex(TypedDict):
    enabled: bool
    text: str
    entries: list[IndexEntry]
    omitted: int


class Snapshot(TypedDict):
    text: str


class DocumentMeta(TypedDict):
    path: str
    scope: Scope
    scope_key: str | None
    description: str
    bytes: int
    version: int
    updated_by: str
    confidence: float
    created_at: str
    updated_at: str


class Document(DocumentMeta):
    content: str


class DocumentPage(TypedDict):
    documents: list[DocumentMeta]
    next_cursor: str | None


class RecallResult(TypedDict):
    """A document's result has ``path`` and ``scope``; a fact's or a message's ``id``,
    ``conversation_id`` and ``session_id`` (the others null), a fact's its ``source`` too."""

    kind: Literal["document", "fact", "message"]
    id: str | None
    conversation_id: str | None
    session_id: str | None
    path: str | None
    scope: Scope | None
    snippet: str
    score: float
    similarity: float
    confidence: float
    updated_at: str
    source: FactSource | None


class Recall(TypedDict):
    results: list[RecallResult]
    context: str


FactType = Literal["fact", "preference", "profile", "triple", "process_attribute"]


class FactSource(TypedDict):
    conversation_id: str | None
    message_ids: list[str]


class Fact(TypedDict):
    id: str
    type: FactType
    content: str
    subject: str | None
    predicate: str | None
    object: str | None
    process: str | None
    confidence: float
    valid_at: str
    invalid_at: str | None
    source: FactSource
    version: int
    updated_by: str
    created_at: str
    updated_at: str


class FactPage(TypedDict):
    facts: list[Fact]
    next_cursor: str | None


class FactVersion(TypedDict):
    version: int
    event: Literal["created", "updated", "merged", "invalidated", "deleted"]
    content: str
    actor: str
    at: str
    related_fact_id: str | None  # the other fact of a merge


class FactHistory(TypedDict):
    history: list[FactVersion]


class ApiKey(TypedDict):
    id: int
    name: str
    masked: str
    permissions: list[str]
    user_id: str | None
    created_at: str
    last_used_at: str | None
    revoked_at: str | None
    api_key: NotRequired[str]  # the key itself, once: in the answer that created it


class ApiKeyList(TypedDict):
    keys: list[ApiKey]


DocumentCounts = TypedDict(
    "DocumentCounts", {"session": int, "profile": int, "global": int, "total": int}
)


class EndUser(TypedDict):
    user_id: str
    memory_enabled: bool
    created_at: str | None
    documents: DocumentCounts
    bytes: int
    sessions: int
    profiles: int
    conversations: int
    messages: int


class EndUserPage(TypedDict):
    users: list[EndUser]
    next_cursor: str | None


class Event(TypedDict):
    id: int
    type: str
    created_at: str
    actor: str
    user_id: str
    data: dict[str, Any]


class EventPage(TypedDict):
    events: list[Event]
    next_cursor: int | None


class PortalLink(TypedDict):
    url: str
    expires_at: str


class PortalLinkRecord(TypedDict):
    created_at: str
    expires_at: str
    used_at: str | None


class ExportedFact(Fact):
    metadata: dict[str, Any]
    history: list[FactVersion]


class DeletedFact(TypedDict):
    id: str
    history: list[FactVersion]


class Export(TypedDict):
    """``EndUser``'s fields, with the documents and conversations themselves for their counts."""

    user_id: str
    memory_enabled: bool
    created_at: str | None
    documents: list[Document]
    bytes: int
    sessions: int
    profiles: int
    conversations: list[ExportedConversation]
    messages: int
    account_email: str | None
    events: list[Event]
    portal_links: list[PortalLinkRecord]
    facts: list[ExportedFact]
    deleted_facts: list[DeletedFact]


class Limits(TypedDict, total=False):
    max_document_bytes: int | None
    max_index_entries: int | None
    max_index_tokens: int | None
    max_scope_bytes: int | None
    max_writes_per_turn: int | None
    max_message_bytes: int | None  # also at the top level: the same setting
    max_history_tokens: int | None  # likewise


class Retention(TypedDict, total=False):
    session_days: int | None
    conversation_days: int | None


class CapturePolicy(TypedDict, total=False):
    """What capture keeps: roles left out, empty messages dropped, patterns redacted."""

    excluded_roles: list[Role]
    drop_empty: bool
    redact: list[str]


class Tenant(TypedDict):
    slug: str
    name: str
    memory_enabled: bool
    limits: Limits
    retention: Retention
    recall_threshold: float
    capture: CapturePolicy
    conversation_timeout_minutes: int
    max_message_bytes: int | None
    max_history_tokens: int | None
    augmentation_enabled: bool


class TenantChanges(TypedDict, total=False):
    """``PATCH /tenant``: only the fields given change (a limit set to None is switched off)."""

    name: str
    memory_enabled: bool
    limits: Limits
    retention: Retention
    recall_threshold: float
    capture: CapturePolicy
    conversation_timeout_minutes: int
    max_message_bytes: int | None
    max_history_tokens: int | None
    augmentation_enabled: bool


class Profile(TypedDict):
    name: str
    disabled: bool
    created_at: str


class ProfilePage(TypedDict):
    profiles: list[Profile]
    next_cursor: str | None


class Webhook(TypedDict):
    id: int
    url: str
    event_types: list[str]
    enabled: bool
    secret_hint: str
    disabled_reason: str
    last_status: int | None
    last_error: str
    last_attempt_at: str | None
    last_success_at: str | None
    failing_since: str | None
    created_at: str
    secret: NotRequired[str]  # only in the answer that sets it


class WebhookList(TypedDict):
    webhooks: list[Webhook]


class WebhookChanges(TypedDict, total=False):
    url: str
    event_types: list[str]
    secret: str
    enabled: bool


# --- Conversations -----------------------------------------------------------------------------


class MessageIn(TypedDict):
    """One message to capture: ``role`` and ``content``, and optionally the caller's own ``id``
    (a retried id is not stored twice), ``created_at`` (ISO 8601) and ``metadata``."""

    role: Role
    content: str
    id: NotRequired[str]
    created_at: NotRequired[str]
    metadata: NotRequired[dict[str, Any]]


class CapturedMessage(TypedDict):
    id: str
    client_id: str | None
    seq: int
    role: Role
    created_at: str


class Dropped(TypedDict):
    excluded_role: int
    empty: int
    duplicate: int


class Capture(TypedDict):
    enabled: bool
    conversation_id: str | None
    captured: list[CapturedMessage]
    dropped: Dropped
    redacted: int


class Message(TypedDict):
    id: str
    client_id: str | None
    conversation_id: str
    seq: int
    role: Role
    content: str
    created_at: str
    metadata: dict[str, Any]


class MessagePage(TypedDict):
    messages: list[Message]
    next_cursor: str | None


class Conversation(TypedDict):
    id: str
    session_id: str
    profile: str | None
    process: str | None
    started_at: str
    last_message_at: str
    message_count: int
    summary: str | None
    summary_updated_at: str | None


class ExportedConversation(Conversation):
    messages: list[Message]


class ConversationPage(TypedDict):
    conversations: list[Conversation]
    next_cursor: str | None


class History(TypedDict):
    enabled: bool
    text: str
    conversations: list[Conversation]


class TurnContext(TypedDict):
    enabled: bool
    index: MemoryIndex
    recall: Recall | None
    history: History | None
