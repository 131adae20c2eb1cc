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


def _account_of_alice(tenant) -> int | None:
    with tenant_context(tenant.pk):
        return EndUser.objects.get(user_id="alice").account_id


def test_a_signed_in_account_is_asked_before_the_person_is_linked(acme, globex,
                                                                 acme_team) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    client = signed_in(acme_team.member)
    link = _link(acme)
    question = client.get(link)
    assert question.status_code == 200
    html = question.content.decode()
    assert "Link this memory to your account member@acme.test" in html
    assert "Just open it this time" in html and 'name="csrfmiddlewaretoken"' in html
    assert _account_of_alice(acme.tenant) is None  # nothing linked by opening it
    # The link is used up at once: nobody else can use it while the account decides ...
    assert Client().get(link).status_code == 410
    # ... and reopening it asks again.
    assert "Just open it this time" in client.get(link).content.decode()
    response = client.post(link, {"choice": "link"})
    page = response["Location"]
    assert _account_of_alice(acme.tenant) == acme_team.member.pk
    assert "now linked to your account" in client.get(page).content.decode()
    assert client.post(link, {"choice": "link"}).status_code == 410  # answered once
    # Back later with the password: the page is listed and opens.
    fresh = Client()
    fresh.post("/accounts/login/", {"login": "member@acme.test", "password": PASSWORD})
    assert page in fresh.get("/").content.decode()
    assert fresh.get(page).status_code == 200


def test_just_this_time_opens_the_page_and_links_nothing(acme, globex, acme_team) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    client = signed_in(acme_team.owner)  # an admin who opened someone's link
    link = _link(acme)
    client.get(link)
    assert client.post(link, {"choice": "maybe"}).status_code == 422  # still pending
    page = client.post(link, {"choice": "once"})["Location"]
    assert _account_of_alice(acme.tenant) is None
    assert "/notes/a.md" in client.get(page).content.decode()
    assert client.get("/t/acme/").status_code == 200  # still signed in, unfenced
    # Leaving drops the grant and keeps the account signed in.
    client.post("/portal-leave")
    assert client.get(page).status_code == 404
    assert client.get("/t/acme/").status_code == 200


def test_a_choice_without_the_link_opened_first_is_refused(acme, globex, acme_team) -> None:
    link = _link(acme)
    assert signed_in(acme_team.member).post(link, {"choice": "link"}).status_code == 410
    assert Client().post(link, {"choice": "link"}).status_code == 410
    assert _account_of_alice(acme.tenant) is None
    assert Client().get(link).status_code == 302  # the link itself was not used


def test_a_person_forgotten_while_the_account_decides_is_a_used_link(acme, globex,
                                                                      acme_team) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    client = signed_in(acme_team.member)
    link = _link(acme)
    assert client.get(link).status_code == 200  # the question
    assert acme.client.delete("/api/v1/users/alice").status_code == 204
    assert client.get(link).status_code == 410
    assert client.post(link, {"choice": "link"}).status_code == 410
    with tenant_context(acme.tenant.pk):
        assert not EndUser.objects.filter(user_id="alice").exists()


def test_an_account_already_linked_goes_straight_to_the_page(acme, globex, acme_team) -> None:
    client = signed_in(acme_team.member)
    link = _link(acme)
    client.get(link)
    client.post(link, {"choice": "link"})
    again = _link(acme)
    assert client.get(again)["Location"].startswith("/memory/")


def test_the_portal_session_ends_when_everything_is_forgotten(acme, globex) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    client = Client()
    page = client.get(_link(acme))["Location"]
    client.post(f"{page}forget", {"confirm": "FORGET"})
    assert client.get(page).status_code == 302  # no grant any more: plain sign-in redirect
