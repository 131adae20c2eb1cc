"""mem0's side of ``make bench-vs-mem0``: ``mem0.Memory`` in-process, driven over a pipe.

It runs in a virtual environment of its own (``var/bench-mem0-venv``, made by
``tests.benchmarks.bench_vs_mem0``), so mem0's dependencies never meet the project's; it
imports nothing of MemoryHub but the hashing embedder's two files (``hashing_provider``).
One process per store holds one ``Memory`` for the whole run and answers JSON lines on
stdin, one reply line each, timing every call to mem0 itself:

- ``{"op": "hello"}``: the versions, and the vector of a probe text (the parent checks it is
  MemoryHub's own);
- ``{"op": "add", "items": [[user, role, text], ...]}``: ``Memory.add`` of each turn, one at
  a time (``infer=False``); the milliseconds and the memory id of each;
- ``{"op": "search", "queries": [[user, text], ...], "limit": 10}``: ``Memory.search`` of
  each, filtered to its user; the milliseconds and the ids found, best first;
- ``{"op": "throughput", "queries": [...], "limit": 10, "clients": 4, "seconds": 5}``:
  searches from that many threads sharing the ``Memory`` (a web app's threads would) for
  that long; how many finished;
- ``{"op": "quit"}``.

    python tests/benchmarks/mem0_side.py --store qdrant|pgvector --dir DIR [--dsn CONNINFO]

No LLM is reachable here: with ``infer=False`` mem0 never calls one, but ``Memory`` builds
its LLM client at start, so it gets OpenAI's provider with a placeholder key and a base URL
on a closed local port (nothing listens on 127.0.0.1:9). Telemetry is off
(``MEM0_TELEMETRY``): it would post to PostHog and keep a second vector store.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the project: memoryhub/ beside tests/
DIMENSION = 384
PROBE = "My dog is called Pixel, a very energetic border collie."


def hashing_provider() -> Any:
    """MemoryHub's ``HashingProvider``, without the ``memoryhub`` package: importing the
    package starts Celery and reads Django's settings, which this environment has not. The
    module itself imports only numpy and ``memoryhub.infra.embeddings.base`` (by that full
    name), so both files are loaded under their own names and the import finds base there."""
    folder = ROOT / "memoryhub" / "infra" / "embeddings"
    for name in ("base", "hashing"):
        full = f"memoryhub.infra.embeddings.{name}"
        spec = importlib.util.spec_from_file_location(full, folder / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules["memoryhub.infra.embeddings.hashing"].HashingProvider(dimension=DIMENSION)


def hashing_embeddings() -> Any:
    """The hashing provider as a langchain ``Embeddings``, what mem0's ``langchain``
    embedder provider takes (imported here: only the mem0 environment has langchain)."""
    from langchain_core.embeddings import Embeddings

    provider = hashing_provider()

    class HashingEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return provider.embed(list(texts))

        def embed_query(self, text: str) -> list[float]:
            return provider.embed([text])[0]

    return HashingEmbeddings()


def memory(store: str, folder: Path, dsn: str) -> Any:
    from mem0 import Memory

    if store == "qdrant":  # mem0's default store, in qdrant-client's local (on-disk) mode
        vector_store = {"path": str(folder / "qdrant")}
    else:  # mem0's defaults otherwise (an HNSW index, a pool of 1-5 connections)
        vector_store = {"connection_string": dsn}
    return Memory.from_config({
        "embedder": {"provider": "langchain",
                     "config": {"model": hashing_embeddings(), "embedding_dims": DIMENSION}},
        "vector_store": {"provider": store, "config": {
            **vector_store, "collection_name": "bench", "embedding_model_dims": DIMENSION}},
        "llm": {"provider": "openai",
                "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(folder / f"{store}-history.db"),
    })


def add(mem: Any, items: list[list[str]]) -> dict:
    ms, ids = [], []
    for user, role, text in items:
        started = time.perf_counter()
        result = mem.add([{"role": role, "content": text}], user_id=user, infer=False)
        ms.append((time.perf_counter() - started) * 1000)
        ids.append(result["results"][0]["id"])
    return {"ms": ms, "ids": ids}


def search(mem: Any, queries: list[list[str]], limit: int) -> dict:
    ms, found = [], []
    for user, text in queries:
        started = time.perf_counter()
        result = mem.search(text, filters={"user_id": user}, top_k=limit)
        ms.append((time.perf_counter() - started) * 1000)
        found.append([hit["id"] for hit in result["results"]])
    return {"ms": ms, "ids": found}


def throughput(mem: Any, queries: list[list[str]], limit: int, clients: int,
               seconds: float) -> dict:
    counts, errors = [0] * clients, [0] * clients
    deadline = time.perf_counter() + seconds

    def client(index: int) -> None:
        n = index  # each thread starts elsewhere in the list
        while time.perf_counter() < deadline:
            user, text = queries[n % len(queries)]
            n += clients
            try:
                mem.search(text, filters={"user_id": user}, top_k=limit)
            except Exception:  # counted and reported
                errors[index] += 1
                continue
            counts[index] += 1

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"count": sum(counts), "errors": sum(errors), "seconds": time.perf_counter() - started}


def hello(mem: Any) -> dict:
    from importlib.metadata import version

    packages = ("mem0ai", "qdrant-client", "psycopg", "langchain", "langchain-core")
    return {"versions": {name: version(name) for name in packages},
            "probe": mem.embedding_model.embed(PROBE, "search")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("qdrant", "pgvector"), required=True)
    parser.add_argument("--dir", type=Path, required=True, help="for mem0's own files")
    parser.add_argument("--dsn", default="", help="PostgreSQL conninfo (pgvector)")
    args = parser.parse_args()
    # The replies own stdout; whatever mem0 and its libraries print goes to stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is imported
    os.environ["MEM0_DIR"] = str(args.dir / "mem0")  # its config file, instead of ~/.mem0
    mem = memory(args.store, args.dir, args.dsn)
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "quit":
            break
        if op == "hello":
            reply = hello(mem)
        elif op == "add":
            reply = add(mem, command["items"])
        elif op == "search":
            reply = search(mem, command["queries"], command["limit"])
        elif op == "throughput":
            reply = throughput(mem, command["queries"], command["limit"], command["clients"],
                               command["seconds"])
        else:
            raise SystemExit(f"unknown op {op!r}")
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
