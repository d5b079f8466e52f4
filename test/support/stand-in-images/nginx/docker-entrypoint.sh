#!/bin/sh
# The official image's entrypoint runs the scripts in /docker-entrypoint.d (templates, IPv6 and
# worker tuning) before nginx; compose.yaml uses none of them, so this one only runs the command.
set -e
exec "$@"
