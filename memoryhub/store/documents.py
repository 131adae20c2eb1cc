"""Memory documents: the hot reads of every memory call and documents GET, and the two writes
every change runs.

Hand-written because the ORM took several times longer to compile these statements than
PostgreSQL took to run them. A read's WHERE is :func:`_where_sql`: the current tenant, the
person, any of the locations asked for, and optionally paths. Which location wins, and what a
missing person means, is the selectors' business (``memoryhub.selectors.documents``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from django.db import connection
from django.db.models.expressions import RawSQL

from memoryhub.models import EndUser, MemoryDocument, MemoryEvent, Passage
from memoryhub.paths import ROOT
from memoryhub.store._rows import compact_sql, model_columns, model_from_row
from memoryhub.store._tenancy import tenant_id, tenant_is
from memoryhub.store.events import EVENT_COLUMNS, EVENT_CTES, EventInsert
from memoryhub.store.passages import ADD_TO_INSERTED_DOCUMENT

Location = tuple[str, str]  # (scope, scope_key); scope_key is "" for global

_TABLE = MemoryDocument._meta.db_table
_COLUMNS = model_columns(MemoryDocument, _TABLE)
_COLUMN_COUNT = len(MemoryDocument._meta.concrete_fields)
_TENANT = tenant_is(_TABLE)


def _where_sql(
    end_user: EndUser, locations: Sequence[Location], path: str | None = None,
    under: str | None = None, among: Sequence[str] = (),
) -> tuple[str, list[Any]]:
    """The WHERE of the document statements: the current tenant (like the fail-closed
    manager), the person, any of ``locations``, and ``path`` itself, one of ``among`` and/or
    the documents strictly below ``under`` (every document for the root)."""
    pairs = ", ".join(["(%s, %s)"] * len(locations))
    in_locations = f'({_TABLE}."scope", {_TABLE}."scope_key") IN ({pairs})' if locations else "FALSE"
    sql = f'{_TENANT} AND {_TABLE}."end_user_id" = %s AND {in_locations}'
    params: list[Any] = [tenant_id(), end_user.pk, *(v for loc in locations for v in loc)]
    paths = []
    if path is not None:
        paths.append(f'{_TABLE}."path" = %s')
        params.append(path)
    if among:
        paths.append(f'{_TABLE}."path" = ANY(%s)')
        params.append(list(among))
    if under is not None:
        paths.append(f'starts_with({_TABLE}."path", %s)')
        params.append("/" if under == ROOT else under + "/")
    if paths:
        sql += f" AND ({' OR '.join(paths)})"
    return sql, params


def _documents(sql: str, params: Sequence[Any]) -> list[MemoryDocument]:
    """Whole documents from SQL that selects ``_COLUMNS`` first (more columns may follow,
    returned as ``extra`` on each document)."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    documents = []
    for row in rows:
        document = model_from_row(MemoryDocument, row[:_COLUMN_COUNT])
        document.extra = row[_COLUMN_COUNT:]  # type: ignore[attr-defined]
        documents.append(document)
    return documents


# --- reads ---------------------------------------------------------------------------------


def document_find(*, end_user: EndUser, location: Location, path: str) -> MemoryDocument | None:
    """The person's document at the canonical ``path`` of one location, or ``None``."""
    where, params = _where_sql(end_user, [location], path=path)
    found = _documents(f"SELECT {_COLUMNS} FROM {_TABLE} WHERE {where}", params)
    return found[0] if found else None


# The bytes of all documents in a row's own location, for max_scope_bytes: read in the same
# statement as the row an edit locks, which saves the write a round trip.
_SCOPE_BYTES = (
    f"(SELECT COALESCE(SUM(other.bytes), 0) FROM {_TABLE} other "
    f'WHERE other.tenant_id = {_TABLE}."tenant_id" AND other.end_user_id = {_TABLE}."end_user_id" '
    f'AND other.scope = {_TABLE}."scope" AND other.scope_key = {_TABLE}."scope_key")'
)


# And the row's recall passages as they are before the edit, which re-indexes them next
# (memoryhub.services.passages.document_passages_rebuild): [id, ordinal, text, has a vector, provider].
_PASSAGES = (
    "(SELECT json_agg(json_build_array(p.id, p.ordinal, p.text, p.embedding IS NOT NULL, "
    f"p.embedding_provider)) FROM {Passage._meta.db_table} p "
    f'WHERE p.tenant_id = {_TABLE}."tenant_id" AND p.document_id = {_TABLE}."id")'
)


def documents_at(
    *, end_user: EndUser, locations: Sequence[Location], path: str, lock: bool = False
) -> list[MemoryDocument]:
    """The person's documents at ``path`` in any of ``locations`` (one at most per location).

    ``lock`` locks the rows for an edit and sets, read in the same statement, ``scope_bytes``
    (the total size of the document's location) and ``indexed_passages`` (its passages).
    """
    where, params = _where_sql(end_user, locations, path=path)
    extra = f"{_SCOPE_BYTES}, {_PASSAGES}" if lock else "NULL, NULL"
    sql = f"SELECT {_COLUMNS}, {extra} FROM {_TABLE} WHERE {where}"
    found = _documents(sql + (" FOR UPDATE" if lock else ""), params)
    if lock:
        for document in found:
            document.scope_bytes = document.extra[0]  # type: ignore[attr-defined]
            document.indexed_passages = document.extra[1] or []  # type: ignore[attr-defined]
    return found


def paths_near_and_bytes(
    *, end_user: EndUser, location: Location, path: str, ancestors: Sequence[str], limit: int
) -> tuple[list[str], int]:
    """Paths of at most ``limit`` documents of one location at ``path``, at one of
    ``ancestors``, or below ``path``; and the location's total size. One statement."""
    near, params = _where_sql(end_user, [location], path=path, under=path, among=ancestors)
    everything, everything_params = _where_sql(end_user, [location])
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT ARRAY(SELECT "path" FROM {_TABLE} WHERE {near} LIMIT %s), '
            f'(SELECT COALESCE(SUM("bytes"), 0) FROM {_TABLE} WHERE {everything})',
            [*params, limit, *everything_params],
        )
        found, used = cursor.fetchone()
    return found, used


def location_bytes(*, end_user: EndUser, location: Location) -> int:
    """The total size of the person's documents in one location (``max_scope_bytes``)."""
    where, params = _where_sql(end_user, [location])
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT COALESCE(SUM("bytes"), 0) FROM {_TABLE} WHERE {where}', params)
        total: int = cursor.fetchone()[0]
    return total


_CONTENT_IF_AT = f'CASE WHEN {_TABLE}."path" = %s THEN {_TABLE}."content" ELSE \'\' END'


def path_view_rows(
    *, end_user: EndUser, locations: Sequence[Location], path: str
) -> list[tuple[str, str, str, int, str]]:
    """(scope, scope_key, path, bytes, content) of the person's documents at or below
    ``path`` in any of ``locations``; only a document at ``path`` itself brings its content
    ("" for the others: a listing needs paths and sizes)."""
    where, params = _where_sql(end_user, locations, path=path, under=path)
    with connection.cursor() as cursor:
        cursor.execute(
            f'SELECT "scope", "scope_key", "path", "bytes", {_CONTENT_IF_AT} '
            f"FROM {_TABLE} WHERE {where}",
            [path, *params],
        )
        rows: list[tuple[str, str, str, int, str]] = cursor.fetchall()
    return rows


_INDEX_FIELDS = ("path", "scope", "bytes", "description", "updated_by", "updated_at", "total")


def index_rows(
    *, end_user: EndUser, locations: Sequence[Location], limit: int | None
) -> list[dict[str, Any]]:
    """The person's documents in ``locations``, newest change first, at most ``limit``, each
    with the total of all of them (a window count, computed before LIMIT): ``path``,
    ``scope``, ``bytes``, ``description``, ``updated_by``, ``updated_at``, ``total``."""
    where, params = _where_sql(end_user, locations)
    sql = (
        'SELECT "path", "scope", "bytes", "description", "updated_by", "updated_at", '
        f'count(*) OVER () FROM {_TABLE} WHERE {where} ORDER BY "updated_at" DESC, "id" DESC'
    )
    if limit is not None:
        sql += " LIMIT %s"
        params.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [dict(zip(_INDEX_FIELDS, row, strict=True)) for row in cursor.fetchall()]


# The snapshot's order, for an ORM query of documents: code-point order of paths whatever
# the database's locale, and for one path the lookup order (session, profile, global).
SNAPSHOT_ORDER = (
    RawSQL(f'{_TABLE}."path" COLLATE "C"', []),  # noqa: S611 - constant SQL
    RawSQL(  # noqa: S611 - constant SQL
        f"array_position(ARRAY['session', 'profile', 'global']::varchar[], {_TABLE}.\"scope\")",
        [],
    ),
)


# --- writes --------------------------------------------------------------------------------

_INSERT_FIELDS = [field for field in MemoryDocument._meta.concrete_fields if not field.primary_key]
_INSERT_COLUMNS = ", ".join(f'"{field.column}"' for field in _INSERT_FIELDS)
# A new document, its first passages and its ``memory.changed`` event (memoryhub.store.events)
# in one statement, one round trip of every create: the passages' insert
# (memoryhub.store.passages) takes the id the document's insert returns. The event is a
# create's last write, so the tenant's feed lock it takes is held from there to the commit,
# as when it was a statement of its own.
_INSERT_WITH_PASSAGES_AND_EVENT = compact_sql(
    f"WITH document AS (INSERT INTO {_TABLE} ({_INSERT_COLUMNS}) "
    f"VALUES ({', '.join(f'%(document_{field.column})s' for field in _INSERT_FIELDS)}) "
    f'RETURNING "id"), '
    f"passages AS ({ADD_TO_INSERTED_DOCUMENT}), {EVENT_CTES} "
    f"SELECT (SELECT id FROM document), {EVENT_COLUMNS}"
)


def document_insert(
    *, document: MemoryDocument, passages: dict[str, Any], event: EventInsert,
) -> tuple[MemoryEvent, list[int]]:
    """``save()`` of a new document of the current tenant (no signals listen), with its
    ``passages`` (``passages_add_params`` of the document) and ``event``
    (``event_insert_prepared``) in the same statement: every create runs it, and the ORM's
    compilation cost more than the statement. Returns what ``event.built`` returns."""
    if document.tenant_id != tenant_id():
        # RLS would refuse the row too, but with an error that names no culprit.
        raise ValueError("document_insert: the document belongs to another tenant")
    values = [field.get_db_prep_save(field.pre_save(document, True), connection)
              for field in _INSERT_FIELDS]
    params = {**passages, **event.params,  # only "tenant" is in both, the same (tested)
              **{f"document_{field.column}": value
                 for field, value in zip(_INSERT_FIELDS, values, strict=True)}}
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_WITH_PASSAGES_AND_EVENT, params)
        row = cursor.fetchone()
    document.pk = row[0]
    document._state.adding, document._state.db = False, connection.alias
    return event.built(row[1:])


_COLUMN_OF = {field.name: field.column for field in MemoryDocument._meta.concrete_fields}


@cache
def _update_sql(fields: tuple[str, ...]) -> str:
    columns = ", ".join(f'"{_COLUMN_OF[name]}" = %s' for name in fields)
    return f'UPDATE {_TABLE} SET {columns} WHERE {tenant_is()} AND "id" = %s'


def document_update(*, document: MemoryDocument, fields: Sequence[str]) -> None:
    """``save(update_fields=fields)`` of a document of the current tenant: every edit runs
    it, and the ORM's compilation cost more than the statement (the caller has set
    ``updated_at``)."""
    tenant = tenant_id()
    with connection.cursor() as cursor:
        cursor.execute(
            _update_sql(tuple(fields)),
            [*(getattr(document, name) for name in fields), tenant, document.pk],
        )
