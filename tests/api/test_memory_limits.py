"""The tenant's limits on memory tool writes; each one changed by the admin through
``PATCH /api/v1/tenant`` and obeyed from the next request on."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from memoryhub.errors import DocumentTooLarge, TooManyWrites
from memoryhub.models import MemoryEvent, WriteTally
from memoryhub.services.documents import document_put, end_user_get_or_create
from memoryhub.services.limits import write_tally_take
from memoryhub.services.retention import write_tallies_purge
from memoryhub.services.writer import Writer
from tenants.context import tenant_context
from tests.api.helpers import documents
from tests.spec.api_client import err, ok, set_limits


def pressure_events(kit: Any) -> list[dict]:
    with tenant_context(kit.tenant.id):
        return [event.data for event in MemoryEvent.objects.filter(type="memory.pressure")
                .order_by("id")]


def test_limits_default_to_the_spec_and_patch_reports_them(acme) -> None:
    assert acme.client.get("/api/v1/tenant").json()["limits"] == {
        "max_document_bytes": 16384, "max_index_entries": 50, "max_index_tokens": 1500,
        "max_scope_bytes": 262144, "max_writes_per_turn": 20,
        "max_message_bytes": 65536, "max_history_tokens": 2000,
    }


class TestDocumentBytes:
    def test_refused_over_the_limit_then_switched_off(self, acme, globex) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="x" * 16384)
        assert err(acme, command="create", path="/memories/b.md", file_text="é" * 8193) == (
            "Error: /memories/b.md would be 16386 bytes, over the limit of 16384 bytes for one "
            "document; condense it first.")
        set_limits(acme, max_document_bytes=10)
        ok(acme, command="create", path="/memories/ten.md", file_text="0123456789")
        assert err(acme, command="append", path="/memories/ten.md", text="x") == (
            "Error: /memories/ten.md would be 12 bytes, over the limit of 10 bytes for one "
            "document; condense it first.")
        assert err(acme, command="str_replace", path="/memories/ten.md", old_str="0",
                   new_str="00").startswith("Error: /memories/ten.md would be 11 bytes")
        ok(globex, command="create", path="/memories/b.md", file_text="x" * 100)
        set_limits(acme, max_document_bytes=None)
        ok(acme, command="append", path="/memories/ten.md", text="x" * 20000)
        assert [row[2] for row in documents(acme)] == ["/a.md", "/ten.md"]

    def test_every_writer_obeys_it(self, acme) -> None:
        set_limits(acme, max_document_bytes=5)
        acme.tenant.refresh_from_db()  # services read limits from the Tenant they are given
        with tenant_context(acme.tenant.id):
            end_user = end_user_get_or_create(tenant=acme.tenant, user_id="alice")
            for actor in ("app", "user"):
                with pytest.raises(DocumentTooLarge):
                    document_put(writer=Writer(tenant=acme.tenant, actor=actor),
                                 end_user=end_user, scope="global", scope_key="",
                                 path="/a.md", content="123456")


class TestScopeBytes:
    def test_refused_with_a_pressure_event_that_survives(self, acme, globex) -> None:
        set_limits(acme, max_scope_bytes=20)
        ok(acme, command="create", path="/memories/a.md", file_text="x" * 15)
        assert err(acme, command="create", path="/memories/b.md", file_text="y" * 6) == (
            "Error: this write would take the global memory to 21 bytes, over its limit of 20 "
            "bytes; delete or condense documents that matter less, then try again.")
        assert pressure_events(acme) == [
            {"scope": "global", "scope_key": None, "used_bytes": 15, "limit_bytes": 20}]
        assert pressure_events(globex) == []
        ok(acme, command="create", path="/memories/b.md", file_text="y" * 5)
        # Each scope has its own budget.
        ok(acme, command="create", path="/memories/s.md", file_text="z" * 20, scope="session",
           session_id="s1")
        assert err(acme, command="append", path="/memories/s.md", text="z",
                   session_id="s1").startswith(
            "Error: this write would take the session 's1' memory to 22 bytes")
        assert pressure_events(acme)[-1] == {"scope": "session", "scope_key": "s1",
                                             "used_bytes": 20, "limit_bytes": 20}

    def test_a_scope_over_a_lowered_limit_can_still_shrink(self, acme) -> None:
        ok(acme, command="create", path="/memories/a.md", file_text="abcdefghij")
        set_limits(acme, max_scope_bytes=5)
        ok(acme, command="str_replace", path="/memories/a.md", old_str="abcde", new_str="")
        assert err(acme, command="str_replace", path="/memories/a.md", old_str="f",
                   new_str="ff").startswith("Error: this write would take the global memory")
        ok(acme, command="rename", old_path="/memories/a.md", new_path="/memories/b.md")
        ok(acme, command="delete", path="/memories/b.md")
        set_limits(acme, max_scope_bytes=None)
        ok(acme, command="create", path="/memories/big.md", file_text="x" * 1000)


class TestWritesPerTurn:
    def test_counted_per_turn_id(self, acme, globex) -> None:
        set_limits(acme, max_writes_per_turn=2)
        ok(acme, command="create", path="/memories/a.md", file_text="a", turn_id="t1")
        ok(acme, command="view", path="/memories/a.md", turn_id="t1")  # reads are free
        err(acme, command="str_replace", path="/memories/a.md", old_str="zz", new_str="y",
            turn_id="t1")  # and so are failed writes
        ok(acme, command="append", path="/memories/a.md", text="b", turn_id="t1")
        assert err(acme, command="delete", path="/memories/a.md", turn_id="t1") == (
            "Error: too many memory writes in this turn (at most 2); keep only what matters "
            "most and continue the conversation without saving more for now.")
        ok(acme, command="delete", path="/memories/a.md", turn_id="t2")
        ok(acme, "bob", command="create", path="/memories/a.md", file_text="a", turn_id="t1")
        for n in range(3):
            ok(globex, command="create", path=f"/memories/{n}.md", file_text="g", turn_id="t1")

    def test_without_turn_id_a_minute_per_session(self, acme) -> None:
        set_limits(acme, max_writes_per_turn=2)
        for n in range(2):
            ok(acme, command="create", path=f"/memories/{n}.md", file_text="x", session_id="s1")
        assert err(acme, command="create", path="/memories/x.md", file_text="x",
                   session_id="s1") == (
            "Error: too many memory writes in the last minute (at most 2); keep only what "
            "matters most and continue the conversation without saving more for now.")
        ok(acme, command="create", path="/memories/y.md", file_text="x", session_id="s2")
        set_limits(acme, max_writes_per_turn=None)
        ok(acme, command="create", path="/memories/x.md", file_text="x", session_id="s1")

    def test_app_and_web_writes_are_not_in_a_turn(self, acme) -> None:
        set_limits(acme, max_writes_per_turn=1)
        acme.tenant.refresh_from_db()
        with tenant_context(acme.tenant.id):
            end_user = end_user_get_or_create(tenant=acme.tenant, user_id="alice")
            for n in range(3):
                document_put(writer=Writer(tenant=acme.tenant, actor="app"),
                             end_user=end_user, scope="global", scope_key="",
                             path=f"/{n}.md", content="x")
        ok(acme, command="create", path="/memories/a.md", file_text="a")

    def test_the_window_is_sixty_seconds(self, acme) -> None:
        acme.tenant.max_writes_per_turn = 1
        with tenant_context(acme.tenant.id):
            end_user = end_user_get_or_create(tenant=acme.tenant, user_id="alice")
            write_tally_take(tenant=acme.tenant, end_user=end_user, turn_id=None,
                             session_id="s", now=120.0)
            with pytest.raises(TooManyWrites):
                write_tally_take(tenant=acme.tenant, end_user=end_user, turn_id=None,
                                 session_id="s", now=179.9)
            write_tally_take(tenant=acme.tenant, end_user=end_user, turn_id=None,
                             session_id="s", now=180.0)

    def test_the_window_slides(self, acme) -> None:
        """Within 60 seconds: a burst across a minute boundary is one burst, and another
        session (even one whose id extends this one's) has its own count."""
        acme.tenant.max_writes_per_turn = 2
        with tenant_context(acme.tenant.id):
            end_user = end_user_get_or_create(tenant=acme.tenant, user_id="alice")

            def take(now: float, session_id: str = "s") -> None:
                write_tally_take(tenant=acme.tenant, end_user=end_user, turn_id=None,
                                 session_id=session_id, now=now)

            take(59.0)
            take(59.5)
            with pytest.raises(TooManyWrites):
                take(60.5)  # a fixed minute would have started afresh at 60
            take(60.5, session_id="s:2")
            take(119.2)  # 59.0 has left the window, 59.5 has not
            with pytest.raises(TooManyWrites):
                take(119.4)


def test_old_tallies_are_purged_per_tenant(acme, globex) -> None:
    for kit in (acme, globex):
        ok(kit, command="create", path="/memories/a.md", file_text="a", turn_id="t1")
        ok(kit, command="create", path="/memories/b.md", file_text="b", turn_id="t2")
    with tenant_context(acme.tenant.id):
        WriteTally.objects.filter(key="turn:t1").update(
            created_at=timezone.now() - timedelta(days=2))
        assert write_tallies_purge() == 1
        assert list(WriteTally.objects.values_list("key", flat=True)) == ["turn:t2"]
    with tenant_context(globex.tenant.id):
        assert WriteTally.objects.count() == 2
