"""``make bench-facts``: facts end to end through gunicorn and a real Celery worker on Redis.

1. Capture to searchable fact: one message ("I live in <city>.") is captured for a new
   person, then recall (``sources: ["facts"]``) is polled every 10 ms until it returns the
   fact the rules extractor learnt from it; the time from the capture's request to that
   answer, p50/p95 over ``--latency-samples`` people. It includes the augmentation debounce
   (``AUGMENTATION_DEBOUNCE_SECONDS``, 0.5 s by default) and the polling step.
2. Retrieval quality on ``tests/benchmarks/data/recall_quality.json`` (written for this
   benchmark): three people's conversations are captured through the API; once the worker
   has learnt from and embedded them, each question (whose answer is one known message) is
   asked with ``sources: ["facts", "messages"]`` (relaxed: the ranking, not the threshold).
   A question counts as found at k when one of the first k results is the answer message or
   a fact whose source names it. The same questions are ranked by plain BM25 (k1 1.2, b 0.75,
   lower-cased word tokens) over the same person's messages; both recall@k are printed.
   What it measures: whether recall puts the message (or what was learnt from it) that
   answers a question near the top, with this deployment's embedding provider; a small
   set, so one question is about 4 points.
3. The near-duplicate threshold: the cosine similarity of the pairs in
   ``near_duplicates`` (same fact in other words) and ``distinct`` (same type, another fact)
   of that file, with the configured provider, and how many of each ``AUGMENTATION_MERGE_
   SIMILARITY`` would merge.

    python -m tests.benchmarks.bench_facts [--latency-samples 40]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

from tests.benchmarks.bench_recall import fresh_database
from tests.benchmarks.benchserver import (
    bench_env,
    gunicorn,
    machine_speed,
    percentile,
    start_worker,
)

DB_NAME = "bench_facts"
DATA = Path(__file__).parent / "data" / "recall_quality.json"
KS = (1, 3, 5)
CITIES = ("Lisbon", "Porto", "Madrid", "Berlin", "Paris", "Tokyo", "Osaka", "Seoul", "Denver",
          "Austin", "Boston", "Nairobi", "Toronto", "Chicago", "Oslo", "Prague")


def capture(client: httpx.Client, user: str, messages: list[dict], session: str = "s1") -> dict:
    response = client.post(f"/api/v1/users/{user}/sessions/{session}/messages",
                           json={"messages": messages})
    response.raise_for_status()
    return response.json()


def recall(client: httpx.Client, user: str, query: str, sources: list[str], limit: int = 10) -> list:
    response = client.post(f"/api/v1/users/{user}/recall", json={
        "query": query, "sources": sources, "limit": limit, "relaxed": True})
    response.raise_for_status()
    return response.json()["results"]


def capture_to_fact(client: httpx.Client, samples: int) -> list[float]:
    stamp = int(time.time())
    latencies = []
    for i in range(samples):
        user, city = f"lat-{stamp}-{i}", CITIES[i % len(CITIES)]
        started = time.perf_counter()
        capture(client, user, [{"role": "user", "content": f"I live in {city}."}])
        while True:
            if any(r["kind"] == "fact" and city in r["snippet"]
                   for r in recall(client, user, city, ["facts"])):
                break
            if time.perf_counter() - started > 30:
                raise SystemExit(f"no fact after 30 s for {user}")
            time.sleep(0.01)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def bm25_rank(query: str, documents: dict[str, str], k1: float = 1.2, b: float = 0.75) -> list[str]:
    """Plain Okapi BM25 of ``documents`` (id -> text) for ``query``, best first."""
    bags = {pk: Counter(tokens(text)) for pk, text in documents.items()}
    n = len(bags)
    average = sum(sum(bag.values()) for bag in bags.values()) / max(n, 1)
    frequency = Counter(term for bag in bags.values() for term in bag)
    scores = {}
    for pk, bag in bags.items():
        length = sum(bag.values())
        score = 0.0
        for term in set(tokens(query)):
            if term not in bag:
                continue
            idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = bag[term]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        scores[pk] = score
    return sorted(scores, key=lambda pk: -scores[pk])


def quality(client: httpx.Client, data: dict, tenant_id: int) -> tuple[dict, dict, int]:
    from django.db.models import F

    from memoryhub.models import Conversation, Message
    from tenants.context import tenant_context

    stamp = int(time.time())
    message_of: dict[tuple[str, str], str] = {}  # (person, client id) -> message id
    texts: dict[str, dict[str, str]] = {}
    users = {person: f"q-{stamp}-{person}" for person in data["people"]}
    for person, messages in data["people"].items():
        capture(client, users[person], messages)
    total = sum(len(messages) for messages in data["people"].values())

    def settled() -> bool:
        """every message embedded, every conversation's cursor at its end"""
        with tenant_context(tenant_id):
            mine = Message.objects.filter(end_user__user_id__in=list(users.values()))
            pending = Conversation.objects.filter(end_user__user_id__in=list(users.values()),
                                                  augmented_seq__lt=F("message_count"))
            return mine.filter(embedding__isnull=False).count() == total and not pending.exists()

    deadline = time.monotonic() + 60
    while not settled():
        if time.monotonic() > deadline:
            raise SystemExit("the worker did not learn from and embed the data set in 60 s")
        time.sleep(0.1)
    for person, user in users.items():
        listed = client.get(f"/api/v1/users/{user}/sessions/s1/messages?limit=100").json()
        texts[person] = {}
        for message in listed["messages"]:
            message_of[(person, message["client_id"])] = message["id"]
            texts[person][message["id"]] = message["content"]
    found = {k: 0 for k in KS}
    found_bm25 = {k: 0 for k in KS}
    for question in data["questions"]:
        person, answer = question["user"], message_of[(question["user"], question["answer"])]
        results = recall(client, users[person], question["question"], ["facts", "messages"],
                         limit=max(KS))
        named = [r["id"] if r["kind"] == "message" else
                 (answer if answer in (r["source"] or {}).get("message_ids", []) else r["id"])
                 for r in results]
        ranked = bm25_rank(question["question"], texts[person])
        for k in KS:
            found[k] += answer in named[:k]
            found_bm25[k] += answer in ranked[:k]
    return found, found_bm25, len(data["questions"])


def near_duplicates(data: dict) -> None:
    from django.conf import settings

    from memoryhub.infra.embeddings import get_provider, provider_key

    provider = get_provider()
    threshold = settings.AUGMENTATION_MERGE_SIMILARITY
    print(f"\nnear-duplicate merge ({provider_key(provider)}, threshold {threshold}):")
    for name in ("near_duplicates", "distinct"):
        similarities = []
        for a, b in data[name]:
            x, y = (np.asarray(v, dtype=np.float64) for v in provider.embed([a, b]))
            similarities.append(float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))))
        merged = sum(s >= threshold for s in similarities)
        print(f"  {name:<16} similarity min {min(similarities):.3f} median "
              f"{float(np.median(similarities)):.3f} max {max(similarities):.3f}; "
              f"{merged}/{len(similarities)} would merge")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-samples", type=int, default=40)
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    env = bench_env(DB_NAME)
    env["API_RATE_LIMIT"] = ""
    fresh_database(env)
    from django.conf import settings

    from tenants.models import Tenant
    from tenants.services import api_key_create

    tenant = Tenant.objects.create(slug="bench-facts", name="Bench facts")
    key = api_key_create(tenant=tenant, name="bench-facts", permissions=["memory"]).plaintext
    print(machine_speed(env), flush=True)
    worker = start_worker(env, "bench-facts-worker.log")
    try:
        with gunicorn(env, workers=2, threads=2) as base, httpx.Client(
                base_url=base, timeout=30, headers={"Authorization": f"Bearer {key}"}) as client:
            latencies = capture_to_fact(client, args.latency_samples)
            print(f"capture to searchable fact (rules extractor, real worker, {len(latencies)} "
                  f"people): p50 {percentile(latencies, 50):.0f} ms, "
                  f"p95 {percentile(latencies, 95):.0f} ms, max {max(latencies):.0f} ms "
                  f"(debounce {settings.AUGMENTATION_DEBOUNCE_SECONDS} s included)")
            found, found_bm25, total = quality(client, data, tenant.id)
    finally:
        worker.terminate()
        worker.wait(timeout=15)
    print(f"\nretrieval quality, {total} questions over {len(data['people'])} people's messages:")
    for k in KS:
        print(f"  recall@{k}: facts + messages {found[k] / total:.2f} ({found[k]}/{total}), "
              f"plain BM25 over the messages {found_bm25[k] / total:.2f} ({found_bm25[k]}/{total})")
    near_duplicates(data)
    os.environ.pop("MEMORYHUB_DB_NAME", None)


if __name__ == "__main__":
    main()
