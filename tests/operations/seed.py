"""A tenant with rows in every tenant table, made through the API where the API makes them.

``seed_every_table`` checks its own work against the models (``tenant_owned_models``): a table
added later without a row here fails the tests that rely on it, instead of going unchecked.
"""

from __future__ import annotations

import uuid

from memoryhub.models import AugmentationFailure, EndUser, FactSourceKey
from tenants.context import tenant_context
from tenants.managers import tenant_owned_models
from tenants.services import account_get_or_create, invitation_create, membership_set


def ok(response, *statuses: int) -> dict:
    assert response.status_code in (statuses or (200, 201)), response.content
    return response.json() if response.content else {}


def seed_every_table(kit, marker: str) -> None:
    """``marker`` is written into the tenant's data, so an export can be searched for it."""
    api = kit.client
    ok(api.post("/api/v1/webhooks", {"url": f"http://127.0.0.1:9/{marker}"}, format="json"))
    ok(api.put(f"/api/v1/profiles/{marker}", {"disabled": False}, format="json"))
    ok(api.post("/api/v1/users/alice/memory", {
        "command": "create", "path": f"/memories/{marker}.md", "file_text": f"{marker} notes\n",
    }, format="json"))
    ok(api.post("/api/v1/users/alice/recall", {"query": marker}, format="json"))
    ok(api.post("/api/v1/users/alice/sessions/s-1/messages", {
        "messages": [{"role": "user", "content": f"I am {marker}."}]}, format="json"))
    ok(api.post("/api/v1/users/alice/facts", {"content": f"{marker} likes tea"}, format="json"))
    ok(api.post("/api/v1/users/alice/portal-link"))
    account = account_get_or_create(email=f"{marker}@example.com", password=None)
    membership_set(tenant=kit.tenant, user=account, role="admin", actor="seed")
    with tenant_context(kit.tenant.id):
        invitation_create(tenant=kit.tenant, email=f"invited-{marker}@example.com",
                          role="member", actor="seed")
        alice = EndUser.objects.get(user_id="alice")
        FactSourceKey.objects.create(end_user=alice, key=f"{marker}-key")
        AugmentationFailure.objects.create(conversation_id=uuid.uuid4(), user_id="alice",
                                           provider="rules", error=f"{marker} failed")
    empty = [table for table, count in rows_per_table(kit).items() if count == 0]
    assert empty == [], f"seed a row in these tables too: {empty}"


def rows_per_table(kit) -> dict[str, int]:
    """The kit's tenant's rows in each tenant table, read through its own context (RLS)."""
    with tenant_context(kit.tenant.id):
        return {model._meta.db_table: model.objects.count() for model in tenant_owned_models()}
