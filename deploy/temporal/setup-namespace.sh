#!/bin/sh
# Creates redeliver's namespace and its search attributes, once the server answers (run by
# docker-compose.yml in temporalio/admin-tools, and by `redeliver cluster up` with the project's temporal CLI).
# Idempotent: what exists is left as it is.
# REDELIVER_SEARCH_ATTRIBUTES lists Name=Type pairs; the tests check it against the contract's search attributes.
set -eu
: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}" "${REDELIVER_SEARCH_ATTRIBUTES:?}"

until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
  echo "waiting for Temporal at $TEMPORAL_ADDRESS"; sleep 2
done

temporal operator namespace describe --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" >/dev/null 2>&1 ||
  temporal operator namespace create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --retention "${TEMPORAL_RETENTION:-168h}"

# a new namespace reaches the frontend's namespace cache some seconds after it is made
tries=0
until existing=$(temporal operator search-attribute list --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" 2>&1); do
  tries=$((tries + 1))
  [ "$tries" -lt 60 ] || { echo "$existing" >&2; exit 1; }
  echo "waiting for the namespace $TEMPORAL_NAMESPACE to be known"; sleep 1
done

for pair in $REDELIVER_SEARCH_ATTRIBUTES; do
  name=${pair%%=*}
  type=${pair#*=}
  if echo "$existing" | grep -qw "$name"; then
    echo "search attribute $name exists"
  else
    temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" -n "$TEMPORAL_NAMESPACE" --name "$name" --type "$type"
  fi
done
echo "namespace $TEMPORAL_NAMESPACE is ready for redeliver"
