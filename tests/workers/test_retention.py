"""Retention: a session untouched for ``session_days`` is purged, with ``deleted`` events."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memoryhub.models import EndUser, MemoryDocument, MemoryEvent, Passage, WriteTally
from memoryhub.tasks import retention_purge_all
from tenants.context import tenant_context
from tests.recall.helpers import put


def age(kit, path: str, scope_key: str, days: int) -> None:
    with tenant_context(kit.tenant.id):
        MemoryDocument.objects.filter(path=path, scope_key=scope_key).update(
            updated_at=timezone.now() - timedelta(days=days))


def remaining(kit) -> list[tuple[str, str]]:
    with tenant_context(kit.tenant.id):
        return sorted(MemoryDocument.objects.values_list("scope_key", "path"))


def seed(kit) -> None:
    put(kit, "alice", "/old1.md", "old", scope="session", key="s-old")
    put(kit, "alice", "/old2.md", "old", scope="session", key="s-old")
    put(kit, "alice", "/old.md", "old", scope="session", key="s-active")
    put(kit, "alice", "/new.md", "new", scope="session", key="s-active")
    put(kit, "alice", "/g.md", "global is never purged by age")
    put(kit, "alice", "/p.md", "nor is profile memory", scope="profile", key="cook")
    for path, key in [("/old1.md", "s-old"), ("/old2.md", "s-old"), ("/old.md", "s-active"),
                      ("/g.md", ""), ("/p.md", "cook")]:
        age(kit, path, key, days=40)


def test_sessions_idle_past_session_days_are_purged_per_tenant(acme, globex, eager_tasks) -> None:
    acme.tenant.session_days = 30
    acme.tenant.save()
    globex.tenant.session_days = None  # keeps sessions forever
    globex.tenant.save()
    seed(acme)
    seed(globex)
    assert retention_purge_all() == 2  # every tenant is swept; only acme's sessions expire
    assert remaining(acme) == [("", "/g.md"), ("cook", "/p.md"), ("s-active", "/new.md"),
                               ("s-active", "/old.md")]
    with tenant_context(acme.tenant.id):
        deleted = MemoryEvent.objects.filter(data__change="deleted").order_by("id")
        assert [(e.actor, e.data["path"], e.data["scope_key"]) for e in deleted] == [
            ("app", "/old1.md", "s-old"), ("app", "/old2.md", "s-old")]
        assert Passage.objects.filter(scope_key="s-old").count() == 0
    assert len(remaining(globex)) == 6


def test_the_sweep_drops_write_tallies_of_turns_long_over(acme, globex, eager_tasks) -> None:
    put(acme, "alice", "/a.md", "x")
    put(globex, "bob", "/b.md", "y")
    for kit in (acme, globex):
        with tenant_context(kit.tenant.id):
            end_user = EndUser.objects.get()
            WriteTally.objects.create(tenant=kit.tenant, end_user=end_user, key="turn:old", count=3)
            WriteTally.objects.create(tenant=kit.tenant, end_user=end_user, key="turn:new", count=1)
            WriteTally.objects.filter(key="turn:old").update(
                created_at=timezone.now() - timedelta(days=2))
    retention_purge_all()
    for kit in (acme, globex):
        with tenant_context(kit.tenant.id):
            assert list(WriteTally.objects.values_list("key", flat=True)) == ["turn:new"]
