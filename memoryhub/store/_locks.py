"""Lock clauses that several store modules' statements share."""

from __future__ import annotations

from memoryhub.models import EndUser
from memoryhub.store._tenancy import tenant_is


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
