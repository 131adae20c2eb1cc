"""Send migrations to the owner role's connection and nowhere else."""

from __future__ import annotations

from typing import Any

MIGRATE_ALIAS = "migrate"


class MigrateOnOwnerRouter:
    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        # Only the owner connection creates tables; the app role has no CREATE privilege.
        return db == MIGRATE_ALIAS

    def db_for_read(self, model: type, **hints: Any) -> str:
        return "default"

    def db_for_write(self, model: type, **hints: Any) -> str:
        return "default"
