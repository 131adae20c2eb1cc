"""Model instances from hand-written SQL, and readable statements made compact.

The hottest queries (the API key of every request, the end user of every memory call) cost
several times more to compile with the ORM than to run, so they are written in SQL and load
whole rows with :func:`model_columns` and :func:`model_from_row`, as the ORM would.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model

M = TypeVar("M", bound=Model)


def model_columns(model: type[Model], table_alias: str) -> str:
    """Every column of ``model``, qualified with ``table_alias``, in :func:`model_from_row`'s order."""
    return ", ".join(f'{table_alias}."{field.column}"' for field in model._meta.concrete_fields)


@cache
def _row_loaders(model: type[Model]) -> tuple[list[str], list[tuple[int, Any]]]:
    fields = model._meta.concrete_fields
    converters = [
        (index, converter)
        for index, field in enumerate(fields)
        # django-stubs lacks Field.get_db_converters (Django defines it on Field).
        for converter in field.get_db_converters(connections[DEFAULT_DB_ALIAS])  # type: ignore[attr-defined]
    ]
    return [field.attname for field in fields], converters


def model_from_row(model: type[M], values: Sequence[Any]) -> M:
    """An instance of ``model`` from the values of :func:`model_columns`, as the ORM loads it."""
    attnames, converters = _row_loaders(model)
    row = list(values)
    connection = connections[DEFAULT_DB_ALIAS]
    for index, converter in converters:
        row[index] = converter(row[index], None, connection)
    return model.from_db(DEFAULT_DB_ALIAS, attnames, row)


_SQL_COMMENT = re.compile(r"--[^\n]*")


def compact_sql(sql: str) -> str:
    """``sql`` without ``--`` comments and runs of whitespace, for statements written readably
    in the source. Only for SQL whose string literals hold neither."""
    return " ".join(_SQL_COMMENT.sub("", sql).split())
