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
