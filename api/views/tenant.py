"""``GET|PATCH /api/v1/tenant``: the tenant's settings (key with ``admin``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
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

    @extend_schema(request=TenantSerializer, responses=with_errors({200: TenantSerializer}),
                   summary="Change the tenant's settings (applies at once)",
                   tags=["tenant administration"])
    def patch(self, request: Request) -> Response:
        serializer = TenantSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        changes = {k: v for k, v in data.items() if k not in {"limits", "retention"}}
        changes.update(data.get("limits", {}))
        changes.update(data.get("retention", {}))
        tenant = tenant_settings_update(
            tenant_id=self.tenant_id, changes=changes, actor=self.principal.actor_label
        )
        return Response(tenant_representation(tenant))
