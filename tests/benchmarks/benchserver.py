"""Start MemoryHub under gunicorn against a benchmark database, for the bench commands."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from queue import Empty
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]  # the project: manage.py and memoryhub/


def bench_env(db_name: str) -> dict[str, str]:
    return {
        **os.environ,
        "MEMORYHUB_DB_NAME": db_name,
        "DEBUG": "0",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "DB_POOL": "1",
        "LOG_LEVEL": "WARNING",
        "API_RATE_LIMIT": "",  # one key drives the whole load
        # Comparable figures whatever is installed (the settings' default, "auto", is the
        # local model where it is); `make bench-embedder` measures the local model.
        "EMBEDDINGS_PROVIDER": os.environ.get("EMBEDDINGS_PROVIDER", "hashing"),
        # Production's broker; a queue of its own that nothing consumes (see purge_queue).
        "CELERY_BROKER_URL": os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/7"),
        "CELERY_QUEUE": f"bench-{db_name}",
    }


def purge_queue(env: dict[str, str]) -> None:
    """Drop the tasks the benchmark's writes enqueued (no worker runs here): embeddings on
    the default queue, deliveries on the webhooks' queue."""
    import redis

    from memoryhub.infra.queues import webhooks_queue

    queue = env["CELERY_QUEUE"]
    redis.Redis.from_url(env["CELERY_BROKER_URL"]).delete(queue, webhooks_queue(queue))


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def create_tenant(env: dict[str, str], slug: str) -> str:
    """A fresh tenant and its memory+admin key."""
    return json.loads(manage(env, "create_tenant", slug).strip().splitlines()[-1])["api_key"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def gunicorn(env: dict[str, str], *, workers: int, threads: int) -> Iterator[str]:
    port = free_port()
    worker_class = ["--worker-class", "gthread", "--threads", str(threads)] if threads > 1 else []
    cmd = [
        sys.executable, "-m", "gunicorn", "memoryhub.wsgi:application",
        "--bind", f"127.0.0.1:{port}", "--workers", str(workers), *worker_class,
        "--log-level", "warning",
        # deploy/gunicorn.conf.py's request line: every GET the schema allows fits it (the
        # fuzz run of tests/spec/test_schemathesis.py sends them; 4,094 by default).
        "--limit-request-line", "8190",
    ]
    with serving(cmd, env, port, "gunicorn") as base:
        yield base


@contextmanager
def serving(cmd: list[str], env: dict[str, str], port: int, name: str,
            log: Path | None = None) -> Iterator[str]:
    """Run the server ``cmd`` listening on ``port`` until /healthz answers; stop it after.
    With ``log``, its output (stdout and stderr) goes to that file."""
    out = log.open("w") if log else None
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out,
                            stderr=subprocess.STDOUT if out else None)
    base = f"http://127.0.0.1:{port}"
    _server_pids[base] = proc.pid
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        else:
            raise SystemExit(f"{name} did not come up within 60 s")
        yield base
    finally:
        stop(proc)
        if out:
            out.close()


@contextmanager
def running(command: list[str], env: dict[str, str], log: Path, ready: str) -> Iterator[None]:
    """Run ``command`` (a process that serves no HTTP) until ``ready`` shows in its output,
    which goes to ``log``; stop it after."""
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    try:
        while ready not in log.read_text():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{command[0]} did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM (a graceful stop), then SIGKILL for a process still there after 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


_server_pids: dict[str, int] = {}  # base URL -> its gunicorn's master


def start_worker(env: dict[str, str], log_name: str) -> subprocess.Popen:
    """A Celery worker (2 processes, as ``make run`` starts it) on ``env``'s broker; returns
    once it is ready. Its output goes to ``log_name`` in the data directory."""
    log = Path(env.get("MEMORYHUB_DATA_DIR", "var")) / log_name
    log.parent.mkdir(parents=True, exist_ok=True)
    out = log.open("w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "--loglevel", "INFO",
         "--concurrency", "2", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env={**env, "DB_POOL": "0"}, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while " ready." not in log.read_text():
        if worker.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the worker did not start:\n{log.read_text()}")
        time.sleep(0.1)
    return worker


def server_cpu_seconds(env: dict[str, str], base: str) -> float:
    """CPU seconds the server under test has used so far: gunicorn at ``base`` (master and
    workers) and the embedded database cluster (every backend and background process).

    On a machine that other work keeps busy, latency mostly measures the queue for the
    cores; the CPU a request costs the server moves far less."""
    return tree_cpu_seconds({server_pid(base), postmaster_pid(env)})


def server_pid(base: str) -> int:
    """The main process of the server ``serving`` runs at ``base`` (its workers are its
    children)."""
    return _server_pids[base]


def postmaster_pid(env: dict[str, str]) -> int:
    """The embedded database cluster's main process (its backends are its children)."""
    cluster = Path(env.get("MEMORYHUB_DATA_DIR") or ROOT / "var").resolve() / "pgdata"
    return int((cluster / "postmaster.pid").read_text().split()[0])


def tree_cpu_seconds(roots: set[int]) -> float:
    """CPU seconds used so far by the processes ``roots`` and all their descendants. Read
    from /proc (Linux): each process's own time and that of its children that exited."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (command)"
        parents[int(entry.name)] = int(fields[1])
        ticks[int(entry.name)] = sum(int(field) for field in fields[11:15])  # u, s, cu, cs
    tree = set(roots)
    while True:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        if not more:
            break
        tree |= more
    return sum(ticks.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


def run_clients(target: Callable[..., None], args: Callable[[int], tuple], clients: int) -> list:
    """Run ``target(*args(i), queue)`` in ``clients`` processes; what each put on the queue."""
    queue: mp.Queue = mp.Queue()
    procs = [mp.Process(target=target, args=(*args(i), queue)) for i in range(clients)]
    for proc in procs:
        proc.start()
    return results_of(queue, procs)


def one_each_at_least(parser: Any, args: Any, *counts: str) -> None:
    """Stop with a usage error when one of ``counts`` (options) is under ``--clients``: the
    clients share them out, and a client with none had nothing to ask and counted every try as
    an error."""
    for name in counts:
        if getattr(args, name) < args.clients:
            parser.error(f"--{name} {getattr(args, name)} is fewer than --clients {args.clients}:"
                         f" each client needs one at least")


def results_of(queue: Any, procs: Sequence[Any]) -> list:
    """What each of ``procs`` puts on ``queue``, once all have; then they are joined.

    A client that dies before it puts its figures (a traceback, an out-of-memory kill) used to
    leave the benchmark waiting for them forever. It stops now, naming the client; its own
    traceback is printed above by multiprocessing."""
    results: list = []
    while len(results) < len(procs):
        try:
            results.append(queue.get(timeout=1))
        except Empty:
            dead = next((proc for proc in procs if proc.exitcode not in (None, 0)), None)
            if dead is not None:
                for proc in procs:
                    proc.terminate()
                raise SystemExit(f"a benchmark client ({dead.name}) exited with code "
                                 f"{dead.exitcode} before it reported; its error is above")
    for proc in procs:
        proc.join()
    return results


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def machine_speed(env: dict[str, str]) -> str:
    """How fast this machine is, for comparing figures taken on different machines.

    Shared machines differ by 2x or more in single-core speed, and latencies scale with it:
    the time of a fixed pure-Python loop, and of a ``SELECT 1`` round trip to the database.
    """
    import psycopg

    started = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    python_ms = (time.perf_counter() - started) * 1000
    settings = json.loads(manage(env, "shell", "-c", _DB_PARAMS).strip().splitlines()[-1])
    with psycopg.connect(**settings, autocommit=True) as conn:
        for _ in range(100):
            conn.execute("SELECT 1")
        rounds = 1000
        started = time.perf_counter()
        for _ in range(rounds):
            conn.execute("SELECT 1")
        round_trip_ms = (time.perf_counter() - started) * 1000 / rounds
    return (f"machine: 2M-step Python loop {python_ms:.0f} ms, "
            f"database round trip (SELECT 1) {round_trip_ms:.3f} ms")


_DB_PARAMS = (
    "import json; from django.db import connection as c; p = c.get_connection_params(); "
    "print(json.dumps({k: p[k] for k in ('dbname', 'user', 'host', 'port') if p.get(k)}))"
)
