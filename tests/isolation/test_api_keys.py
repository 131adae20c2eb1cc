"""API keys: hashed at rest, 401 for unknown or revoked, 403 without the needed permission."""

from __future__ import annotations

from rest_framework.test import APIClient

from tenants.context import tenant_context
from tenants.models import ApiKey
from tenants.services import api_key_create, api_key_parse, api_key_revoke, hash_secret


def test_only_a_hash_of_the_secret_is_stored(acme) -> None:
    parsed = api_key_parse(acme.key)
    with tenant_context(acme.tenant.id):
        key = ApiKey.objects.get(lookup_id=parsed.lookup_id)
        stored = [str(v) for v in ApiKey.objects.values_list(flat=False).get(pk=key.pk)]
    assert key.secret_hash == hash_secret(parsed.secret)
    assert not any(parsed.secret in value or acme.key in value for value in stored)
    assert acme.key.startswith("mh_")


def test_missing_key_is_401_with_the_error_body(acme) -> None:
    response = APIClient().get("/api/v1/tenant")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_unknown_and_malformed_keys_are_401(acme) -> None:
    parsed = api_key_parse(acme.key)
    forged = f"mh_{parsed.tenant_id}_{parsed.lookup_id}_{'x' * 43}"
    for key in (forged, "mh_nonsense", "sk-123", f"mh_999999_{parsed.lookup_id}_{parsed.secret}"):
        response = acme.client_with(key).get("/api/v1/tenant")
        assert response.status_code == 401, key
        assert set(response.json()["error"]) == {"code", "message"}


def test_a_key_names_its_tenant_and_cannot_be_replayed_against_another(acme, globex) -> None:
    parsed = api_key_parse(acme.key)
    moved = f"mh_{globex.tenant.id}_{parsed.lookup_id}_{parsed.secret}"
    assert acme.client_with(moved).get("/api/v1/tenant").status_code == 401


def test_revoked_key_is_401(acme) -> None:
    created = api_key_create(tenant=acme.tenant, name="temp", permissions=["admin"])
    client = acme.client_with(created.plaintext)
    assert client.get("/api/v1/tenant").status_code == 200
    api_key_revoke(tenant=acme.tenant, key=created.api_key, actor="test")
    response = client.get("/api/v1/tenant")
    assert response.status_code == 401
    assert "revoked" in response.json()["error"]["message"]


def test_key_without_admin_gets_403_on_admin_endpoints(acme) -> None:
    response = acme.client_with(acme.memory_key).get("/api/v1/tenant")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_tenant_endpoint_shows_only_the_keys_own_tenant(acme, globex) -> None:
    assert acme.client.get("/api/v1/tenant").json()["slug"] == "acme"
    assert globex.client.get("/api/v1/tenant").json()["slug"] == "globex"


def test_patch_tenant_validates_and_applies(acme) -> None:
    response = acme.client.patch(
        "/api/v1/tenant", {"limits": {"max_index_entries": 5, "max_scope_bytes": None}},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["limits"]["max_index_entries"] == 5
    assert response.json()["limits"]["max_scope_bytes"] is None
    bad = acme.client.patch("/api/v1/tenant", {"limits": {"max_index_entries": 0}}, format="json")
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "invalid_request"
    assert acme.client.get("/api/v1/tenant").json()["limits"]["max_index_entries"] == 5


def test_patch_tenant_refuses_the_slug_instead_of_ignoring_it(acme) -> None:
    # The slug is shown but read-only: a PATCH that tried to change it answered 200 with the
    # old slug and applied the rest, as if it had worked.
    response = acme.client.patch("/api/v1/tenant", {"slug": "renamed", "name": "Renamed"},
                                 format="json")
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid_request", "message":
        "slug: The slug cannot be changed: API keys and URLs name the tenant by it."}
    assert acme.client.get("/api/v1/tenant").json()["name"] == "Acme"


def test_patch_tenant_takes_back_what_get_gave(acme) -> None:
    """GET's body, slug included, sent back with one change is a valid PATCH."""
    shown = acme.client.get("/api/v1/tenant").json()
    response = acme.client.patch("/api/v1/tenant", {**shown, "name": "Acme Two"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json() == {**shown, "name": "Acme Two"}
