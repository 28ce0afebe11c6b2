#!/usr/bin/env bash
# Installs what the test suite needs beyond node_modules: Debian's Chromium for the browser tests
# (playwright-core drives /usr/bin/chromium; `npx playwright install` cannot download browsers here).
# Idempotent and quick when everything is present; `npm test` runs it first (pretest).
set -euo pipefail

CHROMIUM=/usr/bin/chromium
INSTALL='apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium'

if [ -x "$CHROMIUM" ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-test-deps: $CHROMIUM is missing and this is not root. Install it with:" >&2
  echo "  sudo sh -c '$INSTALL'" >&2
  exit 1
fi

echo "ensure-test-deps: installing Debian's chromium for the browser tests..." >&2
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-test-deps: apt-get installed chromium but $CHROMIUM is still missing" >&2
  exit 1
fi
