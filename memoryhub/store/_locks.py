"""Lock clauses that several store modules' statements share."""

from __future__ import annotations

from memoryhub.models import EndUser
from memoryhub.store._tenancy import tenant_is


def people_of_rows_held(*, table: str, ids: str, record: str = "id") -> str:
    """Two CTEs for the embedding worker's vector updates of ``table``'s rows whose ids are
    ``ids`` (a named parameter, e.g. ``%(ids)s::bigint[]``; the tenant is ``%(tenant)s``):
    ``people``, their end users with a key-share lock, and ``free``, those rows (of the
    people held) that no other transaction holds, locked ``FOR NO KEY UPDATE SKIP LOCKED``;
    ``busy``, the ``record`` column (``id``, or what a row belongs to) of the rows skipped.
    The update changes only ``free`` rows (``p.id IN (SELECT id FROM free)``).

    Skipped, not waited for: a request holds a person's rows in its own order (the facts it
    merges, the duplicates of a mem0 add's messages, a directory rename's passages) while
    the update took them in its own, so each waited for a row the other held next: a
    deadlock. A vector is no one's write to wait for: the task asks again for what it
    skipped (or the writer that held the row asks itself, having changed it).

    The person first:

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
        "ORDER BY u.id FOR KEY SHARE), "
        f"wanted AS MATERIALIZED (SELECT r.id, r.{record} AS record FROM {table} r "
        f'WHERE {tenant_is("r", param="%(tenant)s")} AND r.id = ANY({ids}) '
        "AND r.end_user_id IN (SELECT id FROM people)), "
        f"free AS MATERIALIZED (SELECT r.id FROM {table} r "
        f'WHERE {tenant_is("r", param="%(tenant)s")} AND r.id IN (SELECT id FROM wanted) '
        "FOR NO KEY UPDATE SKIP LOCKED), "
        "busy AS (SELECT DISTINCT record FROM wanted WHERE id NOT IN (SELECT id FROM free)) "
    )
