"""White-box helpers the API tests share: writes through HTTP, reads straight from the database.

(The black-box helpers, HTTP only, are in ``tests/spec/api_client.py``.)
"""

from __future__ import annotations

from typing import Any

from memoryhub.models import EndUser, MemoryDocument
from tenants.context import tenant_context

DOCUMENTS = "/api/v1/users/{user}/documents"


def doc_url(user: str, where: str) -> str:
    """``where`` is ``global/notes/a.md``, ``profile/cooking/x.md`` or ``session/s1/x.md``."""
    return f"{DOCUMENTS.format(user=user)}/{where}"


def put_doc(kit, user: str, where: str, content: str = "hello", **extra):
    """PUT a document through the API and return the response (asserting it worked)."""
    response = kit.client.put(doc_url(user, where), {"content": content, **extra}, format="json")
    assert response.status_code in (200, 201), response.content
    return response


def documents(kit: Any, user_id: str = "alice") -> list[tuple[str, str, str, str]]:
    """(scope, scope_key, path, content) of the person's documents, by path."""
    with tenant_context(kit.tenant.id):
        return list(
            MemoryDocument.objects.filter(end_user__user_id=user_id)
            .order_by("path", "scope")
            .values_list("scope", "scope_key", "path", "content")
        )


def end_user_exists(kit: Any, user_id: str) -> bool:
    with tenant_context(kit.tenant.id):
        return EndUser.objects.filter(user_id=user_id).exists()
