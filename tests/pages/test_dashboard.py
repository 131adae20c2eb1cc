"""The tenant admin dashboard: settings, profiles, keys, members, end users, audit log.

Each change must reach the API at once and leave an AuditEntry naming the account.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urljoin

from django.core import mail
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from memoryhub.models import EndUser, Profile
from memoryhub.services.events import pressure_event
from memoryhub.web.selectors import LIST_PAGE, PEOPLE_PAGE
from tenants.context import tenant_context
from tenants.models import ApiKey, AuditEntry, Invitation, Membership, Role
from tenants.services import api_key_create, api_key_revoke, invitation_revoke
from tests.pages.conftest import account, signed_in, write

SETTINGS = {
    "name": "Acme", "memory_enabled": "on", "recall_threshold": "0.15", "session_days": "30",
    "max_document_bytes": "16384", "max_index_entries": "50", "max_index_tokens": "1500",
    "max_scope_bytes": "262144", "max_writes_per_turn": "20",
    "capture_excluded_roles": ["system"], "capture_drop_empty": "on", "capture_redact": "",
    "conversation_timeout_minutes": "30", "max_message_bytes": "65536",
    "max_history_tokens": "2000", "augmentation_enabled": "on", "conversation_days": "",
}


def _audit(tenant, action: str) -> list[AuditEntry]:
    with tenant_context(tenant.pk):
        return list(AuditEntry.objects.filter(action=action).order_by("id"))


def test_overview_counts_this_tenant_only(acme, globex, acme_team) -> None:
    write(acme.tenant, "alice", "/a.md", "12345")
    write(acme.tenant, "bob", "/b.md", "123", scope="session", scope_key="s")
    write(globex.tenant, "carol", "/c.md", "x" * 1000)
    with tenant_context(acme.tenant.pk):
        pressure_event(tenant_id=acme.tenant.pk, user_id="bob", actor="assistant",
                       scope="session", scope_key="s", used_bytes=2, limit_bytes=1)
    html = signed_in(acme_team.admin).get("/t/acme/").content.decode()
    stats = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", html))
    assert stats["End users"] == "2"
    assert stats["Documents"] == "2"
    assert stats["Writes today"] == "2"
    assert stats["Memory pressure events, 7 days"] == "1"
    assert "/b.md" in html and "carol" not in html


def test_a_limit_changed_on_the_page_applies_to_the_api_at_once(acme, globex, acme_team) -> None:
    client = signed_in(acme_team.admin)
    response = client.post("/t/acme/settings", {**SETTINGS, "max_document_bytes": "100",
                                                 "max_index_entries": ""})
    assert response.status_code == 302
    limits = acme.client.get("/api/v1/tenant").json()["limits"]
    assert limits["max_document_bytes"] == 100
    assert limits["max_index_entries"] is None  # blank switches the limit off
    assert globex.client.get("/api/v1/tenant").json()["limits"]["max_document_bytes"] == 16384
    put = acme.client.put("/api/v1/users/u/documents/global/a.md", {"content": "x" * 101},
                          format="json")
    assert put.status_code == 422
    assert put.json()["error"]["code"] == "document_too_large"
    [entry] = _audit(acme.tenant, "tenant.settings_changed")
    assert entry.actor == "admin@acme.test"
    assert entry.data["max_document_bytes"] == [16384, 100]



def test_an_admin_with_a_long_email_is_named_whole_in_the_audit_log(acme, acme_team) -> None:
    # Accounts have up to 254 characters of email; the audit entry's 200-character actor
    # made every change such an admin saved a 500.
    email = "a" * 64 + "@" + "b" * 60 + "." + "c" * 60 + "." + "d" * 60 + ".test"
    admin = account(acme.tenant, email, Role.ADMIN)
    response = signed_in(admin).post("/t/acme/settings", {**SETTINGS, "max_index_entries": "7"})
    assert response.status_code == 302
    assert acme.client.get("/api/v1/tenant").json()["limits"]["max_index_entries"] == 7
    [entry] = _audit(acme.tenant, "tenant.settings_changed")
    assert entry.actor == email

def test_settings_refuse_what_is_not_a_positive_whole_number(acme, acme_team) -> None:
    client = signed_in(acme_team.admin)
    for field, bad in [("max_scope_bytes", "0"), ("max_scope_bytes", "-5"),
                       ("max_writes_per_turn", "ten"), ("session_days", "1.5"),
                       ("recall_threshold", "2")]:
        response = client.post("/t/acme/settings", {**SETTINGS, field: bad})
        assert response.status_code == 422, (field, bad)
        assert 'class="errorlist' in response.content.decode()
    assert acme.client.get("/api/v1/tenant").json()["limits"]["max_scope_bytes"] == 262144
    assert _audit(acme.tenant, "tenant.settings_changed") == []



def test_a_tenant_name_is_one_line_so_invitations_can_be_mailed(acme, acme_team) -> None:
    # The name is the invitation mail's subject: a line break set through the API made every
    # invitation a 500 (BadHeaderError), and the page took one from a forged form too.
    for bad in ("Acme\nInc", "Acme\u2028Inc", "Acme\x07"):
        refused = acme.client.patch("/api/v1/tenant", {"name": bad}, format="json")
        assert refused.status_code == 400, repr(bad)
        assert refused.json()["error"]["message"] == (
            "name: Must be one line, without control characters.")
    client = signed_in(acme_team.admin)
    response = client.post("/t/acme/settings", {**SETTINGS, "name": "Acme\r\nInc"})
    assert response.status_code == 422
    assert "Must be one line, without control characters." in response.content.decode()
    assert acme.client.get("/api/v1/tenant").json()["name"] == "Acme"
    assert client.post("/t/acme/members", {"email": "new@x.test", "role": "member"}
                       ).status_code == 200
    assert mail.outbox[0].subject == "You are invited to Acme on MemoryHub"

def test_memory_off_for_the_tenant(acme, acme_team) -> None:
    client = signed_in(acme_team.owner)
    response = client.post("/t/acme/memory", {"memory_enabled": "off"}, HTTP_HX_REQUEST="true")
    assert "Memory is off for the whole tenant" in response.content.decode()
    assert acme.client.get("/api/v1/tenant").json()["memory_enabled"] is False
    assert _audit(acme.tenant, "tenant.settings_changed")[0].data == {"memory_enabled": [True, False]}


def test_a_switch_value_that_is_neither_on_nor_off_changes_nothing_and_says_so(
        acme, acme_team) -> None:
    client = signed_in(acme_team.owner)
    response = client.post("/t/acme/memory", {"memory_enabled": "maybe"}, follow=True)
    html = response.content.decode()
    assert "Choose on or off: nothing was changed." in html and "Memory is on" in html
    assert "Memory is off" not in html
    response = client.post("/t/acme/memory", {"memory_enabled": "maybe"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 422
    card = response.content.decode()
    assert card.lstrip().startswith('<section id="memory-toggle"')  # the card, as it was
    assert "Choose on or off" in card and "Memory is on for the whole tenant" in card
    assert acme.client.get("/api/v1/tenant").json()["memory_enabled"] is True
    assert _audit(acme.tenant, "tenant.settings_changed") == []


def test_profiles_add_disable_enable(acme, globex, acme_team) -> None:
    client = signed_in(acme_team.admin)
    assert client.post("/t/acme/profiles", {"name": "Bad Name"}).status_code == 422
    assert client.post("/t/acme/profiles", {"name": "cooking"}).status_code == 302
    assert client.post("/t/acme/profiles", {"name": "cooking"}).status_code == 422
    with tenant_context(acme.tenant.pk):
        profile = Profile.objects.get(name="cooking")
    client.post(f"/t/acme/profiles/{profile.pk}", {"disabled": "on"})
    listed = acme.client.get("/api/v1/profiles").json()["profiles"]
    assert listed[0]["disabled"] is True
    assert globex.client.get("/api/v1/profiles").json()["profiles"] == []
    client.post(f"/t/acme/profiles/{profile.pk}", {"disabled": "off"})
    assert acme.client.get("/api/v1/profiles").json()["profiles"][0]["disabled"] is False
    assert [e.data["disabled"] for e in _audit(acme.tenant, "profile.set")] == [False, True, False]



def test_a_profile_switch_that_is_neither_on_nor_off_changes_nothing_and_says_so(
        acme, acme_team) -> None:
    # Anything but "on" read as "off": a garbled or forged form switched a disabled profile on.
    assert acme.client.put("/api/v1/profiles/cooking", {"disabled": True},
                           format="json").status_code == 201
    with tenant_context(acme.tenant.pk):
        profile = Profile.objects.get(name="cooking")
    client = signed_in(acme_team.admin)
    for sent in ({}, {"disabled": ""}, {"disabled": "true"}):
        response = client.post(f"/t/acme/profiles/{profile.pk}", sent, follow=True)
        assert "Choose on or off: profile cooking was not changed." in response.content.decode()
    assert acme.client.get("/api/v1/profiles").json()["profiles"][0]["disabled"] is True
    assert len(_audit(acme.tenant, "profile.set")) == 1  # the API's creation only

def test_a_key_created_on_the_page_is_shown_once_and_works_until_revoked(acme, globex,
                                                                         acme_team) -> None:
    client = signed_in(acme_team.admin)
    response = client.post("/t/acme/keys", {"name": "web-made", "permissions": ["admin"]})
    html = response.content.decode()
    assert response["Cache-Control"] == "no-store"
    plaintext = re.search(r'id="new-key-secret">(mh_[^<]+)<', html).group(1)
    assert plaintext not in client.get("/t/acme/keys").content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert api.get("/api/v1/tenant").json()["slug"] == "acme"
    assert api.get("/api/v1/users").status_code == 403  # admin only, as chosen
    with tenant_context(acme.tenant.pk):
        from tenants.models import ApiKey

        key = ApiKey.objects.get(name="web-made")
    client.post(f"/t/acme/keys/{key.pk}/revoke")
    assert api.get("/api/v1/tenant").status_code == 401
    assert [e.actor for e in _audit(acme.tenant, "api_key.created")][-1] == "admin@acme.test"
    assert _audit(acme.tenant, "api_key.revoked")[0].target == key.masked
    assert client.post("/t/acme/keys", {"name": "none", "permissions": []}).status_code == 422




def test_a_key_bound_on_the_keys_page_needs_a_valid_user_id(acme, acme_team) -> None:
    client = signed_in(acme_team.admin)
    response = client.post("/t/acme/keys", {"name": "k", "permissions": ["memory"],
                                            "user_id": "no spaces"})
    assert response.status_code == 422
    assert "A user id is 1-128 characters of" in response.content.decode()
    made = client.post("/t/acme/keys", {"name": "k", "permissions": ["memory"],
                                        "user_id": " gina "})
    assert made.status_code == 200
    keys = acme.client.get("/api/v1/keys").json()["keys"]
    assert [(k["name"], k["user_id"]) for k in keys][0] == ("k", "gina")
    assert _audit(acme.tenant, "api_key.created")[-1].data["user_id"] == "gina"

def test_revoked_keys_are_listed_after_the_working_ones(acme, globex, acme_team) -> None:
    # PostgreSQL sorts NULLs last in ascending order: ordering by revoked_at put every
    # revoked key above the working ones, on this page and in GET /api/v1/keys.
    made = [acme.client.post("/api/v1/keys", {"name": f"key-{n}"}, format="json").json()["id"]
            for n in range(3)]
    assert acme.client.delete(f"/api/v1/keys/{made[1]}").status_code == 204
    globex.client.post("/api/v1/keys", {"name": "globex-key"}, format="json")
    working_then_revoked = ["key-2", "key-0", "agent", "full", "key-1"]
    html = signed_in(acme_team.admin).get("/t/acme/keys").content.decode()
    assert re.findall(r'<th scope="row">(.*?)</th>', html) == working_then_revoked
    listed = acme.client.get("/api/v1/keys").json()["keys"]
    assert [k["name"] for k in listed] == working_then_revoked


def test_revoking_a_key_or_cancelling_an_invitation_twice_says_it_was_done(acme, acme_team) -> None:
    """Two tabs, a double click or two admins: the second POST was a "Not found" page."""
    one, other = signed_in(acme_team.admin), signed_in(acme_team.owner)
    key = acme.client.post("/api/v1/keys", {"name": "bot"}, format="json").json()
    assert one.post(f"/t/acme/keys/{key['id']}/revoke").status_code == 302
    again = other.post(f"/t/acme/keys/{key['id']}/revoke", follow=True)
    assert again.status_code == 200 and "bot was already revoked." in again.content.decode()
    assert len(_audit(acme.tenant, "api_key.revoked")) == 1

    one.post("/t/acme/members", {"email": "new@x.test", "role": "member"})
    one.post("/t/acme/members", {"email": "joins@x.test", "role": "member"})
    with tenant_context(acme.tenant.pk):
        cancelled = Invitation.objects.get(email="new@x.test")
        accepted = Invitation.objects.get(email="joins@x.test")
        Invitation.objects.filter(pk=accepted.pk).update(accepted_at=timezone.now())
    assert one.post(f"/t/acme/invitations/{cancelled.pk}/revoke").status_code == 302
    again = other.post(f"/t/acme/invitations/{cancelled.pk}/revoke", follow=True)
    assert "The invitation of new@x.test was already cancelled." in again.content.decode()
    late = other.post(f"/t/acme/invitations/{accepted.pk}/revoke", follow=True)
    assert "joins@x.test has already accepted the invitation." in late.content.decode()
    with tenant_context(acme.tenant.pk):
        assert Invitation.objects.get(pk=accepted.pk).revoked_at is None
    assert len(_audit(acme.tenant, "member.invitation_revoked")) == 1


def _rows(html: str) -> list[str]:
    return re.findall(r'<th scope="row">(?:<code>)?(.*?)(?:</code>)?</th>', html)


def test_long_lists_of_keys_and_profiles_come_a_page_at_a_time(acme, globex, acme_team) -> None:
    """A tenant may have a bound key for every person and any number of profiles: each page
    showed all of them at once. A row's action comes back to the page it was on."""
    for n in range(LIST_PAGE):
        acme.client.post("/api/v1/keys", {"name": f"key-{n:02}"}, format="json")
        acme.client.put(f"/api/v1/profiles/p-{n:02}", {"disabled": False}, format="json")
    acme.client.put("/api/v1/profiles/zz-last", {"disabled": False}, format="json")
    globex.client.put("/api/v1/profiles/globex-only", {"disabled": False}, format="json")
    client = signed_in(acme_team.admin)
    for url, total in (("/t/acme/keys", LIST_PAGE + 2), ("/t/acme/profiles", LIST_PAGE + 1)):
        first = client.get(url).content.decode()
        assert len(_rows(first)) == LIST_PAGE and "Page 1 of 2" in first, url
        second = client.get(f"{url}?page=2").content.decode()
        assert len(_rows(second)) == total - LIST_PAGE and "Page 2 of 2" in second, url
        assert "globex" not in first + second
    keys = acme.client.get("/api/v1/keys").json()["keys"]
    on_page_two = next(k for k in keys if k["name"] == "full")
    back = client.post(f"/t/acme/keys/{on_page_two['id']}/revoke", {"page": "2"})
    assert back["Location"] == "/t/acme/keys?page=2"
    with tenant_context(acme.tenant.pk):
        last = Profile.objects.get(name="zz-last")
    back = client.post(f"/t/acme/profiles/{last.pk}", {"disabled": "on", "page": "2"})
    assert back["Location"] == "/t/acme/profiles?page=2"
    assert "Profile zz-last is disabled." in client.get(back["Location"]).content.decode()

def test_the_last_owner_cannot_be_demoted_or_removed(acme, acme_team) -> None:
    owner = signed_in(acme_team.owner)
    with tenant_context(acme.tenant.pk):
        owner_membership = Membership.objects.get(user=acme_team.owner)
        admin_membership = Membership.objects.get(user=acme_team.admin)
    owner.post(f"/t/acme/members/{owner_membership.pk}/role", {"role": "admin"})
    owner.post(f"/t/acme/members/{owner_membership.pk}/remove")
    with tenant_context(acme.tenant.pk):
        assert Membership.objects.get(pk=owner_membership.pk).role == Role.OWNER
    page = owner.get("/t/acme/members").content.decode()
    assert "last owner" in page
    # An admin cannot touch owners or make one.
    admin = signed_in(acme_team.admin)
    admin.post(f"/t/acme/members/{owner_membership.pk}/remove")
    admin.post(f"/t/acme/members/{admin_membership.pk}/role", {"role": "owner"})
    with tenant_context(acme.tenant.pk):
        assert Membership.objects.filter(role=Role.OWNER).count() == 1
        assert Membership.objects.get(pk=admin_membership.pk).role == Role.ADMIN
    # With a second owner, the first may step down.
    owner.post(f"/t/acme/members/{admin_membership.pk}/role", {"role": "owner"})
    owner.post(f"/t/acme/members/{owner_membership.pk}/role", {"role": "member"})
    with tenant_context(acme.tenant.pk):
        assert Membership.objects.get(pk=owner_membership.pk).role == Role.MEMBER
    roles = [e.data["role"] for e in _audit(acme.tenant, "member.role_set")]
    assert roles[-2:] == ["owner", "member"]


def test_a_refused_or_invalid_role_change_says_why_on_the_members_page(acme, acme_team) -> None:
    owner = signed_in(acme_team.owner)
    with tenant_context(acme.tenant.pk):
        own = Membership.objects.get(user=acme_team.owner)
        admin_membership = Membership.objects.get(user=acme_team.admin)
    response = owner.post(f"/t/acme/members/{own.pk}/role", {"role": "admin"}, follow=True)
    assert response.redirect_chain == [("/t/acme/members", 302)]
    assert "This is the last owner" in response.content.decode()
    response = owner.post(f"/t/acme/members/{admin_membership.pk}/role", {"role": "king"},
                          follow=True)
    assert response.redirect_chain == [("/t/acme/members", 302)]
    assert "Choose a role: member, admin or owner." in response.content.decode()
    with tenant_context(acme.tenant.pk):
        assert Membership.objects.get(pk=admin_membership.pk).role == Role.ADMIN
    # An admin stepping down to member leaves for the home page: this one is closed to it.
    admin = signed_in(acme_team.admin)
    response = admin.post(f"/t/acme/members/{admin_membership.pk}/role", {"role": "member"})
    assert response["Location"] == "/"


def test_remove_a_member(acme, acme_team) -> None:
    with tenant_context(acme.tenant.pk):
        membership = Membership.objects.get(user=acme_team.member)
    signed_in(acme_team.admin).post(f"/t/acme/members/{membership.pk}/remove")
    with tenant_context(acme.tenant.pk):
        assert not Membership.objects.filter(pk=membership.pk).exists()
    assert _audit(acme.tenant, "member.removed")[0].target == "member@acme.test"


def test_invite_sends_a_link_and_records_it(acme, acme_team) -> None:
    client = signed_in(acme_team.admin)
    response = client.post("/t/acme/members", {"email": "New@Example.test", "role": "admin"})
    assert response.status_code == 200
    [email] = mail.outbox
    assert email.to == ["new@example.test"]
    link = re.search(r"http://testserver(/invite/\S+)", email.body).group(1)
    assert link in response.content.decode()
    assert _audit(acme.tenant, "member.invited")[0].data == {"role": "admin"}
    # An admin cannot invite an owner.
    assert client.post("/t/acme/members", {"email": "o@x.test", "role": "owner"}).status_code == 422



def test_an_email_too_long_for_an_account_is_refused_on_the_form(acme, acme_team) -> None:
    # Valid to Django's EmailField up to 320 characters, but accounts and invitations hold
    # 254: a longer one was a 500 when the invitation was saved.
    email = "a" * 64 + "@" + ".".join(["b" * 60] * 4) + ".test"
    response = signed_in(acme_team.admin).post("/t/acme/members",
                                               {"email": email, "role": "member"})
    assert response.status_code == 422
    html = response.content.decode()
    assert "Ensure this value has at most 254 characters (it has 313)." in html
    assert f'value="{email}"' in html  # what was typed stays in the field
    assert not mail.outbox
    with tenant_context(acme.tenant.pk):
        assert not Invitation.objects.exists()


def test_an_invitation_stands_when_its_mail_cannot_be_sent(acme, acme_team, settings,
                                                           caplog) -> None:
    # Django's SMTP backend against a port nobody listens on: the send raised, the page was a
    # 500 and the invitation was rolled back, so the admin could not even pass the link on.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", closed_port, 5
    response = signed_in(acme_team.admin).post("/t/acme/members",
                                               {"email": "new@x.test", "role": "member"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Invitation made, but the mail to new@x.test could not be sent" in html
    link = re.search(r'id="invite-link">http://testserver(/invite/[^<]+)<', html).group(1)
    assert "the invitation mail to new@x.test was not sent" in caplog.text
    with tenant_context(acme.tenant.pk):
        assert Invitation.objects.get().email == "new@x.test"
    assert Client().get(link)["Location"] == "/accounts/signup/"  # the link works

def test_inviting_a_member_or_a_pending_email_is_refused(acme, acme_team) -> None:
    client = signed_in(acme_team.admin)
    for email, refusal in (("Member@Acme.test", "member@acme.test is already a member"),
                           ("admin@acme.test", "admin@acme.test is already a member")):
        response = client.post("/t/acme/members", {"email": email, "role": "member"})
        assert response.status_code == 422
        assert refusal in response.content.decode()
    assert client.post("/t/acme/members", {"email": "new@x.test", "role": "member"}
                       ).status_code == 200
    again = client.post("/t/acme/members", {"email": "NEW@x.test", "role": "admin"})
    assert again.status_code == 422
    assert "An invitation to new@x.test is already pending" in again.content.decode()
    assert len(mail.outbox) == 1
    with tenant_context(acme.tenant.pk):
        assert Invitation.objects.count() == 1


def test_end_users_show_counts_not_content_and_can_be_forgotten(acme, globex, acme_team) -> None:
    write(acme.tenant, "alice", "/a.md", "SECRET CONTENT")
    write(acme.tenant, "albert", "/b.md", "x")
    write(globex.tenant, "alina", "/c.md", "x")
    client = signed_in(acme_team.admin)
    html = client.get("/t/acme/people", {"q": "al"}).content.decode()
    assert "alice" in html and "albert" in html and "alina" not in html
    assert "SECRET CONTENT" not in html
    partial = client.get("/t/acme/people", {"q": "ice"}, HTTP_HX_REQUEST="true").content.decode()
    assert "alice" in partial and "albert" not in partial and "<html" not in partial
    with tenant_context(acme.tenant.pk):
        alice = EndUser.objects.get(user_id="alice")
    client.post(f"/t/acme/people/{alice.pk}/forget")
    with tenant_context(acme.tenant.pk):
        assert list(EndUser.objects.values_list("user_id", flat=True)) == ["albert"]
    assert _audit(acme.tenant, "end_user.forgotten")[0].target == "alice"


def test_the_audit_log_shows_this_tenants_entries(acme, globex, acme_team) -> None:
    client = signed_in(acme_team.admin)
    client.post("/t/acme/profiles", {"name": "acme-profile"})
    globex.client.put("/api/v1/profiles/globex-profile", {"disabled": True}, format="json")
    html = client.get("/t/acme/audit").content.decode()
    assert "acme-profile" in html and "admin@acme.test" in html
    assert "globex-profile" not in html


def test_a_key_bound_to_a_person_is_minted_on_their_row(acme, globex, acme_team) -> None:
    write(acme.tenant, "alice", "/a.md", "Likes tea.")
    write(acme.tenant, "bob", "/b.md", "Likes coffee.")
    with tenant_context(acme.tenant.pk):
        alice = EndUser.objects.get(user_id="alice")
    client = signed_in(acme_team.admin)
    row = client.get("/t/acme/people").content.decode()
    assert f"/t/acme/people/{alice.pk}/key" in row and f"/t/acme/people/{alice.pk}/portal-link" in row
    response = client.post(f"/t/acme/people/{alice.pk}/key")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    plaintext = re.search(r'id="new-key-secret">(mh_[^<]+)<', response.content.decode()).group(1)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {plaintext}")
    assert api.get("/api/v1/users/alice").json()["documents"]["total"] == 1
    assert api.get("/api/v1/users/bob").json()["documents"]["total"] == 0  # looks absent
    assert [u["user_id"] for u in api.get("/api/v1/users").json()["users"]] == ["alice"]
    keys = client.get("/t/acme/keys").content.decode()
    assert "<code>alice</code>" in keys and plaintext not in keys
    assert _audit(acme.tenant, "api_key.created")[-1].data["user_id"] == "alice"
    assert client.post("/t/acme/people/999999/key").status_code == 404
    assert "alice" not in globex.client.get("/api/v1/keys").content.decode()


def test_the_portal_link_for_a_person_comes_from_their_row(acme, acme_team) -> None:
    write(acme.tenant, "alice", "/notes/a.md", "hello")
    with tenant_context(acme.tenant.pk):
        alice = EndUser.objects.get(user_id="alice")
    client = signed_in(acme_team.admin)
    response = client.post(f"/t/acme/people/{alice.pk}/portal-link")
    assert response["Cache-Control"] == "no-store"
    url = re.search(r'id="portal-link">([^<]+)<', response.content.decode()).group(1)
    visitor = Client()
    redeemed = visitor.get(url[url.index("/portal/"):])
    assert redeemed.status_code == 302
    assert "/notes/a.md" in visitor.get(redeemed["Location"]).content.decode()
    assert _audit(acme.tenant, "end_user.portal_link_minted")[0].target == "alice"


def test_the_people_pager_works_after_minting_a_key_or_a_link(acme, acme_team) -> None:
    """Minting answers with the people page at the action's URL (the secret is shown once,
    no redirect); its pager still leads to the next page of people, not to a GET of the
    action (405)."""
    for i in range(PEOPLE_PAGE + 1):
        write(acme.tenant, f"user-{i:02}", "/a.md", "x")
    with tenant_context(acme.tenant.pk):
        first = EndUser.objects.order_by("user_id").first()
    client = signed_in(acme_team.admin)
    for action in ("key", "portal-link"):
        url = f"/t/acme/people/{first.pk}/{action}"
        html = client.post(url).content.decode()
        href = re.search(r'<a href="([^"]+)">Next</a>', html).group(1).replace("&amp;", "&")
        following = client.get(urljoin(url, href))
        assert following.status_code == 200, action
        assert "Page 2 of 2" in following.content.decode(), action


def test_concurrent_revocations_leave_one_audit_entry_and_the_first_time(acme, acme_team) -> None:
    """Two admins who both loaded the key (or the invitation) before either revoked it: the
    second revocation changes nothing. It used to write a second audit entry and move
    ``revoked_at``, as each view's own check had seen the row still working."""
    created = api_key_create(tenant=acme.tenant, name="bot", permissions=["memory"])
    with tenant_context(acme.tenant.pk):
        first_view, second_view = (ApiKey.objects.get(pk=created.api_key.pk) for _ in range(2))
    assert api_key_revoke(tenant=acme.tenant, key=first_view, actor="one@x.test") is True
    assert api_key_revoke(tenant=acme.tenant, key=second_view, actor="two@x.test") is False
    with tenant_context(acme.tenant.pk):
        assert ApiKey.objects.get(pk=created.api_key.pk).revoked_at == first_view.revoked_at
    assert [e.actor for e in _audit(acme.tenant, "api_key.revoked")] == ["one@x.test"]
    assert acme.client.delete(f"/api/v1/keys/{created.api_key.pk}").status_code == 204
    assert len(_audit(acme.tenant, "api_key.revoked")) == 1

    signed_in(acme_team.admin).post("/t/acme/members", {"email": "new@x.test", "role": "member"})
    with tenant_context(acme.tenant.pk):
        first_view, second_view = (Invitation.objects.get(email="new@x.test") for _ in range(2))
        assert invitation_revoke(tenant=acme.tenant, invitation=first_view, actor="one") is True
        assert invitation_revoke(tenant=acme.tenant, invitation=second_view, actor="two") is False
        assert Invitation.objects.get(pk=first_view.pk).revoked_at == first_view.revoked_at
    assert [e.actor for e in _audit(acme.tenant, "member.invitation_revoked")] == ["one"]


def _autofocused(html: str) -> list[str]:
    """The names of the controls that carry autofocus (the browser focuses the first)."""
    return re.findall(r'<(?:input|textarea|select)[^>]*\bname="([^"]+)"[^>]*\bautofocus\b', html)


def test_a_refused_form_opens_with_the_keyboard_on_the_first_field_in_error(acme,
                                                                             acme_team) -> None:
    """Settings, a profile, a key and an invitation refused: the page comes back with the first
    field in error focused, what was typed kept. Before: nothing had focus, so a keyboard or
    screen reader user started again at the top of a long form to find what was wrong."""
    client = signed_in(acme_team.admin)
    html = client.post("/t/acme/settings", {**SETTINGS, "max_index_tokens": "-1",
                                            "capture_redact": "ok\n([bad"}).content.decode()
    assert _autofocused(html) == ["max_index_tokens"]
    assert "ok\n([bad</textarea>" in html
    html = client.post("/t/acme/settings", {**SETTINGS, "capture_redact": "([bad"}).content.decode()
    assert _autofocused(html) == ["capture_redact"]
    html = client.post("/t/acme/profiles", {"name": "Bad Name"}).content.decode()
    assert _autofocused(html) == ["name"]
    html = client.post("/t/acme/keys", {"name": "k", "permissions": ["memory"],
                                        "user_id": "no spaces"}).content.decode()
    assert _autofocused(html) == ["user_id"] and 'value="no spaces"' in html
    html = client.post("/t/acme/members", {"email": "not-an-email", "role": "member"}).content.decode()
    assert _autofocused(html) == ["email"]
    for page in ("settings", "profiles", "keys", "members"):  # nothing refused, nothing focused
        assert _autofocused(client.get(f"/t/acme/{page}").content.decode()) == []


def test_end_users_count_their_facts(acme, globex, acme_team) -> None:
    """Facts are stored about a person as documents and conversations are; the End users
    page counts them too (valid or no longer true; never their text). Before: no facts
    column, so a person with only learnt facts looked as if nothing were kept about them."""
    write(acme.tenant, "alice", "/a.md", "x")
    for content in ("User likes tea", "User lives in Lisbon"):
        assert acme.client.post("/api/v1/users/alice/facts", {"content": content},
                                format="json").status_code == 201
    lisbon = acme.client.get("/api/v1/users/alice/facts").json()["facts"][0]
    assert acme.client.patch(f"/api/v1/users/alice/facts/{lisbon['id']}",
                             {"invalid_at": "2026-01-01T00:00:00Z"}, format="json",
                             HTTP_IF_MATCH=f'"{lisbon["version"]}"').status_code == 200
    assert acme.client.post("/api/v1/users/bob/facts", {"content": "User likes jazz"},
                            format="json").status_code == 201
    assert globex.client.post("/api/v1/users/alice/facts", {"content": "User likes gin"},
                              format="json").status_code == 201
    html = signed_in(acme_team.admin).get("/t/acme/people").content.decode()
    assert '<th scope="col" class="num">Facts</th>' in html
    facts = dict(re.findall(r'<code>(\w+)</code></th>.*?data-label="Facts" class="num">(\d+)<',
                            html, re.S))
    assert facts == {"alice": "2", "bob": "1"}
    assert "Lisbon" not in html and "tea" not in html
