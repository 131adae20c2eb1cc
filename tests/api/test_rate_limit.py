"""Rate limits: 429 with Retry-After and the error body, per API key."""

from __future__ import annotations


def test_a_key_over_its_rate_gets_429_with_retry_after(acme, globex, settings,
                                                       fresh_rate_window) -> None:
    settings.API_RATE_LIMIT = "3/min"
    for _ in range(3):
        assert acme.client.get("/api/v1/tenant").status_code == 200
    response = acme.client.get("/api/v1/tenant")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 61
    assert response.json()["error"]["code"] == "rate_limited"
    # The limit is the key's own: another tenant's key, and another key, still pass.
    assert globex.client.get("/api/v1/tenant").status_code == 200
    assert acme.client_with(acme.memory_key).get("/api/v1/users/u/memory/index").status_code == 200


def test_an_empty_rate_switches_the_limit_off(acme, settings) -> None:
    settings.API_RATE_LIMIT = ""
    for _ in range(5):
        assert acme.client.get("/api/v1/tenant").status_code == 200


def test_unknown_api_paths_get_the_json_error_body(acme) -> None:
    response = acme.client.get("/api/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
