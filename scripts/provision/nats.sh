#!/usr/bin/env bash
# nats-server (Debian's nats-server) for the responder's end-to-end test, which starts its
# own instance on a random loopback port: only the binary is provisioned here.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
command -v nats-server >/dev/null 2>&1 || need_debs nats-server
export_env KOINII_TEST_NATS_SERVER "$(command -v nats-server)"
