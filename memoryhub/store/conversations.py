"""Conversation history: capture's read and write, and the messages a history text shows,
read within its budget."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any
from uuid import UUID

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Field, Model

from memoryhub.models import Conversation, Message, MessageRole
from memoryhub.store._rows import compact_sql, model_columns, model_from_row
from memoryhub.store._tenancy import tenant_id, tenant_is

_CONVERSATIONS = Conversation._meta.db_table
_MESSAGES = Message._meta.db_table

# --- history: the last conversations and their lines, in one statement ----------------------

# A history block shows a conversation's summary, or else its user and assistant messages as
# "<role>: <content>" lines. A block that does not fit the budget is left out whole, so no
# conversation needs more of its lines than the budget holds, plus the one line that
# overflows it (which says the block does not fit): the lines are joined here, and those
# after that one are neither read past the first ``budget / shortest line`` of them nor sent.
HISTORY_ROLES = [MessageRole.USER.value, MessageRole.ASSISTANT.value]
LINE_OVERHEAD = 3  # ": " and the newline
_SHORTEST_LINE = min(map(len, HISTORY_ROLES)) + LINE_OVERHEAD
# A conversation with neither (only tool or developer messages) would be an empty block: it
# is not one of the last conversations the history shows.
_HISTORY = f"""
SELECT {model_columns(Conversation, "c")}, b.body
FROM (SELECT * FROM {_CONVERSATIONS} c
      WHERE {tenant_is("c")} AND c.end_user_id = %s{{filters}}
        AND (c.summary <> '' OR EXISTS (
          SELECT FROM {_MESSAGES} m WHERE {tenant_is("m")} AND m.conversation_id = c.id
            AND m.role = ANY(%s)))
      ORDER BY c.last_message_at DESC, c.id DESC LIMIT %s) c
LEFT JOIN LATERAL (
  SELECT string_agg(line, '' ORDER BY seq) AS body FROM (
    SELECT seq, line, sum(char_length(line)) OVER (ORDER BY seq) - char_length(line) AS before
    FROM (SELECT m.seq, m.role || ': ' || m.content || E'\\n' AS line FROM {_MESSAGES} m
          WHERE {tenant_is("m")} AND m.conversation_id = c.id AND m.role = ANY(%s)
            AND c.summary = ''
          ORDER BY m.seq LIMIT %s) first_lines
  ) counted WHERE before <= %s
) b ON true
ORDER BY c.last_message_at DESC, c.id DESC
"""


@cache
def _history_sql(exclude_session: bool, profile: bool) -> str:
    filters = (" AND c.session_id <> %s" if exclude_session else "") + (
        " AND c.profile = %s" if profile else "")
    return compact_sql(_HISTORY.format(filters=filters))


def history_recent(
    *, end_user_id: int, limit: int, exclude_session: str | None, profile: str | None,
    budget_chars: int,
) -> list[tuple[Conversation, str]]:
    """The person's last ``limit`` conversations with something to show (a summary, or a user
    or assistant message), newest first (by last message; those of ``exclude_session`` left
    out, only those of ``profile`` if given), each with, when it has no summary, its user and
    assistant messages as "<role>: <content>\\n" lines in order, up to the one that crosses
    ``budget_chars`` ("" for a summary)."""
    tenant = tenant_id()
    filters = [value for value in (exclude_session, profile) if value is not None]
    sql = _history_sql(exclude_session is not None, profile is not None)
    with connection.cursor() as cursor:
        cursor.execute(sql, [tenant, end_user_id, *filters, tenant, HISTORY_ROLES, limit,
                             tenant, HISTORY_ROLES,
                             budget_chars // _SHORTEST_LINE + 1, budget_chars])
        rows = cursor.fetchall()
    return [(model_from_row(Conversation, row[:-1]), row[-1] or "") for row in rows]


# --- capture: one statement reads what it needs, one writes ---------------------------------

# The caller's ids already captured in the session, with their conversations (the retry
# check, on the message_unique_client_id index).
_CAPTURED = (
    f"SELECT array_agg(m.client_id) AS client_ids, array_agg(m.conversation_id) AS conversation_ids "
    f"FROM {_MESSAGES} m WHERE {tenant_is('m')} AND m.end_user_id = %s AND m.session_id = %s "
    "AND m.client_id = ANY(%s) AND m.client_id <> ''"
)
# And the session's latest conversation, locked (capture may append to it), on
# conversation_session. A locking clause may not touch the nullable side of an outer join,
# so the lock is taken in the LATERAL subquery.
_CAPTURED_AND_LATEST = (
    f"SELECT captured.client_ids, captured.conversation_ids, {model_columns(Conversation, 'c')} "
    f"FROM ({_CAPTURED}) captured LEFT JOIN LATERAL (SELECT * FROM {_CONVERSATIONS} c "
    f"WHERE {tenant_is('c')} AND c.end_user_id = %s AND c.session_id = %s "
    "ORDER BY c.id DESC LIMIT 1 FOR NO KEY UPDATE) c ON true"
)


def capture_state(
    *, end_user_id: int, session_id: str, client_ids: Sequence[str], latest: bool
) -> tuple[dict[str, UUID], Conversation | None]:
    """The ``client_ids`` already captured in the person's session -> their conversation;
    and with ``latest``, the session's latest conversation (None if it has none), holding
    its row lock until the transaction ends. One statement."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        if latest:
            cursor.execute(_CAPTURED_AND_LATEST, [tenant, end_user_id, session_id,
                                                  list(client_ids), tenant, end_user_id,
                                                  session_id])
        else:
            cursor.execute(_CAPTURED, [tenant, end_user_id, session_id, list(client_ids)])
        row = cursor.fetchone()
    captured = dict(zip(row[0] or (), row[1] or (), strict=True))
    conversation = row[2:]
    if not latest or conversation[0] is None:
        return captured, None
    return captured, model_from_row(Conversation, conversation)


@cache
def _capture_sql() -> tuple[str, str]:
    """(append, start): the messages' INSERT with, in the same statement, the conversation's
    UPDATE (its counters) or INSERT (a conversation starting). Every concrete column of both
    models, so a field added later is written too."""
    fields = _written_fields(Message)
    # As the ORM's bulk insert: varchar[] rather than varchar(128)[], which would truncate.
    arrays = ", ".join(f"(%s)::{str(f.db_type(connection)).split('(')[0]}[]" for f in fields)
    insert = (f"INSERT INTO {_MESSAGES} ({', '.join(f.column for f in fields)}) "
              f"SELECT * FROM unnest({arrays})")
    append = (f"WITH conversation AS (UPDATE {_CONVERSATIONS} SET message_count = %s, "
              f"last_message_at = %s WHERE {tenant_is()} AND id = %s) {insert}")
    columns = _written_fields(Conversation)
    start = (f"WITH conversation AS (INSERT INTO {_CONVERSATIONS} "
             f"({', '.join(f.column for f in columns)}) "
             f"VALUES ({', '.join(['%s'] * len(columns))})) {insert}")
    return append, start


# Fields whose Python values psycopg adapts as they are; the others (JSON) are prepared by
# the field, as the ORM does. (The preparation of every value cost more than the insert.)
_AS_THEY_ARE = frozenset({
    "BigIntegerField", "BooleanField", "CharField", "DateTimeField", "ForeignKey",
    "IntegerField", "PositiveIntegerField", "SmallIntegerField", "TextField", "UUIDField",
})


def _written_fields(model: type[Model]) -> list[Field]:
    """The columns an insert writes: every concrete field but those PostgreSQL generates."""
    return [f for f in model._meta.concrete_fields if not getattr(f, "generated", False)]


@cache
def _preparations(model: type[Model]) -> list[tuple[str, Field | None]]:
    return [(f.attname, None if f.get_internal_type() in _AS_THEY_ARE else f)
            for f in _written_fields(model)]


def _db_values(instance: Model) -> list[Any]:
    """The instance's column values, as the ORM would send them."""
    database = connections[DEFAULT_DB_ALIAS]
    return [getattr(instance, attname) if field is None
            else field.get_db_prep_save(getattr(instance, attname), database)
            for attname, field in _preparations(type(instance))]


def messages_store(
    conversation: Conversation, messages: Sequence[Message], *, started: bool
) -> None:
    """Insert ``messages`` (the conversation's next ones, ``seq`` set) and write the
    conversation's ``message_count`` and ``last_message_at``, or, if ``started``, insert
    the conversation itself: one statement."""
    tenant = tenant_id()
    append, start = _capture_sql()
    columns = [list(column) for column in zip(*map(_db_values, messages), strict=True)]
    with connection.cursor() as cursor:
        if started:
            cursor.execute(start, [*_db_values(conversation), *columns])
        else:
            cursor.execute(append, [conversation.message_count, conversation.last_message_at,
                                    tenant, conversation.id, *columns])
    for instance in (conversation, *messages):
        instance._state.adding, instance._state.db = False, connection.alias
