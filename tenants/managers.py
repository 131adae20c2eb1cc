"""Managers for tenant-owned models: the default one fails closed."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import models

from tenants.context import current_tenant_id


class TenantManager(models.Manager):
    """Filters by the current tenant and raises TenantNotSet when there is none.

    The filter duplicates what RLS enforces in PostgreSQL: two independent guards.
    """

    def get_queryset(self) -> models.QuerySet[Any]:
        return super().get_queryset().filter(tenant_id=current_tenant_id())


class TenantOwned(models.Model):
    """Abstract base: a ``tenant`` column, a fail-closed default manager, and a loud escape hatch."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="+")

    objects = TenantManager()
    # Cross-tenant on purpose (platform staff, maintenance). RLS still applies in PostgreSQL,
    # so this only helps code that has set the right context itself.
    unscoped_objects = models.Manager()  # noqa: DJ012 - two managers, ruff misreads

    class Meta:
        abstract = True
        base_manager_name = "unscoped_objects"
        default_manager_name = "objects"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.tenant_id is None:
            self.tenant_id = current_tenant_id()
        super().save(*args, **kwargs)


def tenant_owned_models() -> list[type[TenantOwned]]:
    """Every table that holds tenants' rows, from the models themselves (the app registry):
    what deleting a tenant must empty, and what tenant-wide checks must cover."""
    return [model for model in apps.get_models() if issubclass(model, TenantOwned)]
