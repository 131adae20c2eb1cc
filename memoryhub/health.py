"""``/healthz``: the process is alive. ``/readyz``: the database and the broker answer."""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from memoryhub.store.health import database_ping


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
