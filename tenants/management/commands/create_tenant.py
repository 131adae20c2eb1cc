"""``manage.py create_tenant SLUG``: a tenant, optionally its owner, and a memory+admin key."""

from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.core.validators import validate_email, validate_slug
from django.db import IntegrityError

from tenants.models import Tenant
from tenants.services import api_key_create, tenant_create, tenant_setting_problem


class Command(BaseCommand):
    help = "Create a tenant and print JSON with the tenant and an API key (memory, admin)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--owner-email")
        parser.add_argument("--owner-password")

    def handle(self, *args: Any, **options: Any) -> None:
        slug = options["slug"]
        try:
            validate_slug(slug)
        except Exception as exc:
            raise CommandError(f"Invalid slug {slug!r}: use letters, digits, - and _.") from exc
        for field, value in (("slug", slug), ("name", options["name"])):
            longest = getattr(Tenant._meta.get_field(field), "max_length", None)
            if longest is not None and len(value) > longest:  # else PostgreSQL's DataError
                raise CommandError(f"The {field} must be at most {longest} characters.")
        if options["name"] and (problem := tenant_setting_problem("name", options["name"])):
            raise CommandError(f"Invalid name: {problem}")  # the rule the API and dashboard keep
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"Tenant {slug!r} already exists; use create_api_key for a new key.")
        _check_owner(options["owner_email"], options["owner_password"])
        try:
            tenant = tenant_create(
                slug=slug, name=options["name"], owner_email=options["owner_email"],
                owner_password=options["owner_password"],
            )
        except IntegrityError as exc:
            raise CommandError(f"Could not create tenant {slug!r}: {exc}") from exc
        key = api_key_create(tenant=tenant, name="default", permissions=["memory", "admin"])
        self.stdout.write(json.dumps({
            "tenant": {"id": tenant.id, "slug": tenant.slug, "name": tenant.name},
            "api_key": key.plaintext,
            "owner_email": options["owner_email"],
        }))


def _check_owner(email: str | None, password: str | None) -> None:
    """Refuse an owner the command would get wrong, before the tenant exists: a password with
    no account to set it on, an address allauth could never log in with, a password the
    sign-up form refuses, or a new password for an account that already has one (it would
    silently lock that person out of every other tenant they belong to)."""
    if email is None:
        if password is not None:
            raise CommandError("--owner-password needs --owner-email.")
        return
    try:
        validate_email(email)
    except ValidationError as exc:
        raise CommandError(f"Invalid owner email {email!r}.") from exc
    if password is None:
        return
    if get_user_model().objects.filter(email__iexact=email).exists():
        raise CommandError(
            f"An account for {email} already exists: leave out --owner-password to make it "
            "the owner with the password it has."
        )
    try:
        validate_password(password)
    except ValidationError as exc:
        raise CommandError("--owner-password: " + " ".join(exc.messages)) from exc
