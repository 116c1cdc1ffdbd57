# Shared by the interop scripts in this folder (sourced, not run).
#
# INTEROP_CACHE (default: .ci/cache/interop in the clone) holds the pinned npm packages of
# package.json/package-lock.json here: Node 22 (the npm package `node`), the official
# conformance suite and the Inspector CLI. It is reinstalled with `npm ci` whenever the lock
# file changes, and lives inside the clone only, so CI runs never share it.

INTEROP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
INTEROP_CACHE=${INTEROP_CACHE:-$INTEROP_ROOT/.ci/cache/interop}

# PIDs of the servers these scripts start; only these are stopped on exit.
INTEROP_PIDS=()

interop_die() {
    printf '!!!! %s\n' "$*" >&2
    exit 1
}

interop_stop_servers() {
    local pid
    for pid in "${INTEROP_PIDS[@]+"${INTEROP_PIDS[@]}"}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    INTEROP_PIDS=()
}

# interop_npm: installs the pinned npm packages (if the lock changed) and puts their
# binaries, Node 22 first, on PATH.
interop_npm() {
    command -v npm >/dev/null || interop_die "npm is required (the machine's Node installs Node 22 from npm)"
    local lock="$INTEROP_ROOT/.ci/interop/package-lock.json"
    local stamp="$INTEROP_CACHE/lock.sha256"
    local want
    want=$(sha256sum "$lock" | cut -d' ' -f1)
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        rm -rf "$INTEROP_CACHE/node_modules"
        mkdir -p "$INTEROP_CACHE"
        cp "$INTEROP_ROOT/.ci/interop/package.json" "$lock" "$INTEROP_CACHE/"
        (cd "$INTEROP_CACHE" && npm ci --no-audit --no-fund --loglevel=error)
        echo "$want" >"$stamp"
    fi
    export PATH="$INTEROP_CACHE/node_modules/.bin:$PATH"
    local version
    version=$(node --version)
    [[ "$version" == v22.* ]] || interop_die "expected Node 22 from $INTEROP_CACHE, got $version"
}

# interop_venv: creates (or, when the requirements changed, recreates) the venv
# INTEROP_VENV (default .ci/cache/venv-interop) with FastMCP's client from PyPI:
# requirements.txt, then requirements-nodeps.txt with --no-deps. Sets PYTHON.
interop_venv() {
    command -v python3 >/dev/null || interop_die "python3 is required for the FastMCP client"
    local venv=${INTEROP_VENV:-$INTEROP_ROOT/.ci/cache/venv-interop}
    local stamp="$venv/requirements.sha256"
    local want
    want=$(cat "$INTEROP_ROOT"/.ci/interop/requirements*.txt | sha256sum | cut -d' ' -f1)
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        rm -rf "$venv"
        python3 -m venv "$venv"
        local pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
        "${pip[@]}" -r "$INTEROP_ROOT/.ci/interop/requirements.txt"
        "${pip[@]}" --no-deps -r "$INTEROP_ROOT/.ci/interop/requirements-nodeps.txt"
        echo "$want" >"$stamp"
    fi
    PYTHON="$venv/bin/python"
    "$PYTHON" -c 'import fastmcp, fastmcp_tasks; print("fastmcp", fastmcp.__version__)'
}

# interop_build KIND NAME: builds the workspace's KIND (`example` or `bin`) NAME with
# --all-features, as the test step builds it, and prints the path of what it built,
# wherever CARGO_TARGET_DIR puts it.
interop_build() {
    cargo build --workspace --all-features "--$1" "$2" >&2
    local target path
    target=$(cargo metadata --format-version 1 --no-deps |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
    path="$target/debug/$2"
    [[ $1 == example ]] && path="$target/debug/examples/$2"
    [[ -x "$path" ]] || interop_die "cargo built no $path"
    echo "$path"
}

# interop_example NAME: builds examples/NAME.rs and sets EXAMPLE to the binary.
interop_example() { EXAMPLE=$(interop_build example "$1"); }

# interop_bin NAME: builds the workspace's binary NAME and sets BIN to it.
interop_bin() { BIN=$(interop_build bin "$1"); }

# interop_serve BINARY ARGS...: starts an ferrymcp example serving HTTP on a free port and
# waits (at most 30 s) for the `listening on URL` line it prints on stderr. Sets SERVER_URL.
interop_serve() {
    local log
    log=$(mktemp)
    "$@" 2>"$log" >/dev/null &
    INTEROP_PIDS+=("$!")
    local pid=$! deadline=$((SECONDS + 30))
    SERVER_URL=""
    while [[ -z "$SERVER_URL" ]]; do
        SERVER_URL=$(sed -n 's/^listening on //p' "$log")
        if [[ -n "$SERVER_URL" ]]; then break; fi
        kill -0 "$pid" 2>/dev/null || interop_die "$1 exited before listening: $(cat "$log")"
        ((SECONDS < deadline)) || interop_die "$1 did not print its URL within 30 s"
        # Polling a log file the server writes: there is no event to wait on.
        sleep 0.1
    done
    echo "serving $SERVER_URL ($1, pid $pid)"
}

# interop_auth_server: starts the local OAuth authorization server (.ci/auth-server, installed
# into target/auth-server by .ci/setup) on a free port and waits (at most 30 s) for its
# `listening URL` line. Sets AUTH_ISSUER. Stopped with the other servers.
interop_auth_server() {
    [[ -d "$INTEROP_ROOT/target/auth-server/node_modules/oidc-provider" ]] ||
        interop_die "the authorization server is not installed: run .ci/setup"
    local log
    log=$(mktemp)
    PORT=0 node "$INTEROP_ROOT/.ci/auth-server/server.mjs" >"$log" 2>"$log.err" &
    INTEROP_PIDS+=("$!")
    local pid=$! deadline=$((SECONDS + 30))
    AUTH_ISSUER=""
    while [[ -z "$AUTH_ISSUER" ]]; do
        AUTH_ISSUER=$(sed -n 's/^listening //p' "$log")
        if [[ -n "$AUTH_ISSUER" ]]; then break; fi
        kill -0 "$pid" 2>/dev/null || interop_die "the authorization server exited: $(cat "$log.err")"
        ((SECONDS < deadline)) || interop_die "the authorization server did not start within 30 s"
        # Polling a log file the server writes: there is no event to wait on.
        sleep 0.1
    done
    echo "authorization server $AUTH_ISSUER (pid $pid)"
}

# interop_token RESOURCE SCOPE: a client-credentials JWT for client-a from AUTH_ISSUER.
interop_token() {
    curl -fsS -u client-a:secret-a -d grant_type=client_credentials \
        --data-urlencode "resource=$1" --data-urlencode "scope=$2" "$AUTH_ISSUER/token" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])'
}

# interop_free_port: a TCP port free on 127.0.0.1 right now.
interop_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
