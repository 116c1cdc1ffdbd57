#!/usr/bin/env bash
# Smoke test with the MCP Inspector CLI (@modelcontextprotocol/inspector-cli, pinned in
# package.json here): lists the demo's tools and calls `add` over stdio, over Streamable
# HTTP and through ferrymcp-gateway mounting the demo as `demo`, checking the answers; then,
# with OAuth on (the local authorization server of .ci/auth-server), reaches the demo with a
# bearer token in `--header`. Builds the demo and the gateway first.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap interop_stop_servers EXIT

cd "$INTEROP_ROOT"
interop_npm
interop_example demo
DEMO="$EXAMPLE"
interop_bin ferrymcp-gateway
GATEWAY="$BIN"

# inspector-cli 1.0.3 looks for its package.json at `../package.json` relative to the
# working directory, then imports it relative to its own file: from node_modules/ both
# resolve (the cache's package.json is the parent), from anywhere else the CLI fails.
inspector() {
    (cd "$INTEROP_CACHE/node_modules" && mcp-inspector-cli --cli "$@")
}

# check WHAT OUTPUT PATTERN: fails unless the JSON OUTPUT matches the extended regex.
check() {
    if grep -Eq "$3" <<<"$2"; then
        echo "PASS $1"
    else
        printf 'FAIL %s: no match for %s in:\n%s\n' "$1" "$3" "$2"
        FAILED=$((FAILED + 1))
    fi
}

FAILED=0
interop_serve "$DEMO" --http 127.0.0.1:0
for transport in stdio http; do
    if [[ $transport == stdio ]]; then
        target=("$DEMO" --stdio)
    else
        target=("$SERVER_URL" --transport http)
    fi
    tools=$(inspector "${target[@]}" --method tools/list)
    check "$transport tools/list" "$tools" '"name": "child_multiply"'
    added=$(inspector "${target[@]}" --method tools/call --tool-name add --tool-arg a=2 b=3)
    check "$transport tools/call add" "$added" '"result": 5'
done

# Through the gateway, mounting the demo served above.
config=$(mktemp --suffix .toml)
printf 'name = "gateway"\n\n[[upstream]]\nnamespace = "demo"\nurl = "%s"\n' "$SERVER_URL" >"$config"
interop_serve "$GATEWAY" --config "$config" --http 127.0.0.1:0
rm -f "$config" # read at start
gateway=("$SERVER_URL" --transport http)
tools=$(inspector "${gateway[@]}" --method tools/list)
check "gateway tools/list" "$tools" '"name": "demo_child_multiply"'
added=$(inspector "${gateway[@]}" --method tools/call --tool-name demo_add --tool-arg a=2 b=3)
check "gateway tools/call demo_add" "$added" '"result": 5'

# OAuth: the demo's audience is its own URL, so its port is chosen first.
interop_auth_server
port=$(interop_free_port)
audience="http://127.0.0.1:$port/mcp"
interop_serve "$DEMO" --http "127.0.0.1:$port" --auth-issuer "$AUTH_ISSUER" --auth-audience "$audience"
token=$(interop_token "$audience" child)
authed=("$SERVER_URL" --transport http --header "Authorization: Bearer $token")
tools=$(inspector "${authed[@]}" --method tools/list)
check "http+oauth tools/list" "$tools" '"name": "child_multiply"'
multiplied=$(inspector "${authed[@]}" --method tools/call --tool-name child_multiply --tool-arg a=6 b=7)
check "http+oauth tools/call child_multiply" "$multiplied" '"result": 42'
refused=$(inspector "$SERVER_URL" --transport http --method tools/list 2>&1 || true)
check "http+oauth without a token" "$refused" '401|[Uu]nauthorized'
echo "$((9 - FAILED)) passed, $FAILED failed"
((FAILED == 0))
