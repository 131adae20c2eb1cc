"""An htmx action after the session ended leaves the page for sign-in (``HX-Redirect``)
instead of swapping the sign-in page into the fragment it targets."""

from __future__ import annotations

from django.test import Client
from django.urls import reverse

from tests.pages.conftest import person, person_url, write

HTMX = {"HTTP_HX_REQUEST": "true"}


def test_an_htmx_action_on_a_person_page_without_a_session_says_it_ended(acme_team) -> None:
    end_user = person(acme_team.tenant, "alice", account=acme_team.member)
    doc = write(acme_team.tenant, "alice", "/a.md", "first")
    page = person_url(end_user)
    edit = person_url(end_user, "web:document_edit", document_id=doc.pk)
    response = Client().post(edit, {"content": "typed", "version": "1"},
                             HTTP_HX_CURRENT_URL=f"http://testserver{page}", **HTMX)
    assert response.status_code == 200
    ended = response["HX-Redirect"]
    assert ended.startswith(reverse("web:portal_ended") + "?next=")
    html = Client().get(ended).content.decode()
    assert "session on this memory page ended" in html
    assert f'href="/accounts/login/?next={page.replace("/", "%2F")}"' in html
    # Without htmx: the plain sign-in redirect, as before.
    assert Client().post(edit, {"content": "typed"})["Location"].startswith("/accounts/login/")


def test_an_htmx_request_on_a_tenant_page_without_a_session_goes_to_sign_in(acme_team) -> None:
    members = reverse("web:tenant_members", kwargs={"slug": "acme"})
    response = Client().post(members, {"email": "x@acme.test", "role": "member"},
                             HTTP_HX_CURRENT_URL=f"http://testserver{members}", **HTMX)
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/accounts/login/?next={members.replace('/', '%2F')}"


def test_the_ended_page_offers_no_sign_in_redirect_elsewhere() -> None:
    html = Client().get(reverse("web:portal_ended") + "?next=https://evil.test/").content.decode()
    assert "evil.test" not in html and 'href="/accounts/login/"' in html
