"""``manage.py delete_tenant SLUG [--yes]``: delete a tenant and every row it holds, for good.

It first shows how many rows each tenant table holds for the tenant, then asks for the slug
to be typed again (``--yes`` skips the question, for scripts); anything else, or no answer,
deletes nothing. The deletion is one transaction (``memoryhub.services.tenant_removal``):
all of it, or nothing. Take an export first (``manage.py export_tenant``) if anything
should be kept.
"""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.services.tenant_removal import tenant_delete, tenant_rows
from tenants.context import tenant_context
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Delete a tenant and every row it holds in every tenant table (asks first)."
    stealth_options = ("stdin",)  # the confirmation's input, for tests (as createsuperuser)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--yes", action="store_true",
                            help="do not ask for the slug to be typed again")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}.")
        with tenant_context(tenant.pk):
            counts = tenant_rows()
        self.stdout.write(f"Tenant {tenant.slug} ({tenant.name}, id {tenant.pk}) holds:")
        for table, count in sorted(counts.items()):
            self.stdout.write(f"  {table:<36} {count:>10}")
        if not options["yes"]:
            self._confirm(tenant, options.get("stdin") or sys.stdin)
        with tenant_context(tenant.pk):
            deleted = tenant_delete(tenant=tenant)
        rows = sum(n for table, n in deleted.items() if table != Tenant._meta.db_table)
        self.stdout.write(f"Deleted tenant {tenant.slug} and its {rows} rows.")

    def _confirm(self, tenant: Tenant, stdin: Any) -> None:
        self.stdout.write(f"This deletes all of it for good. Type {tenant.slug} to go on: ",
                          ending="")
        self.stdout.flush()
        answer = stdin.readline().strip()
        if answer != tenant.slug:
            raise CommandError("Not confirmed: nothing was deleted.")
