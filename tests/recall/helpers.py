"""Writing documents the way the product does, and doing in-process what the worker does."""

from __future__ import annotations

from typing import Any

from memoryhub.models import MemoryDocument
from memoryhub.services.passages import document_embed
from tenants.context import tenant_context
from tests.factories import DocumentFactory


def put(kit: Any, user_id: str, path: str, content: str, *, scope: str = "global",
        key: str = "", confidence: float | None = None) -> MemoryDocument:
    """A document write through the documents service (actor app), committed with the test."""
    return DocumentFactory(tenant=kit.tenant, user_id=user_id, scope=scope, scope_key=key,
                           path=path, content=content, confidence=confidence, actor="app")


def embed_all(kit: Any) -> int:
    """What the worker's embedding task does for every document of the tenant."""
    with tenant_context(kit.tenant.id):
        documents = list(MemoryDocument.objects.values_list("id", "version"))
        return sum(document_embed(document_id=pk, version=version) for pk, version in documents)


def recall(kit: Any, user_id: str, client: Any = None, **body: Any) -> Any:
    client = client or kit.client
    return client.post(f"/api/v1/users/{user_id}/recall", body, format="json")
