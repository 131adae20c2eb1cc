"""API keys, for keys with ``admin``: ``/api/v1/keys`` and ``/api/v1/keys/{id}``.

A key is shown in full once, in the response that mints it; afterwards only ``masked``. A
key with ``user_id`` is bound to that end user: it reaches no one else (another person looks
absent to it, a write for them is 403), lists only them, and never has ``admin``. This is
the key for an MCP client or a person's own device. Every change leaves an audit entry.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from api.base import TenantAPIView
from api.errors import ApiError
from api.params import valid_user_id
from api.permissions import HasAdminPermission
from api.representations import (
    ApiKeyCreatedSerializer,
    ApiKeyListSerializer,
    api_key_list_representation,
    api_key_representation,
)
from api.serializers import ApiKeyInputSerializer, with_errors
from memoryhub.selectors.keys import api_keys_listed
from tenants.models import ApiKey, Permission
from tenants.services import api_key_create, api_key_revoke

TAGS = ["api keys"]


class ApiKeyListView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(summary="List API keys", operation_id="v1_keys_list",
                   description="Every key of the tenant, revoked ones last, newest first; "
                   "masked, with the end user a bound key reaches.",
                   responses=with_errors({200: ApiKeyListSerializer}), tags=TAGS)
    def get(self, request: Request) -> Response:
        return Response(api_key_list_representation(api_keys_listed()))

    @extend_schema(
        summary="Mint an API key",
        description="`user_id` binds the key to that end user (who need not exist yet): it "
        "reaches only them and cannot have `admin`. The key is in `api_key`, shown once.",
        request=ApiKeyInputSerializer,
        responses=with_errors({201: ApiKeyCreatedSerializer}, body=True,
                              e400="invalid_request, invalid_user_id, or invalid_permissions"),
        tags=TAGS,
    )
    def post(self, request: Request) -> Response:
        body = ApiKeyInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user_id = data.get("user_id")
        if user_id is not None:
            user_id = valid_user_id(user_id)
            if Permission.ADMIN in data["permissions"]:
                raise ApiError(400, "invalid_permissions",
                               "A key bound to one end user cannot have the admin permission.")
        created = api_key_create(tenant=self.tenant, name=data["name"],
                                 permissions=data["permissions"], user_id=user_id,
                                 actor=self.principal.actor_label)
        return Response(api_key_representation(created.api_key, plaintext=created.plaintext),
                        status=201)


class ApiKeyView(TenantAPIView):
    permission_classes = [HasAdminPermission]

    @extend_schema(summary="Revoke an API key",
                   description="The key stops working at once (401). 204 also when it was "
                   "already revoked; it stays in the list with `revoked_at`.",
                   request=None, responses=with_errors({204: None}, e404="not_found"), tags=TAGS)
    def delete(self, request: Request, key_id: int) -> Response:
        key = ApiKey.objects.filter(pk=key_id).first()
        if key is None:  # another tenant's key id looks exactly like a missing one
            raise ApiError(404, "not_found", "No API key with this id.")
        api_key_revoke(tenant=self.tenant, key=key, actor=self.principal.actor_label)
        return Response(status=204)
