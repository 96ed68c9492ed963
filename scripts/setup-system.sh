#!/usr/bin/env bash
# Installs the Debian packages the project needs and the machine may lack.
# Idempotent; a no-op when everything is present. Needs root (or sudo).
set -euo pipefail

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# The sandboxed CLI's model route: socat relays its model URL to the runner's credential proxy.
command -v socat >/dev/null 2>&1 || need+=(socat)
# setpriv starts that socat with a parent-death signal, so it dies with the CLI (Debian's util-linux).
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
# Page tests drive Debian's Chromium (playwright-core cannot download its own browser here).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need+=(fonts-dejavu-core)

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup-system: installing ${need[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
