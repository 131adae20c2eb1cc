"""How psycopg reads columns for Django (memoryhub/infra/db.py register_adapters)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone
from psycopg.pq import Format

from memoryhub.infra.db import TIMESTAMPTZ_OID
from memoryhub.models import EndUser
from tenants.context import tenant_context

UTC = dt.UTC


@pytest.mark.django_db
def test_timestamps_are_read_by_the_c_loader_exactly_as_django_reads_them() -> None:
    connection.ensure_connection()
    loader = connection.connection.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT)
    assert loader.__name__ == "UtcTimestamptzLoader"
    assert loader.timezone is connection.timezone  # else Django would replace it per cursor
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT unnest(ARRAY['2026-11-29 20:44:19.115282+00', '1900-01-01 00:00:00+00',"
            " '0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999999+00',"
            " '2000-02-29 12:00:00.5+05:30']::timestamptz[])"
        )
        read = [value for (value,) in cursor.fetchall()]
    assert read == [
        dt.datetime(2026, 11, 29, 20, 44, 19, 115282, tzinfo=UTC),
        dt.datetime(1900, 1, 1, tzinfo=UTC),
        dt.datetime(1, 1, 1, tzinfo=UTC),
        dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(2000, 2, 29, 6, 30, 0, 500000, tzinfo=UTC),
    ]
    assert all(value.tzinfo is UTC for value in read)


def test_a_model_timestamp_round_trips(acme) -> None:
    written = timezone.now()
    with tenant_context(acme.tenant.id):
        EndUser.objects.create(tenant=acme.tenant, user_id="alice")
        EndUser.objects.filter(user_id="alice").update(created_at=written)  # not auto_now_add
        read = EndUser.objects.get(user_id="alice").created_at
    assert read == written and read.tzinfo is UTC
