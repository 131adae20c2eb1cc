"""Webhook endpoints: the key-share lock that orders every writer of deliveries after the
endpoint's row.

An endpoint's deliveries reference it (a foreign key checked at commit), so a transaction
that inserts or deletes deliveries and the endpoint's deletion must meet on one row in one
order, the endpoint's first: an event's insert (``memoryhub.store.events``) and a send
(``memoryhub.services.webhooks.webhook_deliver``) hold the endpoint with ``FOR KEY SHARE``,
forget-everything (whose events' deliveries go with them) holds all of the tenant's
endpoints the same way, and the deletion locks the endpoint ``FOR UPDATE`` before it deletes
the deliveries. Key share conflicts with nothing but that deletion (sends, events and edits
of the endpoint go on side by side), and whoever comes second waits for the first to
commit, instead of each holding a row the other needs next.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import connection

from memoryhub.models import WebhookDelivery, WebhookEndpoint
from memoryhub.store._tenancy import tenant_id, tenant_is

_TABLE = WebhookEndpoint._meta.db_table
_HOLD = f"SELECT id FROM {_TABLE} WHERE {tenant_is()} AND id = ANY(%s) ORDER BY id FOR KEY SHARE"
_HOLD_ALL = f"SELECT id FROM {_TABLE} WHERE {tenant_is()} ORDER BY id FOR KEY SHARE"


def webhook_endpoints_hold(*, ids: Sequence[int] | None = None) -> list[int]:
    """Key-share locks, held to the transaction's end, on the current tenant's endpoints of
    these ``ids`` (None: all of them), in id order; returns the ids still there (an endpoint
    deleted meanwhile was waited for, and is left out)."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        if ids is None:
            cursor.execute(_HOLD_ALL, [tenant])
        else:
            cursor.execute(_HOLD, [tenant, list(ids)])
        return [row[0] for row in cursor.fetchall()]


# First key of the advisory lock that orders one endpoint's claims (the embedding claims'
# namespaces, memoryhub/store/passages.py, are 7_002-7_006).
_CLAIMS_NAMESPACE = 7_007
_ATTEMPTS_OUT = (
    f"SELECT count(*) FROM {WebhookDelivery._meta.db_table} "
    f"WHERE {tenant_is()} AND endpoint_id = %s AND sending_until > %s"
)


def webhook_claims_order(*, endpoint_id: int) -> None:
    """Take the endpoint's claim lock until this transaction ends: claims to one endpoint, and
    the ends of its attempts, go one after another (memoryhub.services.webhooks)."""
    tenant_id()  # fails closed without a tenant, like every statement here
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)",
                       [_CLAIMS_NAMESPACE, endpoint_id & 0x7FFFFFFF])  # two int4 keys


def webhook_attempts_out(*, endpoint_id: int, now: datetime) -> int:
    """The endpoint's attempts out (leases not run out at ``now``), counted once this
    transaction holds the endpoint's claim lock: each claim sees the leases committed before
    it (two statements, since a statement's snapshot is taken before it waits)."""
    tenant = tenant_id()
    webhook_claims_order(endpoint_id=endpoint_id)
    with connection.cursor() as cursor:
        cursor.execute(_ATTEMPTS_OUT, [tenant, endpoint_id, now])
        return int(cursor.fetchone()[0])
