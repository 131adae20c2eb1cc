"""The database's readiness check (``/readyz``)."""

from __future__ import annotations

from django.db import connection

from memoryhub.store._tenancy import cross_tenant


@cross_tenant  # reads no row: it asks whether the database answers at all
def database_ping() -> None:
    """One trivial statement; raises what the connection raises when the database is down."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
