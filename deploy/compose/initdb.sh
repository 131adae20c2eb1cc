#!/bin/sh
# The database's first start (the postgres image runs /docker-entrypoint-initdb.d/*.sh once,
# on an empty volume): the owner role, the application's role (not superuser, not BYPASSRLS,
# not the owner: row-level security applies to it) and the extensions. The same statements
# as README "An external PostgreSQL and Redis".
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v owner_password="$OWNER_DB_PASSWORD" -v app_password="$APP_DB_PASSWORD" <<'SQL'
CREATE ROLE memoryhub_owner LOGIN PASSWORD :'owner_password';
CREATE ROLE memoryhub_app LOGIN PASSWORD :'app_password' NOSUPERUSER NOBYPASSRLS;
ALTER DATABASE memoryhub OWNER TO memoryhub_owner;
\c memoryhub
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
ALTER SCHEMA public OWNER TO memoryhub_owner;
GRANT USAGE ON SCHEMA public TO memoryhub_app;
SQL
