#!/usr/bin/env bash
# Development server: embedded PostgreSQL, migrations, the demo tenant, then the web server
# (gunicorn) and a Celery worker with beat. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBUG="${DEBUG:-1}"
PORT="${PORT:-8000}"
PY=.venv/bin/python

$PY manage.py migrate --no-input
$PY manage.py collectstatic --no-input -v 0
$PY manage.py bootstrap_demo --url "http://127.0.0.1:${PORT}"

pids=()
stop() {
  trap - INT TERM EXIT
  echo "Stopping MemoryHub..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap stop INT TERM EXIT

.venv/bin/celery -A memoryhub worker --beat --loglevel INFO --concurrency 2 \
  --schedule "${MEMORYHUB_DATA_DIR:-var}/celerybeat-schedule" &
pids+=($!)
# The production configuration (deploy/gunicorn.conf.py), on this port.
.venv/bin/gunicorn -c deploy/gunicorn.conf.py memoryhub.wsgi:application \
  --bind "127.0.0.1:${PORT}" --workers "${WEB_WORKERS:-2}" --threads "${WEB_THREADS:-2}" &
pids+=($!)
wait -n "${pids[@]}"
