"""API keys: the key of every request, with its tenant and the person the URL names.

The key and its tenant come in one statement (views need the tenant's limits on every
request), and the end user the URL names, if any: most requests read that person next, and a
request that writes takes the person's write lock first (``memoryhub.services.documents``),
here in the same statement. (A locking clause may not touch the nullable side of an outer
join, so the locked person comes from a LATERAL subquery that locks.) Hand-written: it runs
on every request, and the ORM took longer to compile it than to run it.
"""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from memoryhub.models import EndUser
from memoryhub.store._rows import model_columns, model_from_row
from memoryhub.store._tenancy import tenant_id, tenant_is
from tenants.models import ApiKey, Tenant


def _key_query(person_join: str = "") -> str:
    """The key, its tenant and, with ``person_join`` (a join that names the person ``u``), the
    person's columns; ``%s`` parameters: the person's user id if joined, tenant, lookup id."""
    person = f", {model_columns(EndUser, 'u')}" if person_join else ""
    return (
        f"SELECT {model_columns(ApiKey, 'k')}, {model_columns(Tenant, 't')}{person} "
        f'FROM {ApiKey._meta.db_table} k JOIN {Tenant._meta.db_table} t ON t."id" = k."tenant_id" '
        f'{person_join}WHERE {tenant_is("k")} AND k."lookup_id" = %s'
    )


_KEY_AND_TENANT = _key_query()
_KEY_TENANT_AND_PERSON = _key_query(
    f'LEFT JOIN {EndUser._meta.db_table} u ON u."tenant_id" = k."tenant_id" AND u."user_id" = %s '
)
_KEY_TENANT_AND_LOCKED_PERSON = _key_query(
    f"LEFT JOIN LATERAL (SELECT {model_columns(EndUser, 'person')} "
    f"FROM {EndUser._meta.db_table} person "
    'WHERE person."tenant_id" = k."tenant_id" AND person."user_id" = %s '
    "FOR NO KEY UPDATE) u ON true "
)
_KEY_COLUMNS = len(ApiKey._meta.concrete_fields)
_TENANT_END = _KEY_COLUMNS + len(Tenant._meta.concrete_fields)


def api_key_find(
    lookup_id: str, user_id: str | None, *, lock_person: bool = False
) -> tuple[ApiKey | None, EndUser | None]:
    """The current tenant's key with that lookup id, its ``tenant`` loaded, and the tenant's
    end user ``user_id`` when given and known (holding the person's write lock if
    ``lock_person``); (None, None) for an unknown key. One statement."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        if user_id is None:
            cursor.execute(_KEY_AND_TENANT, [tenant, lookup_id])
        else:
            sql = _KEY_TENANT_AND_LOCKED_PERSON if lock_person else _KEY_TENANT_AND_PERSON
            cursor.execute(sql, [user_id, tenant, lookup_id])
        row = cursor.fetchone()
    if row is None:
        return None, None
    key = model_from_row(ApiKey, row[:_KEY_COLUMNS])
    ApiKey._meta.get_field("tenant").set_cached_value(
        key, model_from_row(Tenant, row[_KEY_COLUMNS:_TENANT_END]))
    person = row[_TENANT_END:]
    return key, (model_from_row(EndUser, person) if person and person[0] is not None else None)


# The refresh of last_used_at skips a key row another transaction holds: that one is setting
# the same minute, and waiting for it would wait for the rest of its request (it holds the
# row to its commit), holding what this request locked already (the person its URL names),
# while that request may come for the same locks: a deadlock.
_TOUCH = (
    f"UPDATE {ApiKey._meta.db_table} SET last_used_at = %s WHERE id = ("
    f"SELECT id FROM {ApiKey._meta.db_table} WHERE {tenant_is()} AND id = %s "
    "FOR NO KEY UPDATE SKIP LOCKED)"
)


def api_key_touch(*, key_id: int, at: datetime) -> None:
    """Set the current tenant's key's ``last_used_at`` to ``at``, unless another transaction
    holds its row (it is setting it too). Never waits."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_TOUCH, [at, tenant, key_id])
