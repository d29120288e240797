#!/usr/bin/env bash
# Brings up every real server the test suite needs, idempotently: a second run finds them up
# and only prints their environment. Run by the vitest global setup (test/global-setup.ts)
# before any test, and by `npm run bench` (postgres only); the same with or without CI=true.
#
#   scripts/provision.sh [--check] [nats] [mail] [postgres] [chromium]   (default: all of them)
#
# --check changes nothing: it prints the environment when every server is up, and otherwise
# stops with one line naming what is missing (what the suite's own check of provisioning runs).
#
# A missing server is installed when it can be (root and apt-get), otherwise the run stops
# with one line naming the command to run. stdout carries only KEY=VALUE lines (the
# environment the tests read: KOINII_TEST_NATS_SERVER, KOINII_MAIL_*, KOINII_CYRUS_*,
# KOINII_TEST_PG_URL, KOINII_TEST_CHROMIUM); progress goes to stderr.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
# One provisioning at a time on a machine (several test runs may start together).
exec 9>"${TMPDIR:-/tmp}/koinii-provision.lock"
flock 9
KOINII_PROVISION_APT_MARK=$(mktemp "${TMPDIR:-/tmp}/koinii-provision-apt.XXXXXX")
rm -f "$KOINII_PROVISION_APT_MARK"
export KOINII_PROVISION_APT_MARK
trap 'rm -f "$KOINII_PROVISION_APT_MARK"' EXIT

if [ "${1:-}" = --check ]; then export KOINII_PROVISION_CHECK=1; shift; fi
servers=("$@")
[ ${#servers[@]} -eq 0 ] && servers=(nats mail postgres chromium)
for s in "${servers[@]}"; do
  [ -f "$HERE/provision/$s.sh" ] || { echo "provision: unknown server '$s' (nats, mail, postgres, chromium)" >&2; exit 2; }
  # The lock (fd 9) stays with this shell: servers started below must not inherit it.
  bash "$HERE/provision/$s.sh" 9>&-
done
