"""The database's readiness check (``/readyz``) and what ``check --deploy`` asks of its role."""

from __future__ import annotations

from django.db import connection

from memoryhub.store._tenancy import cross_tenant


@cross_tenant  # reads no row: it asks whether the database answers at all
def database_ping() -> None:
    """One trivial statement; raises what the connection raises when the database is down."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


@cross_tenant  # reads no tenant's row: the connection's own role, from the catalog
def database_role_powers() -> tuple[bool, bool, bool]:
    """Whether the connection's role is a superuser, has BYPASSRLS, owns a table of the
    schema: each lets it past row-level security."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT r.rolsuper, r.rolbypassrls, EXISTS (SELECT 1 FROM pg_tables t "
            "WHERE t.schemaname = current_schema() AND t.tableowner = current_user) "
            "FROM pg_roles r WHERE r.rolname = current_user")
        superuser, bypass, owner = cursor.fetchone()
    return bool(superuser), bool(bypass), bool(owner)
