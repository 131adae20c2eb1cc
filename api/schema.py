"""OpenAPI description of the API key scheme (drf-spectacular extension)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "mh_<tenant id>_<lookup id>_<secret>",
            "description": "A tenant's API key. Permissions: `memory` and/or `admin`.",
        }
