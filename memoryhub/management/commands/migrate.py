"""MemoryHub's ``migrate``: it replaces Django's command of the same name, on purpose.

``manage.py migrate`` finds this command first because the ``memoryhub`` app's commands
override those of ``django.core``. It is Django's ``migrate`` (every option works) with two
differences:

- it runs on the owner role's connection (``--database migrate`` by default, see
  ``memoryhub.infra.db.MIGRATE_ALIAS``): the application's role may not create or alter
  tables;
- afterwards it grants the application role row access on every table and sequence
  (``memoryhub.infra.db.grant_app_role``); row-level security still decides which rows.

Django's own command (without the grant) is never what you want here: the app role would
not see new tables. ``manage.py help migrate`` says the same.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser
from django.core.management.commands.migrate import Command as DjangoMigrate

from memoryhub.infra.db import MIGRATE_ALIAS, grant_app_role


class Command(DjangoMigrate):
    help = (
        "MemoryHub's migrate (memoryhub/management/commands/migrate.py): Django's migrate on "
        f"the owner connection (--database {MIGRATE_ALIAS} by default), then grants the "
        "application role row access to every table."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.set_defaults(database=MIGRATE_ALIAS)

    def handle(self, *args: Any, **options: Any) -> None:
        super().handle(*args, **options)
        grant_app_role(options["database"])
