"""``migrate`` runs as the owner role (the "migrate" connection) unless told otherwise.

The application's own role cannot create or alter tables; after migrating, the app role is
granted row access on every table (RLS still decides which rows it sees).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser
from django.core.management.commands.migrate import Command as DjangoMigrate

from memoryhub.infra.db import MIGRATE_ALIAS


class Command(DjangoMigrate):
    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.set_defaults(database=MIGRATE_ALIAS)

    def handle(self, *args: Any, **options: Any) -> None:
        super().handle(*args, **options)
        from memoryhub.infra.db import grant_app_role

        grant_app_role(options["database"])
