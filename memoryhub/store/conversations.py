"""Conversation history: the messages a history text shows, read within its budget."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from django.db import connection

from memoryhub.models import Message, MessageRole
from memoryhub.store._tenancy import tenant_id, tenant_is

# A history block shows a conversation's user and assistant messages as "<role>: <content>"
# lines. A block that does not fit the budget is left out whole, so no conversation needs
# more of its lines than the budget holds, plus the one line that overflows it (which says
# the block does not fit). The running sum reads each line's length without sending it.
_HISTORY_LINES = f"""
SELECT conversation_id, role, content, running FROM (
  SELECT m.conversation_id, m.seq, m.role, m.content,
         sum(char_length(m.role) + char_length(m.content) + 3)
           OVER (PARTITION BY m.conversation_id ORDER BY m.seq) AS running,
         char_length(m.role) + char_length(m.content) + 3 AS own
  FROM {Message._meta.db_table} m
  WHERE {tenant_is("m")} AND m.conversation_id = ANY(%s) AND m.role = ANY(%s)
) lines
WHERE running - own <= %s
ORDER BY conversation_id, seq
"""
HISTORY_ROLES = [MessageRole.USER.value, MessageRole.ASSISTANT.value]
LINE_OVERHEAD = 3  # ": " and the newline


def history_lines(
    conversation_ids: Sequence[UUID], *, budget_chars: int
) -> dict[UUID, tuple[list[tuple[str, str]], int]]:
    """For each conversation: its first (role, content) lines in order, up to the one that
    crosses ``budget_chars``, and the running length in characters of those lines."""
    tenant = tenant_id()
    found: dict[UUID, tuple[list[tuple[str, str]], int]] = {}
    if not conversation_ids:
        return found
    with connection.cursor() as cursor:
        cursor.execute(_HISTORY_LINES, [tenant, list(conversation_ids), HISTORY_ROLES, budget_chars])
        for conversation_id, role, content, running in cursor.fetchall():
            lines, _ = found.get(conversation_id, ([], 0))
            lines.append((role, content))
            found[conversation_id] = (lines, int(running))
    return found
