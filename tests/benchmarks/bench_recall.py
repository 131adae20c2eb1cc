"""``make bench-recall``: recall over HTTP on a large, multi-tenant memory; prints the figures.

1. Loads N memories (default 100,000) into a database of its own (``bench_recall``, recreated
   with ``--fresh``, else reused when it already holds the same data set): 1,000 tenants,
   10,000 end users spread over them, a heavy-tailed (Zipf) number of memories per user,
   mostly global with some session and profile memory. A user holds at most what the
   default limits allow (``max_scope_bytes`` per scope: about 3,600 memories of this size);
   what the Zipf draw gives beyond that goes to the other users. ``--unlimited`` lifts the
   cap, as if every tenant had switched the limit off (the largest user then holds 10% of
   everything). With them, ``--facts`` and ``--messages`` (default 20,000 and 80,000; the
   rows and their load: ``tests.benchmarks.recall_records``) drawn with the same weights,
   each kind capped at the same number per user, and the queries then recall over every
   source (``sources``: documents, facts, messages). Texts come from a fixed vocabulary; their
   vectors are the configured hashing provider's, computed on all cores and written with
   binary COPY as the owner role, tenant by tenant (RLS stays forced: each COPY sets
   ``app.tenant_id``), with the full-text vector computed by PostgreSQL on insert.
2. Starts gunicorn (DEBUG off, psycopg pool) and sends recall requests from several client
   processes for ``--seconds``, twice: saturated (back to back: the throughput, and latency
   that is mostly queueing for the two cores), then steady (together at ``--rate``, by
   default half the saturated throughput: latency under load with CPU to spare). Each phase
   prints latency percentiles and requests/s at the client, and, from each response's
   ``Server-Timing``, the query's embedding time, the database time and the whole request
   in the server, so that the embedding can be told apart, and the CPU the server used per
   request (gunicorn and the database, from /proc): on a machine that other work keeps
   busy, latency measures the queue for the cores far more than what a request costs.
3. Checks exactness on a sample: the vector ranking of the selector the API calls
   (``recall_rank``: every source ranked by the store, then merged) equals brute force in
   numpy over every visible passage, valid fact and message (float16 vectors, same
   formula), and each HTTP result's ``similarity`` equals the brute-force cosine.

    python -m tests.benchmarks.bench_recall [--n 100000] [--facts 20000] [--messages 80000]
        [--seconds 20] [--clients 4] [--fresh] [--unlimited] [--rate R | --rate-share 0.5]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import re
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np

from tests.benchmarks import recall_records
from tests.benchmarks.benchserver import (
    bench_env,
    gunicorn,
    machine_speed,
    manage,
    percentile,
    results_of,
    server_cpu_seconds,
)

DB_NAME = "bench_recall"
TENANTS = 1_000
END_USERS = 10_000
ZIPF_EXPONENT = 1.0  # memories per user ~ 1/rank: a few users hold thousands
SESSIONS, PROFILES = ("s-0", "s-1", "s-2"), ("p-0", "p-1")
CHUNK_TENANTS = 50  # tenants per load transaction
GLOBAL_SHARE = 0.7  # of a user's memories; the rest is session (0.2) and profile (0.1)
MEAN_MEMORY_BYTES = 92  # of memory_text()
DEFAULT_FACTS, DEFAULT_MESSAGES = 20_000, 80_000  # with the 100,000 memories: 200,000 rows
TOPICS = """
tea coffee espresso matcha vegetarian vegan gluten lactose peanuts shellfish curry pasta sushi
ramen tacos paella risotto lentils tofu salmon chicken steak salad oatmeal pancakes chocolate
lisbon porto madrid berlin paris tokyo osaka seoul toronto boston denver austin chicago nairobi
nurse teacher engineer designer lawyer chef pilot farmer architect dentist plumber editor
guitar piano violin drums cello painting pottery knitting chess climbing cycling running yoga
surfing skiing hiking swimming tennis football basketball baseball cricket rugby golf rowing
dog cat parrot hamster rabbit turtle horse goldfish daughter son husband wife sister brother
mother father grandmother grandfather cousin neighbour colleague manager birthday anniversary
wedding holiday vacation conference deadline meeting interview promotion mortgage insurance
allergy migraine asthma diabetes insomnia marathon diet budget savings pension invoice
python rust golang kotlin javascript postgres redis kubernetes docker linux windows android
novel poetry podcast documentary jazz opera techno reggae blues metal classical kpop
morning evening weekend monday friday january march june september december spring autumn
""".split()
SYLLABLES = "ka lo mi re su ta ne vi do pa ri zu mo fe ga hi ju ke la no pu ro si te wa".split()
FILLERS = ("likes", "prefers", "mentioned", "avoids", "asked about", "plans", "booked",
           "remembers", "enjoys", "dislikes", "is learning", "bought")
QUERY_OPENERS = ("what about", "does she like", "tell me about", "anything on", "remind me of",
                 "what do we know about")


def vocabulary(size: int = 2_000) -> list[str]:
    """Real topic words plus pronounceable pseudo-words for the long tail."""
    rng = random.Random(1)
    words = list(dict.fromkeys(TOPICS))
    while len(words) < size:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in words:
            words.append(word)
    return words


VOCAB = vocabulary()


def memory_text(rng: random.Random, words: Sequence[str]) -> str:
    picked = rng.sample(words, rng.randint(4, 9))
    clauses = [f"{rng.choice(FILLERS)} {a} and {b}" for a, b in zip(picked[::2], picked[1::2], strict=False)]
    return f"The user {'; '.join(clauses)}."


# --- data generation -----------------------------------------------------------------------


@dataclass
class Plan:
    tenant_of_user: np.ndarray  # user index -> tenant index
    memories_of_user: np.ndarray  # user index -> how many memories
    facts_of_user: np.ndarray | None = None  # the same for facts and messages (--facts, --messages)
    messages_of_user: np.ndarray | None = None

    def rows_of_user(self) -> np.ndarray:
        """Everything one recall over every source reads, per user."""
        return sum((a for a in (self.facts_of_user, self.messages_of_user) if a is not None),
                   self.memories_of_user)


def user_cap() -> int:
    """The most memories one user can hold under the default limits.

    ``max_scope_bytes`` bounds each (scope, scope key); the global scope, which gets
    ``GLOBAL_SHARE`` of a user's memories, fills first. 10% headroom for the spread of
    text lengths and scope draws.
    """
    from tenants.models import DEFAULT_LIMITS

    return int(0.9 * DEFAULT_LIMITS["max_scope_bytes"] / (MEAN_MEMORY_BYTES * GLOBAL_SHARE))


def plan(n: int, *, cap: int | None, facts: int = 0, messages: int = 0, seed: int = 42) -> Plan:
    """Zipf sizes; with ``cap``, what a user would hold beyond it goes to the others. Facts
    and messages follow the same weights (who holds many memories says much and is known
    well), each kind capped at ``cap`` rows per user too."""
    rng = np.random.default_rng(seed)
    tenant_of_user = rng.integers(0, TENANTS, END_USERS)
    weights = 1.0 / np.arange(1, END_USERS + 1) ** ZIPF_EXPONENT
    rng.shuffle(weights)
    memories = _draw(rng, n, weights, cap)
    return Plan(tenant_of_user=tenant_of_user, memories_of_user=memories,
                facts_of_user=_draw(rng, facts, weights, cap) if facts else None,
                messages_of_user=_draw(rng, messages, weights, cap) if messages else None)


def _draw(rng: np.random.Generator, n: int, weights: np.ndarray, cap: int | None) -> np.ndarray:
    counts = rng.multinomial(n, weights / weights.sum())
    while cap is not None and (counts > cap).any():
        full = counts >= cap
        excess = int((counts[full] - cap).sum())
        counts[full] = cap
        room = np.where(full, 0.0, weights)
        counts += rng.multinomial(excess, room / room.sum())
    return counts


def _embed_chunk(texts: list[str]) -> np.ndarray:
    from memoryhub.infra.embeddings.hashing import HashingProvider

    return np.asarray(HashingProvider(dimension=384).embed(texts), dtype=np.float16)


def embed_all(texts: list[str], pool: mp.pool.Pool) -> np.ndarray:
    if not texts:
        return np.zeros((0, 384), dtype=np.float16)
    size = 500
    parts = pool.map(_embed_chunk, [texts[i:i + size] for i in range(0, len(texts), size)])
    return np.concatenate(parts)


def user_id(index: int) -> str:
    return f"user-{index:05d}"


def scope_of(rng: random.Random) -> tuple[str, str]:
    roll = rng.random()
    if roll < GLOBAL_SHARE:
        return "global", ""
    if roll < 0.9:
        return "session", rng.choice(SESSIONS)
    return "profile", rng.choice(PROFILES)


def reserve_ids(cursor, table: str, count: int) -> int:
    """Take ``count`` ids from the table's sequence; returns the first."""
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    sequence = cursor.fetchone()[0]
    cursor.execute("SELECT nextval(%s)", [sequence])
    first = cursor.fetchone()[0]
    cursor.execute("SELECT setval(%s, %s)", [sequence, first + count])
    return first


def load(layout: Plan, tenant_ids: list[int], provider_key: str) -> dict[str, float]:
    """Bulk-load the plan as the owner role; returns timings."""
    from django.db import connections
    from pgvector.psycopg import register_vector

    n = int(layout.memories_of_user.sum())
    facts_of = _or_zeros(layout.facts_of_user)
    messages_of = _or_zeros(layout.messages_of_user)
    records_total = int(facts_of.sum() + messages_of.sum())
    records_rng = random.Random(11)  # its own: the documents stay those of a plan without records
    started = time.perf_counter()
    embed_seconds = 0.0
    owner = connections["migrate"]
    owner.ensure_connection()
    conn = owner.connection
    register_vector(conn)
    rng = random.Random(7)
    now = datetime.now(UTC)
    users_by_tenant: dict[int, list[int]] = defaultdict(list)
    for index, tenant_index in enumerate(layout.tenant_of_user):
        users_by_tenant[int(tenant_index)].append(index)
    with conn.cursor() as cursor:
        user_base = reserve_ids(cursor, "memoryhub_enduser", END_USERS)
        doc_base = reserve_ids(cursor, "memoryhub_memorydocument", n)
        passage_base = reserve_ids(cursor, "memoryhub_passage", n)
        cursor.execute(
            "CREATE TEMP TABLE st_enduser (id bigint, tenant_id bigint, user_id text, "
            "memory_enabled boolean, created_at timestamptz)")
        cursor.execute(
            "CREATE TEMP TABLE st_document (id bigint, tenant_id bigint, end_user_id bigint, "
            "scope text, scope_key text, path text, description text, content text, "
            "bytes int, version int, updated_by text, confidence float8, "
            "created_at timestamptz, updated_at timestamptz)")
        cursor.execute(
            "CREATE TEMP TABLE st_passage (id bigint, tenant_id bigint, document_id bigint, "
            "end_user_id bigint, scope text, scope_key text, text text, embedding halfvec(384), "
            "created_at timestamptz)")
        for statement in recall_records.STAGING:
            cursor.execute(statement)
    next_doc = 0
    loaded_records = 0
    with mp.Pool() as pool:
        for chunk_start in range(0, TENANTS, CHUNK_TENANTS):
            chunk = range(chunk_start, min(chunk_start + CHUNK_TENANTS, TENANTS))
            rows: dict[int, tuple[list, list, list]] = {}
            texts: list[str] = []
            records = recall_records.Records()
            for tenant_index in chunk:
                users, docs, passages = [], [], []
                tenant_id = tenant_ids[tenant_index]
                for u in users_by_tenant.get(tenant_index, []):
                    end_user_id = user_base + u
                    users.append((end_user_id, tenant_id, user_id(u), True, now))
                    for _ in range(int(layout.memories_of_user[u])):
                        text = memory_text(rng, VOCAB)
                        scope, scope_key = scope_of(rng)
                        doc_id = doc_base + next_doc
                        updated = now - timedelta(days=rng.uniform(0, 720))
                        docs.append((doc_id, tenant_id, end_user_id, scope, scope_key,
                                     f"/notes/m{next_doc}.md", "", text, len(text.encode()), 1,
                                     "app", round(rng.uniform(0.5, 1.0), 2), updated, updated))
                        passages.append([passage_base + next_doc, tenant_id, doc_id, end_user_id,
                                         scope, scope_key, text, len(texts), updated])
                        texts.append(text)
                        next_doc += 1
                    recall_records.person_records(
                        records, records_rng, VOCAB, tenant_id=tenant_id,
                        end_user_id=end_user_id, facts=int(facts_of[u]),
                        messages=int(messages_of[u]), sessions=SESSIONS, now=now)
                rows[tenant_index] = (users, docs, passages)
            t0 = time.perf_counter()
            vectors = embed_all(texts + records.texts, pool)
            embed_seconds += time.perf_counter() - t0
            _copy_chunk(conn, rows, tenant_ids, vectors, provider_key,
                        records=records, records_offset=len(texts))
            loaded_records += len(records.facts) + len(records.messages)
            print(f"\r  loaded {next_doc:,}/{n:,} memories, {loaded_records:,}/{records_total:,} "
                  f"facts and messages ({time.perf_counter() - started:.0f} s)", end="", flush=True)
    print()
    with conn.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"seconds": time.perf_counter() - started, "embed_seconds": embed_seconds}


def _or_zeros(counts: np.ndarray | None) -> np.ndarray:
    return np.zeros(END_USERS, dtype=np.int64) if counts is None else counts


def _copy_chunk(conn, rows, tenant_ids, vectors, provider_key: str, *,
                records: recall_records.Records, records_offset: int) -> None:
    """COPY a chunk into staging tables, then INSERT ... SELECT tenant by tenant.

    COPY cannot write into a table with row-level security, and RLS stays forced for the
    owner: each INSERT runs with that tenant's ``app.tenant_id``.
    """
    from pgvector import HalfVector

    with conn.transaction(), conn.cursor() as cursor:  # set_config(..., true) lasts until commit
        with cursor.copy("COPY st_enduser FROM STDIN") as copy:
            for users, _, _ in rows.values():
                for row in users:
                    copy.write_row(row)
        with cursor.copy("COPY st_document FROM STDIN") as copy:
            for _, docs, _ in rows.values():
                for row in docs:
                    copy.write_row(row)
        with cursor.copy("COPY st_passage FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int8", "int8", "int8", "text", "text", "text",
                            "halfvec", "timestamptz"])
            for _, _, passages in rows.values():
                for row in passages:
                    copy.write_row([*row[:7], HalfVector(vectors[row[7]]), row[8]])
        recall_records.copy_records(cursor, records, vectors, records_offset)
        for tenant_index in rows:
            tenant_id = tenant_ids[tenant_index]
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            cursor.execute(
                """INSERT INTO memoryhub_enduser (id, tenant_id, user_id, memory_enabled, created_at)
                   SELECT * FROM st_enduser WHERE tenant_id = %s""", [tenant_id])
            cursor.execute(
                """INSERT INTO memoryhub_memorydocument (id, tenant_id, end_user_id, scope,
                       scope_key, path, description, content, bytes, version, updated_by,
                       confidence, created_at, updated_at)
                   SELECT * FROM st_document WHERE tenant_id = %s""", [tenant_id])
            cursor.execute(
                """INSERT INTO memoryhub_passage (id, tenant_id, document_id, end_user_id, scope,
                       scope_key, document_version, ordinal, start, "end", text, search,
                       embedding, embedding_provider, created_at)
                   SELECT id, tenant_id, document_id, end_user_id, scope, scope_key, 1, 0, 0,
                          length(text), text, to_tsvector('simple', text), embedding, %s,
                          created_at
                   FROM st_passage WHERE tenant_id = %s""", [provider_key, tenant_id])
            recall_records.insert_records(cursor, tenant_id, provider_key)
        cursor.execute("TRUNCATE st_enduser, st_document, st_passage, st_conversation, st_fact, "
                       "st_message")


# --- the HTTP run --------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    key: str
    user_id: str
    body: dict


def queries(layout: Plan, keys: dict[int, str], count: int, sources: list[str],
            seed: int = 3) -> list[Query]:
    """Half uniform over users with memories, half weighted by how much they hold (every
    source's rows counted)."""
    rng = random.Random(seed)
    sizes = layout.rows_of_user()
    holders = [u for u in range(END_USERS) if sizes[u] > 0]
    weights = [int(sizes[u]) for u in holders]
    picked = [rng.choice(holders) if i % 2 else rng.choices(holders, weights)[0]
              for i in range(count)]
    result = []
    for u in picked:
        words = rng.sample(VOCAB, 2)
        body = {"query": f"{rng.choice(QUERY_OPENERS)} {words[0]} and {words[1]}?",
                "limit": 10, "session_id": rng.choice(SESSIONS), "profile": rng.choice(PROFILES),
                "sources": sources}
        result.append(Query(keys[int(layout.tenant_of_user[u])], user_id(u), body))
    return result


_TIMING = re.compile(r"(\w+);dur=([\d.]+)")


def client_loop(
    base: str, work: list[Query], seconds: float, out: mp.Queue, interval: float | None = None,
) -> None:
    """One keep-alive connection; each request carries its tenant's key.

    With ``interval``, requests are sent on a fixed schedule instead of back to back, and
    each latency counts from its scheduled time, so a slow answer that delays the next
    request is not hidden (coordinated omission).
    """
    latencies, embeds, searches, apps, errors = [], [], [], [], 0
    deadline = time.monotonic() + seconds
    i = 0
    scheduled = time.perf_counter()
    with httpx.Client(base_url=base, timeout=30) as client:
        while time.monotonic() < deadline:
            query = work[i % len(work)]
            i += 1
            if interval is not None:
                scheduled += interval
                time.sleep(max(0.0, scheduled - time.perf_counter()))
                started = scheduled
            else:
                started = time.perf_counter()
            try:
                response = client.post(f"/api/v1/users/{query.user_id}/recall", json=query.body,
                                       headers={"Authorization": f"Bearer {query.key}"})
                response.raise_for_status()
            except httpx.HTTPError:
                errors += 1
                continue
            latencies.append((time.perf_counter() - started) * 1000)
            timing = dict(_TIMING.findall(response.headers.get("Server-Timing", "")))
            embeds.append(float(timing.get("embed", "nan")))
            searches.append(float(timing.get("search", "nan")))
            apps.append(float(timing.get("app", "nan")) - embeds[-1])
    out.put((latencies, embeds, searches, apps, errors))


def warm_up(base: str, work: list[Query]) -> None:
    with httpx.Client(base_url=base, timeout=30) as warm:  # provider caches, pool, plans
        for query in work[:100]:
            warm.post(f"/api/v1/users/{query.user_id}/recall", json=query.body,
                      headers={"Authorization": f"Bearer {query.key}"})


def run_http(
    base: str, work: list[Query], clients: int, seconds: float, rate: float | None = None,
) -> dict:
    """``clients`` processes for ``seconds``: back to back, or together at ``rate`` requests/s."""
    interval = clients / rate if rate else None
    queue: mp.Queue = mp.Queue()
    procs = [mp.Process(target=client_loop, args=(base, work[i::clients], seconds, queue, interval))
             for i in range(clients)]
    for proc in procs:
        proc.start()
    results = results_of(queue, procs)
    merged: dict = {"latency": [], "embed": [], "search": [], "app": [], "errors": 0}
    for latencies, embeds, searches, apps, errors in results:
        merged["latency"] += latencies
        merged["embed"] += embeds
        merged["search"] += searches
        merged["app"] += apps
        merged["errors"] += errors
    merged["net"] = [t - e for t, e in zip(merged["latency"], merged["embed"], strict=True)]
    return merged


def report(merged: dict, seconds: float, server_cpu: float) -> None:
    requests = len(merged["latency"])
    print(f"{requests:,} requests in {seconds:.0f} s: {requests / seconds:,.1f} "
          f"requests/s, {merged['errors']} errors; the server's CPU (gunicorn and the database, "
          f"from /proc) {1000 * server_cpu / max(requests, 1):.1f} ms per request")
    print(summary("latency at the client", merged["latency"]))
    print(summary("  query embedding (Server-Timing)", merged["embed"]))
    print(summary("  database search (Server-Timing)", merged["search"]))
    print(summary("server, without the embedding", merged["app"]))
    print(summary("latency without the embedding", merged["net"]))


# --- exactness -----------------------------------------------------------------------------


def check_exactness(base: str, sample: list[Query]) -> tuple[int, int, float]:
    """(queries whose vector top-10 equals brute force, queries, worst HTTP similarity error).

    The server's side is ``recall_rank``, what the API's recall calls (every source of the
    query ranked by the store, then merged), without query terms so that the vector alone
    ranks; brute force scores every visible passage, valid fact and message in numpy."""
    from django.utils import timezone

    from memoryhub.infra.embeddings import get_provider, provider_key
    from memoryhub.models import EndUser
    from memoryhub.selectors.recall import ranking_settings, recall_rank
    from memoryhub.store.recall import Visibility
    from tenants.context import tenant_context
    from tenants.services import api_key_parse

    provider = get_provider()
    key = provider_key(provider)
    ranking = ranking_settings()
    equal, worst = 0, 0.0
    for query in sample:
        tenant_id = api_key_parse(query.key).tenant_id
        vector = provider.embed([query.body["query"]])[0]
        q = np.asarray(vector, dtype=np.float16).astype(np.float64)
        now = timezone.now()
        sources = query.body["sources"]
        with tenant_context(tenant_id):
            end_user = EndUser.objects.get(user_id=query.user_id)
            session, profile = query.body["session_id"], query.body["profile"]
            hits = recall_rank(
                visibility=Visibility(end_user.pk, session, profile), query_vector=vector,
                provider=key, terms=[], limit=10, threshold=None, ranking=ranking, now=now,
                sources=sources, include_invalid=False,
            )
            scored, paths = _brute_documents(end_user, session, profile, q, now,
                                             ranking.recency_weight)
            if set(sources) - {"documents"}:
                scored += recall_records.brute_records(end_user, q, now, ranking.recency_weight)
        brute = sorted(scored, key=lambda item: (-item.score, -item.at, item.key))[:10]
        if [_hit_key(h) for h in hits] == [b.key for b in brute] or _same_up_to_ties(hits, brute):
            equal += 1
        response = httpx.post(f"{base}/api/v1/users/{query.user_id}/recall",
                              json={**query.body, "relaxed": True},
                              headers={"Authorization": f"Bearer {query.key}"}, timeout=30)
        cosines = {item.key: item.cosine for item in scored}
        for result in response.json()["results"]:
            found = (("document", paths[result["path"]]) if result["kind"] == "document"
                     else (result["kind"], result["id"]))
            worst = max(worst, abs(result["similarity"] - round(cosines[found], 4)))
    return equal, len(sample), worst


SIZE_BUCKETS = (100, 1_000, 5_000)  # rows a person holds (every source), for the timings


def size_bucket(rows: int) -> str:
    low = 0
    for high in SIZE_BUCKETS:
        if rows <= high:
            return f"people with {low + 1:,}-{high:,} rows"
        low = high
    return f"people with over {low:,} rows"


def source_timings(sample: list[Query], layout: Plan) -> dict[str, list[float]]:
    """Each source's search alone (the query's terms included), in this process, one query at
    a time: milliseconds per source, to tell which one a slow recall spends its time in; and
    every source together (the server's search) by how many rows the person holds."""
    from django.utils import timezone

    from memoryhub.models import EndUser
    from memoryhub.selectors.recall import query_embed, query_terms, ranking_settings, recall_rank
    from memoryhub.store.recall import Visibility
    from tenants.context import tenant_context
    from tenants.services import api_key_parse

    ranking = ranking_settings()
    out: dict[str, list[float]] = defaultdict(list)
    for query in sample:
        vector, key, _ = query_embed(query.body["query"])
        terms = query_terms(query.body["query"], limit=ranking.max_query_terms)
        with tenant_context(api_key_parse(query.key).tenant_id):
            end_user = EndUser.objects.get(user_id=query.user_id)
            visibility = Visibility(end_user.pk, query.body["session_id"], query.body["profile"])
            for source in query.body["sources"]:
                started = time.perf_counter()
                recall_rank(visibility=visibility, query_vector=vector, provider=key, terms=terms,
                            limit=10, threshold=None, ranking=ranking, now=timezone.now(),
                            sources=[source], include_invalid=False)
                out[source].append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            recall_rank(visibility=visibility, query_vector=vector, provider=key, terms=terms,
                        limit=10, threshold=None, ranking=ranking, now=timezone.now(),
                        sources=query.body["sources"], include_invalid=False)
            rows = int(layout.rows_of_user()[int(query.user_id.removeprefix("user-"))])
            out[f"all, {size_bucket(rows)}"].append((time.perf_counter() - started) * 1000)
    buckets = [f"all, {size_bucket(high)}" for high in (*SIZE_BUCKETS, SIZE_BUCKETS[-1] + 1)]
    order = [*sample[0].body["sources"], *buckets] if sample else []
    return {name: out[name] for name in order if name in out}


def _hit_key(hit) -> tuple[str, str]:
    return (hit.kind, str(hit.document_id) if hit.kind == "document" else hit.record_id)


def _brute_documents(end_user, session: str, profile: str, q: np.ndarray, now: datetime,
                     recency_weight: float) -> tuple[list[recall_records.Scored], dict[str, str]]:
    """Each visible document by its best passage's cosine (the score of a passage without
    query terms is ``max(cosine, 0) * confidence * recency``); and the documents' ids by path."""
    from memoryhub.models import MemoryDocument, Passage

    visible = {("global", ""), ("session", session), ("profile", profile)}
    rows = list(Passage.objects.filter(end_user=end_user).values_list(
        "document_id", "scope", "scope_key", "embedding"))
    documents = {d.pk: d for d in MemoryDocument.objects.filter(end_user=end_user)}
    best: dict[int, float] = {}
    for document_id, scope, scope_key, embedding in rows:
        if (scope, scope_key) in visible:
            similarity = recall_records.cosine(q, embedding)
            best[document_id] = max(best.get(document_id, -2.0), similarity)
    scored = []
    for document_id, similarity in best.items():
        document = documents[document_id]
        score = (max(similarity, 0) * document.confidence
                 * recall_records.recency(now, document.updated_at, recency_weight))
        scored.append(recall_records.Scored(score, document.updated_at.timestamp(),
                                            ("document", str(document_id)), similarity))
    return scored, {d.path: str(pk) for pk, d in documents.items()}


def _same_up_to_ties(hits, brute: list[recall_records.Scored]) -> bool:
    """Scores equal within float error (hashing vectors can tie exactly)."""
    return len(hits) == len(brute) and all(
        abs(h.score - b.score) < 1e-5 for h, b in zip(hits, brute, strict=True))


# --- main ----------------------------------------------------------------------------------


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    import django

    from memoryhub.infra.bootstrap import bootstrap

    bootstrap()
    django.setup()


def fresh_database(env: dict[str, str]) -> None:
    """Django set up on ``env``'s database (``MEMORYHUB_DB_NAME``), emptied and migrated:
    a benchmark that starts from nothing each run."""
    setup_django(env)
    from django.conf import settings

    if settings.EMBEDDED_POSTGRES:
        from memoryhub.infra.embedded_db import Cluster, ensure_database

        ensure_database(Cluster(**settings.EMBEDDED_POSTGRES), env["MEMORYHUB_DB_NAME"],
                        recreate=True)
    manage(env, "migrate", "--no-input")


def prepare(
    layout: Plan, marker: str, fresh: bool, env: dict[str, str],
) -> tuple[list[int], dict[str, float] | None]:
    """The tenants of a loaded database (loading it first when needed)."""
    from django.conf import settings

    from memoryhub.infra.embeddings import get_provider, provider_key
    from tenants.models import Tenant

    if settings.EMBEDDED_POSTGRES and fresh:
        from memoryhub.infra.embedded_db import Cluster, ensure_database

        ensure_database(Cluster(**settings.EMBEDDED_POSTGRES), DB_NAME, recreate=True)
    manage(env, "migrate", "--no-input")
    meta = Tenant.objects.filter(slug="bench-recall-meta").first()
    if meta is not None and meta.name == marker:
        return list(Tenant.objects.filter(slug__startswith="br-").order_by("slug")
                    .values_list("id", flat=True)), None
    if meta is not None or Tenant.objects.filter(slug__startswith="br-").exists():
        raise SystemExit(f"{DB_NAME} holds another data set: run with --fresh")
    tenants = Tenant.objects.bulk_create(
        [Tenant(slug=f"br-{i:04d}", name=f"Bench {i}") for i in range(TENANTS)])
    timings = load(layout, [t.id for t in tenants], provider_key(get_provider()))
    Tenant.objects.create(slug="bench-recall-meta", name=marker)
    return [t.id for t in tenants], timings


def api_keys(tenant_ids: list[int], needed: set[int]) -> dict[int, str]:
    from tenants.models import Tenant
    from tenants.services import api_key_create

    tenants = Tenant.objects.in_bulk([tenant_ids[i] for i in needed])
    return {i: api_key_create(tenant=tenants[tenant_ids[i]], name="bench-recall",
                              permissions=["memory"]).plaintext for i in needed}


def summary(name: str, values: list[float]) -> str:
    return (f"{name:<46} p50 {percentile(values, 50):8.2f}  p95 {percentile(values, 95):8.2f}  "
            f"p99 {percentile(values, 99):8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="memories (documents) to load")
    parser.add_argument("--facts", type=int, default=DEFAULT_FACTS, help="facts to load")
    parser.add_argument("--messages", type=int, default=DEFAULT_MESSAGES,
                        help="messages to load (in conversations)")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--exactness-sample", type=int, default=200)
    parser.add_argument("--rate", type=float, default=0,
                        help="requests/s of the steady phase (default: --rate-share of saturation)")
    parser.add_argument("--rate-share", type=float, default=0.5,
                        help="the steady phase's rate as a share of the saturated throughput")
    parser.add_argument("--fresh", action="store_true", help="drop and reload the database")
    parser.add_argument("--unlimited", action="store_true",
                        help="no cap per user: as if every tenant had switched max_scope_bytes off")
    args = parser.parse_args()

    env = bench_env(DB_NAME)
    setup_django(env)
    cap = None if args.unlimited else user_cap()
    layout = plan(args.n, cap=cap, facts=args.facts, messages=args.messages)
    limits = "no limits" if cap is None else f"at most {cap:,} of each kind per user"
    print(f"preparing {DB_NAME} with {args.n:,} memories, {args.facts:,} facts and "
          f"{args.messages:,} messages ({limits}) ...", flush=True)
    marker = f"bench-recall n={args.n} cap={cap}"
    if args.facts or args.messages:
        marker += f" facts={args.facts} messages={args.messages}"
    tenant_ids, timings = prepare(layout, marker, args.fresh, env)
    counts = layout.rows_of_user()
    if timings:
        print(f"loaded in {timings['seconds']:.0f} s "
              f"(of which embedding {timings['embed_seconds']:.0f} s on {os.cpu_count()} cores)")
    else:
        print("reusing the loaded database (--fresh reloads it)")
    print(f"{TENANTS:,} tenants, {END_USERS:,} end users; rows per user (memories, facts and "
          f"messages): median {int(np.median(counts))}, p99 {int(np.percentile(counts, 99))}, "
          f"max {int(counts.max())}")
    sources = ["documents"] + [name for name, count in (("facts", args.facts),
                                                         ("messages", args.messages)) if count]
    print(f"recall over sources {sources}")

    print(machine_speed(env), flush=True)
    needed = {int(layout.tenant_of_user[u]) for u in range(END_USERS) if counts[u] > 0}
    keys = api_keys(tenant_ids, needed)
    work = queries(layout, keys, 4_000, sources)
    sample = work[: args.exactness_sample]
    with gunicorn(env, workers=args.workers, threads=args.threads) as base:
        warm_up(base, work)
        print(f"\nsaturated: {args.clients} clients back to back for {args.seconds:.0f} s "
              f"against gunicorn {args.workers} workers x {args.threads} threads", flush=True)
        cpu = server_cpu_seconds(env, base)
        saturated = run_http(base, work, args.clients, args.seconds)
        report(saturated, args.seconds, server_cpu_seconds(env, base) - cpu)
        rate = args.rate or round(args.rate_share * len(saturated["latency"]) / args.seconds)
        print(f"\nsteady: {args.clients} clients sending {rate:,.0f} requests/s together "
              f"for {args.seconds:.0f} s (latency from each request's scheduled time)", flush=True)
        cpu = server_cpu_seconds(env, base)
        steady = run_http(base, work, args.clients, args.seconds, rate=rate)
        report(steady, args.seconds, server_cpu_seconds(env, base) - cpu)
        print("\nchecking exactness against brute force ...", flush=True)
        equal, total, worst = check_exactness(base, sample)
    print("\nthe search one query at a time in this process (the sample): each source alone, "
          "then all of them by the person's size")
    for source, timings in source_timings(sample, layout).items():
        print(summary(f"  {source} ({len(timings)})", timings))
    print(f"exactness: {equal}/{total} sampled queries rank like brute force (top 10); "
          f"largest |similarity - brute-force cosine| over HTTP: {worst:.5f}")


if __name__ == "__main__":
    main()
