"""Database helpers that need both connections: grants after migrate, and platform checks."""

from __future__ import annotations

from django.db import connections

# The owner role's connection: only ``migrate`` uses it (see memoryhub/embedded_db.py). The
# app role could not create tables anyway: it has no CREATE privilege on the schema.
MIGRATE_ALIAS = "migrate"


def app_role_name() -> str:
    return connections["default"].settings_dict["USER"]


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
