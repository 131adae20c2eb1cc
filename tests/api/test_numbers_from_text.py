"""Numbers the API reads from text (issue 17): ASCII digits only, and never an HTTP 500.

``"²".isdigit()`` is True but ``int("²")`` raises; ``int("١٠")`` reads Arabic-Indic digits as 10.
Every number that arrives as text (query parameters, entity tags, the key's tenant part,
Content-Length) is read by ``memoryhub.numbers.parse_natural``: a bad one gets the answer the
endpoint already gives any other bad value.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.spec.api_client import BASE, anonymous, assert_error, put_document

# Digits int() or isdigit() accept besides ASCII's, and spellings int() forgives.
NOT_ASCII_DIGITS = ["²", "١٠", "۵", "９", "߁"]
NOT_PLAIN_NUMBERS = ["1_0", " 5", "5 ", "+5", "-1", "0x10", "1e2", "9" * 19, "9" * 40]

LISTS = ["/users", "/profiles", "/events", "/users/alice/documents"]


@pytest.mark.parametrize("url", LISTS)
@pytest.mark.parametrize("limit", NOT_ASCII_DIGITS + NOT_PLAIN_NUMBERS)
def test_a_limit_that_is_not_ascii_digits_is_invalid_limit(acme, globex, url, limit) -> None:
    assert_error(acme.client.get(BASE + url, {"limit": limit}), 400, "invalid_limit")


@pytest.mark.parametrize("after", NOT_ASCII_DIGITS + NOT_PLAIN_NUMBERS)
def test_an_event_cursor_that_is_not_ascii_digits_is_invalid_cursor(acme, globex, after) -> None:
    assert_error(acme.client.get(f"{BASE}/events", {"after": after}), 400, "invalid_cursor")


def test_ascii_numbers_still_work(acme, globex) -> None:
    for url in LISTS:
        assert acme.client.get(BASE + url, {"limit": "0007"}).status_code == 200
    assert acme.client.get(f"{BASE}/events", {"after": "0", "limit": "1000"}).status_code == 200


@pytest.mark.parametrize("tag", ['"²"', '"¹"', 'W/"¹"', '"1_0"', '" 1"', f'"{"9" * 40}"'])
def test_an_entity_tag_in_other_digits_matches_no_version(acme, globex, tag) -> None:
    url = f"{BASE}/users/alice/documents/global/a.md"
    assert put_document(acme, "global/a.md", "one").status_code == 201  # version 1
    assert_error(put_document(acme, "global/a.md", "two", headers={"If-Match": tag}), 412,
                 "precondition_failed")
    assert_error(acme.client.delete(url, headers={"If-Match": tag}), 412, "precondition_failed")
    assert acme.client.get(url, headers={"If-None-Match": tag}).status_code == 200
    assert acme.client.get(url).json()["content"] == "one"


def _with_tenant_part(key: str, tenant_part: str) -> str:
    prefix, _tenant, rest = key.split("_", 2)
    return f"{prefix}_{tenant_part}_{rest}"


# A header reaches the application decoded as latin-1 (PEP 3333), so the superscripts are the
# non-ASCII digits a key can carry.
@pytest.mark.parametrize("tenant_part", ["²", "²³", "¹", "9" * 19, "+1", " 1"])
def test_a_key_whose_tenant_part_is_not_ascii_digits_is_401(acme, globex, tenant_part) -> None:
    client = anonymous()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {_with_tenant_part(acme.key, tenant_part)}")
    for method, url in (("get", "/users"), ("get", "/tenant"), ("post", "/users/alice/memory")):
        assert_error(getattr(client, method)(BASE + url), 401, "invalid_api_key")


@pytest.mark.parametrize("length", ["²", "¹", "1_0", "-1", "abc", "9" * 19])
def test_a_content_length_that_is_not_a_number_is_400(acme, globex, length) -> None:
    response = acme.client.post(f"{BASE}/users/alice/memory", '{"command": "view", "path": "/"}',
                                content_type="application/json", CONTENT_LENGTH=length)
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize("value", ["١٠٠", "100", 10**30, 2**31, True, 1.5])
def test_a_tenant_limit_is_a_json_integer_within_its_column(acme, globex, value: Any) -> None:
    response = acme.client.patch(f"{BASE}/tenant", {"limits": {"max_document_bytes": value}},
                                 format="json")
    assert_error(response, 400, "invalid_request")
    assert acme.client.get(f"{BASE}/tenant").json()["limits"]["max_document_bytes"] == 16384


@pytest.mark.parametrize("days", ["٣٠", 10**7, 10**30])
def test_retention_days_are_a_json_integer_of_at_most_a_century(acme, globex, days) -> None:
    response = acme.client.patch(f"{BASE}/tenant", {"retention": {"session_days": days}},
                                 format="json")
    assert_error(response, 400, "invalid_request")
    ok = acme.client.patch(f"{BASE}/tenant", {"retention": {"session_days": 36500}}, format="json")
    assert ok.json()["retention"]["session_days"] == 36500


@pytest.mark.parametrize("limit", ["٣", "3"])
def test_a_recall_limit_given_as_text_is_refused(acme, globex, limit) -> None:
    response = acme.client.post(f"{BASE}/users/alice/recall", {"query": "diet", "limit": limit},
                                format="json")
    assert_error(response, 400, "invalid_request")


def test_an_id_too_long_for_the_database_is_not_found(acme, globex) -> None:
    assert_error(acme.client.get(f"{BASE}/webhooks/{'9' * 25}"), 404, "not_found")
    assert_error(acme.client.delete(f"{BASE}/webhooks/{'9' * 19}"), 404, "not_found")
