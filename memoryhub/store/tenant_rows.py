"""Every row of the current tenant, table by table: counted, or deleted with the tenant itself
(``manage.py delete_tenant``, through ``memoryhub.services.tenant_removal``).

The tables come from the caller (the tenant-owned models, ``tenants.managers``); each
statement filters by the tenant predicate, on top of row-level security, which also limits a
DELETE to the tenant's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import connection
from django.db.models import Model

from memoryhub.store._tenancy import tenant_id, tenant_is
from tenants.models import Tenant


def _table(model: type[Model]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def tenant_rows_count(*, models: Sequence[type[Model]]) -> dict[str, int]:
    """The current tenant's rows in each model's table: {table: count}."""
    tenant = tenant_id()
    counts = {}
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"SELECT count(*) FROM {_table(model)} WHERE {tenant_is()}", [tenant])
            counts[model._meta.db_table] = cursor.fetchone()[0]
    return counts


def tenant_rows_delete(*, models: Sequence[type[Model]]) -> dict[str, int]:
    """Delete the current tenant's rows in each model's table, then the tenant's own row:
    {table: rows deleted}. Foreign keys are checked at commit (Django makes them deferrable),
    so the order of the tables does not matter within the caller's transaction."""
    tenant = tenant_id()
    deleted = {}
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"DELETE FROM {_table(model)} WHERE {tenant_is()}", [tenant])
            deleted[model._meta.db_table] = cursor.rowcount
        cursor.execute(f"DELETE FROM {_table(Tenant)} WHERE id = %s", [tenant])
        deleted[Tenant._meta.db_table] = cursor.rowcount
    return deleted
