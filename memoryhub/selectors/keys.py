"""Reads of the tenant's API keys (``GET /api/v1/keys`` and the dashboard's keys page)."""

from __future__ import annotations

from django.db.models import F, QuerySet

from tenants.models import ApiKey


def api_keys_listed() -> QuerySet[ApiKey]:
    """Every key, the working ones first, then the revoked; newest first within each.

    ``revoked_at`` ascending alone put the revoked first: PostgreSQL sorts NULLs (the keys
    still working) last in ascending order."""
    return ApiKey.objects.order_by(F("revoked_at").asc(nulls_first=True), "-created_at", "-id")
