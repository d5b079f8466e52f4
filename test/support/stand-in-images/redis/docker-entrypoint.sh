#!/bin/sh
# The part of the official redis image's entrypoint that compose.yaml relies on: options alone (or
# a .conf file first) run redis-server; as root, own /data and step down to redis. Debian's build
# keeps protected mode on by default, so without a configuration file it is turned off here.
set -e

if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
  set -- redis-server "$@"
fi

if [ "$1" = 'redis-server' ] && [ "$(id -u)" = '0' ]; then
  find . \! -user redis -exec chown redis '{}' +
  exec setpriv --reuid=redis --regid=redis --init-groups "$0" "$@"
fi

if [ "$1" = 'redis-server' ] && { [ $# -eq 1 ] || [ "${2#-}" != "$2" ]; }; then
  shift
  set -- redis-server --protected-mode no "$@"
fi

exec "$@"
