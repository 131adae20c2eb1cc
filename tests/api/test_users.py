"""End users: list, show with counts, the person's switch, forget, sessions, export, portal links."""

from __future__ import annotations

from datetime import timedelta

from django.core import signing
from django.db.models import Q
from django.test import override_settings
from django.utils import timezone

from memoryhub.models import (
    EndUser,
    MemoryEvent,
    Passage,
    PortalLink,
    WebhookDelivery,
    WebhookEndpoint,
)
from memoryhub.services.people import PORTAL_LINK_SALT, portal_link_redeem
from tenants.context import tenant_context
from tenants.models import ApiKey, AuditEntry
from tests.api.helpers import put_doc
from tests.tenant_rows import person_lookups, seed_every_tenant_table

USERS = "/api/v1/users"

# Authentication (key lookup, last_used_at), the tenant context's savepoint and settings,
# and the list's own query: a constant, whatever the number of rows.
LIST_QUERIES = 12


def seed_person(kit, user: str = "alice") -> None:
    put_doc(kit, user, "global/notes/diet.md", "Vegetarian")  # 10 bytes
    put_doc(kit, user, "profile/cooking/r.md", "Soup")  # 4
    put_doc(kit, user, "session/s1/a.md", "aaa")  # 3
    put_doc(kit, user, "session/s1/b.md", "bb")  # 2
    put_doc(kit, user, "session/s2/c.md", "c")  # 1


def rows_about(kit, user: str) -> dict[str, int]:
    """The person's rows in every table that holds a person's rows (found from the schema:
    tests/tenant_rows.py), by model name."""
    with tenant_context(kit.tenant.id):
        return {model.__name__: model.objects.filter(**{lookup: user}).count()
                for model, lookup in person_lookups().items()}


# What forget-everything leaves of a person, in the tables that hold a person's rows: the one
# `forgotten` event and its webhook deliveries (so feed and webhook consumers drop their
# copies), and keys bound to the person (the binding outlives forget-everything: README).
LEFT_AFTER_FORGETTING = {
    MemoryEvent: Q(type="memory.changed", data__change="forgotten"),
    WebhookDelivery: Q(event__data__change="forgotten"),
    ApiKey: Q(pk__isnull=False),  # all of them
}


EMPTY = {"documents": {"session": 0, "profile": 0, "global": 0, "total": 0}, "bytes": 0,
         "sessions": 0, "profiles": 0, "conversations": 0, "messages": 0,
         "memory_enabled": True, "created_at": None}


# --- show and list ---------------------------------------------------------------------------


def test_show_counts_documents_bytes_and_sessions(acme, globex) -> None:
    seed_person(acme)
    body = acme.client.get(f"{USERS}/alice").json()
    assert body["user_id"] == "alice" and body["memory_enabled"] is True
    assert body["created_at"] is not None
    assert body["documents"] == {"session": 3, "profile": 1, "global": 1, "total": 5}
    assert (body["bytes"], body["sessions"], body["profiles"]) == (20, 2, 1)


def test_an_unknown_person_reads_as_empty_not_404(acme, globex) -> None:
    seed_person(acme)
    for kit in (acme, globex):
        response = kit.client.get(f"{USERS}/nobody" if kit is acme else f"{USERS}/alice")
        assert response.status_code == 200
        assert response.json() == {"user_id": response.json()["user_id"], **EMPTY}
    assert rows_about(globex, "alice")["EndUser"] == 0  # reading created nobody


def test_invalid_user_id_is_400_everywhere(acme, globex) -> None:
    for bad in ("a%20b", "x" * 129, "%C3%A9", "a%2Fb"):
        for method, suffix, body in (("get", "", None), ("patch", "", {"memory_enabled": False}),
                                     ("delete", "", None), ("get", "/export", None),
                                     ("post", "/portal-link", None),
                                     ("delete", "/sessions/s1", None),
                                     ("get", "/documents", None)):
            response = getattr(acme.client, method)(f"{USERS}/{bad}{suffix}", body, format="json")
            if response.status_code == 404 and bad == "a%2Fb":
                continue  # an encoded slash splits the path before any view runs
            assert response.status_code == 400, (bad, method, suffix)
            assert response.json()["error"]["code"] == "invalid_user_id"


def test_list_is_paginated_by_user_id_with_counts(acme, globex,
                                                  django_assert_max_num_queries) -> None:
    for user in ("carol", "alice", "bob", "dave", "erin"):
        put_doc(acme, user, "global/a.md", "x" * len(user))
    put_doc(acme, "bob", "session/s1/b.md", "yy")
    put_doc(globex, "zed", "global/a.md")
    seen, cursor = [], None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        with django_assert_max_num_queries(LIST_QUERIES):
            body = acme.client.get(USERS, query).json()
        seen += body["users"]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert [u["user_id"] for u in seen] == ["alice", "bob", "carol", "dave", "erin"]
    bob = seen[1]
    assert bob["documents"] == {"session": 1, "profile": 0, "global": 1, "total": 2}
    assert (bob["bytes"], bob["sessions"]) == (5, 1)
    assert [u["user_id"] for u in globex.client.get(USERS).json()["users"]] == ["zed"]
    assert acme.client.get(USERS, {"cursor": "bad"}).status_code == 400


# --- the person's switch ------------------------------------------------------------------------


def test_patch_memory_enabled_creates_and_switches(acme, globex) -> None:
    off = acme.client.patch(f"{USERS}/newbie", {"memory_enabled": False}, format="json")
    assert off.status_code == 200
    assert off.json()["memory_enabled"] is False and off.json()["created_at"] is not None
    assert acme.client.get(f"{USERS}/newbie").json()["memory_enabled"] is False
    index = acme.client.get(f"{USERS}/newbie/memory/index")
    if index.status_code == 200:  # the index endpoint (toolcore) honours the switch
        assert index.json()["enabled"] is False
    on = acme.client.patch(f"{USERS}/newbie", {"memory_enabled": True}, format="json")
    assert on.json()["memory_enabled"] is True
    assert globex.client.get(f"{USERS}/newbie").json()["created_at"] is None
    for body in ({}, {"memory_enabled": "false"}, {"memory_enabled": None},
                 {"memory_enabled": True, "x": 1}):
        response = acme.client.patch(f"{USERS}/newbie", body, format="json")
        assert response.status_code == 400, body


# --- forgetting ----------------------------------------------------------------------------------


def test_delete_forgets_every_row_and_leaves_one_contentless_event(acme, globex) -> None:
    with tenant_context(acme.tenant.id):  # its queued deliveries carry the person's events
        WebhookEndpoint.objects.create(tenant=acme.tenant, url="https://hooks.example/x",
                                       secret="s" * 32, event_types=["memory.changed"])
    seed_person(acme)
    seed_person(acme, "bob")
    seed_person(globex)
    acme.client.post(f"{USERS}/alice/portal-link")
    before = rows_about(acme, "alice")
    assert before["MemoryDocument"] == before["MemoryEvent"] == before["WebhookDelivery"] == 5
    assert before["Passage"] >= 5 and before["PortalLink"] == 1
    response = acme.client.delete(f"{USERS}/alice")
    assert response.status_code == 204
    assert rows_about(acme, "alice") == {name: 0 for name in before} | {
        "MemoryEvent": 1, "WebhookDelivery": 1}
    feed = acme.client.get("/api/v1/events", {"limit": 1000}).json()["events"]
    left = [e for e in feed if e["user_id"] == "alice"]
    assert [(e["type"], e["actor"], e["data"]) for e in left] == [
        ("memory.changed", "app",
         {"change": "forgotten", "path": None, "scope": None, "scope_key": None})]
    assert not any("/notes/diet.md" in str(e["data"]) for e in feed if e["user_id"] != "bob")
    # Nobody else lost anything.
    assert rows_about(acme, "bob")["MemoryDocument"] == 5
    assert rows_about(globex, "alice")["MemoryDocument"] == 5
    assert acme.client.get(f"{USERS}/alice").json() == {"user_id": "alice", **EMPTY}
    # Forgetting again, or a stranger, is a 204 that records nothing.
    assert acme.client.delete(f"{USERS}/alice").status_code == 204
    assert acme.client.delete(f"{USERS}/stranger").status_code == 204
    assert rows_about(acme, "alice")["MemoryEvent"] == 1
    assert rows_about(acme, "stranger")["MemoryEvent"] == 0


def test_forgetting_empties_every_table_that_holds_a_persons_rows(acme, globex) -> None:
    """A row in every tenant table for alice and for bob, in both tenants (found from the
    models, so a table added later is covered): forgetting acme's alice leaves only
    LEFT_AFTER_FORGETTING of her, and everyone else's rows as they were."""
    for kit in (acme, globex):
        for user in ("alice", "bob"):
            seed_every_tenant_table(kit.tenant, user)
    assert set(LEFT_AFTER_FORGETTING) <= set(person_lookups())
    before = {(kit.tenant.slug, user): rows_about(kit, user)
              for kit in (acme, globex) for user in ("alice", "bob")}
    assert all(before[("acme", "alice")].values()), before  # every such table holds her rows
    assert acme.client.delete(f"{USERS}/alice").status_code == 204
    with tenant_context(acme.tenant.id):
        for model, lookup in person_lookups().items():
            left = model.objects.filter(**{lookup: "alice"})
            kept = LEFT_AFTER_FORGETTING.get(model)
            assert not (left.exclude(kept) if kept is not None else left).exists(), model.__name__
    assert rows_about(acme, "alice")["MemoryEvent"] == 1  # the `forgotten` event
    assert rows_about(acme, "alice")["ApiKey"] == before[("acme", "alice")]["ApiKey"]
    for kit, user in ((acme, "bob"), (globex, "alice"), (globex, "bob")):
        assert rows_about(kit, user) == before[(kit.tenant.slug, user)], (kit.tenant.slug, user)


def test_the_audit_log_keeps_who_forgot_the_person_and_nothing_they_said(acme, globex) -> None:
    """README, "Forget everything": the audit log records admins' actions, by the person's
    user_id, and keeps them; the forgetting adds its own entry, whoever forgets."""
    seed_person(acme)
    seed_person(acme, "bob")
    acme.client.post("/api/v1/keys", {"name": "alice's phone", "user_id": "alice"}, format="json")
    key = acme.client.get("/api/v1/keys").json()["keys"][-1]  # acme's full key, the oldest
    assert acme.client.delete(f"{USERS}/alice").status_code == 204
    assert acme.client.delete(f"{USERS}/alice").status_code == 204  # nothing left: no entry
    with tenant_context(acme.tenant.id):
        entries = list(AuditEntry.objects.order_by("id").values("actor", "action", "target",
                                                                "data"))
    about_alice = [(e["action"], e["target"]) for e in entries if "alice" in str(e)]
    assert about_alice == [("api_key.created", about_alice[0][1]),
                           ("end_user.forgotten", "alice")]
    assert entries[-1]["actor"] == f"api-key:{key['masked'].split('_')[2]}"
    assert not any(text in str(entries) for text in ("Vegetarian", "Soup", "diet.md"))


def test_a_forgotten_person_can_start_again_from_nothing(acme, globex) -> None:
    seed_person(acme)
    acme.client.delete(f"{USERS}/alice")
    put_doc(acme, "alice", "global/new.md", "fresh")
    body = acme.client.get(f"{USERS}/alice").json()
    assert body["documents"]["total"] == 1


def test_delete_session_removes_only_that_sessions_documents(acme, globex) -> None:
    seed_person(acme)
    seed_person(globex)
    response = acme.client.delete(f"{USERS}/alice/sessions/s1")
    assert response.status_code == 204
    remaining = acme.client.get(f"{USERS}/alice/documents").json()["documents"]
    assert sorted((d["scope"], d["scope_key"], d["path"]) for d in remaining) == [
        ("global", None, "/notes/diet.md"), ("profile", "cooking", "/r.md"),
        ("session", "s2", "/c.md")]
    with tenant_context(acme.tenant.id):
        assert not Passage.objects.filter(scope="session", scope_key="s1").exists()
    deleted = [e["data"] for e in acme.client.get("/api/v1/events").json()["events"]
               if e["data"].get("change") == "deleted"]
    assert deleted == [
        {"change": "deleted", "path": "/a.md", "scope": "session", "scope_key": "s1"},
        {"change": "deleted", "path": "/b.md", "scope": "session", "scope_key": "s1"}]
    assert globex.client.get(f"{USERS}/alice").json()["documents"]["session"] == 3
    for user, session in (("alice", "s1"), ("alice", "never"), ("nobody", "s1")):
        assert acme.client.delete(f"{USERS}/{user}/sessions/{session}").status_code == 204
    bad = acme.client.delete(f"{USERS}/alice/sessions/bad%20id")
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "invalid_session_id")


# --- export --------------------------------------------------------------------------------------


def test_export_holds_everything_stored_for_the_person(acme, globex) -> None:
    seed_person(acme)
    seed_person(acme, "bob")
    seed_person(globex)
    acme.client.post(f"{USERS}/alice/portal-link")
    body = acme.client.get(f"{USERS}/alice/export").json()
    assert body["user_id"] == "alice" and body["memory_enabled"] is True
    assert body["documents"][0]["content"] == "Vegetarian"
    assert [(d["scope"], d["scope_key"], d["path"]) for d in body["documents"]] == [
        ("global", None, "/notes/diet.md"), ("profile", "cooking", "/r.md"),
        ("session", "s1", "/a.md"), ("session", "s1", "/b.md"), ("session", "s2", "/c.md")]
    assert [e["data"]["change"] for e in body["events"]] == ["created"] * 5
    assert {e["user_id"] for e in body["events"]} == {"alice"}
    assert len(body["portal_links"]) == 1 and body["portal_links"][0]["used_at"] is None
    assert "nonce" not in str(body["portal_links"])
    assert body["account_email"] is None


def test_export_of_an_unknown_person_is_empty(acme, globex) -> None:
    seed_person(acme)
    assert globex.client.get(f"{USERS}/alice/export").json() == {
        "user_id": "alice", **EMPTY, "account_email": None, "documents": [], "events": [],
        "portal_links": [], "conversations": [], "facts": [], "deleted_facts": []}


# --- portal links ------------------------------------------------------------------------------


def mint(kit, user: str = "alice") -> tuple[str, dict]:
    response = kit.client.post(f"{USERS}/{user}/portal-link")
    assert response.status_code == 201
    body = response.json()
    token = body["url"].rsplit("/portal/", 1)[1]
    return token, body


def test_a_portal_link_works_once(acme, globex) -> None:
    seed_person(acme)
    token, body = mint(acme)
    assert body["url"].startswith("http://testserver/portal/")
    expires = timezone.datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert timedelta(seconds=590) < expires - timezone.now() <= timedelta(seconds=600)
    person = portal_link_redeem(token=token)
    assert person is not None
    assert (person.user_id, person.tenant_id) == ("alice", acme.tenant.id)
    assert portal_link_redeem(token=token) is None
    with tenant_context(acme.tenant.id):
        assert PortalLink.objects.get().used_at is not None


def test_portal_link_creates_the_person_and_names_its_tenant(acme, globex) -> None:
    token, _ = mint(globex, "newbie")
    assert globex.client.get(f"{USERS}/newbie").json()["created_at"] is not None
    person = portal_link_redeem(token=token)
    assert person.tenant_id == globex.tenant.id
    assert acme.client.get(f"{USERS}/newbie").json()["created_at"] is None


def test_forged_tampered_and_expired_links_fail(acme, globex) -> None:
    seed_person(acme)
    token, _ = mint(acme)
    payload = signing.loads(token, salt=PORTAL_LINK_SALT)
    # Another tenant's id in the payload, the original signature: refused.
    other = signing.dumps({**payload, "t": globex.tenant.id}, salt=PORTAL_LINK_SALT)
    tampered = ":".join([other.split(":")[0], *token.split(":")[1:]])
    assert portal_link_redeem(token=tampered) is None
    assert portal_link_redeem(token=signing.dumps(payload)) is None  # no salt
    assert portal_link_redeem(token=token + "x") is None
    assert portal_link_redeem(token="") is None
    # Signed correctly but naming another tenant's link: RLS finds no such row there.
    forged = signing.dumps({**payload, "t": globex.tenant.id}, salt=PORTAL_LINK_SALT)
    assert portal_link_redeem(token=forged) is None
    with override_settings(PORTAL_LINK_MAX_AGE=-1):
        assert portal_link_redeem(token=token) is None
    with tenant_context(acme.tenant.id):  # the row's own expiry counts too
        PortalLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert portal_link_redeem(token=token) is None
    with tenant_context(acme.tenant.id):
        assert PortalLink.objects.get().used_at is None


def test_a_forgotten_persons_link_is_dead(acme, globex) -> None:
    token, _ = mint(acme)
    acme.client.delete(f"{USERS}/alice")
    assert portal_link_redeem(token=token) is None


def test_user_endpoints_need_the_memory_permission(acme, globex) -> None:
    from tests.factories import ApiKeyFactory

    admin_only = ApiKeyFactory(tenant=acme.tenant, name="admin", permissions=["admin"])
    client = acme.client_with(admin_only.plaintext)
    for method, suffix in (("get", ""), ("get", "/alice"), ("delete", "/alice"),
                           ("get", "/alice/export"), ("post", "/alice/portal-link"),
                           ("delete", "/alice/sessions/s1")):
        response = getattr(client, method)(f"{USERS}{suffix}")
        assert response.status_code == 403, suffix
    assert client.patch(f"{USERS}/alice", {"memory_enabled": False},
                        format="json").status_code == 403


def test_the_portal_url_opens_the_persons_page_once(acme, globex, client) -> None:
    seed_person(acme)
    _, body = mint(acme)
    first = client.get(body["url"])
    assert first.status_code == 302
    with tenant_context(acme.tenant.id):
        person = EndUser.objects.get(user_id="alice")
    assert first["Location"].endswith(f"/memory/{acme.tenant.id}/{person.pk}/")
    assert client.get(first["Location"]).status_code == 200
    assert client.get(body["url"]).status_code == 410
