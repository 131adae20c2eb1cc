"""Request ids, request metrics and /metrics over HTTP (Django's test client, both chains).

The production processes (gunicorn with several workers, JSON log lines) are driven in
tests/platform/test_deploy_check.py.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from memoryhub.models import AugmentationFailure, DeliveryStatus, WebhookDelivery, WebhookEndpoint
from tenants.context import tenant_context

TOKEN = "metrics-token-for-the-tests"
GENERATED = re.compile(r"[0-9a-f]{32}")


def scrape(client: Client | None = None) -> dict[tuple[str, tuple], float]:
    """Every sample of /metrics as {(name, sorted labels): value}."""
    response = (client or Client()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples}


def requests_of(samples: dict, route: str, method: str, status: str) -> float:
    labels = tuple(sorted({"route": route, "method": method, "status": status}.items()))
    return samples.get(("memoryhub_http_requests_total", labels), 0.0)


@pytest.fixture
def token(settings) -> str:
    settings.METRICS_TOKEN = TOKEN
    return TOKEN


# --- request ids ----------------------------------------------------------------------------


@pytest.mark.parametrize("incoming", ["3f2a9c1e-8d7b-4c6a-9e5f-1a2b3c4d5e6f", "req:42.a_b", "x"])
def test_a_sane_incoming_request_id_is_echoed(acme, incoming) -> None:
    assert Client().get("/healthz", HTTP_X_REQUEST_ID=incoming)["X-Request-ID"] == incoming
    api = acme.client.get("/api/v1/users", HTTP_X_REQUEST_ID=incoming)
    assert api.status_code == 200 and api["X-Request-ID"] == incoming


@pytest.mark.parametrize("incoming", [None, "", "a" * 129, "two words", "<script>", "naïve",
                                      "a\u200bb", "x/../y", "id;drop"])
def test_any_other_request_id_is_replaced_by_a_fresh_one(acme, incoming) -> None:
    headers = {} if incoming is None else {"HTTP_X_REQUEST_ID": incoming}
    first = acme.client.get("/api/v1/users", **headers)["X-Request-ID"]
    second = Client().get("/nowhere", **headers)["X-Request-ID"]  # a 404 gets one too
    assert GENERATED.fullmatch(first) and GENERATED.fullmatch(second) and first != second


# --- request metrics ------------------------------------------------------------------------


def test_requests_are_counted_by_route_name_and_status_never_by_path(acme, token) -> None:
    before = scrape()
    secret = "person-7f3e91"
    assert acme.client.get(f"/api/v1/users/{secret}/documents").status_code == 200
    assert acme.client.get(f"/api/v1/users/{secret}/documents?limit=0").status_code == 400
    assert Client().get(f"/api/v1/users/{secret}/documents").status_code == 401
    assert Client().get(f"/no-such-page/{secret}").status_code == 404
    assert Client().generic("BREW", "/healthz").status_code == 405
    after = scrape()

    def grew(route: str, method: str, status: str) -> float:
        return (requests_of(after, route, method, status)
                - requests_of(before, route, method, status))

    assert grew("api:documents", "GET", "200") == 1
    assert grew("api:documents", "GET", "400") == 1
    assert grew("api:documents", "GET", "401") == 1
    assert grew("unmatched", "GET", "404") == 1
    assert grew("healthz", "other", "405") == 1  # a made-up method adds no series of its own
    routes = {dict(labels).get("route") for _, labels in after}
    assert not any(secret in (route or "") or "/" in (route or "") for route in routes)
    histogram = ("memoryhub_http_request_duration_seconds_count",
                 (("method", "GET"), ("route", "api:documents")))
    assert after[histogram] - before.get(histogram, 0) == 3
    assert "BREW" not in str(after.keys())


# --- who may read /metrics ------------------------------------------------------------------


def test_in_production_metrics_need_the_token(db, settings) -> None:
    settings.DEBUG = False
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics").status_code == 404  # no token configured: no page
    settings.METRICS_TOKEN = TOKEN
    assert Client().get("/metrics").status_code == 403
    for wrong in (f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN[:-1]}", "Bearer"):
        assert Client().get("/metrics", HTTP_AUTHORIZATION=wrong).status_code == 403, wrong
    ok = Client().get("/metrics", HTTP_AUTHORIZATION=f"bearer {TOKEN}")
    assert ok.status_code == 200 and b"memoryhub_http_requests_total" in ok.content
    assert Client().post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


def test_in_development_metrics_are_open_unless_a_token_is_set(db, settings) -> None:
    settings.DEBUG = True
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics").status_code == 200
    settings.METRICS_TOKEN = TOKEN
    assert Client().get("/metrics").status_code == 403


# --- the backlog and the failures, from the database ----------------------------------------


def gauges(samples: dict) -> dict[str, float]:
    names = ("memoryhub_embedding_backlog", "memoryhub_augmentation_backlog",
             "memoryhub_augmentation_failures", "memoryhub_webhook_deliveries",
             "memoryhub_webhook_endpoints_unhealthy", "memoryhub_tenants",
             "memoryhub_database_up")
    return {name + "".join(f"/{value}" for _, value in labels): value
            for (name, labels), value in samples.items() if name in names}


def write_and_capture(kit, user: str) -> None:
    created = kit.client.post(f"/api/v1/users/{user}/memory", {
        "command": "create", "path": "/memories/notes.md", "file_text": "Likes tea.\n"},
        format="json")
    assert created.status_code == 200 and not created.json()["is_error"], created.content
    captured = kit.client.post(f"/api/v1/users/{user}/sessions/s1/messages", {
        "messages": [{"role": "user", "content": "I live in Lisbon."},
                     {"role": "assistant", "content": "Noted."}]}, format="json")
    assert captured.status_code == 201, captured.content


def test_backlogs_and_failures_are_read_from_the_database_across_tenants(
        acme, globex, token, settings) -> None:
    settings.MEMORYHUB_WEBHOOKS = {**settings.MEMORYHUB_WEBHOOKS, "allow_private_urls": True}
    assert gauges(scrape()) == {
        "memoryhub_database_up": 1, "memoryhub_tenants": 2,
        "memoryhub_embedding_backlog/passage": 0, "memoryhub_embedding_backlog/message": 0,
        "memoryhub_embedding_backlog/fact": 0, "memoryhub_augmentation_backlog": 0,
        "memoryhub_augmentation_failures": 0, "memoryhub_webhook_deliveries/pending": 0,
        "memoryhub_webhook_deliveries/retrying": 0, "memoryhub_webhook_deliveries/abandoned": 0,
        "memoryhub_webhook_endpoints_unhealthy/failing": 0,
        "memoryhub_webhook_endpoints_unhealthy/disabled": 0}

    for kit in (acme, globex):
        hook = kit.client.post("/api/v1/webhooks", {
            "url": "http://127.0.0.1:9/in", "event_types": ["memory.changed"]},
            format="json")
        assert hook.status_code == 201, hook.content
    write_and_capture(acme, "alice")  # no worker runs here: nothing gets its vector
    write_and_capture(globex, "bob")
    write_and_capture(globex, "carol")
    with tenant_context(acme.tenant.id):
        AugmentationFailure.objects.create(conversation_id="0" * 32, user_id="alice",
                                           provider="rules", error="ExtractionFailed")
        WebhookDelivery.objects.update(attempts=2, last_error="HTTP 500")
        WebhookEndpoint.objects.update(failing_since=timezone.now() - timedelta(hours=1))
    with tenant_context(globex.tenant.id):
        first = WebhookDelivery.objects.order_by("id").first()
        WebhookDelivery.objects.filter(pk=first.pk).update(status=DeliveryStatus.ABANDONED)
        WebhookEndpoint.objects.update(enabled=False, disabled_reason="failing for a day")
    globex.tenant.augmentation_enabled = False  # its conversations are not waiting
    globex.tenant.save(update_fields=["augmentation_enabled"])

    now = gauges(scrape())
    assert now["memoryhub_embedding_backlog/passage"] == 3  # one passage per short document
    assert now["memoryhub_embedding_backlog/message"] == 6
    assert now["memoryhub_augmentation_backlog"] == 1  # acme's conversation only
    assert now["memoryhub_augmentation_failures"] == 1
    assert now["memoryhub_webhook_deliveries/retrying"] == 1  # acme's event, failed twice
    assert now["memoryhub_webhook_deliveries/abandoned"] == 1
    assert now["memoryhub_webhook_deliveries/pending"] == 1  # globex's second event
    assert now["memoryhub_webhook_endpoints_unhealthy/failing"] == 1
    assert now["memoryhub_webhook_endpoints_unhealthy/disabled"] == 1


def test_a_server_error_keeps_its_traceback(caplog) -> None:
    try:
        raise RuntimeError("a bug")
    except RuntimeError:
        logging.getLogger("django.request").error("Internal Server Error: /x", exc_info=True,
                                                  extra={"status_code": 500})
    [record] = caplog.records
    assert record.exc_info is not None and record.exc_info[0] is RuntimeError
