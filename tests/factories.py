"""factory_boy factories for what most tests start from: tenants, API keys, end users, documents.

Keys, end users and written documents are made by the product's own services, not by a bare
``Model.objects.create``: a key's secret is stored only hashed (``api_key_create``), and a
written document has its version, passages and event (``document_put``), so a test starts from
what a real write leaves behind. ``DocumentRowFactory`` is the one bare row, for tests that
seed passages themselves or only count rows.

Every tenant-owned row is made inside ``tenant_context``: the managers fail closed without it.
Inside a block of the same tenant that is free (no savepoint, see ``tenants/context.py``).
"""

from __future__ import annotations

from typing import Any

import factory
from factory.django import DjangoModelFactory

from memoryhub.models import EndUser, MemoryDocument, Scope
from memoryhub.services.documents import document_put, end_user_get_or_create
from memoryhub.services.writer import Writer
from tenants.context import tenant_context
from tenants.models import Tenant
from tenants.services import CreatedKey, api_key_create


class TenantFactory(DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class ApiKeyFactory(factory.Factory):
    """A key as ``api_key_create`` issues it: the ``CreatedKey`` (the row and the plaintext)."""

    class Meta:
        model = CreatedKey

    tenant = factory.SubFactory(TenantFactory)
    name = "key"
    permissions = factory.LazyFunction(lambda: ["memory", "admin"])

    @classmethod
    def _create(cls, model_class: type[CreatedKey], *args: Any, **kwargs: Any) -> CreatedKey:
        return api_key_create(**kwargs)


class EndUserFactory(factory.Factory):
    """The end user ``user_id`` of ``tenant``, created on first use as a first write creates it.

    Any other field given (``account``, ``memory_enabled``) is set on the row, new or found.
    """

    class Meta:
        model = EndUser

    tenant = factory.SubFactory(TenantFactory)
    user_id = factory.Sequence(lambda n: f"user-{n}")

    @classmethod
    def _create(cls, model_class: type[EndUser], *args: Any, tenant: Tenant, user_id: str,
                **fields: Any) -> EndUser:
        with tenant_context(tenant.pk):
            end_user = end_user_get_or_create(tenant=tenant, user_id=user_id)
            if fields:
                for name, value in fields.items():
                    setattr(end_user, name, value)
                end_user.save(update_fields=list(fields))
        return end_user


class DocumentFactory(factory.Factory):
    """A document written through ``document_put`` for the end user ``user_id`` (actor ``app``,
    as the documents API writes), committed with the test."""

    class Meta:
        model = MemoryDocument

    tenant = factory.SubFactory(TenantFactory)
    user_id = "alice"
    scope = Scope.GLOBAL
    scope_key = ""
    path = factory.Sequence(lambda n: f"/notes/{n}.md")
    content = "x"
    description = None
    confidence = None
    actor = "app"

    @classmethod
    def _create(cls, model_class: type[MemoryDocument], *args: Any, tenant: Tenant,
                user_id: str, actor: str, **fields: Any) -> MemoryDocument:
        with tenant_context(tenant.pk):
            end_user = end_user_get_or_create(tenant=tenant, user_id=user_id)
            document, _ = document_put(writer=Writer(tenant=tenant, actor=actor),
                                       end_user=end_user, **fields)
        return document


class DocumentRowFactory(DjangoModelFactory):
    """A bare document row: no passages, no event, no checks. For tests that seed passages
    themselves (recall's exactness) or only need a row to exist (isolation)."""

    class Meta:
        model = MemoryDocument

    end_user = factory.SubFactory(EndUserFactory)
    tenant = factory.SelfAttribute("end_user.tenant")
    scope = Scope.GLOBAL
    scope_key = ""
    path = factory.Sequence(lambda n: f"/d{n}.md")
    content = "x"
    bytes = factory.LazyAttribute(lambda o: len(o.content.encode()))
    updated_by = "app"

    @classmethod
    def _create(cls, model_class: type[MemoryDocument], *args: Any,
                **kwargs: Any) -> MemoryDocument:
        with tenant_context(kwargs["tenant"].pk):
            return super()._create(model_class, *args, **kwargs)
