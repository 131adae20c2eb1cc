"""Portal links: one use, then a clear error; a signed-in account gets the person linked."""

from __future__ import annotations

from datetime import timedelta

from django.test import Client
from django.utils import timezone

from memoryhub.models import EndUser, PortalLink
from tenants.context import tenant_context
from tests.pages.conftest import PASSWORD, signed_in, write


def _link(kit, user_id: str = "alice") -> str:
    response = kit.client.post(f"/api/v1/users/{user_id}/portal-link")
    assert response.status_code == 201
    url = response.json()["url"]
    return url[url.index("/portal/"):]


def test_a_link_signs_in_once(acme, globex) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    link = _link(acme)
    client = Client()
    response = client.get(link)
    assert response.status_code == 302
    page = client.get(response["Location"])
    assert page.status_code == 200 and "/notes/a.md" in page.content.decode()
    assert "_auth_user_id" not in client.session  # not a Django login
    again = Client().get(link)
    assert again.status_code == 410
    assert "already been used or has expired" in again.content.decode()


def test_an_expired_link_fails(acme, globex) -> None:
    link = _link(acme)
    with tenant_context(acme.tenant.pk):
        PortalLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(link).status_code == 410


def test_a_forged_or_foreign_token_fails(acme, globex) -> None:
    link = _link(globex)
    assert Client().get(link[:-2] + "xx").status_code == 410
    assert Client().get("/portal/nonsense").status_code == 410


def test_a_signed_in_account_gets_the_person_linked(acme, globex, acme_team) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    client = signed_in(acme_team.member)
    response = client.get(_link(acme))
    page = response["Location"]
    with tenant_context(acme.tenant.pk):
        assert EndUser.objects.get(user_id="alice").account_id == acme_team.member.pk
    # Back later with the password: the page is listed and opens.
    fresh = Client()
    fresh.post("/accounts/login/", {"login": "member@acme.test", "password": PASSWORD})
    assert page in fresh.get("/").content.decode()
    assert fresh.get(page).status_code == 200


def test_the_portal_session_ends_when_everything_is_forgotten(acme, globex) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    client = Client()
    page = client.get(_link(acme))["Location"]
    client.post(f"{page}forget", {"confirm": "FORGET"})
    assert client.get(page).status_code == 302  # no grant any more: plain sign-in redirect
