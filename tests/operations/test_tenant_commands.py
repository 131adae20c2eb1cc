"""``create_tenant`` and ``create_api_key`` (README, "Other commands"): a value the tables
cannot hold is a one-line error that names it, and creates nothing."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tenants.context import tenant_context
from tenants.models import ApiKey, Tenant


@pytest.mark.parametrize(("args", "refusal"), [
    (["s" * 64], "at most 63 characters"),
    (["longname", "--name", "n" * 201], "at most 200 characters"),
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
