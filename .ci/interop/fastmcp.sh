#!/usr/bin/env bash
# FastMCP's Python client (fastmcp 4.1 + fastmcp-tasks, pinned in requirements*.txt) against
# the demo server over stdio and Streamable HTTP: tests/interop/fastmcp_client.py, which ends
# with `N passed, M failed` and exits non-zero on any failure. Builds the demo first.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$INTEROP_ROOT"
interop_venv
interop_example demo
"$PYTHON" tests/interop/fastmcp_client.py "$EXAMPLE"
