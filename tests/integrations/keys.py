"""Tenants and keys for the integration tests, made as an operator makes them (the management
commands): a tenant with its memory+admin key, and a key bound to one end user."""

from __future__ import annotations

import io
import json

from django.core.management import call_command


def operator_tenant(slug: str) -> str:
    out = io.StringIO()
    call_command("create_tenant", slug, "--name", slug.title(), stdout=out)
    return json.loads(out.getvalue())["api_key"]


def bound_key(slug: str, user_id: str) -> str:
    return operator_key(slug, "memory", "--user", user_id)


def operator_key(slug: str, permissions: str, *options: str) -> str:
    out = io.StringIO()
    call_command("create_api_key", slug, "--permissions", permissions, *options, stdout=out)
    return json.loads(out.getvalue())["api_key"]
