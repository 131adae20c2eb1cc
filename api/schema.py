"""The OpenAPI document (drf-spectacular), as strict as the server.

Schemathesis (tests/spec/test_schemathesis.py) sends what this document allows and expects it
accepted, and what it forbids and expects it refused, so the document states the validators'
rules rather than looser types:

- every object is closed (``additionalProperties: false``): request bodies refuse unknown
  fields, and responses carry exactly their declared keys; a serializer that ignores unknown
  fields says so with ``accepts_unknown_fields = True`` (the memory tool's input);
- identifiers in paths and queries carry the pattern and length of their rule
  (``api.params.parameter_schemas``), and body fields their ``openapi_schema``
  (``api.serializers.IdentifierField``);
- a rule between fields that the serializer states (``openapi_constraints``) joins its
  object's schema;
- a body a PATCH must send whole (``whole_on_patch = True``) keeps its required fields, where
  drf-spectacular would make every field of a PATCH body optional; a body that must be sent
  although each of its fields is optional says ``body_required = True``;
- a list that may not be empty has ``minItems: 1``;
- every query parameter says ``allowEmptyValue``: the server reads ``?limit=`` or
  ``?after=`` as not given (``api.params.optional``, ``parse_limit``, the cursors), as the
  contract's own ``?session_id=&profile=`` does, so an integer, boolean or enum parameter
  may also be sent empty.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers

from api.params import parameter_schemas


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


class AutoSchema(SpectacularAutoSchema):
    """``REST_FRAMEWORK["DEFAULT_SCHEMA_CLASS"]``: drf-spectacular's, with the rules above."""

    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_basic_serializer(serializer, direction)
        if not type(serializer).__doc__:
            # drf-spectacular falls back on a base class's docstring, and ours (FlatSerializer,
            # ClosedSerializer) explain the implementation, not the object the client sends.
            schema.pop("description", None)
        if not getattr(serializer, "accepts_unknown_fields", False):
            schema["additionalProperties"] = False
        schema.update(getattr(serializer, "openapi_constraints", {}))
        return schema

    def _map_serializer_field(self, field: Any, direction: str,
                              bypass_extensions: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer_field(field, direction,
                                                               bypass_extensions)
        constraints = getattr(field, "openapi_schema", None)
        if constraints is not None and "$ref" not in schema:
            schema.update(constraints)
        if isinstance(field, serializers.ListField) and not field.allow_empty:
            schema.setdefault("minItems", 1)  # DRF's "This list may not be empty."
        return schema

    def _insert_field_validators(self, field: Any, schema: dict[str, Any]) -> None:
        super()._insert_field_validators(field, schema)
        # drf-spectacular offers "" beside the pattern of a field that allows blank; where the
        # field states its own pattern, that pattern alone says whether "" is valid (a fact's
        # content allows blank in DRF only for the service to refuse it with its own code).
        alternatives = schema.get("oneOf")
        if (getattr(field, "openapi_schema", None) and alternatives
                and alternatives[-1] == {"type": "string", "maxLength": 0}):
            schema.update(schema.pop("oneOf")[0])

    def _get_request_body(self, direction: str = "request") -> dict[str, Any] | None:
        body: dict[str, Any] | None = super()._get_request_body(direction)
        if body is not None and getattr(self.get_request_serializer(), "body_required", False):
            body["required"] = True  # every field optional, but the object itself is not
        return body

    def resolve_serializer(self, serializer: Any, direction: Any,
                           bypass_extensions: bool = False) -> Any:
        # drf-spectacular marks a PATCH body partial on its own copy of the serializer.
        if getattr(serializer, "partial", False) and getattr(serializer, "whole_on_patch", False):
            serializer.partial = False
        return super().resolve_serializer(serializer, direction, bypass_extensions)

    def _get_parameters(self) -> list[dict[str, Any]]:
        parameters: list[dict[str, Any]] = super()._get_parameters()
        for parameter in parameters:
            rule = parameter_schemas().get((parameter["name"], parameter["in"]))
            if rule is not None:
                parameter["schema"] = {**parameter.get("schema", {}), **rule}
            if parameter["in"] == "query":
                parameter["allowEmptyValue"] = True  # empty: not given (the docstring)
        return parameters
