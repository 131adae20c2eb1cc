"""``make bench``: a mixed agent workload over HTTP against gunicorn; prints rps and latencies.

Concurrent client processes (keep-alive connections renewed every RECONNECT_EVERY requests,
a bare-socket HTTP/1.1 client to keep the client's own CPU small) run for a fixed time against a
production-style server (gunicorn, psycopg pool, DEBUG off, Redis broker) on a benchmark
database. No Celery worker runs: the embedding work a write enqueues is a separate service's
CPU in production.
Each client plays agents for several end users: index, view, create, str_replace, and
documents GET. Latencies are measured at the client, so they include HTTP and the client's
own overhead on the same two cores: the server-side figures are lower. Each round also prints
the server's CPU per request, split between the web server (gunicorn's processes) and the
database (every process of the embedded cluster): where the two cores go, which a slow
minute of the machine moves far less than the latencies.

    python -m tests.benchmarks.bench_api [--seconds 20] [--rounds 3] [--clients 4] [--users 40] [--workers 2]
        [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import random
import socket
import statistics
import time
from collections import defaultdict
from urllib.parse import urlencode

import httpx

from tests.benchmarks.benchserver import (
    bench_env,
    create_tenant,
    gunicorn,
    machine_speed,
    manage,
    one_each_at_least,
    percentile,
    postmaster_pid,
    purge_queue,
    run_clients,
    server_pid,
    tree_cpu_seconds,
)

OPS = {  # operation -> weight in the mix
    "index": 30,
    "view": 25,
    "documents_get": 15,
    "str_replace": 20,
    "create": 10,
}
READS = {"index", "view", "documents_get"}


def seed(base: str, key: str, users: list[int], docs_per_user: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        for u in users:
            for d in range(docs_per_user):
                body = {"command": "create", "path": f"/memories/notes/n{d}.md",
                        "file_text": "".join(f"line {i} counter=0\n" for i in range(20)),
                        "session_id": f"s{u}"}
                response = client.post(f"/api/v1/users/user{u}/memory", json=body)
                response.raise_for_status()


# A keep-alive connection stays with the gunicorn worker that accepted it, so with a few
# long-lived connections a run would measure the luck of that draw (3 of 4 connections on one
# worker leave that worker's GIL the bottleneck and a core idle: +-25% between runs). Each
# client opens a new connection every this many requests, like a real client population.
RECONNECT_EVERY = 50


class Client:
    """A keep-alive JSON client on a bare socket: the load generator shares the server's two
    cores, so its CPU per request is kept to a fraction of http.client's (it sends prebuilt
    bytes and reads only the status line and Content-Length, which every response carries)."""

    def __init__(self, base: str, key: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.address = (host, int(port))
        self.head = (f"Host: {host}:{port}\r\nAuthorization: Bearer {key}\r\n"
                     "Content-Type: application/json\r\n").encode()
        self.sock: socket.socket | None = None
        self.buffer = b""
        self.sent = 0

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self.buffer = None, b""

    def request(self, method: str, url: str, body: dict | None = None) -> tuple[int, bytes]:
        self.sent += 1
        if self.sent % RECONNECT_EVERY == 0:
            self.close()
        if self.sock is None:
            self.sock = socket.create_connection(self.address, timeout=30)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        payload = json.dumps(body).encode() if body is not None else b""
        self.sock.sendall(b"%s %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (
            method.encode(), url.encode(), self.head, len(payload), payload))
        return self._response()

    def _response(self) -> tuple[int, bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, rest = self.buffer.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split(b" ", 2)[1])
        length = next((int(line.split(b":", 1)[1]) for line in lines[1:]
                       if line[:15].lower() == b"content-length:"), None)
        if length is None:
            raise RuntimeError(f"a response without Content-Length: {head[:200]!r}")
        while len(rest) < length:
            rest += self._more()
        self.buffer = rest[length:]
        body = rest[:length]
        if any(line.lower() == b"connection: close" for line in lines[1:]):
            self.close()  # gunicorn's sync workers answer one request per connection
        return status, body

    def _fill(self) -> None:
        self.buffer += self._more()

    def _more(self) -> bytes:
        data = self.sock.recv(65536)  # type: ignore[union-attr]
        if not data:
            raise ConnectionError("the server closed the connection")
        return data

    def get(self, url: str, params: dict | None = None) -> tuple[int, bytes]:
        return self.request("GET", url + ("?" + urlencode(params) if params else ""))

    def post(self, url: str, json: dict) -> tuple[int, bytes]:  # like httpx
        return self.request("POST", url, json)


# str_replace really changes the text: each line's separator flips between these two, so the
# write rewrites a passage and enqueues its embedding like an agent's edit does. Each client
# has users of its own, so it knows every line's current separator.
SEPARATORS = (" ", ":")


def one_request(
    client: Client, op: str, user: int, rng: random.Random, tag: str, lines: dict,
) -> None:
    url = f"/api/v1/users/user{user}"
    doc = f"/memories/notes/n{rng.randrange(5)}.md"
    flipped = None
    if op == "index":
        response = client.get(f"{url}/memory/index", params={"session_id": f"s{user}"})
    elif op == "view":
        response = client.post(f"{url}/memory", json={"command": "view", "path": doc})
    elif op == "documents_get":
        response = client.get(f"{url}/documents/global/notes/n{rng.randrange(5)}.md")
    elif op == "str_replace":
        line = rng.randrange(20)
        old = lines.get((user, doc, line), SEPARATORS[0])
        new = SEPARATORS[1] if old == SEPARATORS[0] else SEPARATORS[0]
        response = client.post(f"{url}/memory", json={
            "command": "str_replace", "path": doc, "old_str": f"line {line}{old}",
            "new_str": f"line {line}{new}", "turn_id": f"{tag}-{rng.random()}"})
        flipped = ((user, doc, line), new)
    else:
        response = client.post(f"{url}/memory", json={
            "command": "create", "path": f"/memories/scratch/{tag}-{rng.random()}.md",
            "file_text": "a new note\n", "session_id": f"s{user}", "scope": "session",
            "turn_id": f"{tag}-{rng.random()}"})
    status, body = response
    if status != 200 or (op != "documents_get" and json.loads(body).get("is_error")):
        raise RuntimeError(f"{op}: {status} {body[:200]!r}")
    if flipped is not None:
        lines[flipped[0]] = flipped[1]


def client_loop(base: str, key: str, users: list[int], seconds: float, seed_: int, out: mp.Queue) -> None:
    rng = random.Random(seed_)
    names, weights = zip(*OPS.items(), strict=True)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    tag = f"c{seed_}"
    lines: dict = {}
    client = Client(base, key)
    cpu_started = time.process_time()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        op = rng.choices(names, weights)[0]
        started = time.perf_counter()
        try:
            one_request(client, op, rng.choice(users), rng, tag, lines)
        except Exception:  # counted and reported
            errors[op] += 1
            client.close()  # the connection may be broken
            client = Client(base, key)
            continue
        latencies[op].append((time.perf_counter() - started) * 1000)
    out.put((dict(latencies), dict(errors), time.process_time() - cpu_started))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of --seconds each; the figures vary by about 10%% between runs")
    args = parser.parse_args()
    one_each_at_least(parser, args, "users")

    env = bench_env("bench_api")
    manage(env, "migrate", "--no-input")
    key = create_tenant(env, f"bench-{int(time.time())}")
    print(machine_speed(env), flush=True)
    headlines = []
    with gunicorn(env, workers=args.workers, threads=args.threads) as base:
        for round_ in range(args.rounds):
            # Each round has end users of its own: the clients know every line of theirs.
            users = list(range(round_ * args.users, (round_ + 1) * args.users))
            print(f"\nround {round_ + 1} of {args.rounds}: seeding {args.users} users x 5 "
                  f"documents, then {args.clients} clients for {args.seconds:.0f} s against {base} "
                  f"(gunicorn {args.workers} workers x {args.threads} threads)", flush=True)
            seed(base, key, users, 5)
            cpu_before = server_cpu(env, base)
            results = run_round(base, key, users, args.clients, args.seconds, seed_=round_ * 100)
            headlines.append(report(results, args.seconds))
            report_server_cpu(cpu_before, server_cpu(env, base), results)
    purge_queue(env)
    if args.rounds > 1:
        print(f"\nmedian of {args.rounds} rounds: reads p50 {_median(headlines, 0):.2f} ms, "
              f"p99 {_median(headlines, 1):.2f} ms; writes p50 {_median(headlines, 2):.2f} ms, "
              f"p99 {_median(headlines, 3):.2f} ms; {_median(headlines, 4):.0f} requests/s")


def run_round(base: str, key: str, users: list[int], clients: int, seconds: float, seed_: int) -> list:
    return run_clients(client_loop, lambda i: (base, key, users[i::clients], seconds, seed_ + i),
                       clients)


def report(results: list, seconds: float) -> tuple[float, float, float, float, float]:
    """Print one round's figures; returns (reads p50, reads p99, writes p50, writes p99, rps)."""
    merged: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    for latencies, errs, _ in results:
        for op, values in latencies.items():
            merged[op].extend(values)
        for op, count in errs.items():
            errors[op] += count
    total = sum(len(v) for v in merged.values())
    print(f"{'operation':<14}{'requests':>10}{'errors':>8}{'p50 ms':>10}{'p99 ms':>10}")
    for op in OPS:
        values = merged.get(op, [])
        print(f"{op:<14}{len(values):>10}{errors.get(op, 0):>8}"
              f"{percentile(values, 50):>10.2f}{percentile(values, 99):>10.2f}")
    reads = [v for op in READS for v in merged.get(op, [])]
    writes = [v for op in OPS if op not in READS for v in merged.get(op, [])]
    headline = (percentile(reads, 50), percentile(reads, 99), percentile(writes, 50),
                percentile(writes, 99), total / seconds)
    print(f"reads  p50 {headline[0]:.2f} ms  p99 {headline[1]:.2f} ms")
    print(f"writes p50 {headline[2]:.2f} ms  p99 {headline[3]:.2f} ms")
    print(f"mixed throughput: {headline[4]:.0f} requests/s "
          f"({total} requests, {sum(errors.values())} errors)")
    client_cpu = sum(cpu for _, _, cpu in results)
    print(f"the load generator's own CPU: {client_cpu * 1000 / max(total, 1):.3f} ms per request")
    return headline


def server_cpu(env: dict[str, str], base: str) -> tuple[float, float]:
    """CPU seconds used so far by the web server at ``base`` and by the database cluster."""
    return tree_cpu_seconds({server_pid(base)}), tree_cpu_seconds({postmaster_pid(env)})


def report_server_cpu(before: tuple[float, float], after: tuple[float, float],
                      results: list) -> None:
    total = max(sum(len(values) for latencies, _, _ in results for values in latencies.values()), 1)
    web, database = ((end - start) * 1000 / total for start, end in zip(before, after, strict=True))
    print(f"the server's CPU: {web:.3f} ms per request in the web server, {database:.3f} ms in "
          "the database")


def _median(headlines: list[tuple[float, ...]], column: int) -> float:
    return statistics.median(h[column] for h in headlines)


if __name__ == "__main__":
    main()
