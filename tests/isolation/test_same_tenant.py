"""A row's references stay in its tenant (tenants/references.py), checked by PostgreSQL.

A foreign key is checked past row-level security, so a plain one accepts another tenant's row:
these tests write such a reference directly, as a bug in our code would, and expect the
database to refuse it.
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, connections, transaction
from django.utils import timezone

from memoryhub.models import Conversation, Message
from tenants.context import tenant_context
from tests.factories import DocumentRowFactory, EndUserFactory


def _references() -> tuple[list[tuple[str, str, str]], set[tuple[str, str, str, bool, bool]]]:
    """(child table, column, parent table) of each single-column foreign key between two
    tables with a ``tenant_id``, and the two-column keys as (child, column, parent, deferred,
    validated) for those on (tenant_id, column) -> (tenant_id, id)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH tenant_tables AS (
              SELECT attrelid AS rel FROM pg_attribute
              WHERE attname = 'tenant_id' AND NOT attisdropped
            ), keys AS (
              SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent,
                     c.condeferred, c.convalidated,
                     ARRAY(SELECT attname FROM unnest(c.conkey) WITH ORDINALITY k(n, i)
                           JOIN pg_attribute ON attrelid = c.conrelid AND attnum = k.n
                           ORDER BY k.i) AS columns,
                     ARRAY(SELECT attname FROM unnest(c.confkey) WITH ORDINALITY k(n, i)
                           JOIN pg_attribute ON attrelid = c.confrelid AND attnum = k.n
                           ORDER BY k.i) AS parent_columns
              FROM pg_constraint c
              WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
                AND c.conrelid IN (SELECT rel FROM tenant_tables)
                AND c.confrelid IN (SELECT rel FROM tenant_tables)
            )
            SELECT child, parent, condeferred, convalidated, columns, parent_columns FROM keys
            """
        )
        rows = cursor.fetchall()
    single = [(child, columns[0], parent) for child, parent, _, _, columns, _ in rows
              if len(columns) == 1 and columns[0] != "tenant_id"]
    pairs = {(child, columns[1], parent, deferred, validated)
             for child, parent, deferred, validated, columns, parent_columns in rows
             if columns[0] == "tenant_id" and len(columns) == 2
             and parent_columns == ["tenant_id", "id"]}
    return single, pairs


def test_every_reference_between_tenants_rows_is_also_checked_within_the_tenant(db) -> None:
    single, pairs = _references()
    assert len(single) >= 13  # documents, passages, conversations, messages, facts, deliveries...
    for child, column, parent in single:
        assert (child, column, parent, True, True) in pairs, (
            f"{child}.{column} -> {parent}: add SameTenant(field=...) to the model, and a "
            f'UniqueConstraint(fields=["tenant", "id"]) to {parent}\'s'
        )


def _refused(write) -> None:
    """``write`` in a savepoint, then its deferred keys checked at once: refused."""
    with pytest.raises(IntegrityError, match="same_tenant"), transaction.atomic():
        write()
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_a_document_cannot_belong_to_another_tenants_person(acme, globex) -> None:
    stranger = EndUserFactory(tenant=globex.tenant, user_id="mallory")
    with tenant_context(acme.tenant.id):
        _refused(lambda: DocumentRowFactory(tenant=acme.tenant, end_user=stranger))


def test_a_message_cannot_join_another_tenants_conversation(acme, globex) -> None:
    now = timezone.now()
    stranger = EndUserFactory(tenant=globex.tenant, user_id="mallory")
    with tenant_context(globex.tenant.id):
        theirs = Conversation.objects.create(tenant=globex.tenant, end_user=stranger,
                                             session_id="s-1", started_at=now, last_message_at=now)
    alice = EndUserFactory(tenant=acme.tenant, user_id="alice")
    with tenant_context(acme.tenant.id):
        _refused(lambda: Message.objects.create(
            tenant=acme.tenant, end_user=alice, conversation_id=theirs.id, session_id="s-1",
            seq=1, role="user", content="hello", created_at=now, captured_at=now))


def test_a_reference_within_the_tenant_is_accepted(acme) -> None:
    alice = EndUserFactory(tenant=acme.tenant, user_id="alice")
    with tenant_context(acme.tenant.id), transaction.atomic():
        DocumentRowFactory(tenant=acme.tenant, end_user=alice)
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _definition(name: str, using: str = "default") -> str | None:
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s",
                       [name])
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.mark.django_db(databases=["default", "migrate"])
def test_the_constraint_drops_and_adds_itself_as_the_migration_made_it() -> None:
    """What a later migration would run (RemoveConstraint, AddConstraint, CreateModel) gives
    the key migration 0013 made. On the owner's connection, as migrations run, rolled back."""
    [same] = [c for c in Message._meta.constraints if c.name == "message_conversation_same_tenant"]
    made = _definition(same.name, "migrate")
    assert made == ("FOREIGN KEY (tenant_id, conversation_id) REFERENCES "
                    "memoryhub_conversation(tenant_id, id) DEFERRABLE INITIALLY DEFERRED")
    owner = connections["migrate"]
    with transaction.atomic(using="migrate"), owner.schema_editor(atomic=False) as editor:
        editor.remove_constraint(Message, same)
        assert _definition(same.name, "migrate") is None
        editor.add_constraint(Message, same)
        assert _definition(same.name, "migrate") == made
        assert same.constraint_sql(Message, editor) == ""  # inside CREATE TABLE: nothing...
        assert editor.deferred_sql[-1] == same.create_sql(Message, editor)  # ...until its end
        editor.deferred_sql.clear()
        transaction.set_rollback(True, using="migrate")
