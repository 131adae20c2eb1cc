"""Accounts: sign-up only through an invitation, sign-in, password reset, rate limits."""

from __future__ import annotations

import re
import threading

import pytest
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model
from django.core import mail
from django.db import connections
from django.test import Client

from tenants.context import tenant_context
from tenants.models import Invitation, Membership, Role
from tenants.services import MembershipRuleError, invitation_create
from tests.elsewhere import Elsewhere
from tests.pages.conftest import PASSWORD, signed_in

SIGNUP = {"email": "new@acme.test", "password1": PASSWORD, "password2": PASSWORD}


def _invite(tenant, email: str = "new@acme.test", role: str = Role.ADMIN) -> str:
    with tenant_context(tenant.pk):  # as the members page opens it
        created = invitation_create(tenant=tenant, email=email, role=role, actor="t")
    return f"/invite/{created.token}"


def test_open_sign_up_is_closed(acme_team) -> None:
    client = Client()
    page = client.get("/accounts/signup/").content.decode()
    assert "Sign-up is by invitation" in page
    client.post("/accounts/signup/", SIGNUP)
    assert not get_user_model().objects.filter(email="new@acme.test").exists()


def test_an_invitation_lets_that_email_sign_up_once(acme_team, globex_team) -> None:
    link = _invite(acme_team.tenant)
    client = Client()
    response = client.get(link)
    assert response["Location"] == "/accounts/signup/"
    assert 'value="new@acme.test"' in client.get("/accounts/signup/").content.decode()
    response = client.post("/accounts/signup/", SIGNUP)
    assert response.status_code == 302
    user = get_user_model().objects.get(email="new@acme.test")
    with tenant_context(acme_team.tenant.pk):
        assert Membership.objects.get(user=user).role == Role.ADMIN
        assert Invitation.objects.get().accepted_at is not None
    with tenant_context(globex_team.tenant.pk):
        assert not Membership.objects.filter(user=user).exists()
    assert client.get("/t/acme/").status_code == 200
    # Used: the link is dead, and sign-up is closed again.
    assert Client().get(link).status_code == 410
    assert "Sign-up is by invitation" in Client().get("/accounts/signup/").content.decode()


def test_the_invited_email_only(acme_team) -> None:
    client = Client()
    client.get(_invite(acme_team.tenant))
    response = client.post("/accounts/signup/", {**SIGNUP, "email": "other@evil.test"})
    assert "This invitation is for new@acme.test" in response.content.decode()
    assert not get_user_model().objects.filter(email="other@evil.test").exists()


def test_an_existing_account_signs_in_to_accept(acme_team, globex_team) -> None:
    link = _invite(globex_team.tenant, email="owner@acme.test", role=Role.MEMBER)
    client = Client()
    page = client.get(link).content.decode()
    assert "Sign in to accept" in page
    client.post("/accounts/login/", {"login": "owner@acme.test", "password": PASSWORD})
    assert client.get(link)["Location"] == "/"
    with tenant_context(globex_team.tenant.pk):
        assert Membership.objects.get(user=acme_team.owner).role == Role.MEMBER
    # The picker now lists both tenants.
    home = client.get("/").content.decode()
    assert "Acme" in home and "Globex" in home


def test_an_invitation_for_someone_else_is_refused(acme_team) -> None:
    link = _invite(acme_team.tenant, email="someone@else.test")
    response = signed_in(acme_team.member).get(link)
    assert response.status_code == 403
    with tenant_context(acme_team.tenant.pk):
        assert Membership.objects.get(user=acme_team.member).role == Role.MEMBER


def test_a_token_with_another_tenants_id_finds_nothing(acme_team, globex_team) -> None:
    link = _invite(acme_team.tenant)
    forged = link.replace(f"/invite/{acme_team.tenant.pk}.", f"/invite/{globex_team.tenant.pk}.")
    assert Client().get(forged).status_code == 410
    assert Client().get("/invite/garbage").status_code == 410



def test_an_account_cannot_take_another_address_that_an_invitation_then_needs(
        acme_team, globex_team) -> None:
    """With email verification off, the account page added any address unverified: its
    holder then signed in with it, and the person invited at that address could not sign up
    ("A user is already registered with this email address"). An account keeps the one
    address it was invited with."""
    squatter = signed_in(acme_team.member)
    assert 'name="action_add"' not in squatter.get("/accounts/email/").content.decode()
    squatter.post("/accounts/email/", {"action_add": "", "email": "new@acme.test"})  # forged
    assert not EmailAddress.objects.filter(email__iexact="new@acme.test").exists()
    assert Client().post("/accounts/login/", {"login": "new@acme.test", "password": PASSWORD}
                         ).status_code == 200  # no account signs in with it
    client = Client()
    client.get(_invite(globex_team.tenant))
    assert client.post("/accounts/signup/", SIGNUP).status_code == 302
    invitee = get_user_model().objects.get(email="new@acme.test")
    with tenant_context(globex_team.tenant.pk):
        assert Membership.objects.get(user=invitee).role == Role.ADMIN

def test_sign_in_and_sign_out(acme_team) -> None:
    client = Client()
    response = client.post("/accounts/login/", {"login": "admin@acme.test", "password": PASSWORD})
    assert response.status_code == 302
    assert "Acme" in client.get("/").content.decode()
    client.post("/accounts/logout/")
    assert client.get("/").status_code == 302


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.rate_limit for r in caplog.records if r.name == "memoryhub.ratelimit"]


def test_failed_sign_ins_are_rate_limited_with_429(acme_team, caplog) -> None:
    client = Client()
    for _ in range(5):
        wrong = client.post("/accounts/login/", {"login": "admin@acme.test", "password": "wrong"})
        assert wrong.status_code == 200 and "not correct" in wrong.content.decode()
    assert refusals(caplog) == []
    # The right password is refused too; 429 (not allauth's 200 with a form error) lets
    # monitoring tell a refusal from a typo, and the refusal is logged.
    response = client.post("/accounts/login/", {"login": "admin@acme.test", "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert refusals(caplog) == ["login_failed"]


def test_too_many_sign_in_requests_get_the_429_page(acme_team, settings, caplog) -> None:
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS, "login": "2/m/ip"}
    client = Client()
    for _ in range(2):
        assert client.post("/accounts/login/", {"login": "x@acme.test", "password": "w"}
                           ).status_code == 200
    response = client.post("/accounts/login/", {"login": "admin@acme.test", "password": PASSWORD})
    assert response.status_code == 429
    assert "<h1>Too many requests</h1>" in response.content.decode()
    assert refusals(caplog) == ["allauth"]


def test_password_reset_sends_a_link(acme_team) -> None:
    client = Client()
    client.post("/accounts/password/reset/", {"email": "member@acme.test"})
    [email] = mail.outbox
    link = re.search(r"http://testserver(/accounts/password/reset/key/\S+)", email.body).group(1)
    form_url = client.get(link)["Location"]
    client.post(form_url, {"password1": "a new long passphrase 7", "password2": "a new long passphrase 7"})
    assert Client().post("/accounts/login/", {"login": "member@acme.test",
                                              "password": "a new long passphrase 7"}).status_code == 302


def test_a_refused_reset_link_is_logged_without_its_key(acme_team, settings, caplog) -> None:
    """The rate limit's line named the path, so a password reset link whose POST was
    refused (429) went to the log with its key, still valid: whoever read it could set the
    password. It names the URL pattern."""
    settings.ACCOUNT_RATE_LIMITS = {**settings.ACCOUNT_RATE_LIMITS,
                                    "reset_password_from_key": "1/m/ip"}
    Client().post("/accounts/password/reset/", {"email": "member@acme.test"})
    [email] = mail.outbox
    link = re.search(r"http://testserver(/accounts/password/reset/key/\S+)", email.body).group(1)
    key = link.rstrip("/").rsplit("/", 1)[-1]
    for _ in range(2):
        refused = Client().post(link, {"password1": "x", "password2": "y"})
    assert refused.status_code == 429 and refusals(caplog) == ["allauth"]
    [line] = [r.getMessage() for r in caplog.records if r.name == "memoryhub.ratelimit"]
    assert line == ("rate limit refused POST account_reset_password_from_key (allauth) "
                    "from 127.0.0.1")
    assert not [r for r in caplog.records if key in r.getMessage()]


def _totp_now(secret: str) -> str:
    import time

    from allauth.mfa.totp.internal.auth import format_hotp_value, hotp_value

    return format_hotp_value(hotp_value(secret, int(time.time()) // 30))


def test_an_admin_turns_on_totp_and_then_signs_in_with_a_code(acme_team) -> None:
    client = Client()
    client.post("/accounts/login/", {"login": "admin@acme.test", "password": PASSWORD})
    # Turning it on asks for the password again first.
    assert client.get("/accounts/2fa/totp/activate/")["Location"].startswith(
        "/accounts/reauthenticate/")
    client.post("/accounts/reauthenticate/", {"password": PASSWORD})
    page = client.get("/accounts/2fa/totp/activate/")
    assert page.status_code == 200
    assert "img-src 'self' data:" in page["Content-Security-Policy"]  # the QR code
    secret = client.session["mfa.totp.secret"]
    response = client.post("/accounts/2fa/totp/activate/", {"code": _totp_now(secret)})
    assert response.status_code == 302
    client.post("/accounts/logout/")

    again = Client()
    response = again.post("/accounts/login/", {"login": "admin@acme.test", "password": PASSWORD})
    assert response["Location"] == "/accounts/2fa/authenticate/"
    assert again.get("/t/acme/").status_code == 302  # not signed in before the code
    again.post("/accounts/2fa/authenticate/", {"code": "000000" if _totp_now(secret) != "000000"
                                                else "111111"})
    assert again.get("/t/acme/").status_code == 302
    again.post("/accounts/2fa/authenticate/", {"code": _totp_now(secret)})
    assert again.get("/t/acme/").status_code == 200


@pytest.mark.django_db(transaction=True)
def test_two_admins_inviting_one_address_at_once_make_one_invitation(acme_team) -> None:
    """The second waits for the first's transaction, then finds its invitation pending."""
    tenant = acme_team.tenant
    made, release = threading.Event(), threading.Event()
    outcome: list[str] = []

    def invite(then: threading.Event | None) -> None:
        try:
            with tenant_context(tenant.pk):
                invitation_create(tenant=tenant, email="new@acme.test", role=Role.MEMBER,
                                  actor="admin")
                if then is not None:
                    made.set()
                    then.wait(10)  # the transaction stays open until released
            outcome.append("made")
        except MembershipRuleError as refused:
            outcome.append(str(refused))
        finally:
            connections.close_all()

    first = threading.Thread(target=invite, args=(release,))
    first.start()
    assert made.wait(10)
    second = Elsewhere(lambda: invite(None)).as_far_as_it_gets()
    waited = second.is_alive()
    release.set()
    first.join(10)
    second.join(10)
    assert waited and outcome[0] == "made" and "already pending" in outcome[1]
    with tenant_context(tenant.pk):
        assert Invitation.objects.count() == 1
