"""What the fault tests start, kill and measure: gunicorn, an embedded PostgreSQL of their own,
a Redis of their own, and writers that keep a ledger of every write the server acknowledged.

Everything here is a real process or a real socket; a kill is ``SIGKILL``, as a crash or the
OOM killer would send it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(predicate, *, timeout: float, what: str):
    """Poll ``predicate`` until it is truthy (returned) or fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)
    return value


def kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant at once; return when they are gone."""
    try:
        root = psutil.Process(pid)
        victims = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for victim in victims:
        try:
            victim.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(victims, timeout=30)


# --- gunicorn ---------------------------------------------------------------------------------


class Gunicorn:
    """gunicorn (2 workers, 2 threads each) on a port that stays the same across restarts."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log = env, log
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "memoryhub.wsgi:application", "--bind",
                 f"127.0.0.1:{self.port}", "--workers", "2", "--threads", "2",
                 "--graceful-timeout", "5"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        wait_until(self._healthy, timeout=STARTUP_TIMEOUT, what=f"gunicorn (log: {self.log})")

    def _healthy(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            pytest.fail(f"gunicorn exited:\n{self.log.read_text()}")
        try:
            return httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def ensure_running(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.start()

    def workers(self) -> list[psutil.Process]:
        assert self.proc is not None
        return psutil.Process(self.proc.pid).children()

    def kill_workers(self) -> None:
        """SIGKILL the workers (requests in flight die with them); the master forks new ones."""
        for worker in self.workers():
            worker.send_signal(signal.SIGKILL)

    def kill(self) -> None:
        """SIGKILL the master and its workers together."""
        assert self.proc is not None
        kill_tree(self.proc.pid)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@contextmanager
def gunicorn(env: dict[str, str], log: Path) -> Iterator[Gunicorn]:
    server = Gunicorn(env, log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --- an embedded PostgreSQL of the test's own ---------------------------------------------------


@dataclass
class OwnCluster:
    """A data directory with its own embedded PostgreSQL, migrated, with one tenant."""

    data_dir: Path
    env: dict[str, str]  # for manage.py, gunicorn and workers on this cluster
    key: str = ""

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    def manage(self, *args: str) -> str:
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env,
                                capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            pytest.fail(f"manage.py {' '.join(args)} failed:\n{result.stderr[-3000:]}")
        return result.stdout

    def kill(self) -> None:
        """SIGKILL the postmaster and every backend: what a crashed server leaves."""
        kill_tree(int((self.pgdata / "postmaster.pid").read_text().split()[0]))

    def start(self) -> None:
        """Start it again from another process, as the next process to need it would (crash
        recovery runs first); it listens where it did, so running servers can reconnect."""
        code = ("from pathlib import Path; from memoryhub.infra.embedded_db import ensure_cluster; "
                f"ensure_cluster(Path({str(self.data_dir)!r}))")
        subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=self.env, check=True,
                       capture_output=True, timeout=120)


def cluster_env(data_dir: Path) -> dict[str, str]:
    """The production settings on the embedded database of ``data_dir``, not the test run's."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("MEMORYHUB_EMBEDDED_PG_", "DATABASE_URL", "MIGRATE_DATABASE_URL",
                                   "MEMORYHUB_DB_NAME", "CELERY_"))}
    return {
        **env, "MEMORYHUB_DATA_DIR": str(data_dir), "MEMORYHUB_PG_SHARED_BUFFERS": "128MB",
        "DEBUG": "0", "SECRET_KEY": "faults-under-test", "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0", "DB_POOL": "1", "DB_POOL_TIMEOUT": "2",
        "API_RATE_LIMIT": "", "LOG_LEVEL": "WARNING",
    }


@contextmanager
def own_cluster() -> Iterator[OwnCluster]:
    """A fresh cluster under a short path of its own (Unix socket paths are short)."""
    from memoryhub.infra.embedded_db import stop_cluster

    data_dir = Path(f"/tmp/mh-faults-{os.getpid()}-{time.monotonic_ns() % 10**6}")
    cluster = OwnCluster(data_dir=data_dir, env=cluster_env(data_dir))
    try:
        cluster.manage("migrate", "--no-input")
        created = cluster.manage("create_tenant", "faults").strip().splitlines()[-1]
        cluster.key = json.loads(created)["api_key"]
        yield cluster
    finally:
        try:
            stop_cluster(data_dir)
        finally:
            shutil.rmtree(data_dir, ignore_errors=True)


# --- Redis of the test's own --------------------------------------------------------------------


class OwnRedis:
    """``redis-server`` on a free port, stopped and started again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until(self._answers, timeout=20, what=f"redis-server on {self.port}")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# --- writers and their ledger -------------------------------------------------------------------


@dataclass
class Ledger:
    acknowledged: dict[tuple[str, str], str] = field(default_factory=dict)  # (user, path) -> text
    statuses: Counter = field(default_factory=Counter)  # status (0: no connection) -> count
    wrong: list[str] = field(default_factory=list)  # answers that are neither 2xx nor a proper 503
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return len(self.acknowledged)


class Writers:
    """``threads`` clients PUTting new documents, each to its own end user, until stopped or
    ``limit`` writes each (bounded). A write counts as acknowledged only on a 2xx; a 503 must
    be the JSON error body with Retry-After; anything else is recorded as wrong."""

    def __init__(self, base: str, key: str, *, tag: str, threads: int = 4, limit: int = 400) -> None:
        self.base, self.key, self.tag, self.limit = base, key, tag, limit
        self.ledger = Ledger()
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(f"{tag}-{i}",), daemon=True)
                        for i in range(threads)]

    @property
    def users(self) -> list[str]:
        return [f"{self.tag}-{i}" for i in range(len(self.threads))]

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def wait_acknowledged(self, more: int, timeout: float = 60.0) -> None:
        target = self.ledger.count() + more
        wait_until(lambda: self.ledger.count() >= target, timeout=timeout,
                   what=f"{target} acknowledged writes (have {self.ledger.count()}, "
                        f"answers so far {dict(self.ledger.statuses)})")

    def wait_status(self, status: int, count: int, timeout: float = 60.0) -> None:
        wait_until(lambda: self.ledger.statuses[status] >= count, timeout=timeout,
                   what=f"{count} answers {status} (so far {dict(self.ledger.statuses)})")

    def _run(self, user: str) -> None:
        with httpx.Client(base_url=f"{self.base}/api/v1", timeout=30,
                          headers={"Authorization": f"Bearer {self.key}"}) as client:
            for n in range(self.limit):
                if self.stopped.is_set():
                    return
                try:
                    self._write(client, user, n)
                except Exception as error:  # a writer must not die silently
                    with self.ledger.lock:
                        self.ledger.wrong.append(f"{type(error).__name__}: {error}")

    def _write(self, client: httpx.Client, user: str, n: int) -> None:
        path, text = f"/notes/{n}.md", f"write {n} of {user}: the ledger's line {n}."
        try:
            response = client.put(f"/users/{user}/documents/global{path}", json={"content": text})
        except httpx.TransportError:  # the server is down or died mid-request
            self._record(0)
            time.sleep(0.05)
            return
        self._record(response.status_code)
        if response.is_success:
            with self.ledger.lock:
                self.ledger.acknowledged[(user, path)] = text
        elif _proper_unavailable(response):
            time.sleep(0.05)
        else:
            with self.ledger.lock:
                self.ledger.wrong.append(f"{response.status_code} "
                                         f"{response.headers.get('content-type')} "
                                         f"{response.text[:200]!r}")

    def _record(self, status: int) -> None:
        with self.ledger.lock:
            self.ledger.statuses[status] += 1


def _proper_unavailable(response: httpx.Response) -> bool:
    """503 with Retry-After and the contract's JSON error body."""
    if response.status_code != 503 or not response.headers.get("Retry-After", "").isdigit():
        return False
    try:
        return response.json()["error"]["code"] == "service_unavailable"
    except ValueError:
        return False


UNAVAILABLE_RETRIES = 45  # more than two server processes pool (2 x the DB pool's max_size, 20)
_MEMORY = re.compile(r'<memory path="([^"]+)" scope="global">\n(.*?)\n</memory>', re.S)


def stored(base: str, key: str, users: list[str]) -> dict[tuple[str, str], str]:
    """Every global document of ``users``, read back through the API's snapshot."""
    found: dict[tuple[str, str], str] = {}
    with httpx.Client(base_url=f"{base}/api/v1", timeout=30,
                      headers={"Authorization": f"Bearer {key}"}) as client:
        for user in users:
            response = client.get(f"/users/{user}/memory/snapshot")
            # After a database restart each pooled connection that died with it fails its next
            # request once, with the contract's 503 and Retry-After (a client retries that),
            # and the pool then replaces it: read as a client would, a few tries at most.
            for _ in range(UNAVAILABLE_RETRIES):
                if not _proper_unavailable(response):
                    break
                time.sleep(0.2)
                response = client.get(f"/users/{user}/memory/snapshot")
            response.raise_for_status()
            for path, text in _MEMORY.findall(response.json()["text"]):
                found[(user, path)] = text.rstrip("\n")
    return found


def missing(ledger: Ledger, found: dict[tuple[str, str], str]) -> list[str]:
    """Acknowledged writes that are not stored as acknowledged."""
    return [f"{user}{path}" for (user, path), text in ledger.acknowledged.items()
            if found.get((user, path)) != text]
