"""Page security: CSP without inline script, CSRF on every form, cookies, headers."""

from __future__ import annotations

import re

from django.test import Client

from tests.pages.conftest import person, person_url, signed_in, write


def test_pages_carry_a_strict_csp_and_no_inline_script(acme_team) -> None:
    alice = person(acme_team.tenant, "alice", account=acme_team.owner)
    write(acme_team.tenant, "alice", "/a.md", "x")
    client = signed_in(acme_team.owner)
    for url in ["/", "/t/acme/", "/t/acme/settings", "/t/acme/keys", "/t/acme/members",
                "/t/acme/people", "/t/acme/audit", "/t/acme/profiles", person_url(alice),
                "/accounts/password/change/", "/accounts/2fa/"]:
        response = client.get(url)
        assert response.status_code == 200, url
        csp = response["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp
        assert "'unsafe-inline'" not in csp
        html = response.content.decode()
        # Every <script> has a src (or is inert JSON data); no on*= handlers.
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert "src=" in tag or 'type="application/json"' in tag, (url, tag)
        assert not re.search(r"\son[a-z]+\s*=", html), url
        assert response["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" in Client().get("/accounts/login/")


def test_every_form_needs_the_csrf_token(acme_team) -> None:
    alice = person(acme_team.tenant, "alice", account=acme_team.owner)
    client = signed_in(acme_team.owner, enforce_csrf_checks=True)
    for url, data in [("/t/acme/memory", {"memory_enabled": "off"}),
                      ("/t/acme/keys", {"name": "k", "permissions": ["memory"]}),
                      (person_url(alice, "web:forget"), {"confirm": "FORGET"}),
                      (person_url(alice, "web:memory_switch"), {"enabled": "off"})]:
        assert client.post(url, data, HTTP_HX_REQUEST="true").status_code == 403, url
    # The page hands htmx the token in hx-headers on <body>.
    html = client.get(person_url(alice)).content.decode()
    token = re.search(r"hx-headers='\{\"X-CSRFToken\": \"([^\"]+)\"\}'", html).group(1)
    response = client.post(person_url(alice, "web:memory_switch"), {"enabled": "off"},
                           HTTP_HX_REQUEST="true", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 200


def test_the_session_cookie_is_httponly_and_samesite(acme_team) -> None:
    from tests.pages.conftest import PASSWORD

    client = Client()
    response = client.post("/accounts/login/", {"login": "owner@acme.test", "password": PASSWORD})
    cookie = response.cookies["sessionid"]
    assert cookie["httponly"] and cookie["samesite"] == "Lax"


def test_the_api_takes_its_own_chain_with_the_security_headers(acme, globex) -> None:
    """/api/v1/ skips the pages' middleware (api/middleware.py), not the security headers."""
    acme.client.cookies["sessionid"] = "a-browser-cookie"  # an agent behind a browser, say
    response = acme.client.get("/api/v1/users/alice/memory/index")
    assert response.status_code == 200
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert int(response["Content-Length"]) == len(response.content)
    assert "Content-Security-Policy" not in response  # the pages' chain adds it
    assert "Cookie" not in response.get("Vary", "") and not response.cookies
    assert "Content-Security-Policy" in Client().get("/accounts/login/")  # pages: unchanged
