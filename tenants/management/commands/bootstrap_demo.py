"""``manage.py bootstrap_demo``: the demo tenant, its owner login and an API key (idempotent).

The key is stored (hashed) like any other, and the plaintext is kept in the data directory so
that running this again prints the same working key instead of minting a new one each time.
"""

from __future__ import annotations

import json
import os
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from tenants.context import tenant_context
from tenants.models import ApiKey, Tenant
from tenants.services import account_get_or_create, api_key_create, api_key_parse, tenant_create

DEMO_SLUG = "demo"
DEMO_EMAIL = "owner@demo.example"
DEMO_PASSWORD = "demo-owner-password"  # noqa: S105 - a development login, printed on purpose


class Command(BaseCommand):
    help = "Create the demo tenant, owner and API key if missing; print how to use them."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--json", action="store_true", help="Print JSON only.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=DEMO_SLUG).first()
        if tenant is None:
            tenant = tenant_create(slug=DEMO_SLUG, name="Demo", owner_email=DEMO_EMAIL,
                                   owner_password=DEMO_PASSWORD)
        else:
            account_get_or_create(email=DEMO_EMAIL, password=DEMO_PASSWORD)
        api_key = self._demo_key(tenant)
        info = {"url": options["url"], "tenant": tenant.slug, "owner_email": DEMO_EMAIL,
                "owner_password": DEMO_PASSWORD, "api_key": api_key}
        if options["json"]:
            self.stdout.write(json.dumps(info))
            return
        self.stdout.write(
            f"\nMemoryHub is ready at {info['url']}/\n"
            f"  sign in:  {DEMO_EMAIL} / {DEMO_PASSWORD}\n"
            f"  API key:  {api_key}\n"
            f"  try:      curl -H 'Authorization: Bearer {api_key}' {info['url']}/api/v1/tenant\n"
        )

    def _demo_key(self, tenant: Tenant) -> str:
        path = settings.DATA_DIR / "demo_api_key"
        if path.exists():
            saved = path.read_text().strip()
            parsed = api_key_parse(saved)
            if parsed and parsed.tenant_id == tenant.id:
                with tenant_context(tenant.id):
                    if ApiKey.objects.filter(lookup_id=parsed.lookup_id, revoked_at=None).exists():
                        return saved
        created = api_key_create(tenant=tenant, name="demo", permissions=["memory", "admin"])
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(created.plaintext)
        return created.plaintext
