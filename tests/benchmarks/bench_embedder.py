"""``make bench-embedder``: the `local` embedder's speed per backend, and its quality.

1. Speed, no database work: all-MiniLM-L6-v2 (the `local` provider) on each backend:
   ``numpy`` with BLAS held to one thread and at OpenBLAS's default (a thread per core),
   ``onnx`` (onnxruntime, the graph built from the same weights) on one thread. For each:
   passages/s embedding short texts (dialogue turns of about 100 bytes, the issue's
   workload) and chunks of about 1 KB, in the provider's batches (``--batch``, the
   settings' default 64); then one query at a time (the questions of the quality set), its
   p50/p95. Figures are wall-clock on this machine while whatever else runs on it runs;
   "per CPU s" divides by this process's CPU time instead, which the neighbours move less.
   For onnx it also runs ``--processes`` processes at once (the worker's two, one thread
   each) and prints their sum: what two cores give.
2. Quality: the retrieval benchmark of ``make bench-facts`` (tests/benchmarks/
   bench_facts.py's ``quality``: three people's conversations captured over HTTP, questions
   answered through recall, recall@k) once with ``hashing`` and once with ``local``, each
   through its own gunicorn and real Celery worker on Redis.

    python -m tests.benchmarks.bench_embedder [--seconds 4] [--batch 64] [--processes 2]
        [--skip-quality]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from tests.benchmarks.bench_facts import DATA, KS, quality
from tests.benchmarks.bench_recall import fresh_database
from tests.benchmarks.benchserver import (
    bench_env,
    gunicorn,
    machine_speed,
    percentile,
    results_of,
    start_worker,
)

DB_NAME = "bench_embedder"
# (label, LocalOnnxProvider options)
BACKENDS: list[tuple[str, dict[str, Any]]] = [
    ("numpy, BLAS default threads", {"backend": "numpy", "threads": 0}),
    ("numpy, BLAS 1 thread", {"backend": "numpy", "threads": 1}),
    ("onnx, 1 thread", {"backend": "onnx", "threads": 1}),
]


def corpora(data: dict) -> tuple[list[str], list[str], list[str]]:
    """Short passages (consecutive turns of the quality set's conversations joined to about
    100 bytes), ~1 KB chunks (turns joined to just under 1,024 bytes), and the questions."""
    turns = [m["content"] for messages in data["people"].values() for m in messages]

    def joined(start: int, step: int, size: int) -> str:
        text, i = "", start
        while len((text + " " + turns[i % len(turns)]).strip().encode()) <= size:
            text = (text + " " + turns[i % len(turns)]).strip()
            i += step
        return text or turns[start % len(turns)][:size]

    # Different strides give different neighbours: distinct texts, not one repeated.
    short = [joined(i, step, 120) for step in (1, 7, 11) for i in range(len(turns))]
    long = [joined(i, step, 1023) for step in (1, 7) for i in range(len(turns))]
    return short, long, [q["question"] for q in data["questions"]]


def throughput(embed: Callable[[list[str]], Any], texts: list[str], seconds: float
               ) -> tuple[float, float]:
    """(passages per wall-clock second, per CPU second of this process) over `seconds`."""
    embed(texts[:8])  # warm: first-call allocations
    started, cpu, done = time.perf_counter(), time.process_time(), 0
    while time.perf_counter() - started < seconds:
        embed(texts)
        done += len(texts)
    return done / (time.perf_counter() - started), done / max(time.process_time() - cpu, 1e-9)


def query_latency(embed: Callable[[list[str]], Any], queries: Sequence[str],
                  rounds: int = 5) -> tuple[list[float], list[float]]:
    """Milliseconds per query embedded alone: (wall clock, this process's CPU)."""
    embed([queries[0]])
    wall, cpu = [], []
    for _ in range(rounds):
        for query in queries:
            started, cpu_started = time.perf_counter(), time.process_time()
            embed([query])
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
    return wall, cpu


def _provider(options: dict[str, Any], batch: int) -> Any:
    from memoryhub.infra.embeddings.local import LocalOnnxProvider

    return LocalOnnxProvider(batch_size=batch, **options)


def _parallel_run(options: dict[str, Any], batch: int, texts: list[str], seconds: float,
                  start: Any, queue: mp.Queue) -> None:
    provider = _provider(options, batch)
    provider.embed(texts[:8])
    start.wait()  # every process loaded: they embed at the same time
    queue.put(throughput(provider.embed, texts, seconds))


def parallel(options: dict[str, Any], batch: int, texts: list[str], seconds: float,
             processes: int) -> tuple[float, float]:
    """Passages/s summed over `processes` processes embedding at once (spawned: each its
    own runtime, as the worker's processes): per wall-clock and per CPU second."""
    context = mp.get_context("spawn")
    start, queue = context.Barrier(processes), context.Queue()
    procs = [context.Process(target=_parallel_run,
                             args=(options, batch, texts, seconds, start, queue))
             for _ in range(processes)]
    for proc in procs:
        proc.start()
    rates = results_of(queue, procs)
    return sum(wall for wall, _ in rates), sum(cpu for _, cpu in rates)


def speed(args: argparse.Namespace, short: list[str], long: list[str],
          queries: list[str]) -> None:
    from memoryhub.infra.embeddings import provider_key

    probe = _provider({"backend": "numpy"}, args.batch)
    tokens = {name: sum(len(e.ids) for e in probe._tokenizer.encode_batch(texts)) / len(texts)
              for name, texts in (("short", short), ("long", long), ("query", queries))}
    size = {name: sum(len(t.encode()) for t in texts) / len(texts)
            for name, texts in (("short", short), ("long", long), ("query", queries))}
    print(f"\nlocal embedder ({provider_key(probe)}), batches of up to {args.batch} "
          f"(similar lengths together), {args.seconds:.0f} s per figure:")
    print(f"  texts: short {len(short)} x {size['short']:.0f} bytes ({tokens['short']:.0f} "
          f"tokens), long {len(long)} x {size['long']:.0f} bytes ({tokens['long']:.0f} tokens), "
          f"queries {len(queries)} x {size['query']:.0f} bytes ({tokens['query']:.0f} tokens)")
    for label, options in BACKENDS:
        started = time.perf_counter()
        provider = _provider(options, args.batch)
        load = time.perf_counter() - started
        short_wall, short_cpu = throughput(provider.embed, short, args.seconds)
        long_wall, long_cpu = throughput(provider.embed, long, args.seconds)
        wall, cpu = query_latency(provider.embed, queries)
        print(f"  {label:<28} short {short_wall:6.1f}/s ({short_cpu:6.1f} per CPU s), "
              f"1 KB {long_wall:5.1f}/s ({long_cpu:5.1f} per CPU s), query p50 "
              f"{percentile(wall, 50):6.1f} ms p95 {percentile(wall, 95):6.1f} ms (CPU p50 "
              f"{percentile(cpu, 50):.1f} p95 {percentile(cpu, 95):.1f}), "
              f"load {load:.1f} s", flush=True)
    options = dict(BACKENDS[-1][1])
    short_wall, short_cpu = parallel(options, args.batch, short, args.seconds, args.processes)
    long_wall, long_cpu = parallel(options, args.batch, long, args.seconds, args.processes)
    print(f"  {BACKENDS[-1][0]}, {args.processes} processes at once, in total: short "
          f"{short_wall:.1f}/s ({short_cpu:.1f} per CPU s), 1 KB {long_wall:.1f}/s "
          f"({long_cpu:.1f} per CPU s)")


def compare_quality(env: dict[str, str], data: dict) -> None:
    from tenants.models import Tenant
    from tenants.services import api_key_create

    print(f"\nretrieval quality, {len(data['questions'])} questions over "
          f"{len(data['people'])} people's messages (make bench-facts' set):", flush=True)
    for provider in ("hashing", "local"):
        tenant = Tenant.objects.create(slug=f"bench-embedder-{provider}-{int(time.time())}",
                                       name=f"Bench embedder {provider}")
        key = api_key_create(tenant=tenant, name="bench", permissions=["memory"]).plaintext
        served = {**env, "EMBEDDINGS_PROVIDER": provider}
        worker = start_worker(served, f"bench-embedder-{provider}-worker.log")
        try:
            with gunicorn(served, workers=2, threads=2) as base, httpx.Client(
                    base_url=base, timeout=60,
                    headers={"Authorization": f"Bearer {key}"}) as client:
                found, found_bm25, total = quality(client, data, tenant.id)
        finally:
            worker.terminate()
            worker.wait(timeout=15)
        print(f"  {provider:<8} " + ", ".join(
            f"recall@{k} {found[k] / total:.2f} ({found[k]}/{total})" for k in KS), flush=True)
    print("  plain BM25 over the messages: " + ", ".join(
        f"recall@{k} {found_bm25[k] / total:.2f}" for k in KS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    env = bench_env(DB_NAME)
    fresh_database(env)
    print(machine_speed(env), flush=True)
    speed(args, *corpora(data))
    if not args.skip_quality:
        compare_quality(env, data)


if __name__ == "__main__":
    main()
