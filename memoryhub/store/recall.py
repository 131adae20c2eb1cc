"""Recall's search: the best passage of each visible document, ranked, in one SQL statement.

Exact, not approximate. The passages an end user's session can see (its session, its
profile, global) are found through the B-tree ``passage_visible`` (tenant, end user, scope,
scope key); every one of them that has a vector of the current provider gets its cosine
similarity to the query (``<=>``). There is no ANN index on purpose: one person's memory is
small, so computing every distance costs little and the result equals brute force.

Lexical search complements vectors (synonyms aside, a hashing or small model misses exact
names and numbers) and stands in for them until a worker has embedded a new document.
The query's words (``terms``: casefolded, deduplicated, stop words dropped unless nothing
else is left, at most ``max_query_terms``) are matched against each passage: a term counts
1 when the passage's full-text vector (``'simple'`` configuration) contains it, else its
trigram ``word_similarity`` with the passage when that reaches pg_trgm's word threshold
(0.6: plurals, small typos), else 0. ``lexical`` is the mean over terms, in [0, 1].

Costs, and why the fuzzy part is bounded: the full-text test reads the stored ``tsvector``
(about a microsecond a passage), so it runs on every visible passage. Trigram similarity
reads the text (about 100 microseconds for a long passage and term), and no index can help:
under row-level security PostgreSQL evaluates only leakproof operators inside an index scan,
and ``@@``/``%>`` are not, so GIN indexes on ``search`` or ``text`` are never used for the
application role (checked with EXPLAIN). Trigram similarity is therefore computed for a
shortlist only: the ``fuzzy_candidates`` passages ranked best by vector and exact words, plus
as many not yet embedded (newest first), for which lexical is all there is. Even there it is
computed only where the text holds the letters the term's trigrams need to reach the
threshold (``memoryhub.store._trigrams``: a few ``strpos`` calls, which spare most similarity
calls and change no result).

The blend, a noisy-OR, so that each signal can only add to the other:

    relevance = 1 - (1 - max(vector, 0)) * (1 - lexical_weight * lexical)

with ``vector = 0`` before a passage is embedded. A document is represented by its most
relevant passage, and ranked by

    score = relevance * confidence * recency,  recency = 1 / (1 + recency_weight * ln(1 + age_days))

(age from the document's last change; weights in ``settings.MEMORYHUB_RECALL``). Results
with ``score < threshold`` are dropped unless the caller asks for everything (``threshold``
None). ``similarity`` reports the vector's cosine similarity, or the lexical similarity for
a passage that has no vector yet.

How one statement stays cheap for a person with 100,000 memories: the passages are read once
(``visible``: the distance and one full-text test of the OR'ed terms per passage, the
per-term count only where that matched; no text). Only documents and passages that can still
make the answer are looked at further, and this loses nothing:

- ``pre``, the relevance before fuzzy matching, is the final relevance of every passage
  outside the fuzzy shortlist; fuzzy matching can only raise it (a term's share is 1 for the
  exact word in both), and a shortlisted passage is always kept.
- ``probe``: the ``head`` (the most relevant passages by ``pre``, at least the shortlist)
  names some documents; each scores at least ``pre * confidence * recency`` of its best head
  passage, so the ``limit``-th best of these, ``cut``, is a score that ``limit`` documents
  reach: no result scores less (nor less than ``threshold``).
- ``score <= relevance``, since confidence is in [0, 1] (a check constraint) and recency is in
  (0, 1] when ``recency_weight >= 0``. So the best passage of every result has relevance >=
  ``cut``: it is either shortlisted or has ``pre >= cut``, and those are all that ``scored``
  keeps. A document whose best passage was left out scores below ``cut`` and is no result;
  one that is a result is represented by the same passage and score as by brute force.
  With a negative weight (a setting nobody should use) nothing is left out.

``query_terms`` (``memoryhub.selectors.recall``) makes the terms. The tenant is the current
one, the table names come from the models.

``tests/recall/test_exactness.py`` compares the results with brute force over every passage.
The statement raises ``work_mem`` for its transaction (the materialized ``visible`` of a
large memory would otherwise spill to disk) and switches JIT off, whose compilation costs
more than such a query saves and which big row estimates would trigger.
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper

from memoryhub.infra.db import HalfVec, connection_as_request
from memoryhub.models import Fact, MemoryDocument, Message, Passage
from memoryhub.store._locks import people_of_rows_held
from memoryhub.store._rows import compact_sql
from memoryhub.store._tenancy import tenant_id, tenant_is
from memoryhub.store._trigrams import probes_in_slots, trigram_probes
from memoryhub.store.passages import SEARCH_CONFIG
from tenants.context import tenant_context


@dataclass(frozen=True)
class Visibility:
    """Whose memory (of the current tenant), and which scopes of it, one recall may see."""

    end_user_id: int
    session_id: str | None
    profile: str | None


@dataclass(frozen=True)
class Ranking:
    lexical_weight: float
    recency_weight: float
    max_query_terms: int
    fuzzy_candidates: int = 50


@dataclass(frozen=True)
class RecallHit:
    """One result: a document (by its best passage), or a fact or a message (``kind``);
    the last fields are a fact's or a message's (``document_id`` etc. are 0 and empty)."""

    document_id: int
    passage_id: int
    path: str
    scope: str
    scope_key: str
    snippet: str
    score: float
    similarity: float
    vector: float | None
    lexical: float | None
    confidence: float
    updated_at: datetime
    kind: str = "document"
    record_id: str | None = None
    conversation_id: str | None = None
    session_id: str | None = None
    source: dict[str, Any] | None = None
    stated_at: datetime | None = None  # a fact's valid_at, a message's created_at
    role: str | None = None  # a message's


_TENANT = "%(tenant)s"
_VISIBLE = f"""
    {tenant_is("p", param=_TENANT)} AND p.end_user_id = %(end_user)s
    AND ((p.scope = 'global' AND p.scope_key = '')
         OR (p.scope = 'session' AND p.scope_key = %(session)s)
         OR (p.scope = 'profile' AND p.scope_key = %(profile)s))
"""
# The passages the session can see: the documents statement's own predicate.
_DOCUMENTS_ROWS = compact_sql(f"FROM {Passage._meta.db_table} p WHERE {_VISIBLE}")
_VECTOR_SIMILARITY = """
    CASE WHEN p.embedding IS NOT NULL AND p.embedding_provider = %(provider)s
         THEN 1 - (p.embedding <=> %(qvec)s::halfvec) END
"""
# One full-text test per passage (the terms OR'ed); the per-term count only where it matched.
_EXACT_SHARE = """
    CASE WHEN p.search @@ (SELECT any_term FROM any_term)
         THEN (SELECT count(*) FROM terms t WHERE p.search @@ t.tq)::float8 / %(n_terms)s
         ELSE 0 END
"""
# Per term: 1 for the exact word, else a trigram match of at least pg_trgm's word threshold,
# tried only where the text holds enough of what the term's trigrams need to reach it
# (``trigram_probes``). ``l.low`` is the text lowercased once per row (``OFFSET 0`` keeps
# the planner from folding ``lower`` into every probe), and the probes found are counted in
# one expression over a fixed number of slots (``probes_in_slots``). Counted by a subquery
# over unnest, as before, each row and term cost a function scan and an aggregate: on
# 200-memory people the documents' search took 4.49 ms at p50 that way and 3.53 ms this way
# (300 questions alternated on a slow moment of the machine; results identical). Written
# tight: the statement must stay within psycopg's cache of parsed statements
# (``tests/recall/test_fuzzy_pretest.py`` checks it).
FUZZY_THRESHOLD = 0.6
PROBE_SLOTS = 8
PROBES_FOUND = "+".join(
    f"(strpos(l.low,t.probes[{slot}])>0)::int" for slot in range(1, PROBE_SLOTS + 1)
)
_FUZZY_SHARE = f"""
    (SELECT sum(CASE WHEN p.search @@ t.tq THEN 1.0
                     WHEN t.need > 0 AND {PROBES_FOUND} < t.need THEN 0
                     WHEN word_similarity(t.term, p.text) >= %(fuzzy)s
                     THEN word_similarity(t.term, p.text) ELSE 0 END)
     FROM terms t)::float8 / %(n_terms)s
"""

# A document's score from its best passage ``b`` (module docstring).
_SCORE = """
    b.relevance * d.confidence
      / (1 + %(recency_weight)s * ln(1 + greatest(
             extract(epoch FROM %(now)s - d.updated_at)::float8, 0) / 86400.0))
"""

_RANK = """
WITH terms AS (
    SELECT t.term, plainto_tsquery('{config}', t.term) AS tq,
           string_to_array(t.probes, ' ') AS probes, t.need
    FROM unnest(%(terms)s::text[], %(probes)s::text[], %(needs)s::int[]) AS t(term, probes, need)
),
any_term AS (  -- tsquery's text form reads back as the same query
    SELECT string_agg('(' || t.tq::text || ')', ' | ')::tsquery AS any_term
    FROM terms t WHERE t.tq::text <> ''
),
visible AS MATERIALIZED (  -- the only pass over the passages: no text, each distance once
    SELECT p.id, p.document_id, p.ordinal, {vector} AS vsim, {exact} AS exact
    FROM {passage} p
    WHERE {visible}
),
prefuzzy AS NOT MATERIALIZED (  -- relevance before fuzzy matching, which can only raise it
    SELECT v.*, 1 - (1 - greatest(coalesce(v.vsim, 0), 0)) * (1 - %(lexical_weight)s * v.exact)
             AS pre
    FROM visible v
),
head AS MATERIALIZED (
    SELECT * FROM prefuzzy ORDER BY pre DESC, id LIMIT %(head)s
),
probe AS (  -- at least `limit` documents score this much: no result scores less
    SELECT {score} AS score
    FROM (SELECT DISTINCT ON (h.document_id) h.document_id, h.pre AS relevance
          FROM head h ORDER BY h.document_id, h.pre DESC) b
    JOIN {document} d ON d.id = b.document_id AND {document_person}
    ORDER BY score DESC LIMIT 1 OFFSET %(limit)s - 1
),
cut AS (  -- score <= relevance: a passage less relevant than this cannot be a result's
    SELECT CASE WHEN %(prune)s THEN greatest(
               coalesce((SELECT score FROM probe), '-Infinity'),
               coalesce(%(threshold)s::float8, '-Infinity'))
           ELSE '-Infinity' END AS cut
),
unembedded AS (
    SELECT v.id FROM visible v WHERE v.vsim IS NULL ORDER BY v.id DESC LIMIT %(fuzzy_candidates)s
),
shortlist AS (
    (SELECT h.id FROM head h ORDER BY h.pre DESC, h.id LIMIT %(fuzzy_candidates)s)
    UNION
    SELECT u.id FROM unembedded u
),
fuzzy AS MATERIALIZED (  -- materialized: else the planner may compute it for every row
    SELECT p.id, {fuzzy} AS lex
    FROM shortlist s JOIN {passage} p ON p.id = s.id AND {passage_tenant}
         CROSS JOIN LATERAL (SELECT lower(p.text) AS low OFFSET 0) l
),
scored AS (
    SELECT c.id, c.document_id, c.ordinal, c.vsim, coalesce(f.lex, c.exact) AS lex,
           1 - (1 - greatest(coalesce(c.vsim, 0), 0))
             * (1 - %(lexical_weight)s * coalesce(f.lex, c.exact)) AS relevance
    FROM prefuzzy c LEFT JOIN fuzzy f ON f.id = c.id
    WHERE (c.pre >= (SELECT cut FROM cut) OR c.id IN (SELECT s.id FROM shortlist s))
      AND (c.vsim IS NOT NULL OR coalesce(f.lex, c.exact) > 0)
),
best AS (
    SELECT DISTINCT ON (document_id) * FROM scored
    ORDER BY document_id, relevance DESC, ordinal
),
ranked AS (
    SELECT b.*, d.path, d.scope, d.scope_key, d.confidence, d.updated_at, {score} AS score
    FROM best b JOIN {document} d
      ON d.id = b.document_id AND {document_person}
),
top AS (
    SELECT * FROM ranked r WHERE {threshold}
    ORDER BY r.score DESC, r.updated_at DESC, r.document_id LIMIT %(limit)s
)
SELECT r.document_id, r.id, r.path, r.scope, r.scope_key, p.text, r.score, r.vsim, r.lex,
       r.confidence, r.updated_at
FROM top r JOIN {passage} p ON p.id = r.id AND {passage_tenant}
ORDER BY r.score DESC, r.updated_at DESC, r.document_id
"""
# The search runs in the request's transaction; these last until it ends. Plain index scans
# are off: the planner underestimates how many passages one person has (the scope OR), and
# fetching thousands of them one index entry at a time takes twice a bitmap scan's time.
# The statement is prepared like every other (settings.py) and PostgreSQL soon settles on a
# generic plan: measured on the 1M benchmark, that saves the 1.5 ms of planning at the median
# and costs nothing at p95 (the plan's shape does not depend on the person's size here).
_SESSION = (
    "SELECT set_config('work_mem', '64MB', true), set_config('jit', 'off', true), "
    "set_config('enable_indexscan', 'off', true)"
)
_SESSION_SETTINGS = _SESSION.count("set_config(")  # its columns before the row counts
_PARAM = re.compile(r"%\((\w+)\)s")
_HEAD_PER_RESULT = 4


def _terms_params(terms: list[str]) -> dict[str, Any]:
    """The query terms' parameters of the lexical part (``terms`` in the statements)."""
    probes = [probes_in_slots(*trigram_probes(term, FUZZY_THRESHOLD), PROBE_SLOTS)
              for term in terms]
    return {
        "terms": terms, "n_terms": max(len(terms), 1), "fuzzy": FUZZY_THRESHOLD,
        "probes": [" ".join(found) for found, _ in probes], "needs": [n for _, n in probes],
    }


@dataclass(frozen=True)
class Search:
    """One ranking statement, ready to run (``searches_run``), and how its rows become hits.

    ``rows``: the ``FROM ... WHERE ...`` of the rows the statement reads (its visibility
    predicate, on some of its own parameters), which ``searches_run`` counts before running
    it; None: always run it, on the request's connection."""

    sql: str
    params: dict[str, Any]  # Any: psycopg also takes HalfVec (our dumper)
    hit: Callable[[tuple], RecallHit]
    rows: str | None = None


def documents_search(
    *, visibility: Visibility, query_vector: list[float] | None, provider: str, terms: list[str],
    limit: int, threshold: float | None, ranking: Ranking, now: datetime,
) -> Search:
    """The ranking of the visible documents for a query (module docstring); ``threshold``
    None keeps all."""
    params: dict[str, Any] = {
        "tenant": tenant_id(), "end_user": visibility.end_user_id,
        "session": visibility.session_id, "profile": visibility.profile,
        "provider": provider, "lexical_weight": ranking.lexical_weight,
        "recency_weight": ranking.recency_weight, "now": now, "limit": limit,
        "threshold": threshold, "fuzzy_candidates": ranking.fuzzy_candidates,
        **_terms_params(terms),
        "head": max(ranking.fuzzy_candidates, _HEAD_PER_RESULT * limit),
        # The cut rests on score <= relevance <= relevance after fuzzy matching.
        "prune": ranking.recency_weight >= 0 and ranking.lexical_weight >= 0,
    }
    if query_vector is not None:
        params["qvec"] = HalfVec(query_vector)
    sql = _statement(query_vector is not None, bool(terms), threshold is not None)
    return Search(sql, params, _hit, rows=_DOCUMENTS_ROWS)


def searches_run(searches: list[Search], *, apart_rows: int = 0) -> list[list[RecallHit]]:
    """Run the searches, each one's hits in order, after the session settings they share.

    The settings' statement also counts the rows each search reads (``Search.rows``, at most
    its share of ``apart_rows``), and a search whose person holds none is not run: its hits are
    none, as running it would find. For a person with documents and no facts (an app that
    writes documents only), that spares the facts' statement and its round trip. On
    bench-vs-mem0's people, default sources: in process, 1,000 requests alternated with the
    test off, p50 4.45 -> 4.13 ms and the web process's CPU 2.47 -> 2.23 ms; over HTTP, two
    gunicorns of this code with the test off and on, 8 alternated rounds, p50 4.64 -> 4.02
    ms and the server's CPU (gunicorn and the database) 4.95 -> 4.20 ms per recall.

    The searches run one after another in the request's transaction, unless ``apart_rows``
    (0: never) is set and the searches to run read at least that many rows together: then
    each but the first runs on a connection of its own (``_run_apart``) while the request's
    runs the first, so a person with thousands of rows in every source waits for the
    slowest source instead of their sum. Each statement sees the rows committed when it
    starts, as in the request's own READ COMMITTED transaction. On the million-row benchmark,
    in process, people with 5,000-11,000 rows: p50 26.3 -> 19.3 ms, p95 35.2 -> 28.1 ms
    (README, "Recall over facts and messages at a million rows").

    One statement after another on one connection: psycopg's pipeline mode (all sent at
    once) measured worse, its wait for the results cost the web process more CPU than the
    round trips it saved (recall of 200 memories over HTTP from 4 clients: 189-197 against
    218 a second)."""
    tenant = tenant_id()  # fails closed without a tenant, like every statement here
    if not searches:
        return []
    with connection.cursor() as cursor:
        held = _rows_held(cursor, searches, apart_rows)
        to_run = [search for search in searches if held.get(id(search), 1)]
        apart = bool(apart_rows) and len(to_run) > 1 and (
            sum(held.get(id(search), 0) for search in to_run) >= apart_rows)
        found = _run_beside(cursor, tenant, to_run) if apart else [
            _rows_of(cursor, search) for search in to_run]
    rows = dict(zip(map(id, to_run), found, strict=True))
    return [[search.hit(row) for row in rows.get(id(search), [])] for search in searches]


def _rows_held(cursor: CursorWrapper, searches: list[Search], apart_rows: int) -> dict[int, int]:
    """Set the session settings and count the rows of each search that names them, by the
    search's ``id``. Each count stops at its equal share of ``apart_rows``: enough to tell
    whether they reach it together, at a third of the cost with three sources. A search
    alone cannot run beside another: whether it finds anything is all there is to ask."""
    counted = [search for search in searches if search.rows is not None]
    cap = -(-apart_rows // len(counted)) if apart_rows and len(searches) > 1 and counted else 1
    cursor.execute(_session_statement(tuple(search.rows or "" for search in counted)),
                   _rows_params(counted, cap) or None)
    counts = cursor.fetchone()[_SESSION_SETTINGS:]
    return {id(search): count for search, count in zip(counted, counts, strict=True)}


def _rows_of(cursor: CursorWrapper, search: Search) -> list[tuple]:
    cursor.execute(search.sql, search.params)
    rows: list[tuple] = cursor.fetchall()
    return rows


def _run_beside(cursor: CursorWrapper, tenant: int, searches: list[Search]) -> list[list[tuple]]:
    """The first search on ``cursor``, the others each on a connection of its own at once;
    one that no helper thread has taken by the time the first is done runs on ``cursor``
    too, so a busy pool never makes a request wait for a thread."""
    pending = [_apart_pool().submit(_run_apart, tenant, search) for search in searches[1:]]
    found = [_rows_of(cursor, searches[0])]
    for future, search in zip(pending, searches[1:], strict=True):
        found.append(_rows_of(cursor, search) if future.cancel() else future.result())
    return found


def _run_apart(tenant: int, search: Search) -> list[tuple]:
    """One search in a transaction of its own, in a helper thread."""
    with connection_as_request(), tenant_context(tenant), connection.cursor() as cursor:
        cursor.execute(_SESSION)
        return _rows_of(cursor, search)


_apart: tuple[int, ThreadPoolExecutor] | None = None
_apart_lock = threading.Lock()


def _apart_pool() -> ThreadPoolExecutor:
    """This process's helper threads (a forked child makes its own: threads do not fork)."""
    global _apart
    with _apart_lock:
        if _apart is None or _apart[0] != os.getpid():
            _apart = (os.getpid(), ThreadPoolExecutor(max_workers=APART_THREADS,
                                                      thread_name_prefix="recall-apart"))
        return _apart[1]


# Two: with three sources, the request's thread and two helpers run one each.
APART_THREADS = 2


@cache
def _session_statement(rows: tuple[str, ...]) -> str:
    """The session settings, then the count of each search's rows, at most ``%(rows_cap)s``."""
    return compact_sql(_SESSION + "".join(
        f", (SELECT count(*) FROM (SELECT 1 {read} LIMIT %(rows_cap)s) n)" for read in rows))


def _rows_params(counted: list[Search], cap: int) -> dict[str, Any]:
    """The parameters the row counts name, from their searches (which agree on them: one
    person's recall)."""
    if not counted:
        return {}
    params: dict[str, Any] = {"rows_cap": cap}
    for search in counted:
        for name in _PARAM.findall(search.rows or ""):
            if params.setdefault(name, search.params[name]) != search.params[name]:
                raise ValueError(f"the searches disagree on {name!r}")
    return params


@cache
def _statement(vector: bool, terms: bool, threshold: bool) -> str:
    """The statement for a query with or without a vector, terms and a threshold, compacted
    to fit psycopg's cache of parsed statements (4,096 characters)."""
    return compact_sql(_RANK.format(
        config=SEARCH_CONFIG, visible=_VISIBLE, score=_SCORE,
        passage=Passage._meta.db_table, document=MemoryDocument._meta.db_table,
        passage_tenant=tenant_is("p", param=_TENANT),
        # The person's own documents only, as the passages already are: without it the
        # planner sized the join by the tenant's documents and read them all (15 people of
        # 200 documents: server CPU 8.55 -> 7.25 ms per recall; 100 such people: unchanged).
        document_person=tenant_is("d", param=_TENANT) + " AND d.end_user_id = %(end_user)s",
        vector=_VECTOR_SIMILARITY if vector else "NULL::float8",
        exact=_EXACT_SHARE if terms else "0::float8",
        fuzzy=_FUZZY_SHARE if terms else "0::float8",
        threshold="r.score >= %(threshold)s" if threshold else "true",
    ))


def _hit(row: tuple) -> RecallHit:
    document_id, passage_id, path, scope, scope_key, text, score, vsim, lex, confidence, updated = row
    similarity = vsim if vsim is not None else (lex or 0.0)
    return RecallHit(
        document_id=document_id, passage_id=passage_id, path=path, scope=scope,
        scope_key=scope_key, snippet=text, score=float(score), similarity=float(similarity),
        vector=None if vsim is None else float(vsim), lexical=None if lex is None else float(lex),
        confidence=float(confidence), updated_at=updated,
    )


# --- facts and messages --------------------------------------------------------------------
#
# A fact or a message is its own result (no passages: a fact is one short statement, a
# message is searched whole), ranked by the same blend and score as a document's best
# passage: relevance from its vector (``embedding``, when one of the current provider is
# there) and its full-text vector (``search``, computed by PostgreSQL on insert, so a row is
# found lexically as soon as it commits), trigram matching for the same shortlist (the
# ``fuzzy_candidates`` best by vector and exact words, plus as many not yet embedded, newest
# first), then ``score = relevance * confidence * recency`` (a message's confidence is 1; the
# age is a fact's last change, a message's ``created_at``). Exact: every visible row of the
# person gets its distance (through the B-trees that begin with tenant and end user).
# A fact is visible while valid (``include_invalid`` shows the others); facts and messages
# belong to the person, not to a scope: every session of the person sees them.
#
# Only the rows that can still make the answer are scored, by the documents' argument
# (module docstring), which loses nothing: the shortlist is the ``head`` (the best by ``pre``,
# the relevance before fuzzy matching) and the rows not yet embedded; the ``limit``-th best
# score of the head computed from ``pre`` is a score ``limit`` rows reach (fuzzy matching only
# raises it), and every other row scores at most its ``pre`` (confidence and recency are at
# most 1), so a row outside the shortlist with ``pre`` below that ``cut`` is no result.
# Measured with ``make bench-recall`` (a person with 3,663 messages, EXPLAIN and the backend's
# CPU time): scoring every row (its age's ``ln`` and a hash join against the fuzzy matches)
# cost more than the distances; with the cut, about half the statement's time goes.

_RECORDS = """
WITH terms AS (
    SELECT t.term, plainto_tsquery('{config}', t.term) AS tq,
           string_to_array(t.probes, ' ') AS probes, t.need
    FROM unnest(%(terms)s::text[], %(probes)s::text[], %(needs)s::int[]) AS t(term, probes, need)
),
any_term AS (
    SELECT string_agg('(' || t.tq::text || ')', ' | ')::tsquery AS any_term
    FROM terms t WHERE t.tq::text <> ''
),
visible AS MATERIALIZED (  -- the only pass over the rows; OFFSET 0: each expression once
    SELECT r.*, 1 - (1 - greatest(coalesce(r.vsim, 0), 0)) * (1 - %(lexical_weight)s * r.exact)
             AS pre
    FROM (SELECT p.id, {vector} AS vsim, {exact} AS exact, {confidence} AS confidence,
                 p.{at} AS at
          FROM {table} p
          WHERE {visible} OFFSET 0) r
),
head AS MATERIALIZED (
    SELECT * FROM visible ORDER BY pre DESC, id LIMIT %(fuzzy_candidates)s
),
cut AS (  -- at least `limit` rows score this much: no result scores less
    SELECT CASE WHEN %(prune)s THEN coalesce((
               SELECT {head_score} AS score FROM head h ORDER BY score DESC
               LIMIT 1 OFFSET %(limit)s - 1), '-Infinity')
           ELSE '-Infinity' END AS cut
),
shortlist AS MATERIALIZED (
    SELECT * FROM head
    UNION
    (SELECT * FROM visible v WHERE v.vsim IS NULL ORDER BY v.at DESC, v.id DESC
     LIMIT %(fuzzy_candidates)s)
),
fuzzy AS MATERIALIZED (
    SELECT p.id, {fuzzy} AS lex
    FROM shortlist s JOIN {table} p ON p.id = s.id AND {tenant}
         CROSS JOIN LATERAL (SELECT lower(p.content) AS low OFFSET 0) l
),
candidates AS (
    SELECT * FROM shortlist
    UNION
    SELECT * FROM visible v WHERE v.pre >= (SELECT cut FROM cut)
),
scored AS (
    SELECT c.id, c.vsim, c.confidence, c.at, coalesce(f.lex, c.exact) AS lex,
           (1 - (1 - greatest(coalesce(c.vsim, 0), 0))
              * (1 - %(lexical_weight)s * coalesce(f.lex, c.exact))) * c.confidence
             / {recency} AS score
    FROM candidates c LEFT JOIN fuzzy f ON f.id = c.id
    WHERE c.vsim IS NOT NULL OR coalesce(f.lex, c.exact) > 0
),
top AS (
    SELECT * FROM scored r WHERE {threshold}
    ORDER BY r.score DESC, r.at DESC, r.id LIMIT %(limit)s
)
SELECT r.id, p.content, r.score, r.vsim, r.lex, r.confidence, r.at, {extra}
FROM top r JOIN {table} p ON p.id = r.id AND {tenant}
ORDER BY r.score DESC, r.at DESC, r.id
"""
# The recency divisor of a row ``{row}`` (its time ``at``), as the documents' ``_SCORE``.
_RECORD_RECENCY = """
    (1 + %(recency_weight)s * ln(1 + greatest(
         extract(epoch FROM %(now)s - {row}.at)::float8, 0) / 86400.0))
"""
_RECORD_KINDS = {
    # kind: (table, confidence, recency's time, valid-only test, extra columns)
    "fact": (Fact._meta.db_table, "p.confidence", "updated_at", "AND p.invalid_at IS NULL",
             "p.source, p.valid_at, NULL::text, NULL::text"),
    "message": (Message._meta.db_table, "1.0::float8", "created_at", "",
                "json_build_object('conversation_id', p.conversation_id::text), p.created_at, "
                "p.session_id, p.role"),
}
RECORD_KINDS = tuple(_RECORD_KINDS)


def records_search(
    *, kind: str, end_user_id: int, query_vector: list[float] | None, provider: str,
    terms: list[str], limit: int, threshold: float | None, ranking: Ranking, now: datetime,
    include_invalid: bool = False,
) -> Search:
    """The ranking of the person's facts or messages (``kind``) for a query (the comment
    above); ``threshold`` None keeps all. ``searches_run`` runs it."""
    params: dict[str, Any] = {
        "tenant": tenant_id(), "end_user": end_user_id, "provider": provider,
        "lexical_weight": ranking.lexical_weight, "recency_weight": ranking.recency_weight,
        "now": now, "limit": limit, "threshold": threshold,
        "fuzzy_candidates": ranking.fuzzy_candidates, **_terms_params(terms),
        # The cut rests on score <= relevance <= relevance after fuzzy matching.
        "prune": ranking.recency_weight >= 0 and ranking.lexical_weight >= 0,
    }
    if query_vector is not None:
        params["qvec"] = HalfVec(query_vector)
    sql = _records_statement(kind, query_vector is not None, bool(terms), threshold is not None,
                             include_invalid)
    return Search(sql, params, functools.partial(_record_hit, kind),
                  rows=_records_rows(kind, include_invalid))


@cache
def _records_statement(kind: str, vector: bool, terms: bool, threshold: bool,
                       include_invalid: bool) -> str:
    table, confidence, at, _, extra = _RECORD_KINDS[kind]
    return compact_sql(_RECORDS.format(
        config=SEARCH_CONFIG, table=table, tenant=tenant_is("p", param=_TENANT),
        visible=_records_visible(kind, include_invalid), confidence=confidence, at=at,
        extra=extra,
        vector=_VECTOR_SIMILARITY if vector else "NULL::float8",
        exact=_EXACT_SHARE if terms else "0::float8",
        fuzzy=_FUZZY_SHARE.replace("p.text", "p.content") if terms else "0::float8",
        threshold="r.score >= %(threshold)s" if threshold else "true",
        head_score="h.pre * h.confidence / " + _RECORD_RECENCY.format(row="h"),
        recency=_RECORD_RECENCY.format(row="c"),
    ))


def _records_visible(kind: str, include_invalid: bool) -> str:
    """The rows of ``kind`` a records statement reads (``p``): the person's, valid only
    unless ``include_invalid``."""
    valid = "" if include_invalid else _RECORD_KINDS[kind][3]
    return f"{tenant_is('p', param=_TENANT)} AND p.end_user_id = %(end_user)s {valid}"


@cache
def _records_rows(kind: str, include_invalid: bool) -> str:
    """The rows the records statement reads (``Search.rows``): its own predicate."""
    return compact_sql(f"FROM {_RECORD_KINDS[kind][0]} p "
                       f"WHERE {_records_visible(kind, include_invalid)}")


def _record_hit(kind: str, row: tuple) -> RecallHit:
    record_id, content, score, vsim, lex, confidence, at, source, stated_at, session_id, role = row
    similarity = vsim if vsim is not None else (lex or 0.0)
    if isinstance(source, str):  # Django has psycopg read json as text
        source = json.loads(source)
    conversation_id = (source or {}).get("conversation_id")
    return RecallHit(
        document_id=0, passage_id=0, path="", scope="", scope_key="", snippet=content,
        score=float(score), similarity=float(similarity),
        vector=None if vsim is None else float(vsim), lexical=None if lex is None else float(lex),
        confidence=float(confidence), updated_at=at, kind=kind, record_id=str(record_id),
        conversation_id=None if conversation_id is None else str(conversation_id),
        session_id=session_id, source=source if kind == "fact" else None, stated_at=stated_at,
        role=role,
    )


# Vectors of facts and messages, stored by the embedding worker (memoryhub.services.passages)
# only where the row still has the text they were computed from (a fact's edit clears its
# vector and asks for a new one; the provider call takes no lock), and only on rows no other
# transaction holds (memoryhub.store._locks): the statement returns the others' records.
_STORE_RECORD_VECTORS = """
    , stored AS (
        UPDATE {table} p SET embedding = v.embedding::halfvec, embedding_provider = %(key)s
        FROM unnest(%(ids)s::uuid[], %(texts)s::text[], %(embeddings)s::text[])
            AS v(id, text, embedding)
        WHERE {tenant} AND p.id = v.id {same_text} AND p.id IN (SELECT id FROM free)
        RETURNING p.id)
    SELECT (SELECT count(*) FROM stored), ARRAY(SELECT record::text FROM busy ORDER BY 1)
"""
# A record is the fact, or the conversation a message belongs to (what the task asks for).
_RECORD_OF = {"fact": "id", "message": "conversation_id"}


def record_vectors_store(
    *, kind: str, provider: str, ids: list[str], texts: list[str], embeddings: list[str],
) -> tuple[int, list[str]]:
    """Store each vector (pgvector's text) on its fact or message (``kind``), tagged with
    ``provider``, where a fact's content is still ``texts``' one (messages never change);
    returns how many were stored, and the records (facts, or messages' conversations) of
    rows skipped because another transaction held them."""
    tenant = tenant_id()
    table = _RECORD_KINDS[kind][0]
    sql = people_of_rows_held(table=table, ids="%(ids)s::uuid[]", record=_RECORD_OF[kind]).rstrip()
    sql += _STORE_RECORD_VECTORS.format(
        table=table, tenant=tenant_is("p", param=_TENANT),
        same_text="AND p.content = v.text" if kind == "fact" else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, {
            "tenant": tenant, "key": provider, "ids": ids, "texts": texts,
            "embeddings": embeddings,
        })
        stored, busy = cursor.fetchone()
    return stored, list(busy)
