"""One row in every tenant table, found from the models rather than listed by hand.

``tenant_models()`` is every concrete ``TenantOwned`` model, ordered so that a model comes
after the tenant-owned models its foreign keys point to. ``seed_every_tenant_table()`` makes
one row of each for a tenant with model_bakery (which fills the required fields of a model it
has never seen), pointing every tenant-owned foreign key at the row it made for that tenant,
and every text reference to a person (a ``user_id`` column, as the event feed keeps) at the
person it is told. So a model added tomorrow is seeded, and checked, without a line here.

``person_lookups()`` is the subset that holds a person's rows: a foreign key to ``EndUser``,
a ``user_id`` text column, or a foreign key to a model that is one of these (transitively).
"""

from __future__ import annotations

from graphlib import TopologicalSorter

from django.apps import apps
from django.db import IntegrityError, models, transaction
from model_bakery import baker

from memoryhub.models import EndUser
from tenants.context import tenant_context
from tenants.managers import TenantOwned
from tenants.models import Tenant

# The text column by which a row names a person without a foreign key (events, failures,
# keys bound to a person): the API's user_id.
PERSON_TEXT_COLUMN = "user_id"


def tenant_models() -> list[type[models.Model]]:
    owned = {m for m in apps.get_models() if issubclass(m, TenantOwned)}
    graph = {model: {t for t in _tenant_owned_targets(model) if t is not model} for model in owned}
    return list(TopologicalSorter(graph).static_order())


def _tenant_owned_targets(model: type[models.Model]) -> list[type[models.Model]]:
    return [field.related_model for field in model._meta.concrete_fields
            if isinstance(field, models.ForeignKey) and issubclass(field.related_model, TenantOwned)]


def names_a_person_by_text(model: type[models.Model]) -> bool:
    return any(field.attname == PERSON_TEXT_COLUMN and isinstance(field, models.CharField)
               for field in model._meta.concrete_fields)


def person_lookups() -> dict[type[models.Model], str]:
    """Every tenant model whose rows belong to one person, directly or through another, with
    the ORM lookup of that person's ``user_id`` (``end_user__user_id``, ``user_id``,
    ``event__user_id``...): the shortest chain of foreign keys to ``EndUser`` or to a
    ``user_id`` text column."""
    lookups: dict[type[models.Model], str] = {EndUser: PERSON_TEXT_COLUMN}
    lookups |= {model: PERSON_TEXT_COLUMN for model in tenant_models()
                if names_a_person_by_text(model)}
    while True:
        more = {model: f"{field.name}__{lookups[field.related_model]}"
                for model in tenant_models() if model not in lookups
                for field in model._meta.concrete_fields
                if isinstance(field, models.ForeignKey) and field.related_model in lookups}
        if not more:
            return lookups
        lookups |= more


def seed_every_tenant_table(tenant: Tenant, user_id: str) -> dict[type[models.Model], models.Model]:
    """One row per tenant model for ``tenant``, every person reference pointing at ``user_id``
    (the end user is the one of that ``user_id``, made here or found)."""
    made: dict[type[models.Model], models.Model] = {}
    with tenant_context(tenant.pk):
        for model in tenant_models():
            made[model] = _one_row(model, tenant, user_id, made)
    return made


def _one_row(model: type[models.Model], tenant: Tenant, user_id: str,
             made: dict[type[models.Model], models.Model]) -> models.Model:
    if model is EndUser:
        found = EndUser.objects.filter(user_id=user_id).first()
        if found is not None:
            return found
    fields: dict[str, object] = {"tenant": tenant}
    for field in model._meta.concrete_fields:
        if isinstance(field, models.ForeignKey) and field.related_model in made:
            fields[field.name] = made[field.related_model]
        elif field.attname == PERSON_TEXT_COLUMN and isinstance(field, models.CharField):
            fields[field.name] = user_id
    try:
        with transaction.atomic():
            return baker.make(model, **fields)
    except IntegrityError:
        # A row the tenant may hold once (a unique key of the tenant's, such as today's usage,
        # which bakery's dates hit) is already there: the table is seeded for this tenant.
        # A person's rows are never shared, so for them the collision is a real error.
        existing = model.objects.first()
        if existing is None or model in person_lookups():
            raise
        return existing
