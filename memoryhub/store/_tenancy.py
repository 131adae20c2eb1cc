"""The current tenant for hand-written statements, and the tenant predicate, written once.

Every public function of the store calls :func:`tenant_id` before it touches the database,
so a call without a tenant raises ``TenantNotSet`` instead of relying on row-level security
to return nothing. The predicate text is built at import time by the modules that use it, so
the statement text (and psycopg's prepared statement) is the same on every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenants.context import current_tenant_id

F = TypeVar("F", bound=Callable[..., object])


def tenant_id() -> int:
    """The current tenant's id; ``TenantNotSet`` when no ``tenant_context`` is open."""
    return current_tenant_id()


def tenant_is(alias: str | None = None, *, param: str = "%s") -> str:
    """``<alias>.tenant_id = <param>``: the rows of the current tenant.

    ``param`` is the placeholder of the statement's style (``%(tenant)s`` for named
    parameters); its value is :func:`tenant_id`.
    """
    column = f"{alias}.tenant_id" if alias else "tenant_id"
    return f"{column} = {param}"


def cross_tenant(function: F) -> F:
    """Mark a store function that needs no tenant (it reads no tenant's rows), so the
    fail-closed test knows it is meant to run without one; keep such functions rare."""
    function.cross_tenant = True  # type: ignore[attr-defined]
    return function
