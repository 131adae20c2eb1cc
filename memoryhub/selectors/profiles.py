"""Reads of the tenant's profiles (``GET /api/v1/profiles``)."""

from __future__ import annotations

from memoryhub.models import Profile


def profiles_page(*, after: str | None, limit: int) -> list[Profile]:
    """Up to ``limit + 1`` profiles by name after ``after`` (the unique name is the key)."""
    profiles = Profile.objects.order_by("name")
    if after is not None:
        profiles = profiles.filter(name__gt=after)
    return list(profiles[: limit + 1])
