"""``make bench-capture``: conversation capture and the history reads over HTTP against
gunicorn; prints latencies, throughput, the SQL statements per request, and the targets.

Like ``make bench`` (``tests.benchmarks.bench_api``, whose bare-socket client this uses):
concurrent client processes run for a fixed time against a production-style server
(gunicorn, psycopg pool, DEBUG off) on a benchmark database of its own. Each round runs four
phases one after the other, each with every client doing only that:

- ``capture_2``: a user message and the assistant's reply (each with the caller's ``id``, as
  SDKs send them) into a session of the client's own people;
- ``capture_20``: 20 such messages a request (a backfill, or an agent that flushes per turn);
- ``history``: ``GET .../history`` (10 conversations, the default) of a person with history;
- ``context``: ``POST .../context`` without query, with ``history: 10``, for a new session.

The readers' people are seeded once: 5 documents each (what ``make bench`` seeds) and 20
conversations of 10-40 messages, a third of them with a summary. Latencies are measured at
the client, so they include HTTP and the client's own CPU on the same two cores. Each phase
also reads the CPU the server used (gunicorn and the database cluster, from /proc): on a
machine that other work keeps busy, latency measures the queue for the cores, while the CPU
per request moves far less, and says what two idle cores would allow.

The statement counts come from one request of each kind through Django's test client in a
``manage.py shell`` against the same database (``CaptureQueriesContext``): they do not depend
on the machine, so they tell a change's effect where the timings are too noisy to.

    python -m tests.benchmarks.bench_capture [--seconds 10] [--rounds 3] [--clients 4] [--readers 40]
        [--workers 2] [--threads 2] [--show-sql]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import httpx

from tests.benchmarks import benchserver as server
from tests.benchmarks.bench_api import Client
from tests.benchmarks.bench_api import seed as seed_documents

PHASES = ("capture_2", "capture_20", "history", "context")
BATCH = {"capture_2": 2, "capture_20": 20}
CONVERSATIONS_PER_READER = 20
MESSAGES_PER_CONVERSATION = (10, 40)
# The targets on two cores (p50 in ms; messages/s in batches of 20).
TARGET_P50_MS = {"capture_2": 8.0, "history": 6.0, "context": 6.0}
TARGET_MESSAGES_PER_S = 2_000
# A new session of its own every this many capture requests: conversations of realistic size.
REQUESTS_PER_SESSION = 50

USER_LINES = (
    "Why is the build red again on the release branch?",
    "Can you book a table for four on Friday evening, somewhere vegetarian?",
    "I moved to Lisbon last week, so please change my delivery address.",
    "Summarise the design review notes from yesterday in three bullet points.",
)
ASSISTANT_LINES = (
    "The failing step is the integration suite: ReviewOrchestrator still reads "
    "ChangedFile.Patch, which the refactor renamed. I can open a fix that switches it to "
    "ChangedFile.Diff and re-runs the pipeline; it should be green in about ten minutes.",
    "I found three vegetarian places with a table for four at eight on Friday: a small "
    "Lebanese kitchen near the river, a ramen bar with a separate vegan menu, and the "
    "Italian place you liked in March. Shall I book the Italian one again?",
    "Done: your delivery address is now in Lisbon. Orders placed before today still go to "
    "the old address; I can redirect the one that ships tomorrow if you want.",
    "Decisions: keep the single queue, shard later. Risks: the migration window on Sunday. "
    "Actions: Ana writes the rollback plan, Tom measures the p99 before and after.",
)


def message_pair(rng: random.Random, tag: str) -> list[dict]:
    return [
        {"role": "user", "content": rng.choice(USER_LINES), "id": f"{tag}-u"},
        {"role": "assistant", "content": rng.choice(ASSISTANT_LINES), "id": f"{tag}-a"},
    ]


def seed_history(base: str, key: str, readers: list[int], seed_: int = 7) -> int:
    """Each reader's conversations, oldest first, a day apart; returns messages stored."""
    rng = random.Random(seed_)
    headers = {"Authorization": f"Bearer {key}"}
    started = datetime.now(UTC) - timedelta(days=CONVERSATIONS_PER_READER + 1)
    stored = 0
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        for u in readers:
            url = f"/api/v1/users/reader{u}"
            for c in range(CONVERSATIONS_PER_READER):
                at = started + timedelta(days=c)
                count = rng.randint(*MESSAGES_PER_CONVERSATION) // 2 * 2
                messages = []
                for m in range(0, count, 2):
                    for pair_message in message_pair(rng, f"r{u}-c{c}-m{m}"):
                        pair_message["created_at"] = (at + timedelta(minutes=m)).isoformat()
                        messages.append(pair_message)
                response = client.post(f"{url}/sessions/s{c}/messages",
                                       json={"messages": messages, "new_conversation": True})
                response.raise_for_status()
                stored += len(response.json()["captured"])
                if c % 3 == 0:
                    conversation_id = response.json()["conversation_id"]
                    client.put(f"{url}/conversations/{conversation_id}/summary", json={
                        "summary": "The user asked about the build and a dinner booking; "
                        "the assistant fixed the pipeline and booked the Italian place.",
                    }).raise_for_status()
    return stored


def one_request(client: Client, phase: str, user: int, rng: random.Random, tag: str,
                sent: int) -> int:
    """One request of ``phase``; returns the messages it stored (0 for reads)."""
    if phase in BATCH:
        session = f"live-{tag}-{sent // REQUESTS_PER_SESSION}"
        messages = [m for i in range(BATCH[phase] // 2)
                    for m in message_pair(rng, f"{tag}-{sent}-{i}")]
        status, body = client.post(f"/api/v1/users/writer{user}/sessions/{session}/messages",
                                   json={"messages": messages})
        expected = 201
    elif phase == "history":
        status, body = client.get(f"/api/v1/users/reader{user}/history")
        expected = 200
    else:
        status, body = client.post(f"/api/v1/users/reader{user}/context",
                                   json={"session_id": f"new-{tag}", "history": 10})
        expected = 200
    if status != expected:
        raise RuntimeError(f"{phase}: {status} {body[:200]!r}")
    if phase in BATCH:
        return len(json.loads(body)["captured"])
    return 0


def client_loop(base: str, key: str, phase: str, users: list[int], seconds: float, seed_: int,
                out: mp.Queue) -> None:
    rng = random.Random(seed_)
    latencies: list[float] = []
    errors = stored = 0
    tag = f"c{seed_}"
    client = Client(base, key)
    cpu_started = time.process_time()
    deadline = time.monotonic() + seconds
    sent = 0
    while time.monotonic() < deadline:
        user = users[sent % len(users)]
        sent += 1
        started = time.perf_counter()
        try:
            stored += one_request(client, phase, user, rng, tag, sent)
        except Exception:  # counted and reported
            errors += 1
            client.close()
            client = Client(base, key)
            continue
        latencies.append((time.perf_counter() - started) * 1000)
    out.put((latencies, errors, stored, time.process_time() - cpu_started))


def run_phase(base: str, key: str, phase: str, users: list[int], clients: int, seconds: float,
              seed_: int) -> list:
    return server.run_clients(
        client_loop, lambda i: (base, key, phase, users[i::clients], seconds, seed_ + i), clients)


Figures = dict[str, float]


def phase_figures(results: list, seconds: float, server_cpu: float) -> Figures:
    latencies = [v for r in results for v in r[0]]
    requests = max(len(latencies), 1)
    return {
        "requests": len(latencies), "errors": sum(r[1] for r in results),
        "p50": server.percentile(latencies, 50), "p99": server.percentile(latencies, 99),
        "rps": len(latencies) / seconds, "messages_per_s": sum(r[2] for r in results) / seconds,
        "client_cpu_ms": sum(r[3] for r in results) * 1000 / requests,
        "server_cpu_ms": server_cpu * 1000 / requests,
    }


def print_round(figures: dict[str, Figures]) -> None:
    print(f"{'phase':<12}{'requests':>9}{'errors':>8}{'p50 ms':>9}{'p99 ms':>9}{'req/s':>8}"
          f"{'msg/s':>8}{'CPU ms/req: server':>20}{'client':>8}")
    for phase in PHASES:
        f = figures[phase]
        messages = f"{f['messages_per_s']:>8.0f}" if phase in BATCH else f"{'':>8}"
        print(f"{phase:<12}{f['requests']:>9.0f}{f['errors']:>8.0f}{f['p50']:>9.2f}"
              f"{f['p99']:>9.2f}{f['rps']:>8.0f}{messages}{f['server_cpu_ms']:>20.2f}"
              f"{f['client_cpu_ms']:>8.2f}", flush=True)


def print_targets(rounds: list[dict[str, Figures]], clients: int) -> None:
    def median(phase: str, column: str) -> float:
        return statistics.median(r[phase][column] for r in rounds)

    print(f"\nmedian of {len(rounds)} round(s), against the targets (two cores):")
    for phase, target in TARGET_P50_MS.items():
        p50 = median(phase, "p50")
        print(f"  {phase:<11} p50 {p50:6.2f} ms  (target <= {target:.0f} ms: "
              f"{'met' if p50 <= target else 'MISSED'}); p99 {median(phase, 'p99'):6.2f} ms; "
              f"{median(phase, 'rps'):.0f} req/s")
    ingested = median("capture_20", "messages_per_s")
    print(f"  capture_20  {ingested:6.0f} messages/s  (target >= {TARGET_MESSAGES_PER_S}: "
          f"{'met' if ingested >= TARGET_MESSAGES_PER_S else 'MISSED'}); p50 "
          f"{median('capture_20', 'p50'):.2f} ms, p99 {median('capture_20', 'p99'):.2f} ms")
    print("CPU per request (server: gunicorn and the database cluster; client: the load "
          f"generator), and what two otherwise idle cores would allow at that cost, if CPU "
          f"were the only limit ({clients} clients back to back):")
    for phase in PHASES:
        cost = median(phase, "server_cpu_ms") + median(phase, "client_cpu_ms")
        rate = 2000 / cost
        messages = f", {rate * BATCH[phase]:.0f} messages/s" if phase in BATCH else ""
        print(f"  {phase:<11} server {median(phase, 'server_cpu_ms'):5.2f} ms + client "
              f"{median(phase, 'client_cpu_ms'):4.2f} ms: {rate:4.0f} req/s{messages}, "
              f"p50 about {clients * cost / 2:.1f} ms")


def statement_counts(key: str, reader: str, show_sql: bool = False) -> None:
    """Run in ``manage.py shell`` (Django set up, the bench database): one request of each
    kind through the test client, printing the round trips to the database each made (the
    transaction's BEGIN, sent with the tenant setting, and COMMIT included)."""
    from django.db import connection
    from django.test import Client as DjangoClient
    from django.test.utils import CaptureQueriesContext

    client = DjangoClient(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_HOST="127.0.0.1")
    rng = random.Random(3)
    session = f"count-{time.time_ns()}"

    def capture(count: int, tag: str) -> object:
        messages = [m for i in range(count // 2) for m in message_pair(rng, f"{tag}-{i}")]
        return client.post(f"/api/v1/users/counter/sessions/{session}/messages",
                           data={"messages": messages}, content_type="application/json")

    capture(2, f"{session}-first")  # the person and the conversation exist from here on
    requests = {
        "capture_2": lambda: capture(2, f"{session}-a"),
        "capture_20": lambda: capture(20, f"{session}-b"),
        "capture_2 retried": lambda: capture(2, f"{session}-a"),
        "history": lambda: client.get(f"/api/v1/users/{reader}/history"),
        "context": lambda: client.post(f"/api/v1/users/{reader}/context",
                                       data={"session_id": "new", "history": 10},
                                       content_type="application/json"),
    }
    print("database round trips per request (BEGIN and COMMIT included):")
    for name, send in requests.items():
        with CaptureQueriesContext(connection) as queries:
            response = send()
        assert response.status_code in (200, 201), (name, response.status_code)
        statements = [q for q in queries.captured_queries if q["sql"] not in ("BEGIN", "COMMIT")]
        print(f"  {name:<18} {len(queries.captured_queries)} ({len(statements)} statements "
              "besides BEGIN and COMMIT)")
        if show_sql:
            for query in queries.captured_queries:
                print(f"      {query['sql'][:300]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10, help="per phase")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--readers", type=int, default=40, help="people with seeded history")
    parser.add_argument("--writers", type=int, default=40, help="people capture writes to")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--show-sql", action="store_true", help="print each request's SQL")
    args = parser.parse_args()
    server.one_each_at_least(parser, args, "readers", "writers")

    env = server.bench_env("bench_capture")
    server.manage(env, "migrate", "--no-input")
    key = server.create_tenant(env, f"bench-{int(time.time())}")
    print(server.machine_speed(env), flush=True)
    rounds: list[dict[str, Figures]] = []
    with server.gunicorn(env, workers=args.workers, threads=args.threads) as base:
        readers = list(range(args.readers))
        started = time.perf_counter()
        seed_documents(base, key, readers, 5)
        stored = seed_history(base, key, readers)
        print(f"seeded {args.readers} people with 5 documents and {CONVERSATIONS_PER_READER} "
              f"conversations each ({stored} messages) in {time.perf_counter() - started:.0f} s",
              flush=True)
        print(server.manage(env, "shell", "-c", "from tests.benchmarks.bench_capture import "
                     f"statement_counts; statement_counts({key!r}, 'reader0', {args.show_sql})"),
              end="", flush=True)
        writers = list(range(args.writers))
        for round_ in range(args.rounds):
            print(f"\nround {round_ + 1} of {args.rounds}: {args.clients} clients, "
                  f"{args.seconds:.0f} s a phase against {base} (gunicorn {args.workers} "
                  f"workers x {args.threads} threads)", flush=True)
            figures = {}
            for number, phase in enumerate(PHASES):
                cpu_before = server.server_cpu_seconds(env, base)
                results = run_phase(base, key, phase, writers if phase in BATCH else readers,
                                    args.clients, args.seconds,
                                    seed_=(round_ * 10 + number) * 100)
                server_cpu = server.server_cpu_seconds(env, base) - cpu_before
                figures[phase] = phase_figures(results, args.seconds, server_cpu)
            print_round(figures)
            rounds.append(figures)
    server.purge_queue(env)
    print_targets(rounds, args.clients)


if __name__ == "__main__":
    main()
