#!/usr/bin/env bash
# Installs what the test suite needs beyond node_modules, from Debian's packages: Chromium for the
# browser tests (playwright-core drives /usr/bin/chromium; `npx playwright install` cannot download
# browsers here) and the MariaDB server the Laravel import tests start on their own (the original
# may run on MariaDB; test/helpers/own-mariadb.ts). Idempotent and quick when everything is present;
# `npm test` runs it first (pretest).
set -euo pipefail

CHROMIUM=/usr/bin/chromium
MARIADBD=/usr/sbin/mariadbd

packages=()
[ -x "$CHROMIUM" ] || packages+=(chromium)
[ -x "$MARIADBD" ] || packages+=(mariadb-server)
if [ "${#packages[@]}" -eq 0 ]; then
  exit 0
fi

INSTALL="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${packages[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-test-deps: ${packages[*]} missing and this is not root. Install with:" >&2
  echo "  sudo sh -c '$INSTALL'" >&2
  exit 1
fi

echo "ensure-test-deps: installing Debian's ${packages[*]} for the tests..." >&2
# mariadb-server starts a server of its own on install (port 3306): a policy-rc.d that refuses keeps
# it stopped (the tests run their own); one already there is left as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod +x /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y "${packages[@]}"
for binary in "$CHROMIUM" "$MARIADBD"; do
  if [ ! -x "$binary" ]; then
    echo "ensure-test-deps: apt-get installed ${packages[*]} but $binary is still missing" >&2
    exit 1
  fi
done
