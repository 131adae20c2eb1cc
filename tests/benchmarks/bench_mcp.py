"""``make bench-mcp``: what serving MCP costs. p50 of one ``memory view`` through /mcp against
the REST call, on the production server (gunicorn, 2 workers x 2 threads, DEBUG off, psycopg
pool) of a two-core machine.

One client at a time, so the figures are latencies, not throughput; the ways of asking are
interleaved in rounds, so a slow moment of a shared machine hits them all alike:

- ``rest``: ``POST /api/v1/users/{id}/memory`` from a bare-socket keep-alive client;
- ``mcp``: the same command as an MCP ``tools/call`` from the same client (one POST, the
  2025-11-25 wire, stateless: what a client sends per call once it has connected);
- ``mcp-sdk``: ``call_tool`` of the official SDK's client (2026-07-28 per-request protocol),
  its own CPU on the same two cores included.

``--server uvicorn`` runs the same figures with the whole project under an ASGI server
(uvicorn, 2 workers, Django's ASGI handler): the alternative to a2wsgi inside WSGI.

    python -m tests.benchmarks.bench_mcp [--calls 2000] [--rounds 5] [--server gunicorn|uvicorn|both]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client

from tests.benchmarks.bench_api import Client
from tests.benchmarks.benchserver import (
    bench_env,
    create_tenant,
    free_port,
    gunicorn,
    machine_speed,
    manage,
    percentile,
    purge_queue,
    serving,
)

USER = "bench-user"
VIEW = {"command": "view", "path": "/memories/notes/diet.md"}
MCP_HEADERS = b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"


@contextmanager
def uvicorn(env: dict[str, str], *, workers: int) -> Iterator[str]:
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "memoryhub.asgi:application", "--host", "127.0.0.1",
           "--port", str(port), "--workers", str(workers), "--log-level", "warning",
           "--no-access-log"]
    with serving(cmd, env, port, "uvicorn") as base:
        yield base


def timed_rest(client: Client, calls: int) -> list[float]:
    client.close()  # a fresh connection: the server drops one left idle (keep-alive timeout)
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        status, body = client.post(f"/api/v1/users/{USER}/memory", VIEW)
        out.append((time.perf_counter() - started) * 1000)
        assert status == 200 and b'"is_error":false' in body, body[:200]
    return out


def timed_mcp(client: Client, calls: int) -> list[float]:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory", "arguments": {**VIEW, "user_id": USER}}}
    client.close()
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        status, body = client.post("/mcp", request)
        out.append((time.perf_counter() - started) * 1000)
        assert status == 200 and b'"isError":false' in body, body[:200]
    return out


def timed_sdk(base: str, key: str, calls: int) -> list[float]:
    async def run() -> list[float]:
        out = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}) as http:
            async with McpClient(streamable_http_client(f"{base}/mcp", http_client=http)) as mcp:
                for _ in range(calls):
                    started = time.perf_counter()
                    result = await mcp.call_tool("memory", {**VIEW, "user_id": USER})
                    out.append((time.perf_counter() - started) * 1000)
                    assert not result.is_error, result
        return out
    return asyncio.run(run())


def measure(base: str, key: str, calls: int, rounds: int) -> dict[str, list[float]]:
    rest, mcp = Client(base, key), Client(base, key)
    mcp.head += MCP_HEADERS
    status, body = rest.post(f"/api/v1/users/{USER}/memory", {
        "command": "create", "path": VIEW["path"],
        "file_text": "".join(f"line {i}: vegetarian, no fish\n" for i in range(20))})
    assert status == 200, body
    timed_rest(rest, 200), timed_mcp(mcp, 200), timed_sdk(base, key, 50)  # warm up
    per_round = max(1, calls // rounds)
    times: dict[str, list[float]] = {"rest": [], "mcp": [], "mcp-sdk": []}
    for _ in range(rounds):
        times["rest"] += timed_rest(rest, per_round)
        times["mcp"] += timed_mcp(mcp, per_round)
        times["mcp-sdk"] += timed_sdk(base, key, per_round)
    rest.close()
    mcp.close()
    return times


def report(server: str, times: dict[str, list[float]]) -> None:
    rest_p50 = percentile(times["rest"], 50)
    print(f"\n{server}: memory view, {len(times['rest'])} calls each, one client")
    for name, values in times.items():
        p50 = percentile(values, 50)
        print(f"  {name:8} p50 {p50:6.2f} ms  p90 {percentile(values, 90):6.2f} ms  "
              f"mean {statistics.fmean(values):6.2f} ms  ({p50 - rest_p50:+.2f} ms, "
              f"x{p50 / rest_p50:.2f} of rest)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--server", choices=["gunicorn", "uvicorn", "both"], default="gunicorn")
    args = parser.parse_args()

    env = bench_env("bench_mcp")
    manage(env, "migrate", "--no-input")
    key = create_tenant(env, f"bench-{int(time.time())}")
    print(machine_speed(env), flush=True)
    if args.server in ("gunicorn", "both"):
        with gunicorn(env, workers=2, threads=2) as base:
            report("gunicorn 2 workers x 2 threads (WSGI; /mcp through a2wsgi)",
                   measure(base, key, args.calls, args.rounds))
    if args.server in ("uvicorn", "both"):
        with uvicorn(env, workers=2) as base:
            report("uvicorn 2 workers (the whole project under ASGI)",
                   measure(base, key, args.calls, args.rounds))
    purge_queue(env)


if __name__ == "__main__":
    main()
