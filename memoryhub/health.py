"""``/healthz``: the process is alive. ``/readyz``: the database and the broker answer. And
``check --deploy``'s question to the database: may DATABASE_URL's role pass row-level
security?"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memoryhub.store.health import database_ping, database_role_powers

ROLE_ID = "memoryhub.E004"


@require_GET
@never_cache
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _database_ok() -> str | None:
    try:
        database_ping()
        return None
    except Exception as exc:  # any failure means "not ready"
        return f"database: {exc.__class__.__name__}"


def _broker_ok() -> str | None:
    from memoryhub.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return None
    except Exception as exc:
        return f"broker: {exc.__class__.__name__}"


@require_GET
@never_cache
def readyz(request: HttpRequest) -> JsonResponse:
    problems = [p for p in (_database_ok(), _broker_ok()) if p]
    body = {"status": "ok" if not problems else "unavailable", "problems": problems}
    return JsonResponse(body, status=200 if not problems else 503)


@register(Tags.security, deploy=True)
def database_role_under_rls(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """PostgreSQL applies no row-level security to a superuser, a BYPASSRLS role or the
    tables' owner: with such a role in DATABASE_URL every tenant would see every row."""
    try:
        powers = database_role_powers()
    except Exception as error:  # unreachable, or a test's database blocker: not known, said
        return [Warning(f"Could not check DATABASE_URL's role: {error}", id=ROLE_ID)]
    reasons = [why for why, holds in zip(("a superuser", "BYPASSRLS", "the tables' owner"),
                                         powers, strict=True) if holds]
    if not reasons:
        return []
    return [Error(f"DATABASE_URL's role is {' and '.join(reasons)}: row-level security does "
                  "not apply to it, so tenants are not isolated.",
                  hint="Connect as the app role (NOSUPERUSER NOBYPASSRLS, owning nothing); "
                       "MIGRATE_DATABASE_URL is the owner's (README \"An external PostgreSQL "
                       "and Redis\").", id=ROLE_ID)]
