"""The current tenant, for the ORM and for PostgreSQL.

Contract:
- :func:`tenant_context` is the only way to act for a tenant. It sets a ContextVar (read by
  the fail-closed managers) and, inside one transaction, the PostgreSQL setting
  ``app.tenant_id`` with ``set_config(..., true)``: transaction-local, so a pooled connection
  can never carry one tenant's setting into another request. On exit the previous value is
  restored, which matters when the block runs inside an outer transaction (tests, nested
  service calls).
- With no tenant set, the managers raise :class:`TenantNotSet` and RLS policies match no row.
- Code that must see several tenants says so by name: ``unscoped_objects`` managers, and
  :func:`web_user_context` for a signed-in account's own memberships.

Who opens the context: the entry points, never the services and selectors. The API's base
view (``api/base.py``), the page decorators (``memoryhub/web/access.py``), the views outside
them that act for one tenant (``memoryhub/web/views/entry.py``, ``memoryhub/web/adapters.py``),
every task, management command and admin action open ``tenant_context`` for the tenant they
serve; services and selectors run inside it and expect it open (the managers raise
``TenantNotSet`` when it is not). The one exception is code that learns the tenant from a
secret, because nobody can open the context for it: API key authentication,
``portal_link_redeem`` and ``invitation_find`` open the context their token names.
Opening it again for the same tenant inside its transaction costs nothing (no statement, no
savepoint), which is why the older key, audit and membership writes of ``tenants/services.py``
(``api_key_create``, ``api_key_revoke``, ``audit_record``, ``membership_set``), called
by platform code and fixtures before any context exists, still open it for themselves.

Known holes: raw SQL that sets ``app.tenant_id`` itself bypasses the ContextVar (grep for
``app.tenant_id``); the Tenant table itself is platform data and has no RLS.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import psycopg
from django.db import connections, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg.pq import Escaping, ExecStatus, TransactionStatus

TENANT_SETTING = "app.tenant_id"
WEB_USER_SETTING = "app.web_user_id"

_current_tenant: ContextVar[int | None] = ContextVar("memoryhub_tenant", default=None)


class TenantNotSet(RuntimeError):
    """A tenant-owned model was queried with no tenant in context."""


def current_tenant_id() -> int:
    tenant_id = _current_tenant.get()
    if tenant_id is None:
        raise TenantNotSet(
            "No tenant is set. Wrap the code in tenants.context.tenant_context(tenant_id), "
            "or use an explicitly cross-tenant manager (unscoped_objects)."
        )
    return tenant_id


def current_tenant_id_or_none() -> int | None:
    return _current_tenant.get()


def _begin_with_setting(connection: BaseDatabaseWrapper, name: str, value: str) -> bool:
    """Open the transaction and set ``name`` in one round trip; False if this cannot apply.

    psycopg would send ``BEGIN`` on its own before the first statement (a round trip of its
    own, on every request). Sent together with ``set_config`` in one simple query, PostgreSQL
    runs both, and psycopg then finds the transaction open and does not begin another. Only
    for a plain ``BEGIN`` (no isolation level or read-only option on the connection) on an
    idle connection; the values are quoted by libpq.

    The BEGIN, the setting and the block's first statement (an API key's lookup) could share
    a round trip in psycopg's pipeline mode. That was measured in one process, alternating
    24 blocks of 100 requests with and without it. It saved no time and cost the web process
    CPU (medians per request):
    - a document's GET: 1.34 ms without, 1.53 ms with;
    - a recall: 3.66 ms without, 3.73 ms with;
    - the prompt index and a create: the same either way.
    Entering and leaving pipeline mode sends and flushes more than the round trip it spares.
    """
    raw = connection.connection
    if (
        connection.vendor != "postgresql"
        or raw.info.transaction_status != TransactionStatus.IDLE
        or raw.isolation_level is not None
        or raw.read_only is not None
        or raw.deferrable is not None
    ):
        return False
    pgconn = raw.pgconn
    quote = Escaping(pgconn).escape_literal
    query = b"BEGIN; SELECT set_config(%s, %s, true)" % (
        quote(name.encode()), quote(value.encode())
    )
    with connection.wrap_database_errors:
        with raw.lock:
            result = pgconn.exec_(query)
        if result.status != ExecStatus.TUPLES_OK:
            raise psycopg.OperationalError(
                (result.error_message or pgconn.error_message).decode(errors="replace")
            )
    return True


@contextmanager
def _local_setting(name: str, value: str, using: str) -> Iterator[None]:
    """Set a transaction-local setting for the block, then put back what was there.

    In the outermost transaction the commit or rollback discards the setting by itself, so
    only a block nested in an open transaction needs to read and restore the old value.
    """
    connection = connections[using]
    nested = connection.in_atomic_block
    previous = ""
    with transaction.atomic(using=using):
        if nested or not _begin_with_setting(connection, name, value):
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT current_setting(%s, true), set_config(%s, %s, true)",
                    [name, name, value],
                )
                previous = cursor.fetchone()[0] or ""
        try:
            yield
        finally:
            if nested and not connection.needs_rollback:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT set_config(%s, %s, true)", [name, previous])


@contextmanager
def tenant_context(tenant_id: int, *, using: str = "default") -> Iterator[None]:
    """Run the block as ``tenant_id``, in a transaction (a savepoint if one is open)."""
    if not isinstance(tenant_id, int) or isinstance(tenant_id, bool):
        raise TypeError("tenant_id must be an int")
    outer = _current_tenant.get()
    if outer is not None and outer != tenant_id:
        raise RuntimeError("tenant_context cannot switch tenants inside another tenant's block")
    if outer == tenant_id and connections[using].in_atomic_block:
        # Already this tenant's transaction (a service called from a request, say): nothing to
        # set, and no savepoint, which would cost two round trips for nothing.
        yield
        return
    token = _current_tenant.set(tenant_id)
    try:
        with _local_setting(TENANT_SETTING, str(tenant_id), using):
            yield
    finally:
        _current_tenant.reset(token)


@contextmanager
def web_user_context(user_id: int, *, using: str = "default") -> Iterator[None]:
    """Make a signed-in account's own memberships visible across tenants (tenant picker)."""
    with _local_setting(WEB_USER_SETTING, str(user_id), using):
        yield
