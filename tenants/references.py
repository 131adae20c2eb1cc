"""A row's references stay in its tenant, declared on the model, created by migrations.

PostgreSQL checks a foreign key as the table's owner, past row-level security: a plain
``end_user_id`` accepts any tenant's person. Row-level security keeps a tenant's session from
reading another tenant's ids, but a bug that carried one into a write would link two tenants'
rows, and the other tenant's delete would then fail on it. ``SameTenant`` is a pseudo-constraint
in ``Meta.constraints`` (like ``tenants.rls.TenantRowLevelSecurity``): a second foreign key on
``(tenant_id, <field>_id)`` to the referenced table's ``(tenant_id, id)``, which that table
declares unique (``models.UniqueConstraint(fields=["tenant", "id"])``). Django's own
single-column key stays (it is what Django's deletes and ``select_related`` know).
``tests/isolation/test_same_tenant.py`` checks that every reference between tenants' tables
has one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import BaseConstraint


class SameTenant(BaseConstraint):
    def __init__(self, *, field: str, name: str) -> None:
        super().__init__(name=name)
        self.field = field

    def add_sql(self, model: Any) -> str:
        field = model._meta.get_field(self.field)
        parent = field.related_model._meta.db_table
        # Deferred, like Django's own keys: a delete may remove the rows in any order.
        return (
            f'ALTER TABLE "{model._meta.db_table}" ADD CONSTRAINT "{self.name}" '
            f'FOREIGN KEY ("tenant_id", "{field.column}") REFERENCES "{parent}" ("tenant_id", "id") '
            "DEFERRABLE INITIALLY DEFERRED"
        )

    def constraint_sql(self, model: Any, schema_editor: Any) -> str:
        # Called while building CREATE TABLE: the referenced table's unique key may come later
        # in the same migration, so the key is added at its end.
        schema_editor.deferred_sql.append(self.add_sql(model))
        return ""

    def create_sql(self, model: Any, schema_editor: Any) -> str:
        return self.add_sql(model)

    def remove_sql(self, model: Any, schema_editor: Any) -> str:
        return f'ALTER TABLE "{model._meta.db_table}" DROP CONSTRAINT IF EXISTS "{self.name}"'

    def validate(self, *args: Any, **kwargs: Any) -> None:
        return None  # PostgreSQL checks it; a form never sets a tenant on its own

    def deconstruct(self) -> tuple[str, Sequence[Any], dict[str, Any]]:
        path, args, kwargs = super().deconstruct()
        kwargs["field"] = self.field
        return "tenants.references.SameTenant", args, kwargs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SameTenant) and (self.name, self.field) == (other.name, other.field)

    def __hash__(self) -> int:
        return hash((self.name, self.field))
