"""``GET|PATCH /api/v1/tenant``: the tenant's settings (key with ``admin``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.permissions import HasAdminPermission
from api.serializers import StrictBooleanField, StrictFloatField, with_errors
from tenants.models import DEFAULT_LIMITS, Tenant
from tenants.services import tenant_settings_update


class ClosedSerializer(serializers.Serializer):
    """A nested object whose unknown keys are refused, like the body's own: a misspelt limit
    (``max_doc_bytes``) must not be silently ignored."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = set(data) - set(self.fields)
            if unknown:
                raise serializers.ValidationError(
                    f"Unknown fields: {', '.join(sorted(map(str, unknown)))}.")
        return super().to_internal_value(data)


class LimitsSerializer(ClosedSerializer):
    max_document_bytes = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    max_index_entries = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    max_index_tokens = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    max_scope_bytes = serializers.IntegerField(min_value=1, allow_null=True, required=False)
    max_writes_per_turn = serializers.IntegerField(min_value=1, allow_null=True, required=False)


class RetentionSerializer(ClosedSerializer):
    session_days = serializers.IntegerField(min_value=1, allow_null=True, required=False)


class TenantSerializer(serializers.Serializer):
    slug = serializers.CharField(read_only=True)
    name = serializers.CharField(max_length=200, required=False)
    memory_enabled = StrictBooleanField(required=False)
    limits = LimitsSerializer(required=False)
    retention = RetentionSerializer(required=False)
    recall_threshold = StrictFloatField(min_value=0.0, max_value=1.0, required=False)

    def validate(self, attrs: dict) -> dict:
        unknown = set(self.initial_data) - set(self.fields)
        if unknown:
            raise serializers.ValidationError(f"Unknown fields: {', '.join(sorted(unknown))}.")
        return attrs


def tenant_representation(tenant: Tenant) -> dict:
    return {
        "slug": tenant.slug,
        "name": tenant.name,
        "memory_enabled": tenant.memory_enabled,
        "limits": {name: getattr(tenant, name) for name in DEFAULT_LIMITS},
        "retention": {"session_days": tenant.session_days},
        "recall_threshold": tenant.recall_threshold,
    }


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
