"""Row-level security declared on the model, created by migrations.

``TenantRowLevelSecurity`` is a pseudo-constraint in ``Meta.constraints`` (after the Alasco
write-up "Django and row level security"): makemigrations picks it up like any constraint,
and the migration enables and forces RLS and creates a policy that matches no row when
``app.tenant_id`` is unset. ``extra_using`` widens only what may be *read* (never written),
for the two lookups that happen before a tenant is known (see tenants/context.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import BaseConstraint

TENANT_PREDICATE = "tenant_id = NULLIF(current_setting('app.tenant_id', true), '')::bigint"


class TenantRowLevelSecurity(BaseConstraint):
    def __init__(self, *, name: str, extra_using: str = "") -> None:
        super().__init__(name=name)
        self.extra_using = extra_using

    def _statements(self, table: str) -> list[str]:
        using = TENANT_PREDICATE + (f" OR ({self.extra_using})" if self.extra_using else "")
        return [
            f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
            f'CREATE POLICY "{self.name}" ON "{table}" USING ({using}) '
            f"WITH CHECK ({TENANT_PREDICATE})",
        ]

    def constraint_sql(self, model: Any, schema_editor: Any) -> str:
        # Called while building CREATE TABLE: the policy must wait for the table to exist, so
        # nothing goes inline (CREATE TABLE skips an empty constraint).
        schema_editor.deferred_sql.extend(self._statements(model._meta.db_table))
        return ""

    def create_sql(self, model: Any, schema_editor: Any) -> str:
        return "; ".join(self._statements(model._meta.db_table))

    def remove_sql(self, model: Any, schema_editor: Any) -> str:
        table = model._meta.db_table
        return (
            f'DROP POLICY IF EXISTS "{self.name}" ON "{table}"; '
            f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY; '
            f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY'
        )

    def validate(self, *args: Any, **kwargs: Any) -> None:
        return None  # nothing to check per row in Python

    def deconstruct(self) -> tuple[str, Sequence[Any], dict[str, Any]]:
        path, args, kwargs = super().deconstruct()
        path = "tenants.rls.TenantRowLevelSecurity"
        if self.extra_using:
            kwargs["extra_using"] = self.extra_using
        return path, args, kwargs

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, TenantRowLevelSecurity)
            and self.name == other.name
            and self.extra_using == other.extra_using
        )

    def __hash__(self) -> int:
        return hash((self.name, self.extra_using))
