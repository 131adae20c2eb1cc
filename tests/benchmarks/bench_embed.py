"""``make bench-embed``: memory writes to vectors, end to end, at a set rate.

Client processes PUT new documents (one passage each) over HTTP to gunicorn (2 workers,
2 threads, as ``make run`` serves) at ``--rate`` writes/s in total for ``--seconds``, each
write on its schedule (open loop: a client that falls behind sends the next one at once, and
the figures show it). A real Celery worker (2 processes, as ``make run`` starts it) embeds
the passages. This process watches the database every ``--poll`` seconds for documents
whose passage has its vector; a document's write-to-vector time runs from its request being
sent to the first poll that finds its vector, so it includes the write itself and up to one
poll step.

It runs once per broker (``--brokers``): ``default`` is what ``make run`` uses without
``CELERY_BROKER_URL`` (kombu's filesystem transport under the data directory), ``redis``
``BENCH_REDIS_URL`` (``redis://127.0.0.1:6379/7``). Each run has a tenant and a queue of
its own in the ``bench_embed`` database. Printed per broker: writes acknowledged and their
rate sustained, the write's own latency, write-to-vector p50/p95/max, how long after the
last write the last vector came, and the issue's target (p95 <= 2 s at 200 writes/s).

    python -m tests.benchmarks.bench_embed [--rate 200] [--seconds 10] [--clients 8]
        [--brokers default,redis] [--poll 0.05]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

from tests.benchmarks.bench_api import Client
from tests.benchmarks.bench_recall import fresh_database
from tests.benchmarks.benchserver import (
    ROOT,
    bench_env,
    gunicorn,
    machine_speed,
    percentile,
    postmaster_pid,
    run_clients,
    server_pid,
    start_worker,
    tree_cpu_seconds,
)

DB_NAME = "bench_embed"
REDIS_URL = "redis://127.0.0.1:6379/7"
TARGET_RATE, TARGET_P95_S = 200, 2.0
DRAIN_TIMEOUT = 600.0  # seconds after the last write before giving up on missing vectors
CONTENT = ("Alice prefers window seats on long flights, is vegetarian, and wants her "
           "meeting notes summarised in three bullet points. Note {n}.")


def writer(base: str, key: str, index: int, start: float, rate: float, count: int,
           out: mp.Queue) -> None:
    """Send ``count`` writes at ``rate``/s from the wall-clock moment ``start``; put
    ("<user>:<path>", sent, acknowledged) of every 2xx and the number of failures on ``out``."""
    client = Client(base, key)
    done: list[tuple[str, float, float]] = []
    failures = 0
    for n in range(count):
        pause = start + n / rate - time.time()
        if pause > 0:
            time.sleep(pause)
        user, path = f"u{index}", f"/notes/{n}.md"
        sent = time.time()
        try:
            status, _ = client.request("PUT", f"/api/v1/users/{user}/documents/global{path}",
                                       {"content": CONTENT.format(n=n)})
        except OSError:
            status = 0
            client.close()
        if 200 <= status < 300:
            done.append((f"{user}:{path}", sent, time.time()))
        else:
            failures += 1
    out.put((done, failures))


REREAD = 64  # passage ids: far more than the writes ever in flight at once (the clients)


class VectorWatch(threading.Thread):
    """Records when each of the tenant's documents is first seen with its vector.

    Cheap on purpose, since it shares the cores with what it measures: reading every embedded
    passage each poll cost the server a third of the writes it could take (about 120
    writes/s held against 164 with a ten times longer poll). Each poll reads only the passages
    new since the last one and the ids still waiting for a vector (the partial index
    ``passage_unembedded``); a passage known and no longer waiting has its vector (this
    benchmark writes each document once)."""

    def __init__(self, tenant_id: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.tenant_id, self.interval = tenant_id, interval
        self.seen: dict[str, float] = {}  # "u<client>:<path>" -> wall-clock time
        self.stopped = threading.Event()

    def run(self) -> None:
        from django.db import connections

        from memoryhub.models import Passage
        from tenants.context import tenant_context

        names: dict[int, str] = {}  # passage id -> "u<client>:<path>", not yet seen embedded
        known: set[int] = set()
        last_id = 0
        while not self.stopped.is_set():
            with tenant_context(self.tenant_id):
                # Ids are taken in one order and committed in another: the window re-reads
                # the last ones, where a write still in flight may land behind a newer one.
                recent = set(Passage.objects.filter(id__gt=last_id - REREAD)
                             .values_list("id", flat=True))
                for pk, user, path in (Passage.objects.filter(id__in=recent - known)
                                       .values_list("id", "end_user__user_id", "document__path")):
                    names[pk] = f"{user}:{path}"
                known |= recent
                last_id = max(recent, default=last_id)
                waiting = set(Passage.objects.filter(embedding__isnull=True)
                              .values_list("id", flat=True))
            now = time.time()
            for pk in [pk for pk in names if pk not in waiting]:
                self.seen.setdefault(names.pop(pk), now)
            self.stopped.wait(self.interval)
        connections.close_all()


@dataclass
class Figures:
    acknowledged: int
    failures: int
    rate: float  # writes/s sustained: acknowledged / (last acknowledgement - first send)
    write_ms: tuple[float, float]  # p50, p95
    vector_s: tuple[float, float, float]  # p50, p95, max
    missing: int  # writes whose vector never came within DRAIN_TIMEOUT
    drain_s: float  # last vector after the last acknowledgement
    # CPU ms per acknowledged write, by part, from the first write to the last vector.
    cpu_ms: dict[str, float] = field(default_factory=dict)
    cores: float = 0.0  # cores busy on average over that time, all parts together


def run_broker(env: dict[str, str], args: argparse.Namespace) -> Figures:
    from tenants.models import Tenant
    from tenants.services import api_key_create

    tenant = Tenant.objects.create(slug=f"bench-embed-{uuid.uuid4().hex[:8]}", name="Bench embed")
    key = api_key_create(tenant=tenant, name="bench-embed", permissions=["memory"]).plaintext
    watch = VectorWatch(tenant.id, args.poll)
    # What an interrupted run left in this broker's queue would keep the worker busy.
    manage_celery(env, "purge", "--force", "--queues", env["CELERY_QUEUE"])
    worker = start_worker(env, "bench-embed-worker.log")
    try:
        with gunicorn(env, workers=2, threads=2) as base:
            watch.start()
            warm_up(base, key, watch)
            start = time.time() + 0.5
            per_client = max(1, round(args.rate * args.seconds / args.clients))
            parts = CpuParts(web=server_pid(base), worker=worker.pid,
                             database=postmaster_pid(env))
            results = run_clients(writer, lambda i: (base, key, i, start, args.rate / args.clients,
                                                     per_client), args.clients)
            done = [row for r in results for row in r[0]]
            wanted = {name for name, _, _ in done}
            deadline = time.time() + DRAIN_TIMEOUT
            while not wanted <= watch.seen.keys() and time.time() < deadline:
                time.sleep(0.1)
            used, seconds = parts.used()
    finally:
        watch.stopped.set()
        if watch.ident is not None:  # started
            watch.join()
        worker.terminate()
        worker.wait(timeout=30)
    result = figures(done, sum(r[1] for r in results), watch.seen)
    result.cpu_ms = {part: cpu * 1000 / max(1, len(done)) for part, cpu in used.items()}
    result.cores = sum(used.values()) / seconds
    return result


class CpuParts:
    """Where the two cores go during a run: CPU seconds of the web server, the worker and
    the database cluster (each a process tree), and of the load (this process, its watcher
    thread and the client processes, which have exited by the end)."""

    def __init__(self, **roots: int) -> None:
        self.roots = roots
        self.started = time.monotonic()
        self.before = self._now()

    def _now(self) -> dict[str, float]:
        times = os.times()
        load = times.user + times.system + times.children_user + times.children_system
        return {**{part: tree_cpu_seconds({pid}) for part, pid in self.roots.items()},
                "load": load}

    def used(self) -> tuple[dict[str, float], float]:
        """CPU seconds per part since this was made, and the seconds that passed."""
        now = self._now()
        return ({part: now[part] - self.before[part] for part in now},
                time.monotonic() - self.started)


def manage_celery(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-m", "celery", "-A", "memoryhub", *args], cwd=ROOT, env=env,
                   check=True, capture_output=True)


def warm_up(base: str, key: str, watch: VectorWatch) -> None:
    """Every server and worker process connected and its embedder loaded before the clock runs."""
    client = Client(base, key)
    for n in range(20):
        client.request("PUT", f"/api/v1/users/warm/documents/global/notes/{n}.md",
                       {"content": CONTENT.format(n=n)})
    deadline = time.time() + DRAIN_TIMEOUT
    while sum(name.startswith("warm:") for name in list(watch.seen)) < 20:
        if time.time() > deadline:
            raise SystemExit("the warm-up writes got no vectors: is the worker consuming?")
        time.sleep(0.1)
    client.close()


def figures(done: list[tuple[str, float, float]], failures: int, seen: dict[str, float]) -> Figures:
    vectors, missing = [], 0
    for name, sent, _ in done:
        at = seen.get(name)
        if at is None:
            missing += 1
        else:
            vectors.append(at - sent)
    first = min(sent for _, sent, _ in done)
    last = max(acked for _, _, acked in done)
    writes_ms = [(acked - sent) * 1000 for _, sent, acked in done]
    latest = max((seen[k] for k in seen if not k.startswith("warm:")), default=last)
    return Figures(
        acknowledged=len(done), failures=failures, rate=len(done) / (last - first),
        write_ms=(percentile(writes_ms, 50), percentile(writes_ms, 95)),
        vector_s=(percentile(vectors, 50), percentile(vectors, 95), max(vectors, default=0.0)),
        missing=missing, drain_s=latest - last,
    )


def report(name: str, f: Figures, rate: float) -> None:
    # The rate that held, not the one asked: a loaded machine that could not take 200 writes/s
    # has not shown the target (5% off for the schedule's edges: first send to last answer).
    sustained = f.rate >= 0.95 * TARGET_RATE
    verdict = ("meets" if sustained and f.vector_s[1] <= TARGET_P95_S and not f.missing
               else "misses")
    print(f"{name}: {f.acknowledged} writes acknowledged ({f.failures} failed), "
          f"{f.rate:.0f} writes/s sustained (asked {rate:.0f}); write p50 {f.write_ms[0]:.0f} ms "
          f"p95 {f.write_ms[1]:.0f} ms; write-to-vector p50 {f.vector_s[0]:.2f} s, "
          f"p95 {f.vector_s[1]:.2f} s, max {f.vector_s[2]:.2f} s; last vector "
          f"{f.drain_s:.2f} s after the last write; {f.missing} without a vector; "
          f"{verdict} the target (p95 <= {TARGET_P95_S:.0f} s at {TARGET_RATE} writes/s)",
          flush=True)
    print(f"{name}: CPU ms per write: "
          + ", ".join(f"{part} {ms:.2f}" for part, ms in f.cpu_ms.items())
          + f"; {f.cores:.2f} of 2 cores busy from the first write to the last vector",
          flush=True)


def broker_env(base: dict[str, str], broker: str) -> dict[str, str]:
    env = {**base, "CELERY_QUEUE": f"bench-embed-{broker}"}
    if broker == "default":
        env.pop("CELERY_BROKER_URL", None)  # the settings' default: the filesystem transport
    else:
        env["CELERY_BROKER_URL"] = env.get("BENCH_REDIS_URL", REDIS_URL)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=TARGET_RATE, help="writes/s, in total")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--brokers", default="default,redis")
    parser.add_argument("--poll", type=float, default=0.05, help="seconds between looks")
    args = parser.parse_args()
    env = bench_env(DB_NAME)
    fresh_database(env)
    print(machine_speed(env), flush=True)
    for broker in args.brokers.split(","):
        report(broker, run_broker(broker_env(env, broker), args), args.rate)


if __name__ == "__main__":
    main()
