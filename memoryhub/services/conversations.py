"""Writes of conversation history (spec: Conversations): capture, summaries, deletion.

History is an append-only archive, kept apart from the documents recall searches. Capture
appends messages to the session's latest conversation, or starts one after the tenant's
inactivity timeout (or on ``new_conversation``); messages are never rewritten, and a
conversation's summary is the only thing that changes.

Concurrency. Capture holds the person's write lock (the end user's row, ``FOR NO KEY
UPDATE``, as every memory write does: ``memoryhub.services.documents``), so two captures into
one session run one after the other: ``seq`` stays gapless and the retry check (``client_id``
already in the session) cannot race. Deletion takes the same lock, and so does retention,
for every person of its batch before anything else (``end_users_lock``), so a conversation
is either deleted before a capture reads it or after the capture committed (retention then
checks its cutoff again and keeps it).

Errors. Every message is checked before anything is written: a request is all or nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memoryhub.capture_policy import CapturePolicy, dropped_reason, policy_for, redacted
from memoryhub.errors import MemoryDisabled, MemoryRefusal, VersionMismatch
from memoryhub.identifiers import USER_ID_RULE, is_user_id
from memoryhub.models import Actor, Conversation, EndUser, Message, MessageRole
from memoryhub.selectors.conversations import conversation_find
from memoryhub.selectors.documents import memory_disabled_reason
from memoryhub.services.augmentation import augmentation_schedule
from memoryhub.services.documents import end_user_get_or_create
from memoryhub.services.events import conversation_deleted_event
from memoryhub.services.facts import UNSET, facts_sources_drop
from memoryhub.services.metadata import metadata_checked, metadata_rewritten
from memoryhub.services.passages import record_embedding_schedule
from memoryhub.store.conversations import capture_state, messages_store
from memoryhub.store.end_users import end_user_find, end_users_lock
from tenants.models import Tenant

MAX_MESSAGES_PER_REQUEST = 100
MAX_SUMMARY_BYTES = 65536
ROLES = frozenset(MessageRole.values)
DROP_REASONS = ("excluded_role", "empty", "duplicate")


class CaptureRefusal(MemoryRefusal):
    """A captured message the contract refuses; ``code`` names why (``invalid_role``, ...)."""

    http_status = 400

    def __init__(self, code: str, message: str, http_status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status


class ConversationNotFound(MemoryRefusal):
    code = "not_found"
    http_status = 404


# --- checking a capture ----------------------------------------------------------------------


@dataclass(frozen=True)
class IncomingMessage:
    role: str
    content: str
    client_id: str  # "" when the caller gave none
    created_at: datetime | None
    metadata: dict[str, Any]


def messages_checked(raw: object, *, max_message_bytes: int | None) -> list[IncomingMessage]:
    """The request's ``messages``, each checked; the first problem refuses them all."""
    if not isinstance(raw, list) or not raw:
        raise CaptureRefusal("invalid_message", "The body must hold a non-empty `messages` list.")
    if len(raw) > MAX_MESSAGES_PER_REQUEST:
        raise CaptureRefusal(
            "too_many_messages",
            f"At most {MAX_MESSAGES_PER_REQUEST} messages a request; send the rest in another.",
        )
    return [_message_checked(item, index, max_message_bytes) for index, item in enumerate(raw)]


def _message_checked(item: object, index: int, max_bytes: int | None) -> IncomingMessage:
    where = f"messages[{index}]"
    # A null role or content is one "without" it, as a missing one (spec: invalid_message).
    if not isinstance(item, dict) or item.get("role") is None or item.get("content") is None:
        raise CaptureRefusal("invalid_message", f"{where} must be an object with role and content.")
    unknown = set(item) - {"role", "content", "id", "created_at", "metadata"}
    if unknown:
        raise CaptureRefusal("invalid_message", f"{where} has unknown fields: "
                             f"{', '.join(sorted(map(str, unknown)))}.")
    role = item["role"]
    if not isinstance(role, str) or role not in ROLES:  # a dict or list is not hashable
        raise CaptureRefusal("invalid_role", f"{where}.role must be one of "
                             f"{', '.join(MessageRole.values)}.")
    content = _text_checked(item["content"], f"{where}.content")
    if max_bytes is not None and len(content.encode("utf-8")) > max_bytes:
        raise CaptureRefusal(
            "message_too_large",
            f"{where} is over the tenant's max_message_bytes ({max_bytes} bytes); nothing was "
            "stored. Split it or shorten it.", http_status=422,
        )
    return IncomingMessage(
        role=role, content=content, client_id=_client_id(item.get("id"), where),
        created_at=_created_at(item.get("created_at"), where),
        metadata=metadata_checked(item.get("metadata"), f"{where}.metadata"),
    )


def _text_checked(value: object, where: str) -> str:
    """Text is a ``str`` that encodes to UTF-8 (no lone surrogate, which the body parser
    makes of invalid UTF-8) and holds no NUL (PostgreSQL text cannot)."""
    if not isinstance(value, str):
        raise CaptureRefusal("not_text", f"{where} must be a string.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise CaptureRefusal("not_text", f"{where} is not valid UTF-8 text.") from None
    if "\x00" in value:
        raise CaptureRefusal("not_text", f"{where} holds a NUL character.")
    return value


def _client_id(value: object, where: str) -> str:
    if value is None:
        return ""
    if not is_user_id(value):
        raise CaptureRefusal("invalid_message", f"{where}.id must be {USER_ID_RULE}.")
    return value


def _created_at(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = parse_datetime(value) if isinstance(value, str) and len(value) <= 64 else None
        if parsed is not None:
            if timezone.is_naive(parsed):
                parsed = parsed.replace(tzinfo=UTC)  # the contract's times are UTC
            return parsed.astimezone(UTC)  # answered as stored: in UTC
    except (ValueError, OverflowError):  # no such time (month 13), or past year 9999 in UTC
        pass
    raise CaptureRefusal("invalid_message",
                         f"{where}.created_at must be an ISO 8601 time, e.g. 2026-11-06T17:02:11Z.")


# --- capture ---------------------------------------------------------------------------------


@dataclass
class Capture:
    """What a capture did: the reply's fields."""

    enabled: bool
    conversation_id: UUID | None = None
    captured: list[Message] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    redacted: int = 0


def tenant_capture_policy(tenant: Tenant) -> CapturePolicy:
    return policy_for(excluded_roles=tenant.capture_excluded_roles,
                      drop_empty=tenant.capture_drop_empty, redact=tenant.capture_redact)


def messages_capture(
    *, tenant: Tenant, user_id: str, end_user: EndUser | None, session_id: str,
    messages: Sequence[IncomingMessage], profile: str | None = None, process: str | None = None,
    new_conversation: bool = False,
) -> Capture:
    """Append ``messages`` (already checked) to the session's history, in order.

    ``end_user`` is the person if the caller already read them with the write lock (the
    API's key statement does), else None: the person is then read (or created) and locked
    here. Memory off for the tenant, the profile or the person stores nothing.
    """
    if memory_disabled_reason(tenant=tenant, end_user=end_user, profile=profile) is not None:
        return Capture(enabled=False)
    if end_user is None:
        end_user = end_user_get_or_create(tenant=tenant, user_id=user_id)
        if not end_user.memory_enabled:
            return Capture(enabled=False)
    result = Capture(enabled=True)
    client_ids = sorted({m.client_id for m in messages if m.client_id})
    # One statement: the retry check, and the conversation the messages may continue.
    already, latest = ({}, None) if new_conversation and not client_ids else capture_state(
        end_user_id=end_user.pk, session_id=session_id, client_ids=client_ids,
        latest=not new_conversation)
    kept = _apply_policy(tenant_capture_policy(tenant), messages, already, result)
    if not kept:
        result.conversation_id = next(iter(already.values()), None) if already else None
        return result
    now = timezone.now()
    # No message is said after its capture: a later time (a wrong clock) is the capture's,
    # else its conversation's last message would stay ahead of every retention cutoff.
    kept = [replace(m, created_at=now) if m.created_at is not None and m.created_at > now else m
            for m in kept]
    first_at = kept[0].created_at or now
    timeout = timedelta(minutes=tenant.conversation_timeout_minutes)
    if latest is not None and first_at - latest.last_message_at < timeout:
        conversation, started = latest, False
    else:
        conversation, started = Conversation(
            tenant_id=end_user.tenant_id, end_user_id=end_user.pk, session_id=session_id,
            profile=profile or "", process=process or "", started_at=first_at,
            last_message_at=first_at, message_count=0,
        ), True
    result.captured = _append(conversation, kept, now=now, started=started)
    result.conversation_id = conversation.id
    augmentation_schedule(tenant_id=tenant.id, conversation_id=conversation.id)
    record_embedding_schedule(tenant_id=tenant.id, kind="conversation", record_id=conversation.id)
    return result


def _apply_policy(
    policy: CapturePolicy, messages: Sequence[IncomingMessage], already: Mapping[str, UUID],
    result: Capture,
) -> list[IncomingMessage]:
    """The messages to store: retries, excluded roles and empty ones dropped (counted in
    ``result.dropped``), the rest redacted (messages changed counted in ``result.redacted``)."""
    kept: list[IncomingMessage] = []
    seen: set[str] = set(already)
    for message in messages:
        if message.client_id and message.client_id in seen:
            result.dropped["duplicate"] += 1
            continue
        reason = dropped_reason(policy, role=message.role, content=message.content)
        if reason is not None:
            result.dropped[reason] += 1
            continue
        if message.client_id:
            seen.add(message.client_id)
        content, replaced = redacted(policy, message.content)
        metadata, replaced_in_metadata = _metadata_redacted(policy, message.metadata)
        if replaced or replaced_in_metadata:
            result.redacted += 1
            message = IncomingMessage(message.role, content, message.client_id,
                                      message.created_at, metadata)
        kept.append(message)
    return kept


def _metadata_redacted(
    policy: CapturePolicy, metadata: dict[str, Any]
) -> tuple[dict[str, Any], int]:
    """The message's metadata redacted as its content is (its keys and strings), and how many
    replacements that made: history keeps no secret, wherever the app put it."""
    count = 0

    def rewrite(text: str) -> str:
        nonlocal count
        text, found = redacted(policy, text)
        count += found
        return text

    return metadata_rewritten(metadata, rewrite), count


def _append(
    conversation: Conversation, kept: Sequence[IncomingMessage], *, now: datetime, started: bool
) -> list[Message]:
    """Store ``kept`` as the conversation's next messages, and the conversation's counters
    (the whole conversation if it ``started`` here)."""
    rows = [
        Message(
            tenant_id=conversation.tenant_id, end_user_id=conversation.end_user_id,
            conversation=conversation, session_id=conversation.session_id,
            seq=conversation.message_count + offset, role=message.role, content=message.content,
            client_id=message.client_id, metadata=message.metadata,
            created_at=message.created_at or now, captured_at=now,
        )
        for offset, message in enumerate(kept, start=1)
    ]
    conversation.message_count += len(rows)
    conversation.last_message_at = max([conversation.last_message_at, *(r.created_at for r in rows)])
    messages_store(conversation, rows, started=started)
    return rows


# --- summaries and deletion ------------------------------------------------------------------


def conversation_summary_put(
    *, tenant: Tenant, end_user: EndUser | None, conversation_id: str, summary: object,
    actor: str = Actor.APP, seen: Any = UNSET,
) -> Conversation:
    """Replace the conversation's rolling summary (redacted like a captured message; empty
    clears it). ``actor``: the app (the API) or the person (their page); either's summary
    wins over augmentation's from then on. ``seen``: the ``summary_updated_at`` the person's
    page showed; a summary changed since is ``VersionMismatch``, and nothing is written."""
    text = _text_checked(summary, "summary")
    if len(text.encode("utf-8")) > MAX_SUMMARY_BYTES:
        raise CaptureRefusal("summary_too_large",
                             f"summary is at most {MAX_SUMMARY_BYTES} bytes.", http_status=422)
    conversation = _locked_conversation(end_user, conversation_id)
    if seen is not UNSET and conversation.summary_updated_at != seen:
        raise VersionMismatch("The summary changed since it was shown.")
    reason = memory_disabled_reason(tenant=tenant, end_user=end_user, profile=conversation.profile or None)
    if reason is not None:
        raise MemoryDisabled(f"Memory is disabled {reason}; the summary was not stored.")
    conversation.summary, _ = redacted(tenant_capture_policy(tenant), text)
    conversation.summary_updated_at = timezone.now()
    conversation.summary_by = actor  # from now on augmentation keeps its summary out
    conversation.save(update_fields=["summary", "summary_updated_at", "summary_by"])
    return conversation


def conversation_delete(*, tenant: Tenant, user_id: str, conversation_id: str, actor: str) -> None:
    """Delete one conversation and its messages, with a ``memory.changed`` ``deleted`` event."""
    end_user = end_user_find(user_id=user_id, for_update=True)
    conversation = _locked_conversation(end_user, conversation_id)
    conversations_remove(tenant=tenant, user_id=user_id, ids=[conversation.id], actor=actor)


def _locked_conversation(end_user: EndUser | None, conversation_id: str) -> Conversation:
    conversation = conversation_find(end_user=end_user, conversation_id=conversation_id,
                                     for_update=True)
    if conversation is None:
        raise ConversationNotFound("No conversation with this id.")
    return conversation


def conversations_remove(*, tenant: Tenant, user_id: str, ids: Iterable[UUID], actor: str) -> int:
    """Delete these conversations (messages first, in one statement), one event each, and
    what augmentation took only from them (``facts_sources_drop``)."""
    ids = list(ids)
    if not ids:
        return 0
    facts_sources_drop(user_id=user_id, actor=actor, message_ids=list(
        Message.objects.filter(conversation_id__in=ids).values_list("id", flat=True)))
    Message.objects.filter(conversation_id__in=ids).delete()
    Conversation.objects.filter(id__in=ids).delete()
    for conversation_id in ids:
        conversation_deleted_event(tenant_id=tenant.id, user_id=user_id, actor=actor,
                                   conversation_id=str(conversation_id))
    return len(ids)


RETENTION_BATCH = 500  # conversations per transaction


def conversations_expired_purge(*, tenant: Tenant, now: datetime) -> int:
    """Delete up to RETENTION_BATCH of the tenant's conversations whose last message is older
    than ``conversation_days``; returns how many (the caller loops until 0)."""
    if tenant.conversation_days is None:
        return 0
    cutoff = now - timedelta(days=tenant.conversation_days)
    chosen = list(
        Conversation.objects.filter(last_message_at__lt=cutoff).order_by("last_message_at")
        .values_list("id", "end_user__user_id")[:RETENTION_BATCH]
    )
    # The batch's people first, in user_id order, as every writer of a person takes them
    # before their rows and the tenant's feed lock: this transaction records an event per
    # conversation, and deletes facts learnt from them, person after person (taking a person
    # or their facts after its first event waited for writers that waited for it: a
    # deadlock). Then the conversations, checked again: a capture since kept one.
    people = end_users_lock(user_ids=[user_id for _, user_id in chosen])
    doomed = list(
        Conversation.objects.select_for_update(of=("self",))
        .filter(id__in=[pk for pk, _ in chosen], end_user__in=list(people.values()),
                last_message_at__lt=cutoff)
        .order_by("last_message_at").values_list("id", "end_user__user_id")
    )
    by_person: dict[str, list[UUID]] = {}
    for conversation_id, user_id in doomed:
        by_person.setdefault(user_id, []).append(conversation_id)
    for user_id, ids in by_person.items():
        conversations_remove(tenant=tenant, user_id=user_id, ids=ids, actor=Actor.APP)
    return len(doomed)
