#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases (run by docker-compose.yml before the server
# starts, in temporalio/admin-tools). Safe to run again: `create` tolerates an existing database and
# `update-schema` only applies what is missing, so a new admin-tools version upgrades the schema in place.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
PORT="${DB_PORT:-5432}"
SCHEMA_DIR=/etc/temporal/schema/postgresql/v12

until nc -z "$POSTGRES_SEEDS" "$PORT"; do echo "waiting for PostgreSQL at $POSTGRES_SEEDS:$PORT"; sleep 1; done

for db in temporal temporal_visibility; do
  dir=temporal
  [ "$db" = temporal_visibility ] && dir=visibility
  tool="temporal-sql-tool --plugin postgres12 --ep $POSTGRES_SEEDS -p $PORT -u $POSTGRES_USER --db $db"
  $tool create 2>/dev/null || echo "database $db exists"
  # setup-schema -v 0.0 creates the version table on a fresh database; update-schema brings it up to date
  $tool setup-schema -v 0.0 2>/dev/null || true
  $tool update-schema -d "$SCHEMA_DIR/$dir/versioned"
done
echo "Temporal schema is up to date"
