"""Facts, conversations and messages for ``make bench-recall`` (``--facts``, ``--messages``):
their generated rows, their bulk load and their brute-force scores.

Rows are loaded the way ``bench_recall`` loads documents: generated in Python, embedded with
the hashing provider on every core, binary COPY into staging tables as the owner role, then
``INSERT ... SELECT`` tenant by tenant with ``app.tenant_id`` set (RLS stays forced), the
full-text vectors computed by PostgreSQL (generated columns). A person's messages come in
conversations of ``MESSAGES_PER_CONVERSATION`` (user and assistant taking turns, a minute
apart, in one of the sessions); ``INVALID_SHARE`` of the facts are no longer true (recall
leaves them out); one conversation in ``BACKLOG_EVERY`` has messages after augmentation's
cursor (the dashboard's "conversations waiting").
"""

from __future__ import annotations

import json
import math
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np

MESSAGES_PER_CONVERSATION = 12
INVALID_SHARE = 0.1
BACKLOG_EVERY = 50
FACT_TYPES = ("fact", "preference", "profile", "triple", "process_attribute")
FACT_VERBS = ("likes", "prefers", "avoids", "works with", "lives near", "is learning",
              "owns", "plays", "booked", "dislikes")
USER_VERBS = ("I like", "I'd prefer", "I avoid", "remind me about", "I booked", "I bought",
              "I'm learning", "tell me about", "I enjoy", "I can't stand")
ASSISTANT_OPENERS = ("Noted:", "Got it:", "Sure, about", "Here is what I found on", "Okay:")


def uuid7_at(moment: datetime, rng: random.Random) -> uuid.UUID:
    """A UUID v7 of ``moment`` (its 48-bit millisecond time) with random bits, so ids sort
    by time as the service's own do."""
    millis = int(moment.timestamp() * 1000)
    value = (millis << 80) | (0x7 << 76) | (rng.getrandbits(12) << 64) | (0b10 << 62)
    return uuid.UUID(int=value | rng.getrandbits(62))


def _words(rng: random.Random, vocab: Sequence[str], low: int, high: int) -> list[str]:
    return rng.sample(vocab, rng.randint(low, high))


def fact_text(rng: random.Random, vocab: Sequence[str]) -> str:
    a, b, c = _words(rng, vocab, 3, 3)
    return f"User {rng.choice(FACT_VERBS)} {a} and {b}, {rng.choice(FACT_VERBS)} {c}"


def message_text(rng: random.Random, vocab: Sequence[str], role: str) -> str:
    picked = _words(rng, vocab, 3, 8)
    if role == "user":
        clauses = [f"{rng.choice(USER_VERBS)} {a} and {b}"
                   for a, b in zip(picked[::2], picked[1::2], strict=False)]
        return f"{'; '.join(clauses).capitalize()}."
    return f"{rng.choice(ASSISTANT_OPENERS)} {', '.join(picked)}."


@dataclass
class Records:
    """One load chunk's rows; each row's ``text_index`` points into ``texts`` (its vector)."""

    conversations: list[tuple] = field(default_factory=list)
    facts: list[list] = field(default_factory=list)
    messages: list[list] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)


def person_records(
    out: Records, rng: random.Random, vocab: Sequence[str], *, tenant_id: int,
    end_user_id: int, facts: int, messages: int, sessions: Sequence[str], now: datetime,
) -> None:
    """Append one person's facts and conversations of messages to ``out``."""
    for _ in range(facts):
        text = fact_text(rng, vocab)
        updated = now - timedelta(days=rng.uniform(0, 720))
        invalid = updated + timedelta(days=1) if rng.random() < INVALID_SHARE else None
        out.facts.append([
            uuid7_at(updated, rng), tenant_id, end_user_id, rng.choice(FACT_TYPES), text,
            text.lower(), round(rng.uniform(0.5, 1.0), 2), updated, invalid,
            len(out.texts), updated,
        ])
        out.texts.append(text)
    left = messages
    while left > 0:
        count = min(left, MESSAGES_PER_CONVERSATION)
        left -= count
        started = now - timedelta(days=rng.uniform(0, 720))
        session = rng.choice(sessions)
        conversation = uuid7_at(started, rng)
        for seq in range(1, count + 1):
            role = "user" if seq % 2 else "assistant"
            text = message_text(rng, vocab, role)
            at = started + timedelta(minutes=seq)
            out.messages.append([uuid7_at(at, rng), tenant_id, end_user_id, conversation,
                                 session, seq, role, text, len(out.texts), at])
            out.texts.append(text)
        waiting = 2 if rng.randrange(BACKLOG_EVERY) == 0 else 0
        out.conversations.append((conversation, tenant_id, end_user_id, session, started,
                                  started + timedelta(minutes=count), count,
                                  max(count - waiting, 0)))


STAGING = (
    "CREATE TEMP TABLE st_conversation (id uuid, tenant_id bigint, end_user_id bigint, "
    "session_id text, started_at timestamptz, last_message_at timestamptz, message_count int, "
    "augmented_seq int)",
    "CREATE TEMP TABLE st_fact (id uuid, tenant_id bigint, end_user_id bigint, type text, "
    "content text, normalized text, confidence float8, valid_at timestamptz, "
    "invalid_at timestamptz, embedding halfvec(384), updated_at timestamptz)",
    "CREATE TEMP TABLE st_message (id uuid, tenant_id bigint, end_user_id bigint, "
    "conversation_id uuid, session_id text, seq int, role text, content text, "
    "embedding halfvec(384), created_at timestamptz)",
)
_NO_SOURCE = json.dumps({"conversation_id": None, "message_ids": []})
_INSERTS = (
    """INSERT INTO memoryhub_conversation (id, tenant_id, end_user_id, session_id, profile,
           process, started_at, last_message_at, message_count, summary, summary_by,
           augmented_seq)
       SELECT id, tenant_id, end_user_id, session_id, '', '', started_at, last_message_at,
              message_count, '', '', augmented_seq
       FROM st_conversation WHERE tenant_id = %(tenant)s""",
    """INSERT INTO memoryhub_fact (id, tenant_id, end_user_id, type, content, normalized,
           subject, predicate, object, process, confidence, valid_at, invalid_at, source,
           metadata, version, updated_by, created_at, updated_at, embedding,
           embedding_provider)
       SELECT id, tenant_id, end_user_id, type, content, normalized, '', '', '', '',
              confidence, valid_at, invalid_at, %(source)s::jsonb, '{}'::jsonb, 1,
              'augmentation', updated_at, updated_at, embedding, %(provider)s
       FROM st_fact WHERE tenant_id = %(tenant)s""",
    """INSERT INTO memoryhub_message (id, tenant_id, end_user_id, conversation_id, session_id,
           seq, role, content, client_id, metadata, created_at, captured_at, embedding,
           embedding_provider)
       SELECT id, tenant_id, end_user_id, conversation_id, session_id, seq, role, content, '',
              '{}'::jsonb, created_at, created_at, embedding, %(provider)s
       FROM st_message WHERE tenant_id = %(tenant)s""",
)


def copy_records(cursor: Any, records: Records, vectors: np.ndarray, offset: int) -> None:
    """COPY the chunk's rows into the staging tables (``vectors[offset + text_index]``)."""
    from pgvector import HalfVector

    with cursor.copy("COPY st_conversation FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["uuid", "int8", "int8", "text", "timestamptz", "timestamptz", "int4",
                        "int4"])
        for row in records.conversations:
            copy.write_row(row)
    with cursor.copy("COPY st_fact FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["uuid", "int8", "int8", "text", "text", "text", "float8", "timestamptz",
                        "timestamptz", "halfvec", "timestamptz"])
        for row in records.facts:
            copy.write_row([*row[:9], HalfVector(vectors[offset + row[9]]), row[10]])
    with cursor.copy("COPY st_message FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(["uuid", "int8", "int8", "uuid", "text", "int4", "text", "text",
                        "halfvec", "timestamptz"])
        for row in records.messages:
            copy.write_row([*row[:8], HalfVector(vectors[offset + row[8]]), row[9]])


def insert_records(cursor: Any, tenant_id: int, provider_key: str) -> None:
    """From staging into the tables, for the tenant whose ``app.tenant_id`` is set."""
    params = {"tenant": tenant_id, "provider": provider_key, "source": _NO_SOURCE}
    for statement in _INSERTS:
        cursor.execute(statement, params)


# --- brute force ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """A brute-force result: its score, its time (the tie-break), which row, its cosine."""

    score: float
    at: float
    key: tuple[str, str]
    cosine: float


def cosine(q: np.ndarray, embedding: Any) -> float:
    e = np.asarray(embedding, dtype=np.float16).astype(np.float64)
    return float(q @ e / (np.linalg.norm(q) * np.linalg.norm(e)))


def recency(now: datetime, at: datetime, weight: float) -> float:
    age = max((now - at).total_seconds(), 0) / 86400
    return 1 / (1 + weight * math.log(1 + age))


def brute_records(end_user: Any, q: np.ndarray, now: datetime, recency_weight: float) -> list[Scored]:
    """Every valid fact and every message of the person, scored as recall scores a row with
    a vector and no query terms: ``max(cosine, 0) * confidence * recency`` (a message's
    confidence is 1, its time ``created_at``; a fact's its last change)."""
    from memoryhub.models import Fact, Message

    rows = [("fact", pk, e, c, at) for pk, e, c, at in Fact.objects.filter(
        end_user=end_user, invalid_at__isnull=True).values_list(
        "id", "embedding", "confidence", "updated_at")]
    rows += [("message", pk, e, 1.0, at) for pk, e, at in Message.objects.filter(
        end_user=end_user).values_list("id", "embedding", "created_at")]
    scored = []
    for kind, pk, embedding, confidence, at in rows:
        similarity = cosine(q, embedding)
        score = max(similarity, 0) * confidence * recency(now, at, recency_weight)
        scored.append(Scored(score, at.timestamp(), (kind, str(pk)), similarity))
    return scored
