"""System checks: a rate limit must not count in a per-process cache where several serve;
and, for ``check --deploy``, what a deployment needs before it serves (below).

Each gunicorn worker has its own ``LocMemCache``, so with two workers a 30/min API limit
lets 60 requests through and five wrong passwords become ten. Development serves from one
process when no Redis answers (deploy/run-dev.sh); production cannot know, so there a
per-process cache with a limit set is an error: ``manage.py check`` (and ``migrate``) fail
and the WSGI and ASGI applications refuse to load. ``check --deploy`` reports it anywhere,
since it asks whether these settings are fit for production.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from allauth.account import app_settings as allauth_settings
from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, register
from django.core.exceptions import ImproperlyConfigured

from memoryhub.infra.cache import is_per_process

SHARED_LIMITS_ID = "memoryhub.E001"


def production() -> bool:
    """The settings' own definition: a database of its own (DATABASE_URL), DEBUG off."""
    return not settings.DEBUG and not settings.EMBEDDED_DATABASE


def limits_set() -> list[str]:
    """Every rate limit that counts in the cache: the API's and allauth's (its defaults
    included, unless ``ACCOUNT_RATE_LIMITS = False``)."""
    limits = [f"API_RATE_LIMIT {settings.API_RATE_LIMIT}"] if settings.API_RATE_LIMIT else []
    actions = sorted(action for action, rate in allauth_settings.RATE_LIMITS.items() if rate)
    if actions:
        limits.append(f"ACCOUNT_RATE_LIMITS for {', '.join(actions)}")
    return limits


def per_process_limits_errors() -> list[CheckMessage]:
    backend = settings.CACHES["default"]["BACKEND"]
    limits = limits_set()
    if not limits or not is_per_process(backend):
        return []
    return [Error(
        f"The rate limits count in a per-process cache ({backend.rsplit('.', 1)[-1]}): every "
        f"server process counts alone, so N processes let N times each limit through "
        f"({'; '.join(limits)}).",
        hint="Set REDIS_CACHE_URL to a Redis that every server process shares, or switch the "
             "limits off (API_RATE_LIMIT empty and ACCOUNT_RATE_LIMITS = False).",
        id=SHARED_LIMITS_ID,
    )]


@register(Tags.caches, Tags.security)
def limits_shared_in_production(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    return per_process_limits_errors() if production() else []


@register(Tags.caches, Tags.security, deploy=True)
def limits_shared_for_deploy(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    # In production the check above has said it already.
    return [] if production() else per_process_limits_errors()


def refuse_per_process_limits() -> None:
    """Called by the WSGI and ASGI entry points: a production server with per-process limits
    does not start (gunicorn runs no system checks)."""
    if production():
        errors = per_process_limits_errors()
        if errors:
            raise ImproperlyConfigured(f"{errors[0].id}: {errors[0].msg} {errors[0].hint}")


# --- check --deploy: what a deployment needs before it serves ----------------------------------

# memoryhub.E004 is the database role's check (memoryhub/health.py: it asks the database).
STATIC_ID, BROKER_ID, METRICS_ID = "memoryhub.E002", "memoryhub.E003", "memoryhub.E005"


@register(Tags.staticfiles, deploy=True)
def static_files_collected(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """Without ``collectstatic``'s manifest every page and the API docs are a 500 (and so is
    the 404 page), which ``check --deploy`` would otherwise pass."""
    backend = settings.STORAGES["staticfiles"]["BACKEND"]
    if "Manifest" not in backend or (Path(settings.STATIC_ROOT) / "staticfiles.json").exists():
        return []
    return [Error(f"The static files are not collected in {settings.STATIC_ROOT}: every page "
                  "would answer 500.", hint="Run `python manage.py collectstatic --no-input`.",
                  id=STATIC_ID)]


@register(Tags.security, deploy=True)
def broker_shared(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    """The filesystem queue (``make run``'s) lives on one host's disk: with a database of its
    own, the deployment needs a broker that every web process and worker reaches."""
    if settings.EMBEDDED_DATABASE or not settings.CELERY_BROKER_URL.startswith("filesystem"):
        return []
    return [Error("CELERY_BROKER_URL is not set: tasks would queue on this host's disk, out of "
                  "reach of the workers of other hosts.",
                  hint="Set CELERY_BROKER_URL to the deployment's Redis "
                       "(redis://host:6379/0).", id=BROKER_ID)]


@register(Tags.security, deploy=True)
def metrics_token_chosen(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    if "CHANGE-ME" not in settings.METRICS_TOKEN:
        return []
    return [Error("METRICS_TOKEN is the template's placeholder: /metrics would open to it.",
                  hint="Set a secret of its own, or leave it empty to switch /metrics off.",
                  id=METRICS_ID)]
