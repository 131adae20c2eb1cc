"""Tenant administration: profiles, with an admin key, one tenant never seeing another's."""

from __future__ import annotations

import pytest

from memoryhub.models import Profile
from tenants.context import tenant_context
from tenants.models import AuditEntry

# Authentication (key lookup, last_used_at), the tenant context's savepoint and settings,
# and the list's own query: a constant, whatever the number of rows.
LIST_QUERIES = 12


def test_put_creates_a_profile_then_updates_it(acme, globex) -> None:
    created = acme.client.put("/api/v1/profiles/cooking", {"disabled": True}, format="json")
    assert created.status_code == 201
    assert created.json()["name"] == "cooking"
    assert created.json()["disabled"] is True
    updated = acme.client.put("/api/v1/profiles/cooking", {"disabled": False}, format="json")
    assert updated.status_code == 200
    assert updated.json()["disabled"] is False
    assert updated.json()["created_at"] == created.json()["created_at"]
    with tenant_context(acme.tenant.id):
        assert list(Profile.objects.values_list("name", "disabled")) == [("cooking", False)]
        actions = list(AuditEntry.objects.filter(action="profile.set").order_by("id").values_list("data", flat=True))
    assert [a["disabled"] for a in actions] == [True, False]


def test_putting_the_same_value_again_is_200_and_not_audited(acme, globex) -> None:
    acme.client.put("/api/v1/profiles/p1", {"disabled": True}, format="json")
    again = acme.client.put("/api/v1/profiles/p1", {"disabled": True}, format="json")
    assert again.status_code == 200
    with tenant_context(acme.tenant.id):
        assert AuditEntry.objects.filter(action="profile.set").count() == 1


def test_profiles_are_per_tenant(acme, globex) -> None:
    acme.client.put("/api/v1/profiles/cooking", {"disabled": True}, format="json")
    # globex's "cooking" is a different profile: creating it is a 201, acme's stays disabled.
    response = globex.client.put("/api/v1/profiles/cooking", {"disabled": False}, format="json")
    assert response.status_code == 201
    assert globex.client.get("/api/v1/profiles").json()["profiles"][0]["disabled"] is False
    assert acme.client.get("/api/v1/profiles").json()["profiles"][0]["disabled"] is True


def test_list_is_by_name_and_paginated(acme, globex, django_assert_max_num_queries) -> None:
    for name in ("zeta", "alpha", "mid", "beta", "omega"):
        acme.client.put(f"/api/v1/profiles/{name}", {"disabled": name == "mid"}, format="json")
    globex.client.put("/api/v1/profiles/globex-only", {"disabled": False}, format="json")
    seen, cursor = [], None
    while True:
        query = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        with django_assert_max_num_queries(LIST_QUERIES):
            body = acme.client.get("/api/v1/profiles", query).json()
        seen += [p["name"] for p in body["profiles"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert seen == ["alpha", "beta", "mid", "omega", "zeta"]
    everything = acme.client.get("/api/v1/profiles").json()
    assert [p["name"] for p in everything["profiles"]] == seen
    assert everything["next_cursor"] is None


def test_invalid_profile_name_and_body_are_400(acme, globex) -> None:
    for name in ("Cooking", "a" * 65, "caf%C3%A9", "a.b"):
        response = acme.client.put(f"/api/v1/profiles/{name}", {"disabled": True}, format="json")
        assert response.status_code == 400, name
        assert response.json()["error"]["code"] == "invalid_profile"
    for body in ({}, {"disabled": "yes"}, {"disabled": 1}, {"disabled": True, "extra": 1}, []):
        response = acme.client.put("/api/v1/profiles/ok", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == "invalid_request"


# Cursors of our shape holding what no key holds: ["u\u0000"], ["\ud800"].
NUL_CURSOR, SURROGATE_CURSOR = "WyJ1XHUwMDAwIl0", "WyJcdWQ4MDAiXQ"


@pytest.mark.parametrize("url", ["/api/v1/profiles", "/api/v1/users"])
def test_bad_cursor_and_limit_are_400(acme, globex, url) -> None:
    for query, code in (({"cursor": "nope"}, "invalid_cursor"), ({"cursor": "WzFd"}, "invalid_cursor"),
                        ({"cursor": NUL_CURSOR}, "invalid_cursor"),
                        ({"cursor": SURROGATE_CURSOR}, "invalid_cursor"),
                        ({"limit": "0"}, "invalid_limit"), ({"limit": "1001"}, "invalid_limit"),
                        ({"limit": "x"}, "invalid_limit")):
        response = acme.client.get(url, query)
        assert (response.status_code, response.json()["error"]["code"]) == (400, code), query


def test_profiles_need_the_admin_permission(acme, globex) -> None:
    memory_only = acme.client_with(acme.memory_key)
    assert memory_only.get("/api/v1/profiles").status_code == 403
    response = memory_only.put("/api/v1/profiles/x", {"disabled": True}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    with tenant_context(acme.tenant.id):
        assert not Profile.objects.exists()
    assert acme.client_with("").get("/api/v1/profiles").status_code == 401
