"""The server is what its OpenAPI document says: a Schemathesis run with every check.

Schemathesis reads ``/api/schema/`` from a live server (gunicorn, the production server, on
the test database) and sends what the schema allows (it must be accepted) and what it
forbids (it must be refused), checking each answer: no server error, a documented status, the
documented body, content type and headers, ``Allow`` on ``OPTIONS``, authentication enforced,
and the stateful phase's links (a created resource can be read, a deleted one is gone).

The budget is fixed (tests/spec/schemathesis.toml: a seed, Hypothesis derandomized, 20
examples per operation, one worker), so the run is the same every time; it takes about two
minutes on two cores. The failures it accepts are listed, each with its reason, in
tests/spec/schemathesis_hooks.py. Only the /api/v1 operations are run: the schema documents
nothing else that takes a key.

The tenant's keys (``MEMORYHUB_FUZZ_KEY``) are the only ones the run must not revoke: a
``DELETE /api/v1/keys/{id}`` of them is not generated (``MEMORYHUB_FUZZ_KEEP_KEYS``).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.benchserver import gunicorn
from tests.factories import ApiKeyFactory, TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def server_env() -> dict[str, str]:
    return {
        **os.environ,
        "DEBUG": "0", "SECRET_KEY": secrets.token_urlsafe(50), "SECURE_SSL_REDIRECT": "0",
        "ALLOWED_HOSTS": "127.0.0.1", "LOG_LEVEL": "ERROR",
        "API_RATE_LIMIT": "",  # one key sends every request of the run
        "CELERY_BROKER_URL": "memory://",  # what the writes enqueue goes nowhere
        # A webhook URL's host is not resolved (CI has no DNS): its form is checked only.
        "WEBHOOK_ALLOW_PRIVATE_URLS": "1",
    }


def test_the_server_is_what_its_schema_says(transactional_db: Any, tmp_path: Path) -> None:
    key = ApiKeyFactory(tenant=TenantFactory(slug="fuzz"), permissions=["memory", "admin"])
    settings_key = ApiKeyFactory(tenant=TenantFactory(slug="fuzz-settings"),
                                 permissions=["memory", "admin"])
    accepted = tmp_path / "accepted.txt"
    with gunicorn(server_env(), workers=1, threads=2) as base:
        run = subprocess.run(
            [str(SCHEMATHESIS), "--config-file", str(HERE / "schemathesis.toml"), "run",
             f"{base}/api/schema/?format=json", "--include-path-regex", "^/api/v1/",
             "--report", "junit", "--report-dir", str(tmp_path)],
            cwd=ROOT, capture_output=True, text=True, timeout=900,
            env={**os.environ, "PYTHONPATH": str(ROOT),
                 "SCHEMATHESIS_HOOKS": "tests.spec.schemathesis_hooks",
                 "MEMORYHUB_FUZZ_KEY": key.plaintext,
                 "MEMORYHUB_FUZZ_SETTINGS_KEY": settings_key.plaintext,
                 "MEMORYHUB_FUZZ_KEEP_KEYS": f"{key.api_key.pk},{settings_key.api_key.pk}",
                 "MEMORYHUB_FUZZ_ACCEPTED": str(accepted)},
        )
    print(accepted_summary(accepted))  # shown with -rA or on failure: what the hooks dropped
    assert run.returncode == 0, run.stdout[-30000:] + run.stderr[-5000:]


def accepted_summary(log: Path) -> str:
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    counts = Counter(lines)
    return "\n".join(["Failures accepted by tests/spec/schemathesis_hooks.py:",
                      *(f"{n:5} {line}" for line, n in counts.most_common())])
