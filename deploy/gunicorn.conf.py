"""gunicorn in production: ``gunicorn -c deploy/gunicorn.conf.py memoryhub.wsgi:application``.

The systemd unit, the container and ``make run`` start the server with this file; everything
it sets comes from the environment (README "Observability": WEB_BIND, WEB_WORKERS,
WEB_THREADS), and command-line options override it. Why gthread workers: README "An external
PostgreSQL and Redis".
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

bind = [os.environ.get("WEB_BIND", "127.0.0.1:8000")]
worker_class = "gthread"
workers = int(os.environ.get("WEB_WORKERS", "2"))
threads = int(os.environ.get("WEB_THREADS", "2"))
# A request waits at most 10 s for a pooled database connection and an embedder call has its
# own timeout (EMBEDDINGS_TIMEOUT): a worker silent for longer than this is stuck.
timeout = 60
graceful_timeout = 30
keepalive = 5  # seconds an idle keep-alive connection stays open (the proxy's pool reuses it)
# The longest request line gunicorn reads (its default, 4094, refused a documents list the
# OpenAPI schema allows with an HTML 414): 8190 is gunicorn's highest and fits nginx's default
# 8k header buffer. Every GET the schema allows fits it, each parameter at its longest and
# percent-encoded (tests/spec/test_request_line.py).
limit_request_line = 8190
# Recycle workers now and then, so a slow leak cannot grow without bound; the jitter keeps
# them from restarting together.
max_requests = 20000
max_requests_jitter = 2000
# The heartbeat file on tmpfs: a container's disk-backed /tmp can stall it under load.
# (gunicorn creates it with mkstemp, so a shared folder is safe.)
_shm = "/dev/shm"  # noqa: S108
worker_tmp_dir = _shm if os.path.isdir(_shm) else None
# X-Forwarded-* from these addresses set the scheme and client address (the proxy's).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")

# The application logs one line per request itself (memoryhub.request: route, status,
# duration, request id), so gunicorn's own access log is off.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()
_debug = os.environ.get("DEBUG", "").strip().lower() in {"1", "true", "yes", "on"}
if (os.environ.get("LOG_FORMAT") or ("text" if _debug else "json")) == "json":
    from gunicorn.glogging import Logger
    from pythonjsonlogger.json import JsonFormatter

    class JsonLogger(Logger):
        """gunicorn's own lines (start, workers, timeouts) as JSON objects, like the app's.
        (Not logconfig_dict: that switches gunicorn's access log on.)"""

        def setup(self, cfg: Any) -> None:
            super().setup(cfg)
            for handler in self.error_log.handlers:
                handler.setFormatter(JsonFormatter(
                    "%(asctime)s %(levelname)s %(name)s %(message)s",
                    rename_fields={"asctime": "time", "levelname": "level", "name": "logger"}))

    logger_class = JsonLogger
# gunicorn >= 25.1 opens a control socket in $HOME by default; nothing here uses it.
control_socket_disable = True

# Prometheus multi-process mode: each worker writes its samples to files in this folder and
# /metrics adds every worker's up (memoryhub/infra/observability.py). Without a folder from
# the environment, a private one is made for this server and removed when it stops.
_own_metrics_dir = not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
if _own_metrics_dir:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="memoryhub-metrics-")


def on_starting(server: Any) -> None:
    """A new server starts from zero: the files of a previous one would add their counts."""
    folder = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.db"):
        stale.unlink()


def post_worker_init(worker: Any) -> None:
    """Each web process loads its embedding model as it starts (recall embeds the query), in
    a thread, not in its first recall."""
    from memoryhub.infra.embeddings import warm_up_in_background

    warm_up_in_background()


def child_exit(server: Any, worker: Any) -> None:
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def on_exit(server: Any) -> None:
    if _own_metrics_dir:
        shutil.rmtree(os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)
