"""Numbers in the pages' links (issue 17): ASCII digits that fit the database, never a 500.

An invitation token starts with its tenant's id and the person pages' URLs carry ids: other
scripts' digits and ids too long for a bigint answer like any other bad link.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tenants.context import tenant_context
from tenants.services import invitation_create
from tests.pages.conftest import person, signed_in

ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
TOO_LONG = "9" * 25


@pytest.mark.parametrize("tenant_part", ["²", "²²", "١", "9" * 19, "+1"])
def test_an_invitation_whose_tenant_part_is_not_ascii_digits_is_invalid(
    acme_team, tenant_part
) -> None:
    response = Client().get(f"/invite/{tenant_part}.{'x' * 43}")
    assert response.status_code == 410
    assert "This invitation no longer works" in response.content.decode()


def test_an_invitation_spelled_with_other_digits_is_not_the_invitation(acme_team) -> None:
    with tenant_context(acme_team.tenant.pk):
        created = invitation_create(tenant=acme_team.tenant, email="new@acme.test",
                                    role="admin", actor="t")
    tenant_part, _, secret = created.token.partition(".")
    assert Client().get(f"/invite/{created.token}").status_code == 302  # the real link works
    forged = f"/invite/{tenant_part.translate(ARABIC_INDIC)}.{secret}"
    assert Client().get(forged).status_code == 410


def test_ids_too_long_for_the_database_are_not_found(acme_team, globex_team) -> None:
    client = signed_in(acme_team.owner)
    bob = person(acme_team.tenant, "bob", account=acme_team.owner)  # the owner's own memory
    for url in (f"/memory/{TOO_LONG}/{bob.pk}/", f"/memory/{bob.tenant_id}/{TOO_LONG}/",
                f"/memory/{bob.tenant_id}/{bob.pk}/doc/{TOO_LONG}/"):
        assert client.get(url).status_code == 404, url
    for url in (f"/t/acme/people/{TOO_LONG}/forget", f"/t/acme/keys/{TOO_LONG}/revoke",
                f"/t/acme/profiles/{TOO_LONG}"):
        assert client.post(url).status_code == 404, url
    assert client.get(f"/memory/{bob.tenant_id}/{bob.pk}/").status_code == 200


def test_a_portal_link_is_a_signed_token_not_a_number(acme_team) -> None:
    for token in ("²", "١", "9" * 25, "².x"):
        assert Client().get(f"/portal/{token}").status_code == 410
