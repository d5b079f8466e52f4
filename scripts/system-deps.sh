#!/bin/sh
# Debian packages that the test suite drives for real: Chromium (the /docs page test), nginx and
# systemd's systemd-analyze (the deployment test; no systemd needs to run) and openssl (test
# certificates), e2fsprogs's mkfs.ext4 (the storage fault test's file system that turns
# read-only); wrk is the load generator of `npm run bench`, valgrind the counter of
# `npm run bench:instructions`; podman (with runc, and CNI's dnsname plugin so that compose
# services find each other by name), podman-compose and debootstrap run the container test
# (test/deploy/container.test.ts, docs/containers.md); pgbouncer is the pooler that the PostgreSQL tests
# start in transaction mode in front of the server, to show that the service keeps no state on a
# server connection between transactions (test/storage/postgres/pgbouncer.test.ts; only the binary is
# used, the package's own service is not needed). Installs only what is missing; needs root.
set -eu
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing="$missing nginx"
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
command -v systemd-analyze >/dev/null 2>&1 || missing="$missing systemd"
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /sbin/mkfs.ext4 ] || missing="$missing e2fsprogs"
command -v podman >/dev/null 2>&1 || missing="$missing podman"
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing="$missing runc"
[ -x /usr/lib/cni/dnsname ] || missing="$missing golang-github-containernetworking-plugin-dnsname"
command -v podman-compose >/dev/null 2>&1 || missing="$missing podman-compose"
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing="$missing debootstrap"
command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ] || missing="$missing pgbouncer"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "system-deps: missing:$missing; install them with apt-get as root" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
