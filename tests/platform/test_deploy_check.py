"""A production configuration passes `manage.py check --deploy` with no warnings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_is_clean() -> None:
    env = {
        **os.environ,
        "DEBUG": "0",
        "SECRET_KEY": "x" * 20 + "a-long-random-production-secret-9f8e7d6c5b4a",
        "ALLOWED_HOSTS": "memory.example.com",
        "CSRF_TRUSTED_ORIGINS": "https://memory.example.com",
        # The rate limits' counters shared by every process (memoryhub.E001 without it).
        "REDIS_CACHE_URL": "redis://127.0.0.1:6379/6",
    }
    env.pop("PYTEST_CURRENT_TEST", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set by conftest for Playwright only
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
