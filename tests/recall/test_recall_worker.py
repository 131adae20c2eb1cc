"""Facts and messages gain their vectors from a real worker (Celery on Redis), and recall
then finds them by vector, not only by their words.

``transactional_db``: the worker is another process and sees only committed rows.
"""

from __future__ import annotations

import pytest

from memoryhub.models import Fact, Message
from tenants.context import tenant_context
from tests.recall.helpers import recall
from tests.workers.conftest import celery_worker, wait_for

pytestmark = pytest.mark.worker
__all__ = ["celery_worker"]  # the worker fixture, used by name

# No word of the query is in the message: before its vector only lexical matching could
# find it, and finds nothing.
QUERY = "zebra quokka"


def test_messages_and_facts_are_found_by_vector_once_the_worker_embeds_them(
    transactional_db, celery_worker, acme, globex,
) -> None:
    before = recall(acme, "alice", query=QUERY, relaxed=True, sources=["messages"])
    assert before.json()["results"] == []
    response = acme.client.post("/api/v1/users/alice/sessions/s1/messages", {"messages": [
        {"role": "user", "content": "I work at Initech."}]}, format="json")
    assert response.status_code == 201, response.content
    fact = acme.client.post("/api/v1/users/alice/facts", {"content": "User owns a kayak"},
                            format="json").json()

    def embedded() -> bool:
        """the message and both facts (the API's and the learnt one) embedded"""
        with tenant_context(acme.tenant.id):
            return (Message.objects.filter(embedding__isnull=False).count() == 1
                    and Fact.objects.filter(embedding__isnull=False).count() == 2)

    wait_for(embedded)
    messages = recall(acme, "alice", query=QUERY, relaxed=True, sources=["messages"]).json()
    assert [r["snippet"] for r in messages["results"]] == ["I work at Initech."]
    facts = recall(acme, "alice", query=QUERY, relaxed=True, sources=["facts"]).json()
    assert fact["id"] in {r["id"] for r in facts["results"]}
    # globex's person of the same name sees none of it
    assert recall(globex, "alice", query="Initech", relaxed=True,
                  sources=["facts", "messages"]).json()["results"] == []
