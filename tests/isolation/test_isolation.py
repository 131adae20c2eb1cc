"""Tenant isolation, enforced twice: fail-closed managers and PostgreSQL row-level security."""

from __future__ import annotations

from contextlib import ExitStack

import pytest
from django.apps import apps
from django.db import connection
from psycopg.pq import TransactionStatus

from memoryhub.models import EndUser, MemoryDocument, MemoryEvent, Profile
from memoryhub.services.events import changed_event
from tenants.context import TenantNotSet, tenant_context
from tenants.managers import TenantOwned
from tenants.models import ApiKey
from tests.factories import DocumentRowFactory, EndUserFactory
from tests.tenant_rows import seed_every_tenant_table, tenant_models


def tenant_owned_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT c.table_name FROM information_schema.columns c
               JOIN information_schema.tables t USING (table_schema, table_name)
               WHERE c.table_schema = 'public' AND c.column_name = 'tenant_id'
                 AND t.table_type = 'BASE TABLE' ORDER BY 1"""
        )
        return [row[0] for row in cursor.fetchall()]


def seed(kit, user_id: str = "alice") -> None:
    with tenant_context(kit.tenant.id):
        end_user = EndUserFactory(tenant=kit.tenant, user_id=user_id)
        DocumentRowFactory(end_user=end_user, scope="global", path="/a.md", content="x")
        Profile.objects.create(tenant=kit.tenant, name="cooking")
        changed_event(tenant_id=kit.tenant.id, user_id=user_id, actor="app", change="created",
                      path="/a.md", scope="global")  # the event and the tenant's EventFeed row


def test_every_tenant_owned_table_has_forced_rls_and_a_policy(db) -> None:
    tables = tenant_owned_tables()
    models = {m._meta.db_table for m in apps.get_models() if issubclass(m, TenantOwned)}
    # Both ways: the tests below seed and check the tables of the TenantOwned models, so a
    # tenant_id table of anything else would escape them.
    assert models == set(tables), "every tenant_id table is a TenantOwned model's, and back"
    assert len(tables) >= 19
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(
                """SELECT relrowsecurity, relforcerowsecurity,
                          (SELECT count(*) FROM pg_policies WHERE tablename = %s)
                   FROM pg_class WHERE relname = %s AND relnamespace = 'public'::regnamespace""",
                [table, table],
            )
            enabled, forced, policies = cursor.fetchone()
            assert (enabled, forced, policies >= 1) == (True, True, True), table


# What PostgreSQL stores for tenants/rls.py's predicate (pg_policies shows it deparsed): a row
# is the current tenant's, and no row is anyone's while app.tenant_id is unset or empty.
TENANT_ONLY = ("(tenant_id = (NULLIF(current_setting('app.tenant_id'::text, true), ''::text))"
               "::bigint)")
# The two reads allowed before a tenant is known (tenants/context.py): a signed-in account
# finds its own end users and memberships, in any tenant. Never for writes.
WIDENED_READS = {
    "memoryhub_enduser": "(account_id = (NULLIF(current_setting('app.web_user_id'::text, true), "
                         "''::text))::bigint)",
    "tenants_membership": "(user_id = (NULLIF(current_setting('app.web_user_id'::text, true), "
                          "''::text))::bigint)",
}


def test_each_tables_policy_reads_and_writes_only_the_current_tenants_rows(db) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT tablename, permissive, roles, cmd, qual, with_check FROM pg_policies
               WHERE schemaname = 'public' ORDER BY tablename, policyname"""
        )
        policies: dict[str, list[tuple]] = {}
        for table, *policy in cursor.fetchall():
            policies.setdefault(table, []).append(tuple(policy))
    assert set(policies) == set(tenant_owned_tables())
    for table, found in policies.items():
        read = f"({TENANT_ONLY} OR {WIDENED_READS[table]})" if table in WIDENED_READS else TENANT_ONLY
        # One permissive policy for every command and role: a second permissive policy would
        # widen what the first allows.
        assert found == [("PERMISSIVE", ["public"], "ALL", read, TENANT_ONLY)], table


def test_runtime_role_is_not_superuser_bypassrls_nor_owner(db) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, False)
        cursor.execute(
            """SELECT count(*) FROM pg_tables
               WHERE schemaname = 'public' AND tableowner = current_user"""
        )
        assert cursor.fetchone()[0] == 0
        cursor.execute("SELECT session_user = current_user")
        assert cursor.fetchone()[0] is True


def test_every_unique_constraint_and_index_on_tenant_tables_begins_with_tenant_id(db) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT t.relname, i.relname, a.attname
               FROM pg_index x
               JOIN pg_class t ON t.oid = x.indrelid
               JOIN pg_class i ON i.oid = x.indexrelid
               LEFT JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[0]
               WHERE t.relnamespace = 'public'::regnamespace AND t.relname = ANY(%s)
                 AND NOT x.indisprimary""",
            [tenant_owned_tables()],
        )
        offenders = [(t, i) for t, i, first in cursor.fetchall() if first != "tenant_id"]
    assert offenders == []


def _tenants_in(table: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT DISTINCT tenant_id FROM "{table}"')  # names from the models
        return [row[0] for row in cursor.fetchall()]


def test_raw_sql_sees_no_tenant_row_without_a_tenant(acme, globex) -> None:
    """Every tenant table holds rows of both tenants; without a tenant none is visible, with
    one only its own."""
    seed_every_tenant_table(acme.tenant, "alice")
    seed_every_tenant_table(globex.tenant, "bob")
    tables = [model._meta.db_table for model in tenant_models()]
    for table in tables:
        assert _tenants_in(table) == [], table
    for kit in (acme, globex):
        with tenant_context(kit.tenant.id):
            for table in tables:
                assert _tenants_in(table) == [kit.tenant.id], table  # seeded, and only its own


def test_rls_refuses_moving_any_row_to_another_tenant(acme, globex) -> None:
    from django.db import DatabaseError, transaction

    seed_every_tenant_table(acme.tenant, "alice")
    with tenant_context(acme.tenant.id), connection.cursor() as cursor:
        for model in tenant_models():
            table = model._meta.db_table
            with pytest.raises(DatabaseError, match="violates row-level security"), \
                    transaction.atomic():
                cursor.execute(f'UPDATE "{table}" SET tenant_id = %s', [globex.tenant.id])
            assert _tenants_in(table) == [acme.tenant.id], table


def test_rls_refuses_writing_a_row_for_another_tenant(acme, globex) -> None:
    from django.db import DatabaseError, transaction

    with tenant_context(acme.tenant.id), pytest.raises(DatabaseError), transaction.atomic():
        EndUser.objects.create(tenant=globex.tenant, user_id="intruder")


def test_default_manager_fails_closed_without_a_tenant(db) -> None:
    for model in (EndUser, MemoryDocument, ApiKey, MemoryEvent):
        with pytest.raises(TenantNotSet):
            model.objects.all()


def test_manager_filters_by_the_current_tenant(acme, globex) -> None:
    seed(acme)
    seed(globex, "bob")
    with tenant_context(globex.tenant.id):
        assert list(EndUser.objects.values_list("user_id", flat=True)) == ["bob"]
        # Even the explicitly cross-tenant manager cannot see past RLS.
        assert EndUser.unscoped_objects.count() == 1


def test_tenant_setting_does_not_outlive_the_block(acme) -> None:
    seed(acme)
    with tenant_context(acme.tenant.id):
        pass
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memoryhub_enduser")
        assert cursor.fetchone()[0] == 0


def test_cannot_switch_tenant_inside_another(acme, globex) -> None:
    with tenant_context(acme.tenant.id), pytest.raises(RuntimeError):
        with tenant_context(globex.tenant.id):
            pass


def test_a_prepared_statement_sees_only_the_tenant_of_each_execution(acme, globex) -> None:
    """Statements are prepared per connection (settings.py), and a cached generic plan must
    still apply the row policy with the tenant of the transaction that runs it."""
    seed(acme)
    seed(globex, "bob")
    sql = "SELECT user_id FROM memoryhub_enduser WHERE user_id = ANY(%s)"
    seen = []
    for kit in (acme, globex) * 6:  # past psycopg's threshold, then past PostgreSQL's 5 custom plans
        with tenant_context(kit.tenant.id), connection.cursor() as cursor:
            cursor.execute(sql, [["alice", "bob"]])
            seen.append([row[0] for row in cursor.fetchall()])
    assert connection.connection.prepare_threshold is not None
    prepared = {row[0] for row in _prepared_statements()}
    assert sql.replace("%s", "$1") in prepared, "never prepared, so this test would prove nothing"
    assert seen == [["alice"], ["bob"]] * 6


def _prepared_statements() -> list[tuple[str]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return cursor.fetchall()


@pytest.mark.django_db(transaction=True)
def test_an_outermost_tenant_block_opens_its_transaction_with_the_setting(acme, globex) -> None:
    """Outside any transaction (as in a request), BEGIN and the setting travel together
    (tenants.context._begin_with_setting); the block is still one transaction, sees only its
    tenant, and leaves nothing behind on the connection."""
    seed(acme)
    seed(globex, "bob")
    through_cursors: list[str] = []
    with ExitStack() as block:
        with connection.execute_wrapper(
            lambda run, sql, *rest: through_cursors.append(sql) or run(sql, *rest)
        ):
            block.enter_context(tenant_context(acme.tenant.id))
        assert through_cursors == []  # not the separate set_config of a nested block
        cursor = block.enter_context(connection.cursor())
        assert connection.connection.info.transaction_status == TransactionStatus.INTRANS
        cursor.execute("SELECT current_setting('app.tenant_id'), txid_current_if_assigned()")
        assert cursor.fetchone() == (str(acme.tenant.id), None)
        cursor.execute("SELECT user_id FROM memoryhub_enduser")
        assert cursor.fetchall() == [("alice",)]
    assert connection.connection.info.transaction_status == TransactionStatus.IDLE
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('app.tenant_id', true), count(*) FROM memoryhub_enduser")
        assert cursor.fetchone() == ("", 0)


@pytest.mark.django_db(transaction=True)
def test_an_outermost_tenant_block_that_fails_rolls_back(acme) -> None:
    with pytest.raises(ZeroDivisionError), tenant_context(acme.tenant.id):
        EndUser.objects.create(tenant=acme.tenant, user_id="carol")
        1 / 0  # the failure under test
    with tenant_context(acme.tenant.id):
        assert not EndUser.objects.filter(user_id="carol").exists()
