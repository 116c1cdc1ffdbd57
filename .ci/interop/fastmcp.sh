#!/usr/bin/env bash
# FastMCP's Python client (fastmcp 4.1 + fastmcp-tasks, pinned in requirements*.txt) against
# the demo server over stdio and Streamable HTTP, through ferrymcp-gateway mounting the demo
# (HTTP on both sides), and over HTTP with OAuth on against the local authorization server
# (.ci/auth-server): tests/interop/fastmcp_client.py, which ends with `N passed, M failed`
# and exits non-zero on any failure. Builds the demo and the gateway first.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap interop_stop_servers EXIT

cd "$INTEROP_ROOT"
interop_venv
interop_example demo
interop_bin ferrymcp-gateway
interop_auth_server
"$PYTHON" tests/interop/fastmcp_client.py "$EXAMPLE" "$AUTH_ISSUER" "$BIN"
