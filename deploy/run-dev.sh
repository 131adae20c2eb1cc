#!/usr/bin/env bash
# Development server: embedded PostgreSQL, migrations, the demo tenant, then the web server
# (gunicorn), a Celery worker with beat, and the webhooks' Celery worker. Ctrl-C stops them all.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBUG="${DEBUG:-1}"
PORT="${PORT:-8000}"
PY=.venv/bin/python
WEB_WORKERS="${WEB_WORKERS:-2}"

# The rate limits count in the cache, which web processes share only through Redis: use the
# local one when it answers, else serve from one process (whose memory then counts right).
if [[ -z "${REDIS_CACHE_URL:-}" ]] && $PY -c 'import redis
redis.Redis(socket_connect_timeout=1, socket_timeout=1).ping()' 2>/dev/null; then
  export REDIS_CACHE_URL=redis://127.0.0.1:6379/1
  echo "Rate limits shared by the web processes in Redis ($REDIS_CACHE_URL)."
fi
if [[ -z "${REDIS_CACHE_URL:-}" && "$WEB_WORKERS" != 1 ]]; then
  echo "No Redis at 127.0.0.1:6379: one web process, so that the rate limits hold" \
       "(set REDIS_CACHE_URL for more)."
  WEB_WORKERS=1
fi

$PY manage.py migrate --no-input
$PY manage.py collectstatic --no-input -v 0
$PY manage.py bootstrap_demo --url "http://127.0.0.1:${PORT}"
# Recall ignores vectors another embedder made (README "Embeddings"): after a change of
# embedder (EMBEDDINGS_PROVIDER=auto picks local once its packages are installed) the stored
# memory is brought up to date before serving, with progress. Resumable; quick when current.
$PY manage.py reembed

pids=()
stop() {
  trap - INT TERM EXIT
  echo "Stopping MemoryHub..."
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap stop INT TERM EXIT

# Everything but webhook deliveries (-X webhooks): embeddings, augmentation, retention.
.venv/bin/celery -A memoryhub worker -X webhooks --beat --loglevel INFO --concurrency 2 \
  --schedule "${MEMORYHUB_DATA_DIR:-var}/celerybeat-schedule" &
pids+=($!)
# Webhook deliveries on their own queue (memoryhub/infra/queues.py), so that an endpoint that
# hangs (up to WEBHOOK_TIMEOUT a delivery) delays only other deliveries. They wait on the
# network, not the CPU: threads, more than the other worker's processes.
.venv/bin/celery -A memoryhub worker -Q webhooks --pool threads --concurrency 8 \
  --hostname webhooks@%h --loglevel INFO &
pids+=($!)
# The production configuration (deploy/gunicorn.conf.py), on this port.
.venv/bin/gunicorn -c deploy/gunicorn.conf.py memoryhub.wsgi:application \
  --bind "127.0.0.1:${PORT}" --workers "$WEB_WORKERS" --threads "${WEB_THREADS:-2}" &
pids+=($!)
wait -n "${pids[@]}"
