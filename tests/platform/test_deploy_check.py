"""Production as deploy/ ships it, run here against the embedded database and Redis.

- The environment template (deploy/memoryhub.env.example) passes ``manage.py check --deploy``
  with no warnings.
- The systemd units are valid (``systemd-analyze verify``), and the compose file runs their
  commands.
- Those commands, as the units write them, start and serve with the template's settings:
  gunicorn with deploy/gunicorn.conf.py (two workers: /metrics adds both up; the API, /mcp,
  a page and its static files; JSON log lines carrying the request id), the Celery worker
  (embeds what the web server wrote) and beat (loads the schedule of the settings).

What cannot run here (the image, compose, nginx) is listed in README "Deploying".
"""

from __future__ import annotations

import json
import os
import secrets
import shelve
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from memoryhub.models import Passage
from tenants.context import tenant_context
from tests.benchmarks.benchserver import free_port, manage, running, serving

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = {name: DEPLOY / "systemd" / f"memoryhub-{name}.service" for name in ("web", "worker", "beat")}
# Where the units expect the code, its virtualenv and the state; mapped to this checkout.
INSTALL_DIR, VENV_BIN, STATE_DIR = "/opt/memoryhub", "/opt/memoryhub/.venv/bin/", "/var/lib/memoryhub"
REDIS_URL = os.environ.get("MEMORYHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
# The proxy's headers (deploy/nginx/memoryhub.conf): TLS ended there.
PROXIED = {"X-Forwarded-Proto": "https"}


def template() -> dict[str, str]:
    lines = (DEPLOY / "memoryhub.env.example").read_text().splitlines()
    pairs = [line.split("=", 1) for line in lines if line.strip() and not line.startswith("#")]
    return {key: value for key, value in pairs}


def production_env(data_dir: Path, **overrides: str) -> dict[str, str]:
    """The template's settings, with what only exists elsewhere replaced: the embedded
    database (inherited) for DATABASE_URL, the test Redis, fresh secrets, a data dir."""
    env = {**os.environ, **template()}
    for name in ("DATABASE_URL", "MIGRATE_DATABASE_URL", "PYTEST_CURRENT_TEST",
                 "DJANGO_ALLOW_ASYNC_UNSAFE"):  # the last set by conftest for Playwright only
        env.pop(name, None)
    env.update(SECRET_KEY=secrets.token_urlsafe(50), METRICS_TOKEN=secrets.token_urlsafe(24),
               CELERY_BROKER_URL=REDIS_URL, REDIS_CACHE_URL=REDIS_URL,
               CELERY_QUEUE=f"memoryhub-deploy-{uuid.uuid4().hex[:12]}",
               MEMORYHUB_DATA_DIR=str(data_dir), **overrides)
    assert not [key for key, value in env.items() if "CHANGE-ME" in value]
    return env


def exec_start(unit: Path) -> str:
    [line] = [line for line in unit.read_text().splitlines() if line.startswith("ExecStart=")]
    return line.removeprefix("ExecStart=")


def unit_command(name: str, data_dir: Path) -> list[str]:
    """The unit's ExecStart, with the install paths mapped to this checkout."""
    command = (exec_start(UNITS[name]).replace(VENV_BIN, f"{Path(sys.executable).parent}/")
               .replace(INSTALL_DIR, str(ROOT)).replace(STATE_DIR, str(data_dir)))
    return shlex.split(command)


def test_check_deploy_is_clean(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=production_env(tmp_path), capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_systemd_units_are_valid(tmp_path) -> None:
    if not shutil.which("systemd-analyze"):
        if os.environ.get("CI"):
            pytest.fail("systemd-analyze is missing: CI checks the units with it")
        pytest.skip("systemd-analyze is not installed")
    copies = []
    for name, unit in UNITS.items():
        text = (unit.read_text().replace(VENV_BIN, f"{Path(sys.executable).parent}/")
                .replace(INSTALL_DIR, str(ROOT))
                .replace("/etc/memoryhub/memoryhub.env", str(DEPLOY / "memoryhub.env.example")))
        copies.append(tmp_path / unit.name)
        copies[-1].write_text(text)
    result = subprocess.run(["systemd-analyze", "verify", *map(str, copies)],
                            capture_output=True, text=True)
    # verify exits 0 on settings it ignores; it names each of them on stderr.
    assert (result.returncode, result.stderr) == (0, ""), result.stderr


def test_the_compose_services_run_the_units_commands() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"db", "redis", "migrate", "web", "worker", "beat"}
    for name in UNITS:
        assert shlex.join(services[name]["command"]) == exec_start(UNITS[name]).replace(
            VENV_BIN, ""), name
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"}
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    cmd = json.loads(dockerfile.split("\nCMD ", 1)[1].splitlines()[0])
    assert shlex.join(cmd) == exec_start(UNITS["web"]).replace(VENV_BIN, "")


# --- the units' commands, running ------------------------------------------------------------


def json_lines(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


def samples(body: str) -> dict[tuple[str, tuple], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def requests_total(scraped: dict, route: str, method: str, status: str) -> float:
    labels = tuple(sorted({"route": route, "method": method, "status": status}.items()))
    return scraped.get(("memoryhub_http_requests_total", labels), 0.0)


def passage_embedded(tenant_id: int) -> bool:
    with tenant_context(tenant_id):
        return Passage.objects.filter(embedding__isnull=False).exists()


def wait_until(predicate, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.2)


def test_the_units_commands_start_and_serve(transactional_db, acme, tmp_path) -> None:
    port = free_port()
    env = production_env(tmp_path, WEB_BIND=f"127.0.0.1:{port}", WEB_WORKERS="2")
    manage(env, "collectstatic", "--no-input", "-v", "0")  # a deploy step (README)
    token = env["METRICS_TOKEN"]
    web_log, worker_log = tmp_path / "web.log", tmp_path / "worker.log"
    with (running(unit_command("worker", tmp_path), env, worker_log, " ready."),
          serving(unit_command("web", tmp_path), env, port, "gunicorn", log=web_log) as base,
          httpx.Client(base_url=base, headers=PROXIED, timeout=30) as http):
        api = {"Authorization": f"Bearer {acme.key}"}
        wrote = http.post("/api/v1/users/alice/memory", headers={**api, "X-Request-ID": "w-1"},
                          json={"command": "create", "path": "/memories/tea.md",
                                "file_text": "Likes green tea.\n"})
        assert wrote.status_code == 200 and wrote.headers["X-Request-ID"] == "w-1", wrote.text

        def users(i: int) -> str:
            with httpx.Client(base_url=base, headers=PROXIED, timeout=30) as own:  # own socket
                answer = own.get("/api/v1/users", headers={**api, "X-Request-ID": f"u-{i}"})
            assert answer.status_code == 200
            return answer.headers["X-Request-ID"]

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(users, range(24))) == [f"u-{i}" for i in range(24)]

        mcp = http.post("/mcp", headers={**api, "Accept": "application/json, text/event-stream",
                                         "MCP-Protocol-Version": "2025-11-25"},
                        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        assert mcp.status_code == 200, mcp.text
        assert {t["name"] for t in mcp.json()["result"]["tools"]} == {
            "memory", "recall", "memory_index"}
        login = http.get("/accounts/login/")
        assert login.status_code == 200
        stylesheet = login.text.split('href="/static/', 1)[1].split('"', 1)[0]
        assert http.get(f"/static/{stylesheet}").status_code == 200  # collected, hashed name
        assert http.get("/api/v1/users", headers=api).status_code == 200
        assert httpx.get(f"{base}/api/v1/users", headers=api).status_code == 301  # no TLS

        wait_until(lambda: passage_embedded(acme.tenant.id), "the worker to embed the write")
        assert httpx.get(f"{base}/metrics").status_code == 403  # HTTP: no redirect, no token
        scraped = samples(httpx.get(f"{base}/metrics",
                                    headers={"Authorization": f"Bearer {token}"}).text)

    # Two workers answered; one scrape counts both (multi-process mode).
    assert requests_total(scraped, "api:users", "GET", "200") == 25
    assert requests_total(scraped, "api:memory-tool", "POST", "200") == 1
    assert requests_total(scraped, "mcp", "POST", "200") == 1
    assert scraped[("memoryhub_embedding_backlog", (("kind", "passage"),))] == 0
    logged = json_lines(web_log)
    [write] = [line for line in logged if line.get("request_id") == "w-1"]
    assert (write["logger"], write["route"], write["status"]) == (
        "memoryhub.request", "api:memory-tool", 200)
    assert sum(line["message"].startswith("Booting worker") for line in logged) == 2
    [refused] = [line for line in logged if line["logger"] == "django.request"]
    assert refused["status_code"] == 403 and len(refused["request_id"]) == 32
    assert not [line for line in web_log.read_text().splitlines() if not line.startswith("{")]
    assert any("embed_documents" in line["message"] and "succeeded" in line["message"]
               for line in json_lines(worker_log))


def test_beat_starts_with_the_schedule_of_the_settings(tmp_path) -> None:
    env = production_env(tmp_path)
    with running(unit_command("beat", tmp_path), env, tmp_path / "beat.log", "beat: Starting"):
        # Beat opens its schedule file after that line and writes the entries at once; it
        # keeps the file locked until it stops, and writes it again as it stops.
        wait_until(lambda: list(tmp_path.glob("celerybeat-schedule*")), "the schedule file")
    assert any(line["message"].startswith("beat: Starting")
               for line in json_lines(tmp_path / "beat.log"))
    with shelve.open(str(tmp_path / "celerybeat-schedule"), flag="r") as schedule:
        # Celery adds its own result cleanup to the settings' entries.
        assert set(schedule["entries"]) - {"celery.backend_cleanup"} == set(
            settings.CELERY_BEAT_SCHEDULE)
