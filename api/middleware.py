"""Refuse API bodies over 1 MiB with 413 before reading them (spec: Conventions)."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from api.errors import TOO_LARGE_MESSAGE, error_body


class ApiBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
                return JsonResponse(error_body("request_too_large", TOO_LARGE_MESSAGE), status=413)
        return self.get_response(request)
