"""``GET|PATCH /api/v1/tenant``: the tenant's settings (key with ``admin``)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.permissions import HasAdminPermission
from api.representations import tenant_representation
from api.serializers import TenantSerializer, with_errors
from tenants.services import tenant_settings_update


class TenantView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(responses=with_errors({200: TenantSerializer}),
                   summary="Show the tenant's settings", tags=["tenant administration"])
    def get(self, request: Request) -> Response:
        return Response(tenant_representation(self.tenant))

    @extend_schema(request=TenantSerializer,
                   responses=with_errors({200: TenantSerializer}, body=True),
                   summary="Change the tenant's settings (applies at once)",
                   tags=["tenant administration"])
    def patch(self, request: Request) -> Response:
        serializer = TenantSerializer(data=request.data, partial=True,
                                      context={"slug": self.tenant.slug})
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        changes = {k: v for k, v in data.items() if k not in {"limits", "retention", "capture"}}
        changes.update(data.get("limits", {}))
        changes.update(data.get("retention", {}))
        changes.update({f"capture_{k}": v for k, v in data.get("capture", {}).items()})
        try:
            tenant = tenant_settings_update(
                tenant_id=self.tenant_id, changes=changes, actor=self.principal.actor_label
            )
        except ValidationError as error:  # a rule of the model the body's types do not carry
            raise ApiError(400, "invalid_request", "; ".join(
                f"{field}: {' '.join(problems)}" for field, problems in error.message_dict.items()
            )) from error
        return Response(tenant_representation(tenant))
