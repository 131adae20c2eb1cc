"""The Django admin for platform staff: tenants only, counts read per tenant, changes audited."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from memoryhub.tasks import retention_purge
from tenants.context import tenant_context
from tenants.models import AuditEntry
from tests.pages.conftest import signed_in, write


def test_staff_list_tenants_with_counts_and_changes_are_audited(acme, globex, acme_team) -> None:
    write(acme.tenant, "alice", "/a.md", "x")
    staff = get_user_model().objects.create_superuser("root", "root@platform.test", "pw")
    client = signed_in(staff)
    listing = client.get("/platform-admin/tenants/tenant/").content.decode()
    assert "acme" in listing and "globex" in listing
    page = client.get(f"/platform-admin/tenants/tenant/{acme.tenant.pk}/change/")
    form = {k: v for k, v in page.context["adminform"].form.initial.items() if v is not None}
    form.update({"name": "Acme Corp", "max_scope_bytes": "5000", "memory_enabled": "on",
                 "max_document_bytes": "", "_save": "Save"})
    response = client.post(f"/platform-admin/tenants/tenant/{acme.tenant.pk}/change/", form)
    assert response.status_code == 302
    assert acme.client.get("/api/v1/tenant").json()["limits"]["max_scope_bytes"] == 5000
    with tenant_context(acme.tenant.pk):
        [entry] = AuditEntry.objects.filter(action="tenant.settings_changed")
    assert entry.actor == "platform:root"
    assert client.get(f"/platform-admin/tenants/tenant/{acme.tenant.pk}/delete/").status_code == 403


def test_tenant_accounts_and_anonymous_visitors_do_not_reach_the_admin(acme_team) -> None:
    assert signed_in(acme_team.owner).get("/platform-admin/").status_code in (302, 403)
    assert signed_in(acme_team.owner).get("/platform-admin/login/").status_code == 403
    response = Client().get("/platform-admin/login/")
    assert response["Location"].startswith("/accounts/login/")


def test_staff_meet_the_settings_rules_the_api_and_the_dashboard_apply(acme, acme_team) -> None:
    """The admin saves through tenant_settings_update, so the rules must live there: a
    session_days past the API's 36500 made every hourly retention of the tenant fail
    (OverflowError: the cutoff went past year 1), its expired conversations kept too, and a
    recall_threshold outside 0-1 dropped every recall result."""
    staff = get_user_model().objects.create_superuser("root", "root@platform.test", "pw")
    client = signed_in(staff)
    url = f"/platform-admin/tenants/tenant/{acme.tenant.pk}/change/"
    initial = {k: v for k, v in client.get(url).context["adminform"].form.initial.items()
               if v is not None}
    for field, bad, problem in (("session_days", "1000000", "Must be at most 36500."),
                                ("recall_threshold", "5", "Must be between 0 and 1."),
                                ("recall_threshold", "-0.5", "Must be between 0 and 1."),
                                ("name", "Acme\r\nInc", "Must be one line")):
        response = client.post(url, {**initial, "memory_enabled": "on", field: bad,
                                     "_save": "Save"})
        assert response.status_code == 200, (field, bad)
        assert problem in response.content.decode(), (field, bad)
    settings = acme.client.get("/api/v1/tenant").json()
    assert settings["retention"]["session_days"] == 30 and settings["recall_threshold"] == 0.15
    assert retention_purge(tenant_id=acme.tenant.pk) == 0
    with tenant_context(acme.tenant.pk):
        assert not AuditEntry.objects.filter(action="tenant.settings_changed").exists()
