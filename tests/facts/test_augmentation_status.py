"""The dashboard shows augmentation per tenant: on/off, provider, backlog (conversations with
messages after their cursor) and the latest failed runs, this tenant's only; forget-everything
removes the person's failure rows; the backlog is counted from an index of the waiting
conversations only (its cost: ``make bench-backlog``)."""

from __future__ import annotations

import re
from uuid import UUID

from django.db import connection

from memoryhub.models import AugmentationFailure
from memoryhub.services.augmentation import augmentation_batch, augmentation_failure_record
from memoryhub.web.selectors import conversations_waiting
from tenants.context import tenant_context
from tests.facts.chat_server import Reply
from tests.facts.test_augmentation import USER, augment, capture
from tests.facts.test_openai_extractor import llm, run
from tests.pages.conftest import acme_team, signed_in

__all__ = ["acme_team", "llm"]  # fixtures, used by name


def _card(kit, team) -> tuple[dict[str, str], str]:
    html = signed_in(team.admin).get("/t/acme/").content.decode()
    card = html[html.index('id="augmentation"'):html.index('id="recent-heading"')]
    stats = dict(re.findall(r'<dt>(.*?)</dt><dd id="augmentation-[a-z]+">(.*?)</dd>', card))
    return stats, card


def test_the_dashboard_shows_status_backlog_and_failures(acme, globex, acme_team, llm) -> None:
    stats, card = _card(acme, acme_team)
    assert stats == {"Status": "on", "Provider": "<code>openai</code>",
                     "Conversations waiting": "0"} and "No failed runs." in card

    failing = capture(acme, "I live in Lisbon.")
    capture(acme, "I love jazz.", session="s2")
    capture(globex, "I live in Oslo.")
    llm.script(*[Reply(status=500, raw=b'{"error": {"message": "model is down"}}')] * 4)
    run(acme, failing)
    stats, card = _card(acme, acme_team)
    assert stats["Conversations waiting"] == "2"  # the failed one kept its cursor
    assert "model is down" in card and failing in card and f"<code>{USER}</code>" in card
    assert "Oslo" not in card

    acme.tenant.augmentation_enabled = False
    acme.tenant.save(update_fields=["augmentation_enabled"])
    augment(acme, failing)  # off: the cursor moves on, nothing learnt
    stats, _ = _card(acme, acme_team)
    assert stats["Status"] == "off" and stats["Conversations waiting"] == "1"



def test_the_status_says_off_when_nothing_can_be_learnt(acme, acme_team, settings) -> None:
    """The tenant's switch is on, but provider none or memory off learns nothing (the run
    skips the batch): the card said "on" beside them."""
    settings.AUGMENTATION_PROVIDER = "none"
    stats, card = _card(acme, acme_team)
    assert stats["Status"] == "off" and stats["Provider"] == "<code>none</code>"
    assert "Nothing is learnt: This deployment&#x27;s provider is none" in card
    settings.AUGMENTATION_PROVIDER = "rules"
    assert acme.client.patch("/api/v1/tenant", {"memory_enabled": False},
                             format="json").status_code == 200
    stats, card = _card(acme, acme_team)
    assert stats["Status"] == "off" and "Nothing is learnt: Memory is off for the tenant." in card
    assert acme.client.patch("/api/v1/tenant", {"memory_enabled": True},
                             format="json").status_code == 200
    stats, card = _card(acme, acme_team)
    assert stats["Status"] == "on" and "Nothing is learnt" not in card

def test_forget_everything_removes_the_persons_failures(acme, llm) -> None:
    llm.script(*[Reply(content="not json")] * 2)
    run(acme, capture(acme, "I live in Lisbon."))
    with tenant_context(acme.tenant.id):
        assert AugmentationFailure.objects.filter(user_id=USER).count() == 1
    assert acme.client.delete(f"/api/v1/users/{USER}").status_code == 204
    with tenant_context(acme.tenant.id):
        assert not AugmentationFailure.objects.exists()


def test_a_run_that_fails_after_its_person_was_forgotten_records_nothing_of_them(acme) -> None:
    """The task reads its batch, the model fails for minutes (its timeouts and retries) while
    the person is forgotten, then the run records its failure: nothing of the forgotten
    person may come back (their user_id and the deleted conversation's id)."""
    conversation = capture(acme, "I live in Lisbon.")
    with tenant_context(acme.tenant.id):
        batch = augmentation_batch(conversation_id=conversation)
    assert acme.client.delete(f"/api/v1/users/{USER}").status_code == 204
    with tenant_context(acme.tenant.id):
        augmentation_failure_record(batch=batch, conversation_id=conversation,
                                    error="ExtractionFailed: timed out", malformed=False,
                                    attempts=7)
        augmentation_failure_record(batch=None, conversation_id=conversation,
                                    error="OperationalError: gone", malformed=False, attempts=7)
        assert not AugmentationFailure.objects.exists()


def test_the_backlog_is_read_from_the_waiting_conversations_index(acme, globex) -> None:
    """Under row-level security too (the application's role), the planner can use the
    partial index: with sequential scans off it has no other reason to pick it."""
    waiting = capture(acme, "I live in Lisbon.")
    augment(acme, capture(acme, "I love jazz.", session="s2"))
    capture(globex, "I live in Oslo.")
    with tenant_context(acme.tenant.id):
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
        assert list(conversations_waiting().values_list("id", flat=True)) == [UUID(waiting)]
        plan = conversations_waiting().explain()
    assert "conversation_waiting" in plan, plan
