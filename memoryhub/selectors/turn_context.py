"""The whole context of an agent's turn in one read (spec: Facts, ``POST .../context``):
the prompt index, recall for the turn's query, and the history of earlier conversations.

Read in the caller's one transaction, so the three parts agree with each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryhub.models import EndUser
from memoryhub.selectors.conversations import History, history_build
from memoryhub.selectors.documents import index_build, memory_enabled
from memoryhub.selectors.recall import Recall, memory_recall
from tenants.models import Tenant


@dataclass(frozen=True)
class TurnContext:
    enabled: bool
    index: dict[str, Any]
    recall: Recall | None  # None without a query
    history: History | None  # None when no history was asked for


def turn_context_build(
    *, tenant: Tenant, end_user: EndUser | None, session_id: str | None, profile: str | None,
    query: str | None, limit: int, threshold: float | None, history: int,
) -> TurnContext:
    """``history`` conversations other than this session's (it is the one starting)."""
    recall = None
    if query is not None and query.strip():
        recall = memory_recall(tenant=tenant, end_user=end_user, query=query, limit=limit,
                               threshold=threshold, relaxed=False, session_id=session_id,
                               profile=profile)
    earlier = None
    if history:
        earlier = history_build(tenant=tenant, end_user=end_user, limit=history,
                                exclude_session=session_id, profile=profile)
    return TurnContext(
        enabled=memory_enabled(tenant=tenant, end_user=end_user, profile=profile),
        index=index_build(tenant=tenant, end_user=end_user, session_id=session_id,
                          profile=profile),
        recall=recall, history=earlier,
    )
