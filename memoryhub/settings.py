"""Settings, read from the environment with safe development defaults.

Every variable is documented in README.md ("Configuration"). Importing this module starts
nothing: without ``DATABASE_URL`` the embedded PostgreSQL is started by
``memoryhub.infra.bootstrap.bootstrap()`` (manage.py, WSGI, ASGI, Celery and the test run call
it first), which publishes where it listens in the environment read below. The one write is
the development secret key, generated once into the data dir (see ``_secret_key``).
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from memoryhub.infra import embedded_db
from memoryhub.infra.bootstrap import HOST_ENV, PORT_ENV, data_dir
from memoryhub.infra.queues import TASK_ROUTES, task_queues

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", False)
TESTING = "pytest" in sys.modules
DATA_DIR = data_dir()
# The embedded database is development by definition (production gives DATABASE_URL), so it
# may use the generated secret key: `manage.py ...` works beside `make run` without DEBUG=1.
EMBEDDED_DATABASE = not os.environ.get("DATABASE_URL")


def _secret_key() -> str:
    """SECRET_KEY from the environment; in development, generated once into the data dir.

    Development is DEBUG, a test run, or the embedded database (no DATABASE_URL). The key
    file stays here rather than in bootstrap(): everything that imports the settings without
    bootstrapping (manage.py check, type checkers' Django plugins) needs a key too, and writing
    one small file once starts no server.
    """
    key = os.environ.get("SECRET_KEY")
    if key:
        return key
    generated_allowed = (
        DEBUG or TESTING or EMBEDDED_DATABASE
        or os.environ.get("MEMORYHUB_ALLOW_GENERATED_SECRET") == "1"
    )
    if not generated_allowed:
        raise RuntimeError(
            "SECRET_KEY is not set. Production (DATABASE_URL set) needs it in the environment; "
            "development (no DATABASE_URL, or DEBUG=1) generates one into the data dir."
        )
    path = DATA_DIR / "secret_key"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "tenants",
    "memoryhub",
    "api",
]

MIDDLEWARE = [
    # /api/v1/ takes API_MIDDLEWARE instead of the rest of this list (see api/middleware.py).
    "api.middleware.ApiRouterMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "api.middleware.ApiBodyLimitMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # A portal session (one end user's page, no account) gets 404 on every other view.
    "memoryhub.web.portal.PortalFenceMiddleware",
    "memoryhub.web.csp.ContentSecurityPolicyMiddleware",
]
# The agent API's chain: Bearer keys, no cookies, so no sessions, CSRF, accounts or pages.
API_MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "api.middleware.ApiBodyLimitMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "memoryhub.urls"
WSGI_APPLICATION = "memoryhub.wsgi.application"
ASGI_APPLICATION = "memoryhub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "memoryhub.web.context_processors.page_chrome",
            ],
            # The pages' filters live with the pages (memoryhub.web), not in a templatetags
            # package of the memoryhub app, which would sit outside the import layers.
            "libraries": {"shown": "memoryhub.web.template_filters"},
        },
    },
]

# --- Database -------------------------------------------------------------------------------
# "default" is the application's role (RLS applies to it); "migrate" is the owner role that
# only the migrate command uses. See memoryhub/infra/embedded_db.py for why there are two.


def _db_from_url(url: str) -> dict:
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise RuntimeError(f"DATABASE_URL must be a postgresql:// URL, got {parsed.scheme!r}")
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    return {
        "NAME": unquote(parsed.path.lstrip("/")),
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": query.pop("host", None) or parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        "OPTIONS": query,
    }


# Without bootstrap() the embedded server's address is unknown: connections then fail on this
# socket path, whose name says what is missing.
_NOT_BOOTSTRAPPED = "/nonexistent/memoryhub-bootstrap-not-run"


def _database_settings() -> tuple[dict, dict, dict | None]:
    """Return (app, owner, embedded-cluster info or None)."""
    url = os.environ.get("DATABASE_URL")
    if url:
        app = _db_from_url(url)
        owner = _db_from_url(os.environ.get("MIGRATE_DATABASE_URL") or url)
        return app, owner, None
    # The embedded server, where memoryhub.infra.bootstrap published it.
    host, port = os.environ.get(HOST_ENV), os.environ.get(PORT_ENV)
    name = os.environ.get("MEMORYHUB_DB_NAME", "memoryhub")
    base = {"NAME": name, "HOST": host or _NOT_BOOTSTRAPPED, "PORT": port or "", "PASSWORD": ""}
    return (
        {**base, "USER": embedded_db.APP_ROLE, "OPTIONS": {}},
        {**base, "USER": embedded_db.OWNER_ROLE, "OPTIONS": {}},
        {"socket_dir": host, "port": int(port)} if host and port else None,
    )


_app_db, _owner_db, EMBEDDED_POSTGRES = _database_settings()
DB_POOL = env_bool("DB_POOL", not TESTING)
# timeout: seconds a request waits for a connection (then 503, see DATABASE_RETRY_AFTER).
_pool_options = (
    {"pool": {"min_size": 2, "max_size": 20,
              "timeout": float(os.environ.get("DB_POOL_TIMEOUT", "10"))}}
    if DB_POOL else {}
)
# Server-side parameters let psycopg prepare a statement the third time a connection runs it,
# so PostgreSQL skips parsing and planning afterwards: the hot API statements took about
# half their time in that. Switch it off behind a pooler that cannot keep prepared statements
# (PgBouncer in transaction mode before 1.21).
_binding_options = (
    {"server_side_binding": True, "prepare_threshold": 2}
    if env_bool("DB_PREPARED_STATEMENTS", True) else {}
)
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        **_app_db,
        "OPTIONS": {**_app_db["OPTIONS"], **_pool_options, **_binding_options},
        "CONN_MAX_AGE": 0 if DB_POOL else 60,
        "CONN_HEALTH_CHECKS": not DB_POOL,
        "TEST": {"NAME": "test_" + _app_db["NAME"]},
    },
    "migrate": {
        "ENGINE": "django.db.backends.postgresql",
        **_owner_db,
        "CONN_MAX_AGE": 0,
        "TEST": {"NAME": "test_" + _app_db["NAME"]},
    },
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache, sessions -------------------------------------------------------------------------
# --- Limits that hold across processes (issue 17) ---
# The API's and the sign-in's rate limits count in this cache, so with more than one server
# process it must be Redis, shared by all: deploy/run-dev.sh sets REDIS_CACHE_URL when Redis
# answers on 127.0.0.1:6379 (else it serves from one process). A per-process cache while a
# limit is set fails `check --deploy`, and production refuses to start (memoryhub/checks.py).
# Redis unreachable: each process counts alone until it answers (memoryhub/infra/cache.py).
REDIS_CACHE_URL = os.environ.get("REDIS_CACHE_URL", "")


def _cache_key_prefix() -> str:
    """Keeps the counters of databases that share one Redis apart (developers' embedded
    databases: their data dir and database name). Production's default is a fixed name, which
    every web machine must agree on, whatever host name its DATABASE_URL uses."""
    if os.environ.get("REDIS_CACHE_KEY_PREFIX"):
        return os.environ["REDIS_CACHE_KEY_PREFIX"]
    if not EMBEDDED_DATABASE:
        return "memoryhub"
    where = f"{DATA_DIR.resolve()}:{os.environ.get('MEMORYHUB_DB_NAME', 'memoryhub')}"
    return "memoryhub-" + hashlib.sha256(where.encode()).hexdigest()[:12]


CACHES = {
    "default": (
        {"BACKEND": "memoryhub.infra.cache.ResilientRedisCache", "LOCATION": REDIS_CACHE_URL,
         "KEY_PREFIX": _cache_key_prefix()}
        if REDIS_CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# --- end of issue 17's limits ---
# Requests per API key ("<count>/<s|min|hour>"); empty switches the limit off.
API_RATE_LIMIT = os.environ.get("API_RATE_LIMIT", "6000/min")
SESSION_ENGINE = "django.contrib.sessions.backends.db"

# --- Auth --------------------------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
# An account keeps the one address it was invited with (verified by the link reaching it).
# With verification off, the account page would add any other address unverified: its
# holder could sign in with it, and the person later invited there could not sign up.
ACCOUNT_MAX_EMAIL_ADDRESSES = 1
ACCOUNT_RATE_LIMITS = {
    "login": "30/m/ip",
    "login_failed": "10/m/ip,5/5m/key",
    "signup": "20/m/ip",
    "reset_password": "20/m/ip,5/m/key",
    "change_password": "5/m/user",
}
# Sign-up only through an admin's invitation link (memoryhub/web/adapters.py).
ACCOUNT_ADAPTER = "memoryhub.web.adapters.InvitationAccountAdapter"
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_SESSION_REMEMBER = False
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "MemoryHub"
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "memoryhub@localhost")

# --- I18N, static --------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG or TESTING
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = DEBUG or TESTING

# The request body limit of the API contract: bodies over 1 MiB are refused with 413.
DATA_UPLOAD_MAX_MEMORY_SIZE = 1024 * 1024

# --- DRF -------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["api.permissions.HasMemoryPermission"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONBodyParser"],
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["api.throttling.ApiKeyRateThrottle"],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",  # drf-spectacular's, as strict as the server
}
SPECTACULAR_SETTINGS = {
    "TITLE": "MemoryHub API",
    "DESCRIPTION": (
        "Long-term memory for AI assistants: the agent-facing API v1.\n\n"
        "- **Auth**: `Authorization: Bearer <api key>`; 401 without a valid key, 403 without "
        "the permission (`memory` for end users' memory, `admin` for tenant settings, "
        "profiles, events, webhooks).\n"
        "- **Errors** (except the memory tool's own, which are HTTP 200 with `is_error`): "
        '`{"error": {"code": "<snake_case>", "message": "..."}}`.\n'
        "- **Pagination** of lists: `limit` (1-1000, default 100) and `cursor` (the previous "
        "page's `next_cursor`, null on the last page), in a fixed order. The event feed uses "
        "`after=<event id>` instead.\n"
        "- **Unknown end users** read as empty memory (never 404); writes create them. Another "
        "tenant's data looks exactly like data that does not exist.\n"
        "- **Documents** carry `ETag: \"<version>\"`; `If-Match` and `If-None-Match: *` make "
        "writes conditional (412)."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # <id:...> (memoryhub.numbers.IdConverter): a database id of at most 18 digits.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0,
                                        "maximum": 10**18 - 1}},
    # One name for each choice set that several fields share (updated_by and actor, ...).
    "ENUM_NAME_OVERRIDES": {
        "ActorEnum": "memoryhub.models.Actor.values",
        "EventTypeEnum": "memoryhub.models.EventType.values",
        "FactTypeEnum": "memoryhub.models.FactType.values",
        "FactEventEnum": "memoryhub.models.FactEvent.values",
        "RoleEnum": "memoryhub.models.MessageRole.values",  # messages and excluded_roles
    },
}

# --- Celery ----------------------------------------------------------------------------------
# Without a broker URL the worker uses kombu's filesystem transport under the data directory,
# so `make run` needs no server; production and tests use Redis.
# Under pytest the default is kombu's in-memory transport: a test that runs on-commit hooks
# must not drop tasks into the shared filesystem queue of a developer's worker; the worker
# tests point Celery at Redis themselves.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or ("memory://" if TESTING else "filesystem://")
# bootstrap() creates these folders (kombu does not).
_celery_fs_dir = DATA_DIR / "celery-broker"
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = (
    {
        # The transport cannot wake the worker, which looks again this often (kombu's default,
        # 1 s, also after each task while every process is busy: one message a second).
        "polling_interval": float(os.environ.get("CELERY_BROKER_POLLING_INTERVAL", "0.05")),
        "data_folder_in": str(_celery_fs_dir / "out"),
        "data_folder_out": str(_celery_fs_dir / "out"),
        "processed_folder": str(_celery_fs_dir / "processed"),
        "control_folder": str(_celery_fs_dir / "control"),
    }
    if CELERY_BROKER_URL.startswith("filesystem")
    else {}
)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
# Tests give each session its own queue (and Redis DB) so that runs of several people sharing
# one Redis never take each other's tasks.
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_QUEUE", "memoryhub")
# Webhook deliveries on "<CELERY_QUEUE>.webhooks", for a worker of their own (-Q webhooks), so
# that a tenant's hanging endpoint delays nobody's facts or vectors (memoryhub/infra/queues.py).
CELERY_TASK_QUEUES = task_queues(CELERY_TASK_DEFAULT_QUEUE)
CELERY_TASK_ROUTES = TASK_ROUTES
# Beat: the sweeps re-enqueue what a lost message left behind; every task is idempotent.
CELERY_BEAT_SCHEDULE = {
    # Hourly: expired sessions (session_days) and conversations (conversation_days), tallies.
    "retention-purge": {"task": "memoryhub.tasks.retention_purge_all", "schedule": 3600.0},
    "webhooks-sweep": {"task": "memoryhub.tasks.webhooks_sweep", "schedule": 300.0},
    "embeddings-sweep": {"task": "memoryhub.tasks.embeddings_sweep", "schedule": 600.0},
    "augmentation-sweep": {"task": "memoryhub.tasks.augmentation_sweep", "schedule": 300.0},
    # Hourly: each tenant's stored bytes for the dashboard's usage chart (memoryhub/services/usage.py).
    "usage-snapshot": {"task": "memoryhub.tasks.usage_snapshot_all", "schedule": 3600.0},
}

# --- Sweeps and an unreachable database (issue 17: faults) -----------------------------------
# The sweeps re-enqueue what a lost message left (a broker outage, a worker killed mid-task):
# every this many seconds, for work older than the grace (its own message may still run).
CELERY_BEAT_SCHEDULE["embeddings-sweep"]["schedule"] = float(
    os.environ.get("EMBEDDINGS_SWEEP_INTERVAL", "600"))
CELERY_BEAT_SCHEDULE["webhooks-sweep"]["schedule"] = float(
    os.environ.get("WEBHOOKS_SWEEP_INTERVAL", "300"))
EMBEDDINGS_SWEEP_GRACE = float(os.environ.get("EMBEDDINGS_SWEEP_GRACE", "120"))
WEBHOOKS_SWEEP_GRACE = float(os.environ.get("WEBHOOKS_SWEEP_GRACE", "60"))
CELERY_BEAT_SCHEDULE["augmentation-sweep"]["schedule"] = float(
    os.environ.get("AUGMENTATION_SWEEP_INTERVAL", "300"))
# Longer than a run's retries with backoff (2 + 4 + ... + 64 s): a run still retrying is left be.
AUGMENTATION_SWEEP_GRACE = float(os.environ.get("AUGMENTATION_SWEEP_GRACE", "600"))
# Seconds a client is told to wait (Retry-After) when the database cannot be reached: 503.
DATABASE_RETRY_AFTER = int(os.environ.get("DATABASE_RETRY_AFTER", "2"))

# --- MemoryHub -------------------------------------------------------------------------------
# "auto": the local model (all-MiniLM-L6-v2 on onnxruntime) where `make install` installed
# it, else hashing (memoryhub/infra/embeddings/__init__.py). The tests pin hashing
# (memoryhub/infra/pytest_plugin.py), so do the benchmarks (tests/benchmarks/benchserver.py).
MEMORYHUB_EMBEDDINGS = {
    "provider": os.environ.get("EMBEDDINGS_PROVIDER", "auto"),
    "dimension": int(os.environ.get("EMBEDDINGS_DIMENSION", "384")),
    "url": os.environ.get("EMBEDDINGS_URL", ""),
    "api_key": os.environ.get("EMBEDDINGS_API_KEY", ""),
    "model": os.environ.get("EMBEDDINGS_MODEL", ""),
    "model_path": os.environ.get("EMBEDDINGS_MODEL_PATH", ""),
    # local: "auto" (onnxruntime if installed, else numpy), "onnx" or "numpy"; threads per
    # process (one: each web and worker process embeds on its own core; 0: one per core).
    "backend": os.environ.get("EMBEDDINGS_BACKEND", "auto"),
    "threads": int(os.environ.get("EMBEDDINGS_THREADS", "1")),
    "timeout": float(os.environ.get("EMBEDDINGS_TIMEOUT", "10")),
    "batch_size": int(os.environ.get("EMBEDDINGS_BATCH_SIZE", "64")),
    "max_retries": int(os.environ.get("EMBEDDINGS_MAX_RETRIES", "3")),
}
PORTAL_LINK_MAX_AGE = int(os.environ.get("PORTAL_LINK_MAX_AGE", "600"))
# Recall ranking (memoryhub/store/recall.py explains the formula):
# relevance = 1 - (1 - vector) * (1 - lexical_weight * lexical),
# score = relevance * confidence / (1 + recency_weight * ln(1 + age in days)).
MEMORYHUB_RECALL = {
    "lexical_weight": float(os.environ.get("RECALL_LEXICAL_WEIGHT", "0.5")),
    "recency_weight": float(os.environ.get("RECALL_RECENCY_WEIGHT", "0.1")),
    "max_query_terms": 16,
    # Trigram (fuzzy) matching reads the text: only this many best candidates get it.
    "fuzzy_candidates": int(os.environ.get("RECALL_FUZZY_CANDIDATES", "50")),
    # A recall whose sources hold at least this many of the person's rows together runs them
    # at once, each on a connection of its own (memoryhub.store.recall.searches_run); 0: never.
    "apart_rows": int(os.environ.get("RECALL_APART_ROWS", "2000")),
}
MEMORYHUB_WEBHOOKS = {
    "timeout": float(os.environ.get("WEBHOOK_TIMEOUT", "10")),
    # Retry n waits min(retry_base * 2**(n-1), retry_max) seconds.
    "retry_base": float(os.environ.get("WEBHOOK_RETRY_BASE", "30")),
    "retry_max": float(os.environ.get("WEBHOOK_RETRY_MAX", "1800")),
    # An endpoint failing without a single success for this long is switched off.
    "disable_after": float(os.environ.get("WEBHOOK_DISABLE_AFTER", str(24 * 3600))),
    # Loopback and private addresses are refused (SSRF) unless this is set (tests, dev).
    "allow_private_urls": env_bool("WEBHOOK_ALLOW_PRIVATE_URLS", DEBUG),
    # Attempts one endpoint may have out at once: an endpoint that hangs holds at most this
    # many of the webhooks worker's threads, and every other tenant's deliveries go on.
    "max_in_flight": max(1, int(os.environ.get("WEBHOOK_MAX_IN_FLIGHT", "4"))),  # 0 sent none
}

# --- Security --------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = True  # htmx sends the token from the page (hx-headers on <body>)
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
SESSION_COOKIE_AGE = 12 * 60 * 60  # an account session lasts a working day
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG and not TESTING:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", "31536000"))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # httpx logs every request URL at INFO; webhook URLs may carry the receiver's token.
    "loggers": {"embedded_postgres": {"level": "WARNING"}, "httpx": {"level": "WARNING"},
                # The MCP SDK logs every stateless request's start and end at INFO.
                "mcp": {"level": "WARNING"},
                # Django's own handlers for "django" (a console one in DEBUG, mail to ADMINS)
                # wrote each record a second time beside the root's: the root's alone writes.
                "django": {"handlers": [], "level": "INFO"},
                # An expected 403 or 404 is one warning line, no traceback (below).
                "django.request": {"filters": ["expected_refusals"]},
                # Django logs each SuspiciousOperation (a 400) on a logger of its own, at ERROR
                # with a traceback; a filter applies to its own logger's records only.
                **{f"django.security.{name}": {"filters": ["expected_refusals"]} for name in (
                    "csrf", "DisallowedHost", "DisallowedRedirect", "RequestDataTooBig",
                    "TooManyFieldsSent", "TooManyFilesSent", "SuspiciousSession",
                    "SuspiciousMultipartForm", "SuspiciousFileOperation")}},
}

# --- Observability: request ids, JSON logs, /metrics (memoryhub/infra/observability.py) ------
# First in the chain, ahead of the API router, so both chains get a request id and metrics.
MIDDLEWARE.insert(0, "memoryhub.infra.observability.RequestObservabilityMiddleware")
# "json" (one object per line, python-json-logger) or "text"; JSON unless DEBUG.
LOG_FORMAT = os.environ.get("LOG_FORMAT") or ("text" if DEBUG else "json")
LOGGING["filters"] = {
    "request_id": {"()": "memoryhub.infra.observability.RequestIdLogFilter"},
    "expected_refusals": {"()": "memoryhub.infra.observability.ExpectedRefusalLogFilter"},
}
LOGGING["formatters"] = {
    "json": {"()": "pythonjsonlogger.json.JsonFormatter",
             "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
             "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"}},
    "text": {"()": "logging.Formatter", "defaults": {"request_id": "-"},
             "fmt": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
}
LOGGING["handlers"] = {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT,
                                   "filters": ["request_id"]}}
# The worker logs through the handler above (JSON) instead of replacing it with its own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Bearer token that /metrics requires; unset: open with DEBUG, 404 without (memoryhub/metrics.py).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
# Probes and scrapers call the server directly over HTTP (deploy/): no redirect to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]

# Augmentation (spec: Facts): the extractor (rules, the default, or none), and how long after
# a capture its run starts, so that a burst of captures makes one run.
AUGMENTATION_PROVIDER = os.environ.get("AUGMENTATION_PROVIDER", "rules")
AUGMENTATION_DEBOUNCE_SECONDS = float(os.environ.get("AUGMENTATION_DEBOUNCE_SECONDS", "0.5"))
# Recalls are counted per process and written this often (memoryhub.services.usage); 0: each
# recall counts itself in its own transaction (the tests' default, so a count is there at once).
USAGE_FLUSH_SECONDS = float(os.environ.get("USAGE_FLUSH_SECONDS", "0" if TESTING else "1"))
# A learnt fact whose vector's cosine similarity to a valid fact of the same type reaches
# this merges into it (memoryhub/services/facts.py; README "Configuration").
AUGMENTATION_MERGE_SIMILARITY = float(os.environ.get("AUGMENTATION_MERGE_SIMILARITY", "0.8"))
# The openai extractor: an OpenAI-compatible chat completions endpoint answering in JSON.
AUGMENTATION_URL = os.environ.get("AUGMENTATION_URL", "")
AUGMENTATION_API_KEY = os.environ.get("AUGMENTATION_API_KEY", "")
AUGMENTATION_MODEL = os.environ.get("AUGMENTATION_MODEL", "")
AUGMENTATION_TIMEOUT = float(os.environ.get("AUGMENTATION_TIMEOUT", "30"))
AUGMENTATION_MAX_RETRIES = int(os.environ.get("AUGMENTATION_MAX_RETRIES", "2"))
# An augmentation run that fails is retried this many times (backoff 2, 4, 8, ... s, at most
# 300 s) before it is recorded for the dashboard; the cursor stays either way.
AUGMENTATION_RUN_RETRIES = int(os.environ.get("AUGMENTATION_RUN_RETRIES", "6"))
