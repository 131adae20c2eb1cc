"""``manage.py create_api_key SLUG --permissions memory,admin [--user ID]``: prints JSON with
``api_key``. ``--user`` binds the key to that end user (memory only): an MCP client's or a
person's own device's key."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create


class Command(BaseCommand):
    help = "Create an API key for a tenant and print it (once) as JSON."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--permissions", default="memory",
                            help="Comma-separated: memory, admin (default: memory).")
        parser.add_argument("--name", default="cli")
        parser.add_argument("--user", default=None, metavar="ID",
                            help="Bind the key to this end user's user_id: it reaches no one else.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["slug"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['slug']!r}. Create it with create_tenant.")
        name, longest = options["name"], ApiKey._meta.get_field("name").max_length
        if not name.strip():  # as the API and the dashboard refuse it
            raise CommandError("The key's --name must not be blank.")
        if longest is not None and len(name) > longest:  # else PostgreSQL's DataError
            raise CommandError(f"The key's --name must be at most {longest} characters.")
        permissions = [p.strip() for p in options["permissions"].split(",") if p.strip()]
        try:
            key = api_key_create(tenant=tenant, name=name, permissions=permissions,
                                 user_id=options["user"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps({
            "tenant": tenant.slug, "api_key": key.plaintext, "permissions": key.api_key.permissions,
            "user_id": key.api_key.user_id,
        }))
