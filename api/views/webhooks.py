"""Webhook endpoints, for keys with ``admin``: ``/api/v1/webhooks`` and ``/api/v1/webhooks/{id}``.

The secret is shown in full only in the response that creates it (or sets a new one);
afterwards only ``secret_hint``. Delivery format, signature and retries are documented in
memoryhub/services/webhooks.py and in the OpenAPI description below.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.permissions import HasAdminPermission
from api.representations import (
    WebhookChangedSerializer,
    WebhookCreatedSerializer,
    WebhookListSerializer,
    WebhookSerializer,
    webhook_list_representation,
    webhook_representation,
)
from api.serializers import WebhookInputSerializer, with_errors
from memoryhub.models import WebhookEndpoint
from memoryhub.services.webhooks import (
    MAX_ENDPOINTS,
    WebhookLimitReached,
    WebhookUrlError,
    webhook_create,
    webhook_delete,
    webhook_update,
)

DELIVERY_DOCS = (
    "Every subscribed event is POSTed as JSON, the same object as in `GET /api/v1/events`. "
    "Headers: `X-MemoryHub-Timestamp` (Unix seconds), `X-MemoryHub-Signature: sha256=<hex>` "
    "(HMAC-SHA256 of `<timestamp>.<raw body>` with the endpoint's secret), "
    "`X-MemoryHub-Event`, and `X-MemoryHub-Delivery` (the same on retries: drop duplicates; "
    "numbered per tenant, like event ids). "
    "A 2xx answer is success; anything else is retried with exponential backoff. An endpoint "
    "whose deliveries all fail for a day is switched off: `enabled` false and "
    "`disabled_reason` says why; set `enabled` to true when it is fixed."
)


def _invalid_url(exc: WebhookUrlError) -> ApiError:
    return ApiError(400, "invalid_url", str(exc))


class WebhookListView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(summary="List webhook endpoints", operation_id="v1_webhooks_list",
                   responses=with_errors({200: WebhookListSerializer}), tags=["webhooks"])
    def get(self, request: Request) -> Response:
        endpoints = WebhookEndpoint.objects.order_by("created_at", "id")
        return Response(webhook_list_representation(endpoints))

    @extend_schema(
        summary="Create a webhook endpoint", description=DELIVERY_DOCS,
        request=WebhookInputSerializer,
        responses=with_errors({201: WebhookCreatedSerializer}, body=True,
                              e422=f"webhook_limit: at most {MAX_ENDPOINTS} endpoints"),
        tags=["webhooks"],
    )
    def post(self, request: Request) -> Response:
        body = WebhookInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        try:
            created = webhook_create(
                tenant=self.tenant, url=data["url"], event_types=data["event_types"],
                secret=data.get("secret"), enabled=data["enabled"],
                actor=self.principal.actor_label,
            )
        except WebhookLimitReached as exc:
            raise ApiError(422, "webhook_limit", str(exc)) from exc
        except WebhookUrlError as exc:
            raise _invalid_url(exc) from exc
        return Response(webhook_representation(created.endpoint, secret=created.secret),
                        status=201)


class WebhookView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    def _endpoint(self, webhook_id: int) -> WebhookEndpoint:
        endpoint = WebhookEndpoint.objects.filter(pk=webhook_id).first()
        if endpoint is None:  # another tenant's id looks exactly like a missing one
            raise ApiError(404, "not_found", "No webhook endpoint with this id.")
        return endpoint

    @extend_schema(summary="Show a webhook endpoint",
                   responses=with_errors({200: WebhookSerializer}, e404="not_found"),
                   tags=["webhooks"])
    def get(self, request: Request, webhook_id: int) -> Response:
        return Response(webhook_representation(self._endpoint(webhook_id)))

    @extend_schema(
        summary="Change a webhook endpoint",
        description="Any of url, event_types, enabled, secret. Setting enabled to true on a "
        "switched-off endpoint clears its failure record. A new secret is echoed once.",
        request=WebhookInputSerializer,
        responses=with_errors(
            {200: OpenApiResponse(WebhookChangedSerializer, description="the endpoint; with "
                                  "`secret` when the change set a new one")}, body=True,
            e404="not_found"),
        tags=["webhooks"],
    )
    def patch(self, request: Request, webhook_id: int) -> Response:
        endpoint = self._endpoint(webhook_id)
        body = WebhookInputSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        try:
            endpoint = webhook_update(tenant=self.tenant, endpoint=endpoint, changes=changes,
                                      actor=self.principal.actor_label)
        except WebhookUrlError as exc:
            raise _invalid_url(exc) from exc
        new_secret = endpoint.secret if "secret" in changes else None
        return Response(webhook_representation(endpoint, secret=new_secret))

    @extend_schema(summary="Delete a webhook endpoint", responses=with_errors({204: None}, e404="not_found"),
                   tags=["webhooks"])
    def delete(self, request: Request, webhook_id: int) -> Response:
        webhook_delete(tenant=self.tenant, endpoint=self._endpoint(webhook_id),
                       actor=self.principal.actor_label)
        return Response(status=204)
