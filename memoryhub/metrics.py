"""``/metrics``: Prometheus metrics, open in development, behind a bearer token in production.

Who may read: with ``METRICS_TOKEN`` set, only a request with ``Authorization: Bearer
<token>`` (403 otherwise, DEBUG or not); without it, anyone in development (DEBUG) and no one
in production, where the page does not exist (404). The per-process request metrics come
from memoryhub/infra/observability.py; the gauges below are read from the database at
scrape time, tenant by tenant (row-level security shows a transaction one tenant's rows), so
a scrape costs one short transaction per tenant and no query reads a row's content.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Iterator

from django.conf import settings
from django.db import DatabaseError
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from memoryhub.infra.observability import exposition
from memoryhub.selectors.operations import OperationsCounts, operations_counts
from tenants.context import tenant_context
from tenants.models import Tenant

logger = logging.getLogger(__name__)
DATABASE_UP = ("memoryhub_database_up", "1 if the database answered this scrape's counts.")


def _allowed(request: HttpRequest) -> bool:
    """Whether the request may read the metrics; raises Http404 where they are off."""
    token: str = settings.METRICS_TOKEN
    if not token:
        if settings.DEBUG:
            return True
        raise Http404
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        presented.strip().encode(), token.encode()
    )


@require_GET
@never_cache
def metrics(request: HttpRequest) -> HttpResponse:
    if not _allowed(request):
        return HttpResponse("A valid metrics token is required.\n", status=403,
                            content_type="text/plain; charset=utf-8")
    body, content_type = exposition([DatabaseGauges()])
    return HttpResponse(body, content_type=content_type)


def _totals() -> tuple[OperationsCounts, int]:
    augmenting = settings.AUGMENTATION_PROVIDER != "none"
    totals, tenants = OperationsCounts(), 0
    for tenant_id, enabled in Tenant.objects.values_list("id", "augmentation_enabled"):
        with tenant_context(tenant_id):
            totals += operations_counts(augmenting=augmenting and enabled)
        tenants += 1
    return totals, tenants


def _gauge(name: str, documentation: str, label: str,
           values: dict[str, int]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value, count in values.items():
        family.add_metric([value], count)
    return family


class DatabaseGauges:
    """A prometheus_client collector: the backlogs and failures every tenant has now."""

    def collect(self) -> Iterator[Metric]:
        try:
            totals, tenants = _totals()
        except DatabaseError as exc:  # the scrape still answers, with the request metrics
            logger.warning("metrics: the database did not answer: %s", exc.__class__.__name__)
            yield GaugeMetricFamily(*DATABASE_UP, value=0)
            return
        yield GaugeMetricFamily(*DATABASE_UP, value=1)
        yield GaugeMetricFamily("memoryhub_tenants", "Tenants.", value=tenants)
        yield _gauge("memoryhub_embedding_backlog", "Rows still waiting for their vector.",
                     "kind", {"passage": totals.passages_unembedded,
                              "message": totals.messages_unembedded,
                              "fact": totals.facts_unembedded})
        yield GaugeMetricFamily(
            "memoryhub_augmentation_backlog",
            "Conversations with messages after augmentation's cursor (tenants with it on).",
            value=totals.conversations_unaugmented)
        yield GaugeMetricFamily(
            "memoryhub_augmentation_failures",
            "Augmentation runs recorded as failed after their last retry (kept for the "
            "dashboard).", value=totals.augmentation_failures)
        yield _gauge("memoryhub_webhook_deliveries", "Webhook deliveries not delivered, by "
                     "state (retrying: pending after a failed attempt).", "state",
                     {"pending": totals.deliveries_pending,
                      "retrying": totals.deliveries_retrying,
                      "abandoned": totals.deliveries_abandoned})
        yield _gauge("memoryhub_webhook_endpoints_unhealthy", "Webhook endpoints failing since "
                     "their last success, or switched off.", "state",
                     {"failing": totals.endpoints_failing,
                      "disabled": totals.endpoints_disabled})
