"""Database helpers: the two connections and grants after migrate, and psycopg's adapters
(vectors sent in binary, timestamps parsed in C).

Hand-written statements, and loading model instances from their rows, live in
``memoryhub.store``."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections, transaction
from psycopg.abc import Loader
from psycopg.adapt import Dumper
from psycopg.pq import Format

TIMESTAMPTZ_OID = psycopg.adapters.types["timestamptz"].oid

# The owner role's connection: only ``migrate`` uses it (see memoryhub/infra/embedded_db.py). The
# app role could not create tables anyway: it has no CREATE privilege on the schema.
MIGRATE_ALIAS = "migrate"


def app_role_name() -> str:
    role: str = connections["default"].settings_dict["USER"]
    return role


def grant_app_role(using: str, *, truncate: bool = False) -> None:
    """Give the application role row access (never ownership) to every table and sequence.

    ``truncate`` is for test databases only: Django's TransactionTestCase empties tables with
    TRUNCATE, which row-level security does not filter, so production never grants it.
    """
    role = app_role_name()
    owner = connections[using].settings_dict["USER"]
    if not role or role == owner:
        return  # one role for everything (external DB without MIGRATE_DATABASE_URL)
    privileges = "SELECT, INSERT, UPDATE, DELETE" + (", TRUNCATE" if truncate else "")
    connection = connections[using]
    quoted = connection.ops.quote_name(role)
    with connection.cursor() as cursor:
        cursor.execute(f"GRANT {privileges} ON ALL TABLES IN SCHEMA public TO {quoted}")
        cursor.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {quoted}")


@contextmanager
def read_only_snapshot(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """A read-only transaction whose reads all see one snapshot (REPEATABLE READ), for a
    long read such as a tenant's export: rows written meanwhile are in none of its reads
    rather than in some. Open it before ``tenant_context``, which then runs inside it.

    Inside a transaction already open (tests), the level cannot change any more: the block
    runs in that transaction as it is.
    """
    connection = connections[using]
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic(using=using):
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


class HalfVec:
    """A vector for a ``%s::halfvec`` parameter, sent in pgvector's binary format.

    The text form costs 0.1-0.2 ms of formatting for 384 dimensions, on every recall; this
    costs a few microseconds. The dumper (registered by :func:`register_adapters`) names no
    type, so PostgreSQL takes the parameter's type from the ``::halfvec`` cast, then reads
    the bytes with halfvec's own binary input (dimensions, a reserved zero, big-endian
    float16 values).
    """

    __slots__ = ("payload",)

    def __init__(self, vector: Sequence[float]) -> None:
        values = np.asarray(vector, dtype=">f2")
        self.payload = struct.pack(">HH", len(values), 0) + values.tobytes()


class _HalfVecDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: HalfVec) -> bytes:
        return obj.payload


class _HalfVecTextDumper(Dumper):
    """The text form, for what only text can show: Django's query log (psycopg's mogrify)."""

    def dump(self, obj: HalfVec) -> bytes:
        return halfvec_literal(np.frombuffer(obj.payload[4:], dtype=">f2").tolist()).encode()


@contextmanager
def connection_as_request() -> Iterator[None]:
    """For a background thread's database work (recall's helper threads, the usage flush):
    its connection is held as a request thread holds its own. Django's per-request closing of
    old connections runs before (one broken or past ``CONN_MAX_AGE`` is replaced) and after
    (back to the pool, or kept up to ``CONN_MAX_AGE``); no request signal reaches such a
    thread to do it."""
    close_old_connections()
    try:
        yield
    finally:
        close_old_connections()


def register_adapters() -> None:
    """Register our adapters with psycopg, before Django makes its first connection (which
    copies psycopg's adapters). The binary dumper comes last, so ``%s`` picks it."""
    psycopg.adapters.register_dumper(HalfVec, _HalfVecTextDumper)
    psycopg.adapters.register_dumper(HalfVec, _HalfVecDumper)
    _register_timestamptz_loader()


# psycopg's own timestamptz loader: its C version when psycopg's binary or C package is there.
_PSYCOPG_TIMESTAMPTZ = psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)


def _register_timestamptz_loader() -> None:
    """Load timestamptz columns with psycopg's C parser instead of Django's Python one.

    Django registers a subclass of psycopg's *Python* loader (to set the time zone), so every
    timestamp read took a regular expression in Python: about 2.5 us a value, 0.13 ms for
    a prompt index of 50 entries. In UTC, which is what Django keeps the session in with
    ``USE_TZ`` and ``TIME_ZONE = "UTC"``, psycopg's loader already returns what Django's
    does (aware, ``datetime.timezone.utc``). Elsewhere Django's loader stays.
    """
    connection = connections[DEFAULT_DB_ALIAS]
    if connection.vendor != "postgresql" or connection.timezone is not dt.UTC:
        return
    if _PSYCOPG_TIMESTAMPTZ is None:  # psycopg always has one; this tells the type checker
        return
    psycopg_loader: type[Loader] = _PSYCOPG_TIMESTAMPTZ
    from django.db.backends.postgresql.psycopg_any import BaseTzLoader, get_adapters_template

    class UtcTimestamptzLoader(BaseTzLoader):
        timezone = dt.UTC  # Django compares it with the connection's (create_cursor)

        def __init__(self, oid: int, context: Any = None) -> None:
            super().__init__(oid, context)
            # An instance attribute: psycopg's row loader then calls the C method directly.
            self.load = psycopg_loader(oid, context).load

    # The adapters template Django gives every new connection (cached per time zone).
    get_adapters_template(settings.USE_TZ, connection.timezone).register_loader(
        "timestamptz", UtcTimestamptzLoader
    )


def halfvec_literal(vector: Sequence[float]) -> str:
    """A vector as pgvector's text form, for a ``%s::halfvec`` parameter."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
