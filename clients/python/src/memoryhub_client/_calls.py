"""One function per endpoint of API v1, building the request and saying how to read the reply.

These are the only description of the API in the package: ``MemoryHub`` and
``AsyncMemoryHub`` expose each of them as a method (``_hub.endpoint``), and differ only in
how they send a ``Call``. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memoryhub_client.errors import MemoryHubError, unreadable
from memoryhub_client.types import (
    ApiKey,
    ApiKeyList,
    Capture,
    Conversation,
    ConversationPage,
    Document,
    DocumentPage,
    EndUser,
    EndUserPage,
    EventPage,
    Export,
    Fact,
    FactHistory,
    FactPage,
    FactSource,
    FactType,
    History,
    MemoryIndex,
    MessageIn,
    MessagePage,
    PortalLink,
    Profile,
    ProfilePage,
    Recall,
    Scope,
    Snapshot,
    Tenant,
    TenantChanges,
    ToolResult,
    TurnContext,
    Webhook,
    WebhookChanges,
    WebhookList,
)

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request (``path`` below ``/api/v1/``) and the reading of its successful reply."""

    method: str
    path: str
    read: Callable[[httpx.Response], T]
    params: Mapping[str, str] | None = None
    body: Any = None
    headers: Mapping[str, str] | None = None

    def result(self, response: httpx.Response) -> T:
        if not response.is_success:  # a 3xx too: the API answers none, a proxy may
            raise MemoryHubError.from_response(response)
        return self.read(response)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as error:  # UnicodeDecodeError too
        raise unreadable(response) from error


def _nothing(response: httpx.Response) -> None:
    return None


def _seg(value: str | int) -> str:
    """One path segment, percent-encoded (a user_id may hold ``@ : + |``)."""
    return _undotted(_unslashed(quote(str(value), safe="")))


def _unslashed(segment: str) -> str:
    """A ``/`` (``%2F``) encoded once more. The server decodes ``%2F`` before routing, so a
    session_id ``s/1`` wrote the session ``s``'s ``/1/x.md`` and a user_id
    ``alice/sessions/s`` deleted alice's session ``s``; as ``%252F`` the server reads ``%2F``
    in the one segment, and refuses it as it refuses any id or path with a ``%``."""
    return segment.replace("%2F", "%252F")  # quote() wrote any "%" of the value as "%25"


def _undotted(segment: str) -> str:
    """A segment ``.`` or ``..`` with its dots percent-encoded: httpx, as URLs go, resolves
    those segments before sending, so ``session_delete("u", "..")`` sent ``DELETE
    /users/u`` (forget everything) and a document path ``/../../v/documents/global/x``
    reached another person. Encoded, the server reads the segment itself (a session id, or
    a path it refuses)."""
    return segment.replace(".", "%2E") if segment in (".", "..") else segment


def _query(**values: object) -> dict[str, str]:
    """Query parameters, leaving out those not given."""
    return {name: _text(value) for name, value in values.items() if value is not None}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _fields(**values: object) -> dict[str, object]:
    """A JSON body of the fields given (None: not sent, the server's default applies)."""
    return {name: value for name, value in values.items() if value is not None}


def _user(user_id: str, *rest: str | int) -> str:
    return "/".join(("users", _seg(user_id), *(_seg(part) for part in rest)))


def _get(path: str, **params: object) -> Call[Any]:
    return Call("GET", path, _json, params=_query(**params))


def _post(path: str, body: object) -> Call[Any]:
    return Call("POST", path, _json, body=body)


def _delete(path: str, headers: Mapping[str, str] | None = None) -> Call[None]:
    return Call("DELETE", path, _nothing, headers=headers)


# --- The memory tool, the index, the snapshot ----------------------------------------------------


def memory(
    user_id: str, input: Mapping[str, object], *, session_id: str | None = None,
    profile: str | None = None, scope: Scope | None = None, turn_id: str | None = None,
) -> Call[ToolResult]:
    """Run one memory tool command (``input`` as the model sent it: ``{"command": "view",
    "path": "/memories"}``). A failed command is a result with ``is_error``, not an error."""
    context = _fields(session_id=session_id, profile=profile, scope=scope, turn_id=turn_id)
    return _post(_user(user_id, "memory"), {**input, **context})


CONTEXT_FIELDS = frozenset({"session_id", "profile", "scope", "turn_id"})


def model_command(input: Mapping[str, object]) -> dict[str, object]:
    """A command from the model, without the context fields the API reads beside it: whose
    session, profile and scope the commands see is the app's to say (the adapter's binding),
    never a field a model (or a prompt injected into it) adds to its tool input."""
    return {name: value for name, value in input.items() if name not in CONTEXT_FIELDS}


def memory_index(
    user_id: str, *, session_id: str | None = None, profile: str | None = None
) -> Call[MemoryIndex]:
    """The prompt index: ``text`` is the ``<memory_index>`` block ('' when empty)."""
    return _get(_user(user_id, "memory", "index"), session_id=session_id, profile=profile)


def memory_snapshot(
    user_id: str, *, session_id: str | None = None, profile: str | None = None
) -> Call[Snapshot]:
    """Every visible document as ``<memory path=... scope=...>`` blocks, by path."""
    return _get(_user(user_id, "memory", "snapshot"), session_id=session_id, profile=profile)


# --- Documents -------------------------------------------------------------------------------


def documents(
    user_id: str, *, scope: Scope | None = None, session_id: str | None = None,
    profile: str | None = None, prefix: str | None = None, limit: int | None = None,
    cursor: str | None = None,
) -> Call[DocumentPage]:
    """A page of the person's documents (metadata only); pass ``next_cursor`` as ``cursor``."""
    return _get(_user(user_id, "documents"), scope=scope, session_id=session_id,
                profile=profile, prefix=prefix, limit=limit, cursor=cursor)


def _document(user_id: str, path: str, profile: str | None, session_id: str | None) -> str:
    """The document's URL: global, or in the profile or the session given (not both)."""
    if profile is not None and session_id is not None:
        raise ValueError("a document is in one scope: give profile or session_id, not both")
    where = (["profile", profile] if profile is not None
             else ["session", session_id] if session_id is not None else ["global"])
    return "/".join((_user(user_id, "documents"), *(_seg(w) for w in where),
                     *(_seg(part) for part in path.lstrip("/").split("/"))))


def _version(tag: int) -> str:
    return f'"{tag}"'


def document_get(
    user_id: str, path: str, *, profile: str | None = None, session_id: str | None = None
) -> Call[Document]:
    """One document (global unless ``profile`` or ``session_id`` is given); its ``version`` is
    the ETag to pass as ``if_match``."""
    return _get(_document(user_id, path, profile, session_id))


def document_put(
    user_id: str, path: str, content: str, *, description: str | None = None,
    confidence: float | None = None, profile: str | None = None,
    session_id: str | None = None, if_match: int | None = None, if_none_match: bool = False,
) -> Call[Document]:
    """Create or replace a document. ``if_match=<version>`` replaces only that version and
    ``if_none_match=True`` only creates: otherwise 412 ``precondition_failed``."""
    headers = {}
    if if_match is not None:
        headers["If-Match"] = _version(if_match)
    if if_none_match:
        headers["If-None-Match"] = "*"
    body = _fields(content=content, description=description, confidence=confidence)
    return Call("PUT", _document(user_id, path, profile, session_id), _json, body=body,
                headers=headers)


def document_delete(
    user_id: str, path: str, *, profile: str | None = None, session_id: str | None = None,
    if_match: int | None = None,
) -> Call[None]:
    """Delete a document (``if_match``: only at that version)."""
    headers = {"If-Match": _version(if_match)} if if_match is not None else None
    return _delete(_document(user_id, path, profile, session_id), headers)


# --- Recall ----------------------------------------------------------------------------------


def recall(
    user_id: str, query: str, *, limit: int | None = None, threshold: float | None = None,
    relaxed: bool | None = None, session_id: str | None = None, profile: str | None = None,
    sources: Iterable[str] | None = None, include_invalid: bool | None = None,
) -> Call[Recall]:
    """The memory most relevant to ``query``; ``context`` is the ``<memori_context>`` block
    ('' when nothing passes the threshold)."""
    return _post(_user(user_id, "recall"), _fields(
        query=query, limit=limit, threshold=threshold, relaxed=relaxed, session_id=session_id,
        profile=profile, sources=None if sources is None else list(sources),
        include_invalid=include_invalid))


# --- Facts -----------------------------------------------------------------------------------


def facts(
    user_id: str, *, type: FactType | None = None, process: str | None = None,
    include_invalid: bool | None = None, limit: int | None = None, cursor: str | None = None,
) -> Call[FactPage]:
    """The person's facts, newest first (valid ones unless ``include_invalid``)."""
    return _get(_user(user_id, "facts"), type=type, process=process,
                include_invalid=include_invalid, limit=limit, cursor=cursor)


def fact_create(
    user_id: str, content: str, *, type: FactType | None = None, subject: str | None = None,
    predicate: str | None = None, object: str | None = None, process: str | None = None,
    confidence: float | None = None, valid_at: str | None = None,
    invalid_at: str | None = None, source: FactSource | None = None,
) -> Call[Fact]:
    """Add a fact (``invalid_at``: one of the past, no longer true since then); a valid fact
    of the same normalised text is answered instead (200)."""
    return _post(_user(user_id, "facts"), _fields(
        content=content, type=type, subject=subject, predicate=predicate, object=object,
        process=process, confidence=confidence, valid_at=valid_at, invalid_at=invalid_at,
        source=None if source is None else dict(source)))


def fact(user_id: str, fact_id: str) -> Call[Fact]:
    """One fact, valid or not; its ``version`` is the ETag to pass as ``if_match``."""
    return _get(_user(user_id, "facts", fact_id))


_UNSET: Any = object()  # invalid_at not given (None is a change: true again)


def fact_update(
    user_id: str, fact_id: str, *, content: str | None = None, confidence: float | None = None,
    invalid_at: str | None = _UNSET, if_match: int | None = None,
) -> Call[Fact]:
    """Change a fact: ``invalid_at`` a time marks it no longer true, None true again;
    ``if_match=<version>`` changes only that version (else 412)."""
    body = _fields(content=content, confidence=confidence)
    if invalid_at is not _UNSET:
        body["invalid_at"] = invalid_at
    headers = {"If-Match": _version(if_match)} if if_match is not None else None
    return Call("PATCH", _user(user_id, "facts", fact_id), _json, body=body, headers=headers)


def fact_delete(user_id: str, fact_id: str, *, if_match: int | None = None) -> Call[None]:
    """Delete a fact (``if_match``: only at that version); its history stays."""
    headers = {"If-Match": _version(if_match)} if if_match is not None else None
    return _delete(_user(user_id, "facts", fact_id), headers)


def fact_history(user_id: str, fact_id: str) -> Call[FactHistory]:
    """A fact's versions, oldest first: created, updated, merged, invalidated, deleted."""
    return _get(_user(user_id, "facts", fact_id, "history"))


# --- End users -------------------------------------------------------------------------------


def users(*, limit: int | None = None, cursor: str | None = None) -> Call[EndUserPage]:
    """A page of end users, by user_id."""
    return _get("users", limit=limit, cursor=cursor)


def user(user_id: str) -> Call[EndUser]:
    """One end user with counts (an unknown one shows zeros, not 404)."""
    return _get(_user(user_id))


def user_update(user_id: str, *, memory_enabled: bool) -> Call[EndUser]:
    """The person's own switch."""
    return Call("PATCH", _user(user_id), _json, body={"memory_enabled": memory_enabled})


def user_delete(user_id: str) -> Call[None]:
    """Forget everything about the person."""
    return _delete(_user(user_id))


def session_delete(user_id: str, session_id: str) -> Call[None]:
    """Delete one session's memory."""
    return _delete(_user(user_id, "sessions", session_id))


def export(user_id: str) -> Call[Export]:
    """Everything stored for the person."""
    return _get(_user(user_id, "export"))


def portal_link(user_id: str) -> Call[PortalLink]:
    """A one-time sign-in link to the person's memory page."""
    return _post(_user(user_id, "portal-link"), None)


# --- Tenant administration (a key with ``admin``) --------------------------------------------


def tenant() -> Call[Tenant]:
    """The tenant's settings."""
    return _get("tenant")


def tenant_update(changes: TenantChanges) -> Call[Tenant]:
    """Change the tenant's settings (only the fields given)."""
    return Call("PATCH", "tenant", _json, body=dict(changes))


def profiles(*, limit: int | None = None, cursor: str | None = None) -> Call[ProfilePage]:
    """A page of profiles, by name."""
    return _get("profiles", limit=limit, cursor=cursor)


def profile_set(profile: str, *, disabled: bool) -> Call[Profile]:
    """Switch a profile off (a disabled profile's sessions get no memory) or on."""
    return Call("PUT", f"profiles/{_seg(profile)}", _json, body={"disabled": disabled})


def events(*, after: int | None = None, limit: int | None = None) -> Call[EventPage]:
    """The tenant's events after the cursor ``after``, oldest first."""
    return _get("events", after=after, limit=limit)


def webhooks() -> Call[WebhookList]:
    """The webhook endpoints."""
    return _get("webhooks")


def webhook_create(
    url: str, *, event_types: Iterable[str] | None = None, secret: str | None = None,
    enabled: bool | None = None,
) -> Call[Webhook]:
    """Add a webhook endpoint; the answer shows its ``secret`` (this once)."""
    return _post("webhooks", _fields(
        url=url, event_types=None if event_types is None else list(event_types), secret=secret,
        enabled=enabled))


def webhook(webhook_id: int) -> Call[Webhook]:
    """One webhook endpoint."""
    return _get(f"webhooks/{_seg(webhook_id)}")


def webhook_update(webhook_id: int, changes: WebhookChanges) -> Call[Webhook]:
    """Change a webhook endpoint (a new ``secret`` is echoed once)."""
    return Call("PATCH", f"webhooks/{_seg(webhook_id)}", _json, body=dict(changes))


def webhook_delete(webhook_id: int) -> Call[None]:
    """Delete a webhook endpoint."""
    return _delete(f"webhooks/{_seg(webhook_id)}")


def keys() -> Call[ApiKeyList]:
    """The tenant's API keys, masked."""
    return _get("keys")


def key_create(
    name: str, *, permissions: Iterable[str] | None = None, user_id: str | None = None
) -> Call[ApiKey]:
    """A new key (``user_id``: bound to that end user, ``memory`` only); the answer's
    ``api_key`` is the key itself, shown this once."""
    return _post("keys", _fields(
        name=name, permissions=None if permissions is None else list(permissions),
        user_id=user_id))


def key_revoke(key_id: int) -> Call[None]:
    """Revoke a key: it is refused from the next request on."""
    return _delete(f"keys/{_seg(key_id)}")


# --- Conversations ---------------------------------------------------------------------------


def capture(
    user_id: str, session_id: str, messages: Iterable[MessageIn], *,
    profile: str | None = None, process: str | None = None,
    new_conversation: bool | None = None,
) -> Call[Capture]:
    """Capture messages, in order, into the session's conversation (at most 100 a call)."""
    return _post(_user(user_id, "sessions", session_id, "messages"), _fields(
        messages=list(messages), profile=profile, process=process,
        new_conversation=new_conversation))


def messages(
    user_id: str, session_id: str, *, conversation_id: str | None = None,
    after: str | None = None, limit: int | None = None,
) -> Call[MessagePage]:
    """The session's messages in capture order; pass ``next_cursor`` as ``after``."""
    return _get(_user(user_id, "sessions", session_id, "messages"),
                conversation_id=conversation_id, after=after, limit=limit)


def conversations(
    user_id: str, *, session_id: str | None = None, limit: int | None = None,
    before: str | None = None,
) -> Call[ConversationPage]:
    """The person's conversations, newest first; pass ``next_cursor`` as ``before``."""
    return _get(_user(user_id, "conversations"), session_id=session_id, limit=limit,
                before=before)


def conversation(user_id: str, conversation_id: str) -> Call[Conversation]:
    """One conversation."""
    return _get(_user(user_id, "conversations", conversation_id))


def conversation_delete(user_id: str, conversation_id: str) -> Call[None]:
    """Delete a conversation, its messages and what augmentation took only from it."""
    return _delete(_user(user_id, "conversations", conversation_id))


def summary_put(user_id: str, conversation_id: str, summary: str) -> Call[Conversation]:
    """Store the conversation's rolling summary (it replaces the previous one)."""
    return Call("PUT", _user(user_id, "conversations", conversation_id, "summary"), _json,
                body={"summary": summary})


def history(
    user_id: str, *, limit: int | None = None, exclude_session: str | None = None,
    profile: str | None = None,
) -> Call[History]:
    """The last conversations as a ``<conversation_history>`` text, for a new session."""
    return _get(_user(user_id, "history"), limit=limit, exclude_session=exclude_session,
                profile=profile)


def context(
    user_id: str, *, session_id: str | None = None, profile: str | None = None,
    query: str | None = None, limit: int | None = None, threshold: float | None = None,
    history: int | None = None,
) -> Call[TurnContext]:
    """The whole turn context in one round trip: the index, recall for ``query`` and the
    last ``history`` conversations."""
    return _post(_user(user_id, "context"), _fields(
        session_id=session_id, profile=profile, query=query, limit=limit,
        threshold=threshold, history=history))
