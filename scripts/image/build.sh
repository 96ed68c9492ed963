#!/usr/bin/env bash
# Builds runner/Dockerfile for real, without a container engine (none runs here):
#   1. a local Debian bookworm + Node 22 base image (mmdebstrap, the Node binary of the
#      project's `node` devDependency, npm from the npm registry) standing in for the
#      registry's node:<version>-bookworm-slim, passed as the Dockerfile's NODE_IMAGE;
#   2. `buildah bud --isolation chroot --layers` of runner/Dockerfile on top of it.
# Both are cached in buildah's local storage: the base by a tag that hashes its inputs, the
# image layer by layer (an unchanged lockfile keeps the npm ci layer). Prints the image
# name on the last line of stdout. Needs root (mmdebstrap, buildah's chroot isolation).
# Usage: bash scripts/image/build.sh [--print-size]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

need=()
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
command -v buildah >/dev/null 2>&1 || need+=(buildah)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "image: installing ${need[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

# buildah's default per-container ulimits (RLIMIT_NOFILE) cannot be set on this kind of
# machine; an empty list keeps the host's.
conf_dir=$(mktemp -d)
trap 'rm -rf "$conf_dir"' EXIT
printf '[containers]\ndefault_ulimits = []\n' >"$conf_dir/containers.conf"
export CONTAINERS_CONF="$conf_dir/containers.conf"
export BUILDAH_ISOLATION=chroot

node_version=$(node -p 'require("./package.json").devDependencies.node')
# The npm that Node 22's own distribution bundles (10.9.x); the runner needs it only to install.
npm_version=10.9.9
node_bin="$root/node_modules/node/bin/node"
[ "$("$node_bin" --version)" = "v$node_version" ] || { echo "image: $node_bin is not Node $node_version (run npm ci)" >&2; exit 2; }

# This machine reaches the npm registry through a TLS-intercepting proxy whose CA is added under
# /usr/local/share/ca-certificates; the stand-in base trusts the same CAs (NODE_EXTRA_CA_CERTS)
# so the Dockerfile's npm ci works here. The registry's node image needs no such thing.
extra_ca=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true)

build_base() {
  work=$(mktemp -d)
  trap 'rm -rf "$conf_dir" "$work"' EXIT
  (cd "$work" && npm pack --silent "npm@$npm_version" >/dev/null)
  # Like Debian's own container images: apt keeps no .deb files or package caches in layers.
  cat >"$work/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
APT
  export MMDEBSTRAP_BASE_APT_CONF="$work/docker-clean"
  # --variant=apt: Essential + apt, like debian:bookworm-slim; mmdebstrap's default sources
  # for a stable release include its -updates and -security suites.
  mmdebstrap --quiet --variant=apt \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    --customize-hook='cp "$MMDEBSTRAP_BASE_APT_CONF" "$1"/etc/apt/apt.conf.d/docker-clean' \
    bookworm "$work/rootfs" >&2
  install -D -m 0755 "$node_bin" "$work/rootfs/usr/local/bin/node"
  mkdir -p "$work/rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$work/npm-$npm_version.tgz" -C "$work/rootfs/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$work/rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$work/rootfs/usr/local/bin/npx"
  ca_env=()
  if [ -n "$extra_ca" ]; then
    printf '%s\n' "$extra_ca" >"$work/rootfs/usr/local/share/build-extra-ca.pem"
    ca_env=(--env NODE_EXTRA_CA_CERTS=/usr/local/share/build-extra-ca.pem)
  fi
  tar --numeric-owner -C "$work/rootfs" -cf "$work/rootfs.tar" .
  ctr=$(buildah from scratch)
  buildah add --quiet "$ctr" "$work/rootfs.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env NODE_VERSION="$node_version" "${ca_env[@]}" --cmd node "$ctr"
  buildah commit --quiet --rm "$ctr" "$base" >/dev/null
  rm -rf "$work"
}

# The base's tag hashes its recipe and inputs, so it is rebuilt only when one of them changes.
base_key=$( { declare -f build_base; echo "$node_version $npm_version"; echo "$extra_ca"; } | sha256sum | cut -c1-12)
base="localhost/switchyard-node-base:$node_version-bookworm-$base_key"
if ! buildah inspect --type image "$base" >/dev/null 2>&1; then
  echo "image: building base $base" >&2
  build_base
fi

image="localhost/switchyard-runner:local"
echo "image: building $image from runner/Dockerfile on $base" >&2
buildah bud --isolation chroot --layers --force-rm --quiet \
  --build-arg "NODE_IMAGE=$base" \
  -f runner/Dockerfile -t "$image" . >&2
if [ "${1:-}" = "--print-size" ]; then
  buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$image" >&2
fi
echo "$image"
