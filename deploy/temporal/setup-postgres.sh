#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases: run by docker-compose.yml before the server starts
# (in temporalio/admin-tools) and by `redeliver cluster up` (with the temporal-sql-tool it builds). Safe to run
# again: `create` tolerates an existing database and `update-schema` only applies what is missing, so a new
# tool version upgrades the schema in place.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}"
PORT="${DB_PORT:-5432}"

# admin-tools has nc; `redeliver cluster up` has waited for its PostgreSQL already, on machines that may lack it
if command -v nc >/dev/null 2>&1; then
  until nc -z "$POSTGRES_SEEDS" "$PORT"; do echo "waiting for PostgreSQL at $POSTGRES_SEEDS:$PORT"; sleep 1; done
fi

for db in temporal temporal_visibility; do
  schema=temporal
  [ "$db" = temporal_visibility ] && schema=visibility
  tool="temporal-sql-tool --plugin postgres12 --ep $POSTGRES_SEEDS -p $PORT -u $POSTGRES_USER --db $db"
  $tool create 2>/dev/null || echo "database $db exists"
  # setup-schema -v 0.0 creates the version table on a fresh database; update-schema brings it up to date
  $tool setup-schema -v 0.0 2>/dev/null || true
  # the schema embedded in the tool, of its own server version (visibility: advanced visibility on PostgreSQL)
  $tool update-schema --schema-name "postgresql/v12/$schema"
done
echo "Temporal schema is up to date"
