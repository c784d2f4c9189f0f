#!/bin/sh
# Container entrypoint: bring the schema to the newest revision, then serve.
#
# Run from the folder holding alembic.ini (/app in the image); the migrations read the database
# URL from AGENTD_DATABASE_URL. HOST (default 0.0.0.0) and PORT (default 8000) choose where the
# server listens. Arguments, if any, replace the server command after the migration
# (e.g. `docker compose run --rm api agentd gc`).
set -eu

alembic upgrade head

if [ "$#" -gt 0 ]; then
    exec "$@"
fi
exec agentd serve --host "${HOST:-0.0.0.0}" --port "${PORT:-8000}"
