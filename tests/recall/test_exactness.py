"""Recall is exact: on random data it returns what brute force over every visible passage (and
every valid fact, every message) does."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pytest
from django.contrib.postgres.search import SearchVector
from django.db import connection
from django.utils import timezone
from psycopg import ClientCursor
from psycopg.adapt import PyFormat
from psycopg.pq import Format

from memoryhub.infra.db import HalfVec, halfvec_literal
from memoryhub.infra.embeddings import get_provider, provider_key
from memoryhub.models import Conversation, EndUser, Fact, MemoryDocument, Message, Passage
from memoryhub.store.recall import (
    Ranking,
    Visibility,
    documents_search,
    records_search,
    searches_run,
)
from tenants.context import tenant_context
from tests.factories import DocumentRowFactory, EndUserFactory

DIM = 384
RANKING = Ranking(lexical_weight=0.5, recency_weight=0.1, max_query_terms=16)
SCOPES = [("global", ""), ("session", "s-1"), ("session", "s-2"), ("profile", "cook"),
          ("profile", "work")]


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def seed(kit, rng: np.random.Generator, key: str) -> None:
    """Three users, every scope, 1-3 passages per document, random confidence and age."""
    now = timezone.now()
    with tenant_context(kit.tenant.id):
        for user_id in ("alice", "bob", "carol"):
            end_user = EndUserFactory(tenant=kit.tenant, user_id=user_id)
            for i in range(40):
                scope, scope_key = SCOPES[i % len(SCOPES)]
                document = DocumentRowFactory(
                    end_user=end_user, scope=scope, scope_key=scope_key, path=f"/d{i}.md",
                    content="x", confidence=round(float(rng.uniform(0.2, 1.0)), 3),
                )
                MemoryDocument.objects.filter(pk=document.pk).update(
                    updated_at=now - timedelta(days=float(rng.uniform(0, 400))))
                n = int(rng.integers(1, 4))
                Passage.objects.bulk_create([
                    Passage(tenant=kit.tenant, document=document, end_user=end_user, scope=scope,
                            scope_key=scope_key, document_version=1, ordinal=j, start=0, end=1,
                            text=f"passage {j}", embedding=vector.tolist(), embedding_provider=key)
                    for j, vector in enumerate(unit(rng, n))
                ])


def half_cosine(q: np.ndarray, embedding: Any) -> float:
    """Cosine similarity with a stored vector, which PostgreSQL holds in half precision."""
    e = np.asarray(embedding, dtype=np.float16).astype(np.float64)
    return float(q @ e / (np.linalg.norm(q) * np.linalg.norm(e)))


def scored(relevance: dict[int, float], documents: dict[int, MemoryDocument], *, now: datetime,
           ranking: Ranking, threshold: float | None) -> list[tuple[int, float, datetime]]:
    """(document id, score, updated_at) of each document whose score, relevance x confidence x
    recency as the module ranks, reaches ``threshold``; unsorted."""
    result = []
    for document_id, document_relevance in relevance.items():
        document = documents[document_id]
        age_days = max((now - document.updated_at).total_seconds(), 0) / 86400
        recency = 1 / (1 + ranking.recency_weight * math.log(1 + age_days))
        score = document_relevance * document.confidence * recency
        if threshold is None or score >= threshold:
            result.append((document_id, score, document.updated_at))
    return result


def brute_force(kit, query: np.ndarray, *, user_id: str, session: str | None,
                profile: str | None, now, limit: int, threshold: float | None) -> list[tuple[int, float]]:
    visible = {("global", "")} | {("session", session), ("profile", profile)}
    q = query.astype(np.float16).astype(np.float64)
    best: dict[int, float] = {}
    with tenant_context(kit.tenant.id):
        passages = Passage.objects.filter(end_user__user_id=user_id).values_list(
            "document_id", "scope", "scope_key", "embedding")
        documents = {d.pk: d for d in MemoryDocument.objects.filter(end_user__user_id=user_id)}
        for document_id, scope, scope_key, embedding in passages:
            if (scope, scope_key) not in visible:
                continue
            best[document_id] = max(best.get(document_id, -2.0), half_cosine(q, embedding))
    relevance = {document_id: max(similarity, 0.0) for document_id, similarity in best.items()}
    ranked = [(document_id, score) for document_id, score, _ in
              scored(relevance, documents, now=now, ranking=RANKING, threshold=threshold)]
    ranked.sort(key=lambda item: -item[1])
    return ranked[:limit]


@pytest.mark.parametrize("seed_value", [7, 2024])
def test_results_equal_brute_force_on_random_vectors(acme, globex, seed_value: int) -> None:
    rng = np.random.default_rng(seed_value)
    key = provider_key(get_provider())
    seed(acme, rng, key)
    seed(globex, np.random.default_rng(seed_value + 1), key)  # never visible to acme
    now = timezone.now()
    cases = [("alice", "s-1", "cook", 10, None), ("bob", None, None, 50, None),
             ("carol", "s-2", "work", 5, 0.02), ("alice", "s-2", None, 50, 0.01)]
    for user_id, session, profile, limit, threshold in cases:
        query = unit(rng, 1)[0]
        expected = brute_force(acme, query, user_id=user_id, session=session, profile=profile,
                               now=now, limit=limit, threshold=threshold)
        with tenant_context(acme.tenant.id):
            end_user = EndUser.objects.get(user_id=user_id)
            hits = searches_run([documents_search(
                visibility=Visibility(end_user.pk, session, profile),
                query_vector=query.tolist(), provider=key, terms=[], limit=limit,
                threshold=threshold, ranking=RANKING, now=now,
            )])[0]
        assert [h.document_id for h in hits] == [pk for pk, _ in expected]
        assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert expected, "the case must return something to compare"


def test_no_approximate_index_exists_on_passages(db) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'memoryhub_passage'")
        definitions = [row[0] for row in cursor.fetchall()]
    assert definitions and not [d for d in definitions if "hnsw" in d or "ivfflat" in d]
    assert any("passage_visible" in d for d in definitions)


def test_vectors_of_another_provider_are_not_compared(acme, globex) -> None:
    rng = np.random.default_rng(1)
    seed(acme, rng, "old-model:384")
    with tenant_context(acme.tenant.id):
        end_user = EndUser.objects.get(user_id="alice")
        hits = searches_run([documents_search(
            visibility=Visibility(end_user.pk, None, None),
            query_vector=unit(rng, 1)[0].tolist(), provider=provider_key(get_provider()),
            terms=[], limit=10, threshold=None, ranking=RANKING, now=timezone.now(),
        )])[0]
    assert hits == []


# A short shortlist: most results then pass through the search's cut, not the shortlist.
SMALL_SHORTLIST = Ranking(lexical_weight=0.5, recency_weight=0.1, max_query_terms=16,
                          fuzzy_candidates=5)
WORDS = ("apple", "quartz", "violin", "copper", "meadow", "falcon")


def seed_words(kit, rng: np.random.Generator, key: str) -> EndUser:
    """One user with more passages than the search's head: its cut has something to prune.

    Texts hold 0-2 distinct words far apart in trigrams, so a term matches exactly or not at
    all; one passage in eight has no vector yet (lexical only).
    """
    now = timezone.now()
    with tenant_context(kit.tenant.id):
        end_user = EndUserFactory(tenant=kit.tenant, user_id="dora")
        for i in range(260):
            document = DocumentRowFactory(
                end_user=end_user, scope="global", scope_key="", path=f"/w{i}.md",
                content="x", confidence=round(float(rng.uniform(0.2, 1.0)), 3),
            )
            MemoryDocument.objects.filter(pk=document.pk).update(
                updated_at=now - timedelta(days=float(rng.uniform(0, 400))))
            n = int(rng.integers(1, 4))
            passages = []
            for j, vector in enumerate(unit(rng, n)):
                words = rng.choice(WORDS, size=int(rng.integers(0, 3)), replace=False)
                embedded = rng.random() >= 1 / 8
                passages.append(Passage(
                    tenant=kit.tenant, document=document, end_user=end_user, scope="global",
                    scope_key="", document_version=1, ordinal=j, start=0, end=1,
                    text=" ".join(["note", *words]), embedding=vector.tolist() if embedded else None,
                    embedding_provider=key if embedded else ""))
            Passage.objects.bulk_create(passages)
        Passage.objects.filter(end_user=end_user).update(
            search=SearchVector("text", config="simple"))
    return end_user


def brute_force_words(kit, end_user: EndUser, query: np.ndarray, terms: list[str], *, now,
                      limit: int, threshold: float | None) -> list[tuple[int, float]]:
    """Every passage scored with the module's formula (exact words only: no trigram match)."""
    q = query.astype(np.float16).astype(np.float64)
    best: dict[int, float] = {}
    with tenant_context(kit.tenant.id):
        documents = {d.pk: d for d in MemoryDocument.objects.filter(end_user=end_user)}
        for document_id, text, embedding in Passage.objects.filter(end_user=end_user).values_list(
                "document_id", "text", "embedding"):
            vector = 0.0
            if embedding is not None:
                vector = max(half_cosine(q, embedding), 0.0)
            lexical = sum(term in text.split() for term in terms) / max(len(terms), 1)
            if embedding is None and lexical == 0:
                continue
            relevance = 1 - (1 - vector) * (1 - SMALL_SHORTLIST.lexical_weight * lexical)
            best[document_id] = max(best.get(document_id, -1.0), relevance)
    ranked = scored(best, documents, now=now, ranking=SMALL_SHORTLIST, threshold=threshold)
    ranked.sort(key=lambda item: (-item[1], -item[2].timestamp(), item[0]))
    return [(pk, score) for pk, score, _ in ranked[:limit]]


@pytest.mark.parametrize("seed_value", [11, 99])
def test_pruned_search_equals_brute_force_with_words(acme, globex, seed_value: int) -> None:
    """More passages than the head keeps, words and vectors, several limits and thresholds."""
    rng = np.random.default_rng(seed_value)
    key = provider_key(get_provider())
    end_user = seed_words(acme, rng, key)
    seed_words(globex, np.random.default_rng(seed_value + 1), key)
    now = timezone.now()
    cases = [(["apple", "zephyr"], 10, None), (["quartz", "violin"], 1, None),
             (["copper"], 50, None), (["meadow", "falcon"], 10, 0.12), ([], 20, None)]
    for terms, limit, threshold in cases:
        query = unit(rng, 1)[0]
        expected = brute_force_words(acme, end_user, query, terms, now=now, limit=limit,
                                     threshold=threshold)
        with tenant_context(acme.tenant.id):
            hits = searches_run([documents_search(
                visibility=Visibility(end_user.pk, None, None),
                query_vector=query.tolist(), provider=key, terms=terms, limit=limit,
                threshold=threshold, ranking=SMALL_SHORTLIST, now=now,
            )])[0]
        assert [h.document_id for h in hits] == [pk for pk, _ in expected], terms
        assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert expected, "the case must return something to compare"


@pytest.mark.django_db
def test_a_query_vector_sent_in_binary_reads_back_as_its_text_form() -> None:
    """``HalfVec`` (pgvector's binary input) and the text literal give PostgreSQL one vector."""
    vector = unit(np.random.default_rng(11), 1)[0].tolist()
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::halfvec::text, %s::halfvec::text",
                       [HalfVec(vector), halfvec_literal(vector)])
        binary, text = cursor.fetchone()
    assert binary == text
    assert len(binary.strip("[]").split(",")) == DIM
    connection.ensure_connection()  # the text form, for Django's query log (client-side mogrify)
    with ClientCursor(connection.connection) as client_side:
        logged = client_side.mogrify("SELECT %s::halfvec::text", [HalfVec(vector)])
        client_side.execute(logged)
        assert client_side.fetchone()[0] == binary
    # and a plain %s placeholder sends the binary form
    assert connection.connection.adapters.get_dumper(HalfVec, PyFormat.AUTO).format == Format.BINARY


# --- facts and messages ----------------------------------------------------------------------


def seed_records(kit, rng: np.random.Generator, key: str) -> EndUser:
    """One person with more facts and messages than the head: 0-2 words each, random vectors
    (one in eight not embedded yet), confidence and age; one fact in six no longer true."""
    now = timezone.now()
    with tenant_context(kit.tenant.id):
        end_user = EndUserFactory(tenant=kit.tenant, user_id="dora")
        conversation = Conversation.objects.create(
            tenant=kit.tenant, end_user=end_user, session_id="s-1", started_at=now,
            last_message_at=now)
        facts, messages = [], []
        for i, vector in enumerate(unit(rng, 520)):
            text = " ".join(["note", *rng.choice(WORDS, size=int(rng.integers(0, 3)), replace=False)])
            embedded = rng.random() >= 1 / 8
            at = now - timedelta(days=float(rng.uniform(0, 400)))
            vectors = {"embedding": vector.tolist() if embedded else None,
                       "embedding_provider": key if embedded else ""}
            if i % 2:
                messages.append(Message(
                    tenant=kit.tenant, end_user=end_user, conversation=conversation,
                    session_id="s-1", seq=len(messages) + 1, role="user", content=text,
                    created_at=at, captured_at=at, **vectors))
            else:
                facts.append(Fact(
                    tenant=kit.tenant, end_user=end_user, type="fact", content=text,
                    normalized=text, confidence=round(float(rng.uniform(0.2, 1.0)), 3),
                    valid_at=at, invalid_at=at if i % 12 == 0 else None, updated_by="app",
                    **vectors))
        Message.objects.bulk_create(messages)
        for fact in Fact.objects.bulk_create(facts):  # auto_now: set each fact's age after
            Fact.objects.filter(pk=fact.pk).update(updated_at=fact.valid_at)
    return end_user


def brute_force_records(kit, kind: str, end_user: EndUser, query: np.ndarray, terms: list[str],
                        *, now, limit: int, threshold: float | None) -> list[tuple[str, float]]:
    """Every valid fact or every message scored with the module's formula (exact words only)."""
    q = query.astype(np.float16).astype(np.float64)
    with tenant_context(kit.tenant.id):
        if kind == "fact":
            rows = list(Fact.objects.filter(end_user=end_user, invalid_at__isnull=True)
                        .values_list("id", "content", "embedding", "confidence", "updated_at"))
        else:
            rows = [(pk, text, e, 1.0, at) for pk, text, e, at in Message.objects.filter(
                end_user=end_user).values_list("id", "content", "embedding", "created_at")]
    ranked = []
    for pk, text, embedding, confidence, at in rows:
        vector = 0.0 if embedding is None else max(half_cosine(q, embedding), 0.0)
        lexical = sum(term in text.split() for term in terms) / max(len(terms), 1)
        if embedding is None and lexical == 0:
            continue
        relevance = 1 - (1 - vector) * (1 - SMALL_SHORTLIST.lexical_weight * lexical)
        age_days = max((now - at).total_seconds(), 0) / 86400
        score = relevance * confidence / (1 + SMALL_SHORTLIST.recency_weight * math.log(1 + age_days))
        if threshold is None or score >= threshold:
            ranked.append((str(pk), score, at))
    ranked.sort(key=lambda item: (-item[1], -item[2].timestamp(), item[0]))
    return [(pk, score) for pk, score, _ in ranked[:limit]]


@pytest.mark.parametrize("kind", ["fact", "message"])
def test_pruned_records_search_equals_brute_force_with_words(acme, globex, kind: str) -> None:
    """Facts and messages: more rows than the head keeps, words and vectors, several limits
    and thresholds; another tenant's person of the same name holds rows too."""
    rng = np.random.default_rng(5)
    key = provider_key(get_provider())
    end_user = seed_records(acme, rng, key)
    seed_records(globex, np.random.default_rng(6), key)
    now = timezone.now()
    cases = [(["apple", "zephyr"], 10, None), (["quartz", "violin"], 1, None),
             (["copper"], 50, None), (["meadow", "falcon"], 10, 0.12), ([], 20, None)]
    for terms, limit, threshold in cases:
        query = unit(rng, 1)[0]
        expected = brute_force_records(acme, kind, end_user, query, terms, now=now, limit=limit,
                                       threshold=threshold)
        with tenant_context(acme.tenant.id):
            hits = searches_run([records_search(
                kind=kind, end_user_id=end_user.pk, query_vector=query.tolist(), provider=key,
                terms=terms, limit=limit, threshold=threshold, ranking=SMALL_SHORTLIST, now=now,
            )])[0]
        assert [h.record_id for h in hits] == [pk for pk, _ in expected], terms
        assert [h.score for h in hits] == pytest.approx([s for _, s in expected], abs=1e-5)
        assert expected, "the case must return something to compare"
