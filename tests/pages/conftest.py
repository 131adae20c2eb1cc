"""Fixtures for the web pages: accounts with roles, people with documents, page URLs.

Every test has two tenants (``acme`` and ``globex``) so each page can be shown to refuse
the other tenant's accounts, people and documents.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.test import Client
from django.urls import reverse

from memoryhub.models import EndUser, MemoryDocument, Scope
from tenants.context import tenant_context
from tenants.models import Role, Tenant
from tenants.services import account_get_or_create, membership_set
from tests.factories import DocumentFactory, EndUserFactory
from tests.pages.browser import browser, pages  # noqa: F401 - fixtures for test_browser.py

PASSWORD = "correct horse battery staple 42"  # test accounts only


def account(tenant: Tenant, email: str, role: str = Role.OWNER) -> AbstractBaseUser:
    user = account_get_or_create(email=email, password=PASSWORD)
    membership_set(tenant=tenant, user=user, role=role, actor="test")
    return user


def signed_in(user: AbstractBaseUser, **kwargs: Any) -> Client:
    client = Client(**kwargs)
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return client


def write(tenant: Tenant, user_id: str, path: str, content: str, *, scope: str = Scope.GLOBAL,
          scope_key: str = "", actor: str = "assistant",
          description: str | None = None) -> MemoryDocument:
    return DocumentFactory(tenant=tenant, user_id=user_id, scope=scope, scope_key=scope_key,
                           path=path, content=content, description=description, actor=actor)


def person(tenant: Tenant, user_id: str, *, account: AbstractBaseUser | None = None) -> EndUser:
    linked = {} if account is None else {"account": account}
    return EndUserFactory(tenant=tenant, user_id=user_id, **linked)


def person_url(end_user: EndUser, name: str = "web:person", **kwargs: Any) -> str:
    return reverse(name, kwargs={"tenant_id": end_user.tenant_id, "end_user_id": end_user.pk,
                                 **kwargs})


def document_of(tenant: Tenant, pk: int) -> MemoryDocument | None:
    with tenant_context(tenant.pk):
        return MemoryDocument.objects.filter(pk=pk).first()


@pytest.fixture(autouse=True)
def _fast_passwords_fresh_rate_limits(settings: Any) -> None:
    # Test accounts need no slow key stretching; the hasher is not what these tests check.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()  # allauth's rate limits count in the cache; each test starts from zero


@dataclass
class Team:
    """One tenant's people on the web: an owner, an admin, a plain member."""

    tenant: Tenant
    owner: AbstractBaseUser
    admin: AbstractBaseUser
    member: AbstractBaseUser


def _team(tenant: Tenant) -> Team:
    slug = tenant.slug
    return Team(
        tenant=tenant,
        owner=account(tenant, f"owner@{slug}.test", Role.OWNER),
        admin=account(tenant, f"admin@{slug}.test", Role.ADMIN),
        member=account(tenant, f"member@{slug}.test", Role.MEMBER),
    )


@pytest.fixture
def acme_team(acme: Any) -> Team:
    return _team(acme.tenant)


@pytest.fixture
def globex_team(globex: Any) -> Team:
    return _team(globex.tenant)
