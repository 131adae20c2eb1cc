"""Deleting a tenant for good (``manage.py delete_tenant``): every row it holds, in every
tenant table, and the tenant itself, in one transaction; nothing of any other tenant.

The tables are the tenant-owned models (``tenants.managers.tenant_owned_models``), not a
list kept by hand, so a table added later is emptied too. A model outside that family that
still points at the tenant would keep rows behind (or fail the commit on its foreign key):
:func:`tenant_delete` refuses to start while one exists.

What stays: the accounts of its members (platform accounts, perhaps members of other tenants;
only their memberships go), and messages already queued for its workers, which find nothing
and do nothing.
"""

from __future__ import annotations

import logging

from memoryhub.store.tenant_rows import tenant_rows_count, tenant_rows_delete
from tenants.managers import TenantOwned, tenant_owned_models
from tenants.models import Tenant

logger = logging.getLogger(__name__)


def unowned_tenant_references() -> list[str]:
    """Models that point at Tenant without being tenant-owned."""
    models = [relation.related_model for relation in Tenant._meta.related_objects]
    return sorted(model._meta.label for model in models
                  if isinstance(model, type) and not issubclass(model, TenantOwned))


def tenant_rows() -> dict[str, int]:
    """The current tenant's rows in every tenant table: {table: count}."""
    return tenant_rows_count(models=tenant_owned_models())


def tenant_delete(*, tenant: Tenant) -> dict[str, int]:
    """Delete the current tenant (``tenant``, whose context the caller holds) with every row
    it holds; {table: rows deleted}, the tenant's own table last."""
    unowned = unowned_tenant_references()
    if unowned:
        raise RuntimeError(f"these models point at tenants but are not TenantOwned: {unowned}")
    deleted = tenant_rows_delete(models=tenant_owned_models())
    logger.warning("tenant %s (id %s) deleted: %s rows", tenant.slug, tenant.pk,
                   sum(deleted.values()) - 1)
    return deleted
