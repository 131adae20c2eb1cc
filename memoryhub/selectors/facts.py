"""Reads of facts (spec: Facts): one fact, the person's facts newest first, a fact's history.

A fact id that is malformed, unknown, deleted, or another person's or tenant's names
nothing: the same None (the API's 404).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

import numpy as np
from django.db.models import QuerySet

from memoryhub.infra.embeddings import EmbeddingError, get_provider
from memoryhub.models import EndUser, Fact, FactVersion
from memoryhub.selectors.conversations import parse_uuid
from memoryhub.store.end_users import end_user_find

logger = logging.getLogger(__name__)


def fact_find(*, end_user: EndUser | None, fact_id: object, for_update: bool = False) -> Fact | None:
    parsed = parse_uuid(fact_id)
    if end_user is None or parsed is None:
        return None
    facts = Fact.objects.filter(end_user=end_user, id=parsed)
    if for_update:
        facts = facts.select_for_update(of=("self",))
    return facts.first()


def facts_get(*, fact_ids: Sequence[object], only_user_id: str | None = None,
              for_update: bool = False) -> dict[UUID, Fact]:
    """The current tenant's facts of these ids (malformed and unknown ones left out), each with
    its ``end_user`` loaded, for a surface whose fact URLs name no person (mem0's, api/mem0);
    ``only_user_id``: only that person's (a key bound to them). ``for_update`` takes the
    people's write locks first, in user_id order (a writer takes the person's lock before any
    of their rows), then the facts' rows; a fact that went meanwhile is left out."""
    ids = {parsed for parsed in map(parse_uuid, fact_ids) if parsed is not None}
    facts = Fact.objects.select_related("end_user").filter(id__in=ids) if ids else Fact.objects.none()
    if only_user_id is not None:
        facts = facts.filter(end_user__user_id=only_user_id)
    found = list(facts)
    if not for_update:
        return {fact.id: fact for fact in found}
    people = {}
    for user_id in sorted({fact.end_user.user_id for fact in found}):
        person = end_user_find(user_id=user_id, for_update=True)
        if person is not None:
            people[person.pk] = person
    locked = list(Fact.objects.select_for_update(of=("self",))
                  .filter(id__in=[fact.id for fact in found], end_user_id__in=list(people))
                  .order_by("id"))
    for fact in locked:
        fact.end_user = people[fact.end_user_id]
    return {fact.id: fact for fact in locked}


def fact_get(*, fact_id: object, only_user_id: str | None = None,
             for_update: bool = False) -> Fact | None:
    """One fact by its id alone, as ``facts_get`` finds it."""
    parsed = parse_uuid(fact_id)
    if parsed is None:
        return None
    return facts_get(fact_ids=[fact_id], only_user_id=only_user_id,
                     for_update=for_update).get(parsed)


def facts_listed(*, end_user: EndUser | None, created_since: datetime | None = None,
                 created_until: datetime | None = None) -> QuerySet[Fact]:
    """The person's valid facts, newest first, for a paginator (mem0's ``get_all``); those
    created in [``created_since``, ``created_until``) when given."""
    if end_user is None:
        return Fact.objects.none()
    facts = Fact.objects.select_related("end_user").filter(end_user=end_user,
                                                           invalid_at__isnull=True)
    if created_since is not None:
        facts = facts.filter(created_at__gte=created_since)
    if created_until is not None:
        facts = facts.filter(created_at__lt=created_until)
    return facts.order_by("-id")


def facts_page(
    *, end_user: EndUser | None, type: str | None, process: str | None, include_invalid: bool,
    before: UUID | None, limit: int,
) -> list[Fact]:
    """Newest first (ids are UUID v7), ``limit + 1`` rows for the page's cursor; invalid facts
    only with ``include_invalid``."""
    if end_user is None:
        return []
    facts = Fact.objects.filter(end_user=end_user)
    if type is not None:
        facts = facts.filter(type=type)
    if process is not None:
        facts = facts.filter(process=process)
    if not include_invalid:
        facts = facts.filter(invalid_at__isnull=True)
    if before is not None:
        facts = facts.filter(id__lt=before)
    return list(facts.order_by("-id")[: limit + 1])


def fact_history(*, end_user: EndUser | None, fact_id: object) -> list[FactVersion] | None:
    """The fact's changes, oldest first; None when there is no such fact (also deleted)."""
    fact = fact_find(end_user=end_user, fact_id=fact_id)
    if fact is None:
        return None
    return list(FactVersion.objects.filter(end_user_id=fact.end_user_id, fact_id=fact.id)
                .order_by("id"))


SIMILAR_POOL = 200  # of the person's latest valid facts, ranked by similarity


def facts_like(*, end_user: EndUser, texts: Sequence[str], limit: int = 30) -> list[str]:
    """The contents of the person's valid facts most like ``texts`` (augmentation's prompt):
    the latest SIMILAR_POOL, ranked by the cosine of their embedding (the configured
    provider) to the texts'; the latest ``limit`` when embedding fails."""
    pool = list(Fact.objects.filter(end_user=end_user, invalid_at__isnull=True)
                .order_by("-id").values_list("content", flat=True)[:SIMILAR_POOL])
    if len(pool) <= limit:
        return pool
    try:
        vectors = np.asarray(get_provider().embed([" ".join(texts), *pool]), dtype=np.float64)
    except EmbeddingError:
        logger.warning("facts_like: embedding failed; the latest facts stand in", exc_info=True)
        return pool[:limit]
    scores = vectors[1:] @ vectors[0]
    ranked = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    return [pool[i] for i in ranked[:limit]]
