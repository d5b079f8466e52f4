#!/usr/bin/env bash
# The part of the official postgres image's entrypoint that compose.yaml relies on: as root, own
# the data directory and step down to postgres; on an empty PGDATA, initdb with POSTGRES_USER and
# POSTGRES_PASSWORD, allow password logins from any address, create POSTGRES_DB, run the scripts
# in /docker-entrypoint-initdb.d; then exec postgres, which gets the stop signal itself.
set -Eeo pipefail

if [ "${1:0:1}" = '-' ]; then
  set -- postgres "$@"
fi

if [ "$1" != 'postgres' ]; then
  exec "$@"
fi

if [ "$(id -u)" = '0' ]; then
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 00700 "$PGDATA"
  mkdir -p /var/run/postgresql
  chown postgres:postgres /var/run/postgresql
  chmod 03775 /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_USER:=postgres}"
  : "${POSTGRES_DB:=$POSTGRES_USER}"
  : "${POSTGRES_HOST_AUTH_METHOD:=scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$POSTGRES_HOST_AUTH_METHOD" != 'trust' ]; then
    echo 'Error: Database is uninitialized and superuser password is not specified.' >&2
    echo '       Set POSTGRES_PASSWORD, or POSTGRES_HOST_AUTH_METHOD=trust.' >&2
    exit 1
  fi
  # shellcheck disable=SC2086 # the official image splits POSTGRES_INITDB_ARGS too
  initdb --username="$POSTGRES_USER" --pwfile=<(printf '%s\n' "${POSTGRES_PASSWORD:-}") \
    ${POSTGRES_INITDB_ARGS:-}
  printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >> "$PGDATA/pg_hba.conf"

  # A server on the Unix socket only, so nothing connects before the setup is done.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -p 5432" -w start
  export PGPASSWORD="${POSTGRES_PASSWORD:-}"
  psql=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
  if [ "$POSTGRES_DB" != 'postgres' ]; then
    "${psql[@]}" --dbname postgres --set db="$POSTGRES_DB" <<<'CREATE DATABASE :"db" ;'
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; . "$f" ;;
      *.sql) echo "running $f"; "${psql[@]}" --dbname "$POSTGRES_DB" -f "$f" ;;
      *) ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  unset PGPASSWORD
  echo 'PostgreSQL init process complete; ready for start up.'
fi

exec "$@"
