"""Facts: the statement augmentation's near-duplicate merge asks (the rest is the ORM's)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.db import connection

from memoryhub.infra.db import HalfVec
from memoryhub.models import Fact
from memoryhub.store._tenancy import tenant_id, tenant_is

# Exact, like recall: every valid fact of the person and type with a vector of the provider
# gets its distance (the person's facts are few; fact_user_recent finds them).
_NEAREST = f"""
    SELECT id, 1 - (embedding <=> %(qvec)s::halfvec) AS similarity FROM {Fact._meta.db_table}
    WHERE {tenant_is(param="%(tenant)s")} AND end_user_id = %(end_user)s AND type = %(type)s
      AND invalid_at IS NULL AND embedding IS NOT NULL AND embedding_provider = %(provider)s
    ORDER BY embedding <=> %(qvec)s::halfvec, id LIMIT 1
"""


def fact_nearest(
    *, end_user_id: int, type_: str, vector: list[float], provider: str
) -> tuple[UUID, float] | None:
    """(id, cosine similarity) of the person's valid fact of ``type_`` most similar to
    ``vector`` (``provider``'s), or None when none has a vector of that provider."""
    params: dict[str, Any] = {"tenant": tenant_id(), "end_user": end_user_id, "type": type_,
                              "qvec": HalfVec(vector), "provider": provider}  # Any: HalfVec
    with connection.cursor() as cursor:
        cursor.execute(_NEAREST, params)
        row = cursor.fetchone()
    return None if row is None else (row[0], float(row[1]))
