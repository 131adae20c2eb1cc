"""``create_tenant`` and ``create_api_key`` (README, "Other commands"): a value the tables
cannot hold is a one-line error that names it, and creates nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from tenants.context import tenant_context
from tenants.models import ApiKey, Membership, Tenant


@pytest.mark.parametrize(("args", "refusal"), [
    (["s" * 64], "at most 63 characters"),
    (["longname", "--name", "n" * 201], "at most 200 characters"),
    (["twolines", "--name", "Acme\nCorp"], "Invalid name: "),
])
def test_create_tenant_refuses_a_slug_or_name_too_long(db, args, refusal) -> None:
    """Both were a traceback of PostgreSQL's DataError (value too long)."""
    with pytest.raises(CommandError, match=refusal):
        call_command("create_tenant", *args, stdout=StringIO())
    assert not Tenant.objects.exists()


@pytest.mark.parametrize(("name", "refusal"), [("k" * 101, "at most 100 characters"),
                                               ("", "must not be blank"),
                                               ("  ", "must not be blank")])
def test_create_api_key_refuses_a_name_the_api_and_the_dashboard_refuse(
    acme, name, refusal,
) -> None:
    """A long name was a traceback of PostgreSQL's DataError; a blank one made a key the
    dashboard lists without a name."""
    with tenant_context(acme.tenant.id):
        before = ApiKey.objects.count()
    with pytest.raises(CommandError, match=refusal):
        call_command("create_api_key", "acme", "--name", name, stdout=StringIO())
    with tenant_context(acme.tenant.id):
        assert ApiKey.objects.count() == before


def test_create_tenant_does_not_reset_an_existing_accounts_password(db) -> None:
    """An owner who already has an account keeps their password: a new tenant's
    --owner-password used to overwrite it, logging them out of every other tenant."""
    call_command("create_tenant", "first", "--owner-email", "ana@example.com",
                 "--owner-password", "first-long-passphrase", stdout=StringIO())
    with pytest.raises(CommandError, match="already exists: leave out --owner-password"):
        call_command("create_tenant", "second", "--owner-email", "ANA@example.com",
                     "--owner-password", "second-long-passphrase", stdout=StringIO())
    assert not Tenant.objects.filter(slug="second").exists()
    account = get_user_model().objects.get(email="ana@example.com")
    assert account.check_password("first-long-passphrase")
    # Without a password the existing account becomes the new tenant's owner as it is.
    call_command("create_tenant", "second", "--owner-email", "ana@example.com", stdout=StringIO())
    second = Tenant.objects.get(slug="second")
    with tenant_context(second.id):
        assert Membership.objects.get(tenant=second).user == account
    account.refresh_from_db()
    assert account.check_password("first-long-passphrase")


@pytest.mark.parametrize(("args", "refusal"), [
    (["--owner-email", "not-an-address"], "Invalid owner email"),
    (["--owner-password", "long-enough-passphrase"], "needs --owner-email"),
    (["--owner-email", "bo@example.com", "--owner-password", "12345678"], "--owner-password:"),
])
def test_create_tenant_refuses_an_owner_it_would_get_wrong(db, args, refusal) -> None:
    """An address allauth cannot log in with, a password with no account, and a password the
    sign-up form refuses each made a tenant whose owner could not log in as typed."""
    with pytest.raises(CommandError, match=refusal):
        call_command("create_tenant", "acme", *args, stdout=StringIO())
    assert not Tenant.objects.exists()
    assert not get_user_model().objects.exists()
