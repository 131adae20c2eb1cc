"""mem0's response shapes: a memory is one of the person's facts.

``categories`` is the fact's type (``fact``, ``preference``, ``profile``...); ``metadata``
the app's own (null when it gave none). A fact's history reads as mem0's events: ``ADD``
(created), ``UPDATE`` (edited or merged with a duplicate), ``DELETE`` (no longer true, or
deleted): an invalid fact leaves search and ``get_all`` as a deleted mem0 memory does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryhub.models import EndUser, Fact, FactEvent, FactVersion
from tenants.models import Tenant

_EVENTS = {
    FactEvent.CREATED: "ADD",
    FactEvent.UPDATED: "UPDATE",
    FactEvent.MERGED: "UPDATE",
    FactEvent.INVALIDATED: "DELETE",
    FactEvent.DELETED: "DELETE",
}


def ping_representation(tenant: Tenant) -> dict[str, Any]:
    """``GET v1/ping/``: the tenant is mem0's organisation and project at once."""
    return {"status": "ok", "org_id": tenant.slug, "project_id": tenant.slug, "user_email": None}


def memory_representation(fact: Fact, score: float | None = None) -> dict[str, Any]:
    """One memory (``fact.end_user`` loaded); ``score`` in search results only."""
    body: dict[str, Any] = {"id": str(fact.id), "memory": fact.content}
    if score is not None:
        body["score"] = score
    body.update({
        "user_id": fact.end_user.user_id, "metadata": fact.metadata or None,
        "categories": [fact.type], "created_at": fact.created_at, "updated_at": fact.updated_at,
    })
    return body


def search_representation(found: Sequence[tuple[Fact, float]]) -> dict[str, Any]:
    return {"results": [memory_representation(fact, score) for fact, score in found]}


def added_representation(facts: Sequence[tuple[Fact, bool]]) -> dict[str, Any]:
    """``add`` with ``infer: false``: each message stored at once. A message equal to a valid
    fact adds nothing (the facts API's duplicate rule) and names that fact with ``NONE``."""
    return {"status": "SUCCEEDED", "results": [
        {"id": str(fact.id), "data": {"memory": fact.content}, "event": "ADD" if new else "NONE"}
        for fact, new in facts
    ]}


PENDING_MESSAGE = ("Memory processing has been queued for background execution: the messages "
                   "were captured, and augmentation learns facts from them.")
NOTHING_MESSAGE = "Nothing was captured: no message was left to learn from, or memory is off."


def pending_representation(conversation_id: object) -> dict[str, Any]:
    """``add`` with ``infer: true``: the event is the conversation the messages went to."""
    if conversation_id is None:
        return {"status": "SUCCEEDED", "results": [], "message": NOTHING_MESSAGE}
    return {"status": "PENDING", "event_id": str(conversation_id), "message": PENDING_MESSAGE}


def history_representation(fact: Fact, rows: Sequence[FactVersion]) -> list[dict[str, Any]]:
    """The fact's changes, oldest first, with the content before and after each."""
    items, before = [], None
    for row in rows:
        event = _EVENTS.get(FactEvent(row.event), "UPDATE")
        gone = event == "DELETE"
        items.append({
            "memory_id": str(fact.id), "event": event,
            "old_memory": row.content if gone else before,
            "new_memory": None if gone else row.content,
            "user_id": fact.end_user.user_id, "created_at": row.at, "updated_at": row.at,
        })
        before = row.content
    return items


def entity_representation(end_user: EndUser) -> dict[str, Any]:
    """A person (``n_facts`` annotated: memoryhub.selectors.people)."""
    return {"id": end_user.user_id, "name": end_user.user_id, "type": "user",
            "total_memories": getattr(end_user, "n_facts", 0), "created_at": end_user.created_at}


def message_representation(text: str) -> dict[str, str]:
    return {"message": text}
