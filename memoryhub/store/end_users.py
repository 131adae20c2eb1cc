"""End users: the person every memory call reads, optionally with the person's write lock."""

from __future__ import annotations

from django.db import connection

from memoryhub.models import EndUser
from memoryhub.store._rows import model_columns, model_from_row
from memoryhub.store._tenancy import tenant_id, tenant_is

# Every memory call reads its end user: hand-written SQL, a fraction of the ORM's CPU.
_ENDUSER = (
    f"SELECT {model_columns(EndUser, 'u')} FROM {EndUser._meta.db_table} u "
    f'WHERE {tenant_is("u")} AND u."user_id" = %s'
)
_ENDUSER_LOCKED = _ENDUSER + " FOR NO KEY UPDATE"


def end_user_find(*, user_id: str, for_update: bool = False) -> EndUser | None:
    """The current tenant's end user ``user_id``, or ``None``; ``for_update`` takes the
    person's write lock (``memoryhub.services.documents``)."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_ENDUSER_LOCKED if for_update else _ENDUSER, [tenant, user_id])
        row = cursor.fetchone()
    return model_from_row(EndUser, row) if row is not None else None


def people_of_rows_held(*, table: str, ids: str) -> str:
    """A CTE ``people``: the end users of ``table``'s rows whose ids are ``ids`` (a named
    parameter, e.g. ``%(ids)s::bigint[]``; the tenant is ``%(tenant)s``), with a key-share lock.

    For the embedding worker's vector updates, which join it (``end_user_id IN (SELECT id FROM
    people)``) so that no row is updated before its person is held: a forget (FOR UPDATE on
    the person, then deletes table by table) then waits for the update's commit, or the update
    for the forget's, instead of each locking rows the other needs next, a deadlock. Key share
    does not conflict with a write's lock (FOR NO KEY UPDATE): writes never wait for it.
    """
    return (
        f"WITH people AS MATERIALIZED (SELECT u.id FROM {EndUser._meta.db_table} u "
        f'WHERE {tenant_is("u", param="%(tenant)s")} AND u.id IN (SELECT r.end_user_id '
        f'FROM {table} r WHERE {tenant_is("r", param="%(tenant)s")} AND r.id = ANY({ids})) '
        "ORDER BY u.id FOR KEY SHARE) "
    )
