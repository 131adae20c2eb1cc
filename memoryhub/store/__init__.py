"""Persistence's one address: every hand-written SQL statement, behind named functions.

The ORM, through the fail-closed managers, is the default everywhere. Where speed called for
hand-written SQL (the key of every request, the end user and documents of every memory call,
the passages of every write, the event of every change, the recall search), the statement
lives here, one module per table or concern, and nowhere else: services and selectors call
these functions or the ORM, never ``django.db.connection`` (ruff's banned-api, TID251, holds
them to it; pyproject.toml names the few modules allowed a connection).

Where each statement lives:

- ``api_keys``: the key of every request, with its tenant and the person the URL names.
- ``end_users``, ``profiles``: the person of every memory call; a profile's switch.
- ``documents``: the documents reads of the memory tool, the documents API and the index,
  and the insert and update every write runs.
- ``passages``: recall's passages kept in step with their document; their vectors.
- ``events``: the event feed's insert, under the tenant's feed lock, with its deliveries.
- ``webhooks``: the endpoints' key-share lock, taken before their deliveries' rows.
- ``write_tallies``: the counts behind ``max_writes_per_turn``.
- ``recall``: recall's one ranking statement.
- ``health``: the readiness check's ``SELECT 1``.
- ``_tenancy`` (the current tenant, the predicate) and ``_rows`` (model instances from rows,
  compact statement text) are the helpers.

The rules every module here keeps:

- The tenant comes from :func:`memoryhub.store._tenancy.tenant_id`, the current tenant
  (``TenantNotSet`` without one), never from the caller's arguments, and every statement
  filters with :func:`memoryhub.store._tenancy.tenant_is` (the predicate written once), like
  the fail-closed managers and on top of row-level security. Each public function asks for
  the tenant before it touches the database, so it fails closed even where RLS would only
  return nothing (``tests/store/test_fail_closed.py`` calls every one of them without a
  tenant, found by introspection). The one exception says so by name (``cross_tenant``).
- Statement text is built once, at import time (or cached per shape), so psycopg prepares
  each statement and keeps the plan: the same text on every call, one round trip each.
- Table and column names come from the models (``_meta``); values always travel as
  parameters. That is why ruff's S608 is off for this package (pyproject.toml) and nowhere
  else.
"""
