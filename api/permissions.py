from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from api.authentication import ApiPrincipal
from tenants.models import Permission


class _KeyPermission(BasePermission):
    required: str = ""
    message = "This API key lacks the permission this endpoint needs."

    def has_permission(self, request: Request, view: Any) -> bool:
        principal = request.user
        if not isinstance(principal, ApiPrincipal):  # None: no key authenticated
            return False
        return self.required in principal.permissions


class HasMemoryPermission(_KeyPermission):
    required = Permission.MEMORY
    message = "This API key lacks the 'memory' permission."


class HasAdminPermission(_KeyPermission):
    required = Permission.ADMIN
    message = "This API key lacks the 'admin' permission."
