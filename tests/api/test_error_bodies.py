"""Every API error is the contract's JSON body (issue 17), 404 and 500 included, DEBUG or not.

Before: a 500 sent Django's HTML page (in DEBUG, DRF's own DEBUG branch failed first on
``accepted_renderer``), and a path holding a newline matched no API route and got the HTML
404 page listing every URL pattern. The 500 views live in a test-only URLconf
(``tests/api/raising_urls.py``).
"""

from __future__ import annotations

import logging

import pytest
from django.test import Client

from memoryhub.models import EndUser
from tenants.context import tenant_context
from tests.api.raising_urls import Broken
from tests.spec.api_client import BASE, assert_error

UNKNOWN_API_PATHS = [
    "/api/v1/no-such-endpoint", "/api/v1/nope%0Ax", "/api/v1/%0A", "/api/v1/users/a/b/c/d",
    "/api/v2/users", "/api/v2/a%0Ab", "/api/schema/x%0Ay", "/api/",
]


@pytest.fixture(params=[False, True], ids=["DEBUG off", "DEBUG on"])
def debug(request, settings) -> bool:
    settings.DEBUG = request.param
    return request.param


def _assert_json_error(response, status: int, code: str) -> None:
    assert response["Content-Type"] == "application/json", response.content[:200]
    assert_error(response, status, code)


@pytest.mark.parametrize("url", UNKNOWN_API_PATHS)
def test_an_unknown_api_path_is_a_json_404(acme, globex, debug, url) -> None:
    # enforce_csrf_checks: as a real client, which sends no CSRF token; outside /api/v1/ the
    # pages' chain runs, whose CSRF check answered every write with its HTML 403 page.
    for client in (acme.client, Client(), Client(enforce_csrf_checks=True)):
        _assert_json_error(client.get(url), 404, "not_found")
        for method in (client.post, client.put, client.patch, client.delete):
            _assert_json_error(method(url, {}, content_type="application/json"), 404,
                               "not_found")


def test_a_document_path_with_a_newline_is_invalid_path(acme, globex, debug) -> None:
    url = f"{BASE}/users/alice/documents/global/a%0Ab.md"
    for response in (acme.client.get(url), acme.client.delete(url),
                     acme.client.put(url, {"content": "x"}, format="json")):
        _assert_json_error(response, 422, "invalid_path")
    for where in ("profile/cooking/a%0Ab.md", "session/s-1/a%0Ab.md", "global/%0A"):
        _assert_json_error(acme.client.get(f"{BASE}/users/alice/documents/{where}"), 422,
                           "invalid_path")
    _assert_json_error(acme.client.get(f"{BASE}/users/a%0Ab/memory/index"), 400,
                       "invalid_user_id")


@pytest.fixture
def raising_urls(settings) -> None:
    settings.ROOT_URLCONF = "tests.api.raising_urls"


def _assert_logged_json_500(client, url: str, caplog) -> None:
    client.raise_request_exception = False
    with caplog.at_level(logging.ERROR, logger="django.request"):
        response = client.get(url)
    _assert_json_error(response, 500, "internal_error")
    assert "Broken" not in response.content.decode()  # nothing of the bug goes out...
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[0] is Broken]
    assert len(logged) == 1  # ... it is logged, once, with its traceback


@pytest.mark.parametrize("url", ["/api/v1/raises", "/api/v1/raises-early",
                                 "/api/v1/raises-plain"])
def test_a_bug_in_an_api_view_is_a_json_500(acme, globex, debug, raising_urls, url,
                                            caplog) -> None:
    _assert_logged_json_500(acme.client, url, caplog)


def test_a_bug_elsewhere_under_api_is_a_json_500(acme, globex, settings, raising_urls,
                                                 caplog) -> None:
    # Outside /api/v1/ (the docs' chain) Django calls handler500 only with DEBUG off; with it
    # on, the documentation pages show Django's debug page.
    settings.DEBUG = False
    _assert_logged_json_500(acme.client, "/api/other/raises", caplog)


def test_a_bug_still_reaches_monitoring_and_rolls_back(acme, globex, debug,
                                                       raising_urls) -> None:
    # got_request_exception is sent (error trackers listen to it): the test client re-raises.
    with pytest.raises(Broken):
        acme.client.get("/api/v1/raises")
    with tenant_context(acme.tenant.pk):
        assert not EndUser.objects.filter(user_id="written-before-the-bug").exists()


def test_a_deadlocks_victim_is_503_saying_so(acme, globex, raising_urls) -> None:
    """PostgreSQL rolled the request back for another's (a deadlock): 503 with Retry-After,
    as for an unreachable database, but not saying the database could not be reached."""
    response = acme.client.get("/api/v1/clashes")
    _assert_json_error(response, 503, "service_unavailable")
    assert response["Retry-After"]
    message = response.json()["error"]["message"]
    assert "Another change to the same memory got in the way" in message
    assert "cannot reach" not in message


def test_the_pages_keep_their_html_error_pages(acme, debug) -> None:
    response = Client().get("/no-such-page")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")


# A message that quotes the request: a field's name, a choice. A lone surrogate (JSON's
# "\ud800", or what the body parser makes of invalid UTF-8) cannot be written as UTF-8, and the
# response failed to render: gunicorn's HTML 500.
QUOTED_SURROGATES = [
    ("put", "/users/u/documents/global/z.md", b'{"content": "x", "\\ud800": 1}'),
    ("put", "/users/u/documents/global/z.md", b'{"content": "x", "a\xff": 1}'),
    ("post", "/users/u/recall", b'{"query": "x", "sources": ["\\ud800"]}'),
    ("patch", "/tenant", b'{"limits": {"\\ud800": 1}}'),
    ("post", "/keys", b'{"name": "x", "permissions": ["\\ud800"]}'),
]


@pytest.mark.parametrize(("method", "path", "body"), QUOTED_SURROGATES)
def test_a_message_quoting_a_lone_surrogate_is_a_json_400(acme, method, path, body) -> None:
    response = getattr(acme.client, method)(f"{BASE}{path}", body,
                                            content_type="application/json")
    _assert_json_error(response, 400, "invalid_request")
    assert "\ufffd" in response.json()["error"]["message"]


def test_several_problems_read_as_one_sentence(acme) -> None:
    """Two fields refused at once: each problem once, joined by "; ", not "required.; b"."""
    response = acme.client.post(f"{BASE}/webhooks", {"url": "", "event_types": []},
                                format="json")
    assert response.status_code == 400, response.content
    message = response.json()["error"]["message"]
    assert ".;" not in message and message.startswith("url: ") and "; event_types: " in message
    assert message.endswith("."), message
