"""``make bench-backlog``: what the dashboard's "conversations waiting" count costs for a tenant
with a long history; prints it against counting every conversation of the tenant (before the
partial index ``conversation_waiting``).

Loads ``--conversations`` (default 500,000) conversations of 1,000 people into one tenant of
its own database (``bench_backlog``, reused while it holds the same number; ``--fresh``
recreates it), one in ``--waiting-every`` (default 1,000) with messages after augmentation's
cursor, written by PostgreSQL itself (``generate_series``) as the owner role with the
tenant's ``app.tenant_id`` (RLS stays forced), then vacuumed. Then, as the application's role and in the
tenant's context, it times ``augmentation_status`` (the card's selector, the latest failures
included) and the same count written so that the index cannot serve it
(``augmented_seq + 0``: the planner no longer sees the index's condition), and prints
``EXPLAIN ANALYZE``'s execution time of both counts.

    python -m tests.benchmarks.bench_backlog [--conversations 500000] [--waiting-every 1000]
        [--runs 50] [--fresh]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from tests.benchmarks.bench_recall import setup_django
from tests.benchmarks.benchserver import bench_env, machine_speed, manage, percentile

DB_NAME = "bench_backlog"
PEOPLE = 1_000
SLUG = "backlog"


def load(tenant_id: int, conversations: int, waiting_every: int) -> float:
    """The people and their conversations, as the owner role; returns the seconds taken."""
    from django.db import connections

    started = time.perf_counter()
    owner = connections["migrate"]
    with owner.cursor() as cursor:
        cursor.execute("BEGIN")
        cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
        cursor.execute(
            """INSERT INTO memoryhub_enduser (tenant_id, user_id, memory_enabled, created_at)
               SELECT %s, 'user-' || i, true, now() FROM generate_series(1, %s) AS i""",
            [tenant_id, PEOPLE])
        cursor.execute(
            """INSERT INTO memoryhub_conversation (id, tenant_id, end_user_id, session_id,
                   profile, process, started_at, last_message_at, message_count, summary,
                   summary_by, augmented_seq)
               SELECT gen_random_uuid(), %(tenant)s, u.ids[1 + i %% %(people)s], 's-' || i, '',
                      '', now() - make_interval(mins => i), now() - make_interval(mins => i),
                      12, '', '', CASE WHEN i %% %(every)s = 0 THEN 10 ELSE 12 END
               FROM generate_series(1, %(count)s) AS i,
                    (SELECT array_agg(id ORDER BY id) AS ids FROM memoryhub_enduser
                     WHERE tenant_id = %(tenant)s) AS u""",
            {"tenant": tenant_id, "people": PEOPLE, "every": waiting_every, "count": conversations})
        cursor.execute("COMMIT")
        # What autovacuum soon does: the visibility map set, so the count reads the index only.
        cursor.execute("VACUUM (ANALYZE) memoryhub_conversation")
    return time.perf_counter() - started


def prepare(args: argparse.Namespace, env: dict[str, str]) -> int:
    """The tenant's id, its conversations loaded (reused when they are these)."""
    from django.conf import settings

    from tenants.models import Tenant

    if settings.EMBEDDED_POSTGRES and args.fresh:
        from memoryhub.infra.embedded_db import Cluster, ensure_database

        ensure_database(Cluster(**settings.EMBEDDED_POSTGRES), DB_NAME, recreate=True)
    manage(env, "migrate", "--no-input")
    marker = f"conversations={args.conversations} waiting_every={args.waiting_every}"
    tenant = Tenant.objects.filter(slug=SLUG).first()
    if tenant is not None and tenant.name == marker:
        print("reusing the loaded database (--fresh reloads it)")
        return tenant.id
    if tenant is not None:
        raise SystemExit(f"{DB_NAME} holds another data set: run with --fresh")
    tenant = Tenant.objects.create(slug=SLUG, name="loading")
    seconds = load(tenant.id, args.conversations, args.waiting_every)
    Tenant.objects.filter(pk=tenant.pk).update(name=marker)
    print(f"loaded in {seconds:.0f} s")
    return tenant.id


def timed(runs: int, call: Callable[[], object]) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def execution_ms(sql: str) -> str:
    """``EXPLAIN ANALYZE``'s execution time and its scan's first line."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
        lines = [row[0] for row in cursor.fetchall()]
    scan = next((line.strip() for line in lines if "Scan" in line), lines[0])
    return f"{lines[-1].strip()}; {scan.split('  (')[0]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500_000)
    parser.add_argument("--waiting-every", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--fresh", action="store_true", help="drop and reload the database")
    args = parser.parse_args()
    env = bench_env(DB_NAME)
    setup_django(env)
    print(f"preparing {DB_NAME}: one tenant, {args.conversations:,} conversations of {PEOPLE:,} "
          f"people, one in {args.waiting_every:,} waiting ...", flush=True)
    tenant_id = prepare(args, env)
    print(machine_speed(env), flush=True)

    from django.db.models import F

    from memoryhub.models import Conversation
    from memoryhub.web.selectors import augmentation_status, conversations_waiting
    from tenants.context import tenant_context

    with tenant_context(tenant_id):
        waiting = conversations_waiting().count()
        everything = Conversation.objects.filter(message_count__gt=F("augmented_seq") + 0)
        card = timed(args.runs, lambda: augmentation_status(enabled=True, memory_enabled=True))
        count = timed(args.runs, conversations_waiting().count)
        scan = timed(max(args.runs // 5, 3), everything.count)
        indexed_plan = execution_ms(str(conversations_waiting().values("id").query)
                                    .replace('SELECT "memoryhub_conversation"."id"',
                                             "SELECT count(*)", 1))
        scan_plan = execution_ms(str(everything.values("id").query)
                                 .replace('SELECT "memoryhub_conversation"."id"',
                                          "SELECT count(*)", 1))
    print(f"\n{waiting:,} of {args.conversations:,} conversations waiting; as the application's "
          "role, in the tenant's context (one client, in process):")
    for name, values in (("the augmentation card (the count and the latest failures)", card),
                         ("its count of the waiting conversations", count),
                         ("counting every conversation of the tenant (before)", scan)):
        print(f"  {name:<58} p50 {percentile(values, 50):8.2f}  "
              f"p95 {percentile(values, 95):8.2f} ms")
    print(f"  EXPLAIN ANALYZE, the index: {indexed_plan}")
    print(f"  EXPLAIN ANALYZE, before:    {scan_plan}")


if __name__ == "__main__":
    main()
