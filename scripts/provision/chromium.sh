#!/usr/bin/env bash
# Chromium's headless shell (Debian's chromium-headless-shell) for the browser tests, which
# drive it through playwright-core and start one per suite.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
BIN=/usr/bin/chromium-headless-shell
[ -x "$BIN" ] || need_debs chromium-headless-shell
[ -x "$BIN" ] || die "chromium-headless-shell is installed but $BIN is missing"
export_env KOINII_TEST_CHROMIUM "$BIN"
