"""Who reaches which page: the permission matrix of the web pages.

Another tenant's pages are 404 (exactly "not found"), a plain member gets 403 on admin pages
of their own tenant, a person's memory page opens only for its portal session or linked
account, and a portal session reaches nothing else.
"""

from __future__ import annotations

import logging

import pytest
from django.test import Client
from django.urls import reverse

from memoryhub.models import Conversation, Fact, MemoryDocument
from memoryhub.services.people import portal_link_create
from tenants.context import tenant_context
from tests.pages.conftest import person, person_url, signed_in, write
from tests.routes import served, uncovered
from tests.tenant_rows import person_lookups, seed_every_tenant_table

TENANT_GET_PAGES = ["tenant_overview", "tenant_settings", "tenant_profiles", "tenant_keys",
                    "tenant_members", "tenant_people", "tenant_audit", "tenant_webhooks"]
TENANT_POST_ACTIONS = [
    ("tenant_memory", {}, {"memory_enabled": "off"}),
    ("tenant_settings", {}, {"name": "x", "recall_threshold": "0.2"}),
    ("tenant_profiles", {}, {"name": "stolen"}),
    ("tenant_profile_toggle", {"pk": 1}, {"disabled": "on"}),
    ("tenant_keys", {}, {"name": "stolen", "permissions": ["memory"]}),
    ("tenant_key_revoke", {"pk": 1}, {}),
    ("tenant_members", {}, {"email": "x@evil.test", "role": "owner"}),
    ("tenant_member_role", {"pk": 1}, {"role": "owner"}),
    ("tenant_member_remove", {"pk": 1}, {}),
    ("tenant_invitation_revoke", {"pk": 1}, {}),
    ("tenant_person_forget", {"pk": 1}, {}),
    ("tenant_webhook_switch", {"pk": 1}, {"enabled": "off"}),
    ("tenant_webhook_test", {"pk": 1}, {}),
    ("tenant_person_key", {"pk": 1}, {}),
    ("tenant_person_portal_link", {"pk": 1}, {}),
]
# Every route of a person's page, with the kind of row it addresses and a form that would
# change something: (route, method, row, data).
PERSON_ACTIONS = [
    ("web:person", "GET", None, {}),
    ("web:export", "GET", None, {}),
    ("web:memory_switch", "POST", None, {"enabled": "off"}),
    ("web:forget", "POST", None, {"confirm": "FORGET"}),
    ("web:session_delete", "POST", None, {"session_id": "s1"}),
    ("web:document_open", "GET", MemoryDocument, {}),
    ("web:document_summary", "GET", MemoryDocument, {}),
    ("web:document_edit", "GET", MemoryDocument, {}),
    ("web:document_edit", "POST", MemoryDocument, {"content": "stolen", "version": "1"}),
    ("web:document_delete", "POST", MemoryDocument, {"version": "1"}),
    ("web:conversation_open", "GET", Conversation, {}),
    ("web:conversation_fold", "GET", Conversation, {}),
    ("web:conversation_delete", "POST", Conversation, {}),
    ("web:conversation_summary", "POST", Conversation, {"summary": "stolen"}),
    ("web:fact_show", "GET", Fact, {}),
    ("web:fact_edit", "GET", Fact, {}),
    ("web:fact_edit", "POST", Fact, {"content": "stolen"}),
    ("web:fact_invalidate", "POST", Fact, {}),
    ("web:fact_revalidate", "POST", Fact, {}),
    ("web:fact_delete", "POST", Fact, {}),
]
# The entry points, which take a secret rather than a session: (route, method).
ENTRY_ROUTES = [("web:home", "GET"), ("web:portal_redeem", "GET"), ("web:portal_redeem", "POST"),
                ("web:portal_leave", "POST"), ("web:portal_ended", "GET"),
                ("web:invitation", "GET")]
ROW_ARGUMENT = {MemoryDocument: "document_id", Conversation: "conversation_id", Fact: "fact_id"}


def _url(name: str, slug: str, **kwargs: int) -> str:
    return reverse(f"web:{name}", kwargs={"slug": slug, **kwargs})


def test_admins_and_owners_open_every_tenant_page(acme_team, globex_team) -> None:
    for user in (acme_team.owner, acme_team.admin):
        client = signed_in(user)
        for name in TENANT_GET_PAGES:
            response = client.get(_url(name, "acme"))
            assert response.status_code == 200, (user.email, name)
            assert "Globex" not in response.content.decode()


def test_a_plain_member_gets_403_on_its_own_tenants_admin_pages(acme_team, globex_team) -> None:
    client = signed_in(acme_team.member)
    for name in TENANT_GET_PAGES:
        assert client.get(_url(name, "acme")).status_code == 403, name
    for name, kwargs, data in TENANT_POST_ACTIONS:
        assert client.post(_url(name, "acme", **kwargs), data).status_code == 403, name
    with tenant_context(acme_team.tenant.pk):
        acme_team.tenant.refresh_from_db()
    assert acme_team.tenant.memory_enabled is True


def test_an_expected_403_is_one_warning_without_a_traceback(acme_team, caplog) -> None:
    """A plain member on an admin page: one line, not a traceback, and written once (by the
    root's handler: the "django" logger keeps no handler of its own)."""
    with caplog.at_level(logging.INFO, logger="django.request"):
        assert signed_in(acme_team.member).get("/t/acme/settings").status_code == 403
    [record] = [r for r in caplog.records if r.name == "django.request"]
    assert (record.levelname, record.exc_info, record.exc_text) == ("WARNING", None, None)
    assert logging.getLogger("django").handlers == []
    assert logging.getLogger("django.request").handlers == []


def test_a_host_not_allowed_is_one_warning_without_a_traceback(caplog) -> None:
    """Scanners send an IP as the Host all day: 400, one warning line, no ERROR."""
    with caplog.at_level(logging.INFO, logger="django.security"):
        assert Client(HTTP_HOST="203.0.113.9").get("/").status_code == 400
    [record] = [r for r in caplog.records if r.name.startswith("django.security")]
    assert (record.levelname, record.exc_info, record.exc_text) == ("WARNING", None, None)


def test_refusals_are_logged_by_route_never_by_path(acme, acme_team, caplog) -> None:
    """Django's lines for a 4xx named the path, and in JSON the request (its repr holds the
    path too): people's ids, document names, and live secrets. An invitation link opened by
    another account is 403; a portal link POSTed is 410, or 403 without its CSRF token; the
    links still work afterwards, for whoever reads the log. Now the URL pattern is named."""
    from pythonjsonlogger.json import JsonFormatter

    from tenants.services import invitation_create

    with tenant_context(acme_team.tenant.pk):
        invited = invitation_create(tenant=acme_team.tenant, email="new@acme.test",
                                    role="admin", actor="t")
        link = portal_link_create(tenant=acme_team.tenant, user_id="alice-private-id")
    secrets = [invited.token.partition(".")[2], link.token, "alice-private-id", "diet-secret"]
    with caplog.at_level(logging.INFO, logger="django"):
        assert signed_in(acme_team.member).get(f"/invite/{invited.token}").status_code == 403
        assert Client().post(f"/portal/{link.token}").status_code == 410
        assert Client(enforce_csrf_checks=True).post(f"/portal/{link.token}").status_code == 403
        missing = acme.client.get("/api/v1/users/alice-private-id/documents/global/diet-secret.md")
        assert missing.status_code == 404
    records = [r for r in caplog.records if r.name.startswith(("django.request", "django.security"))]
    assert len(records) == 4
    written = [JsonFormatter("%(message)s").format(r) for r in records]
    assert not [line for line in written if any(secret in line for secret in secrets)], written
    assert records[0].getMessage() == "Forbidden: web:invitation"
    assert records[2].getMessage() == "Forbidden (CSRF cookie not set.): web:portal_redeem"
    assert records[3].getMessage() == "Not Found: api:document-global"
    assert '"request": "GET api:document-global"' in written[3]
    assert Client().get(f"/portal/{link.token}").status_code == 302  # unused: it still works


def test_another_tenants_pages_and_actions_are_404(acme_team, globex_team) -> None:
    """acme's owner addresses globex by slug and by globex's own row ids: all 404, no change."""
    write(globex_team.tenant, "g-user", "/secret.md", "globex data")
    with tenant_context(globex_team.tenant.pk):
        from memoryhub.models import EndUser, WebhookEndpoint
        from tenants.models import ApiKey, Membership

        hook = WebhookEndpoint.objects.create(url="https://globex.example.com/hook",
                                              secret="whsec_" + "g" * 32,
                                              event_types=["memory.changed"])
        ids = {
            "tenant_webhook_switch": hook.pk,
            "tenant_webhook_test": hook.pk,
            "tenant_key_revoke": ApiKey.objects.first().pk,
            "tenant_member_role": Membership.objects.get(user=globex_team.owner).pk,
            "tenant_member_remove": Membership.objects.get(user=globex_team.owner).pk,
            "tenant_person_forget": EndUser.objects.get().pk,
            "tenant_person_key": EndUser.objects.get().pk,
            "tenant_person_portal_link": EndUser.objects.get().pk,
        }
    client = signed_in(acme_team.owner)
    for name in TENANT_GET_PAGES:
        assert client.get(_url(name, "globex")).status_code == 404, name
        assert client.get(_url(name, "no-such-tenant")).status_code == 404, name
    for name, kwargs, data in TENANT_POST_ACTIONS:
        if "pk" in kwargs:
            kwargs = {"pk": ids.get(name, kwargs["pk"])}
            # globex's row ids under acme's own slug: not found either.
            assert client.post(_url(name, "acme", **kwargs), data).status_code == 404, name
        assert client.post(_url(name, "globex", **kwargs), data).status_code == 404, name
    with tenant_context(globex_team.tenant.pk):
        assert ApiKey.objects.filter(revoked_at=None).count() == 2
        assert Membership.objects.count() == 3
        assert EndUser.objects.count() == 1
        assert WebhookEndpoint.objects.get().enabled is True


def test_anonymous_visitors_are_sent_to_sign_in(acme_team) -> None:
    client = Client()
    for name in TENANT_GET_PAGES:
        response = client.get(_url(name, "acme"))
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")
    assert client.get("/")["Location"].startswith("/accounts/login/")
    end_user = person(acme_team.tenant, "alice")
    assert client.get(person_url(end_user))["Location"].startswith("/accounts/login/")


def test_the_person_page_opens_only_for_the_linked_account(acme_team, globex_team) -> None:
    alice = person(acme_team.tenant, "alice", account=acme_team.member)
    bob = person(acme_team.tenant, "bob")  # not linked to anyone
    globex_alice = person(globex_team.tenant, "alice", account=globex_team.member)
    client = signed_in(acme_team.member)
    assert client.get(person_url(alice)).status_code == 200
    assert client.get(person_url(bob)).status_code == 404
    assert client.get(person_url(globex_alice)).status_code == 404
    # The right end user under the wrong tenant id: RLS hides it.
    wrong_tenant = reverse("web:person", kwargs={"tenant_id": globex_team.tenant.pk,
                                                 "end_user_id": alice.pk})
    assert client.get(wrong_tenant).status_code == 404
    # Another person's document under alice's own page: not found, not deleted.
    bobs = write(acme_team.tenant, "bob", "/b.md", "bob's")
    for name in ("web:document_open", "web:document_edit"):
        assert client.get(person_url(alice, name, document_id=bobs.pk)).status_code == 404
    delete = person_url(alice, "web:document_delete", document_id=bobs.pk)
    assert client.post(delete, {"version": "1"}).status_code == 404
    # Tenant admins do not read people's notes.
    assert signed_in(acme_team.owner).get(person_url(alice)).status_code == 404


@pytest.fixture
def portal_client(acme_team, globex_team):
    """A browser that redeemed alice's portal link (no account)."""
    write(acme_team.tenant, "alice", "/notes/a.md", "alice's note")
    write(acme_team.tenant, "bob", "/notes/b.md", "bob's note")
    with tenant_context(acme_team.tenant.pk):
        link = portal_link_create(tenant=acme_team.tenant, user_id="alice")
    client = Client()
    response = client.get(f"/portal/{link.token}")
    assert response.status_code == 302
    return client, response["Location"]


def test_a_portal_session_reaches_only_its_own_page(portal_client, acme_team, globex_team) -> None:
    client, page = portal_client
    assert "alice&#x27;s note" not in client.get(page).content.decode()  # content is not listed
    assert "/notes/a.md" in client.get(page).content.decode()
    bob = person(acme_team.tenant, "bob")
    globex_person = person(globex_team.tenant, "alice")
    elsewhere = [
        "/", "/t/acme/", "/t/acme/settings", "/t/globex/", "/accounts/password/change/",
        "/accounts/email/", "/accounts/2fa/", "/platform-admin/", "/api/docs/",
        person_url(bob), person_url(bob, "web:export"), person_url(globex_person),
    ]
    for url in elsewhere:
        assert client.get(url).status_code == 404, url
    assert client.post(person_url(bob, "web:forget"), {"confirm": "FORGET"}).status_code == 404
    with tenant_context(acme_team.tenant.pk):
        from memoryhub.models import EndUser

        assert EndUser.objects.filter(user_id="bob").exists()
    assert client.get(page).status_code == 200


def test_leaving_ends_the_portal_session(portal_client) -> None:
    client, page = portal_client
    assert client.post(reverse("web:portal_leave")).status_code == 200
    assert client.get(page).status_code == 302  # now anonymous: sent to sign in


def test_every_page_route_has_a_case() -> None:
    """Every (route, method) the pages serve (tests/routes.py) is in one of the lists above."""
    covered = {(f"web:{name}", "GET") for name in TENANT_GET_PAGES}
    covered |= {(f"web:{name}", "POST") for name, _, _ in TENANT_POST_ACTIONS}
    covered |= {(name, method) for name, method, _, _ in PERSON_ACTIONS} | set(ENTRY_ROUTES)
    missing = uncovered(served("web"), covered, "tests/pages/test_access.py (a tenant page: "
                        "TENANT_GET_PAGES or TENANT_POST_ACTIONS; a person's page: "
                        "PERSON_ACTIONS; an entry point: ENTRY_ROUTES)")
    assert missing == [], "\n".join(missing)


def _person_action_url(end_user, name: str, row) -> str:
    return person_url(end_user, name, **({ROW_ARGUMENT[type(row)]: row.pk} if row else {}))


def _send(client: Client, method: str, url: str, data: dict):
    return client.get(url) if method == "GET" else client.post(url, data)


@pytest.mark.parametrize("name, method, row, data", PERSON_ACTIONS,
                         ids=[f"{m} {n}" for n, m, _, _ in PERSON_ACTIONS])
def test_another_persons_page_and_rows_are_404(acme_team, globex_team, name, method, row,
                                               data) -> None:
    """alice's account reaches her own page and rows; bob's page, bob's rows under her page,
    and a globex person's are 404 to it (nothing changes), and 302 to sign-in for a stranger."""
    alice = person(acme_team.tenant, "alice", account=acme_team.member)
    bob, carol = person(acme_team.tenant, "bob"), person(globex_team.tenant, "carol")
    rows = {end_user.user_id: seed_every_tenant_table(end_user.tenant, end_user.user_id)
            for end_user in (alice, bob, carol)}
    own = {user: rows[user].get(row) if row else None for user in rows}
    before = {user: _persons_rows(end_user) for user, end_user in (("bob", bob), ("carol", carol))}
    client = signed_in(acme_team.member)
    for end_user, addressed in ((bob, own["bob"]), (alice, own["bob"]), (carol, own["carol"])):
        if end_user is alice and row is None:
            continue  # her own page, with no row of anyone else's in the URL
        url = _person_action_url(end_user, name, addressed)
        assert _send(client, method, url, data).status_code == 404, url
        anonymous = _send(Client(), method, url, data)
        assert (anonymous.status_code, anonymous["Location"][:16]) == (302, "/accounts/login/")
    assert {"bob": _persons_rows(bob), "carol": _persons_rows(carol)} == before
    # The positive control: the same route reaches alice's own page and row.
    reached = _send(client, method, _person_action_url(alice, name, own["alice"]), data)
    assert reached.status_code not in (403, 404), reached.status_code


def _persons_rows(end_user) -> dict[str, list]:
    with tenant_context(end_user.tenant_id):
        return {model.__name__: sorted(model.objects.filter(**{lookup: end_user.user_id})
                                       .values_list("pk", flat=True))
                for model, lookup in person_lookups().items()}


def test_an_entry_point_reveals_nothing_without_its_secret(acme_team) -> None:
    client = Client()
    assert client.get(reverse("web:home"))["Location"].startswith("/accounts/login/")
    tenant = acme_team.tenant.pk
    for name in ("web:portal_redeem", "web:invitation"):  # acme's id, a forged secret
        response = client.get(reverse(name, args=[f"{tenant}.forged-secret"]))
        assert response.status_code == 410, name
        assert "Acme" not in response.content.decode()
    left = client.post(reverse("web:portal_leave"))
    assert left.status_code == 200 and "sessionid" not in left.cookies
