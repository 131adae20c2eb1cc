"""Start what a process needs before Django reads its settings: the embedded PostgreSQL.

Contract: every entry point calls :func:`bootstrap` before Django loads its settings:
``manage.py``, ``memoryhub.wsgi``, ``memoryhub.asgi``, the Celery app (on configure, before
it reads ``django.conf:settings``) and the test run (``memoryhub.infra.pytest_plugin``).
Importing ``memoryhub.settings`` itself starts nothing: it only reads the environment.

- It creates the folders of the filesystem broker (the default without
  ``CELERY_BROKER_URL``).
- With ``DATABASE_URL`` set there is no database to start.
- Without it, :func:`bootstrap` starts the embedded server whose data lives in
  ``$MEMORYHUB_DATA_DIR/pgdata`` (or finds it running), creates the roles and the database
  ``$MEMORYHUB_DB_NAME``, and publishes where the server listens in :data:`HOST_ENV` and
  :data:`PORT_ENV`, which the settings read. The variables are inherited: a process started
  by a bootstrapped one (gunicorn's workers, the servers and workers the tests start,
  ``manage.py`` run by a test) uses the server it was given, and only makes sure its
  database exists.

Calling it again in the same process does nothing. Calling it after Django has loaded its
settings is a mistake (the settings were built without the server) and raises.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings

from memoryhub.infra import embedded_db

# Where the embedded server listens, for the settings (and for child processes).
HOST_ENV = "MEMORYHUB_EMBEDDED_PG_HOST"
PORT_ENV = "MEMORYHUB_EMBEDDED_PG_PORT"

BASE_DIR = Path(__file__).resolve().parents[2]

_done = False


def data_dir() -> Path:
    """The data directory the settings use too (embedded database, secret key, broker)."""
    return Path(os.environ.get("MEMORYHUB_DATA_DIR") or BASE_DIR / "var").resolve()


def database_name() -> str:
    return os.environ.get("MEMORYHUB_DB_NAME", "memoryhub")


def bootstrap() -> None:
    """Start the embedded PostgreSQL when ``DATABASE_URL`` is unset, and publish its address."""
    global _done
    if _done:
        return
    _ensure_broker_folders()
    if os.environ.get("DATABASE_URL"):
        _done = True
        return
    host, port = os.environ.get(HOST_ENV), os.environ.get(PORT_ENV)
    _refuse_if_settings_loaded(published=bool(host and port))
    if host and port:  # inherited from the process that started this one
        cluster = embedded_db.Cluster(socket_dir=host, port=int(port))
    else:
        cluster = embedded_db.ensure_cluster(data_dir())
    embedded_db.ensure_database(cluster, database_name())
    os.environ[HOST_ENV] = cluster.socket_dir
    os.environ[PORT_ENV] = str(cluster.port)
    _done = True


def _ensure_broker_folders() -> None:
    """kombu's filesystem transport (the broker without CELERY_BROKER_URL, see the settings)
    needs its folders to exist and creates none of them."""
    if (os.environ.get("CELERY_BROKER_URL") or "filesystem://").startswith("filesystem"):
        for folder in ("out", "processed", "control"):
            (data_dir() / "celery-broker" / folder).mkdir(parents=True, exist_ok=True)


def _refuse_if_settings_loaded(*, published: bool) -> None:
    """Settings built before the server was published point nowhere: say so now, not later
    as a connection error on a placeholder socket."""
    if settings.configured and not published:
        raise RuntimeError(
            "bootstrap() ran after Django loaded its settings; call "
            "memoryhub.infra.bootstrap.bootstrap() first (manage.py and the WSGI/ASGI/Celery "
            "entry points do)."
        )
