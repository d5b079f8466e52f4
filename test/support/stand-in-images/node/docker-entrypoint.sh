#!/bin/sh
set -e

# As the official image's entrypoint: run the command with node if the first argument starts with
# "-" or is not a command (the part in {} works around https://bugs.debian.org/874264 in dash).
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi

exec "$@"
