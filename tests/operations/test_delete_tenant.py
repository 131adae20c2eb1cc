"""``manage.py delete_tenant``: every row of that tenant in every tenant table (the tables
derived from the models), the tenant itself, after a typed confirmation; nothing of another."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection

from memoryhub.services.tenant_removal import unowned_tenant_references
from tenants.models import Tenant
from tests.operations.seed import rows_per_table, seed_every_table
from tests.webhooks.receiver import private_urls_allowed  # noqa: F401 - a fixture

pytestmark = pytest.mark.usefixtures("private_urls_allowed")


@pytest.fixture
def seeded(acme, globex) -> dict[str, int]:
    """Both tenants with rows in every tenant table; globex's counts before anything."""
    seed_every_table(acme, "acmemark")
    seed_every_table(globex, "globexmark")
    return rows_per_table(globex)


def delete(slug: str, *args: str, stdin: str = "") -> str:
    out = StringIO()
    call_command("delete_tenant", slug, *args, stdout=out, stdin=StringIO(stdin))
    return out.getvalue()


def constraints_hold() -> None:
    """The foreign keys are checked at commit, which a test's transaction never reaches:
    check them now."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_every_row_of_the_tenant_goes_and_nothing_of_another(acme, globex, seeded) -> None:
    assert all(rows_per_table(acme).values())  # something to delete in every table
    shown = delete("acme", "--yes")
    for table in rows_per_table(acme):
        assert table in shown  # the count of each table was shown first
    assert set(rows_per_table(acme).values()) == {0}
    assert rows_per_table(globex) == seeded
    constraints_hold()
    assert not Tenant.objects.filter(slug="acme").exists()
    assert acme.client.get("/api/v1/tenant").status_code == 401  # its keys went with it
    assert globex.client.get("/api/v1/tenant").json()["slug"] == "globex"
    assert globex.client.get("/api/v1/users/alice/export").json()["documents"]
    # Accounts are the platform's: only the membership went.
    assert get_user_model().objects.filter(email="acmemark@example.com").exists()


def test_the_slug_must_be_typed_to_confirm(acme, globex, seeded) -> None:
    acme_rows = rows_per_table(acme)
    for answer in ("", "globex\n", "ACME\n"):
        with pytest.raises(CommandError, match="nothing was deleted"):
            delete("acme", stdin=answer)
        assert rows_per_table(acme) == acme_rows
    shown = delete("acme", stdin="acme\n")
    assert "Type acme to go on" in shown and "Deleted tenant acme" in shown
    assert set(rows_per_table(acme).values()) == {0}
    assert rows_per_table(globex) == seeded
    constraints_hold()


def test_an_unknown_tenant_is_an_error(db) -> None:
    with pytest.raises(CommandError, match="No tenant 'nope'"):
        delete("nope", "--yes")


def test_every_model_that_points_at_tenants_is_tenant_owned() -> None:
    """Else its rows would stay behind; delete_tenant refuses to run while one exists."""
    assert unowned_tenant_references() == []
