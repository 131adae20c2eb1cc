"""Capture -> fact through a real Celery worker on Redis: a burst of captures is learnt in
full, the capture itself never waiting for it, and each tenant's facts stay its own.

``transactional_db``: the worker is another process and sees only committed rows.
"""

from __future__ import annotations

import pytest

from memoryhub.models import Conversation, Fact
from tenants.context import tenant_context
from tests.workers.conftest import celery_worker, wait_for

pytestmark = pytest.mark.worker
__all__ = ["celery_worker"]  # the worker fixture, used by name


def capture(kit, text: str, user: str = "alice") -> dict:
    response = kit.client.post(f"/api/v1/users/{user}/sessions/s1/messages",
                               {"messages": [{"role": "user", "content": text}]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_burst_of_captures_becomes_facts_through_the_worker(
    transactional_db, celery_worker, acme, globex,
) -> None:
    said = ["I live in Lisbon.", "I work at Acme.", "I love jazz.", "I'm vegetarian."]
    conversation = {capture(acme, text)["conversation_id"] for text in said}
    assert len(conversation) == 1
    capture(globex, "I live in Oslo.", user="bob")

    def learnt() -> list[str]:
        """every statement of the burst as a fact"""
        with tenant_context(acme.tenant.id):
            objects = sorted(Fact.objects.values_list("object", flat=True))
        return objects if len(objects) == len(said) else []

    assert wait_for(learnt) == ["Acme", "Lisbon", "jazz", "vegetarian"]
    with tenant_context(acme.tenant.id):
        assert Conversation.objects.get().augmented_seq == len(said)
    facts = acme.client.get("/api/v1/users/alice/facts").json()["facts"]
    assert {f["updated_by"] for f in facts} == {"augmentation"}
    assert {f["source"]["conversation_id"] for f in facts} == conversation

    def oslo() -> list[str]:
        """globex's own fact"""
        with tenant_context(globex.tenant.id):
            return list(Fact.objects.values_list("object", flat=True))

    assert wait_for(oslo) == ["Oslo"]
