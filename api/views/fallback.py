"""Unknown paths under /api/ answer with the contract's error body, not an HTML page."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse

from api.errors import error_body


def api_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    return JsonResponse(
        error_body("not_found", "No such endpoint. See /api/docs/ for the API."), status=404
    )
