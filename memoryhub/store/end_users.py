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


# Several people's write locks in one statement, in the order every taker of several uses:
# user_id's code points (COLLATE "C"; Python's sorted(), as memoryhub.selectors.facts).
_ENDUSERS_LOCKED = (
    f"SELECT {model_columns(EndUser, 'u')} FROM {EndUser._meta.db_table} u "
    f'WHERE {tenant_is("u")} AND u."user_id" = ANY(%s) '
    'ORDER BY u."user_id" COLLATE "C" FOR NO KEY UPDATE'
)


def end_users_lock(*, user_ids: list[str]) -> dict[str, EndUser]:
    """The current tenant's end users of ``user_ids`` (unknown ones left out), each read with
    their write lock, taken in user_id order: for a writer of several people, which must
    hold them all before its first event (the tenant's feed lock), as a writer of one
    person holds them before theirs."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(_ENDUSERS_LOCKED, [tenant, sorted(set(user_ids))])
        rows = cursor.fetchall()
    people = [model_from_row(EndUser, row) for row in rows]
    return {person.user_id: person for person in people}
