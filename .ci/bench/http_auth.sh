#!/usr/bin/env bash
# `tools/call add(2, 3)` over Streamable HTTP (2026-07-28, JSON answers) at 32 callers
# against two release demos side by side: one open, one an OAuth resource server (JWTs from
# the local authorization server of .ci/auth-server, one token repeated by every caller,
# so each request after the first costs a cache lookup). Servers on CPU 0, wrk on CPU 1;
# rounds alternate open/auth so drift hits both alike.
#
#   bash .ci/bench/http_auth.sh [SECONDS_PER_RUN] [ROUNDS]
#
# Needs wrk, taskset, curl, node and `.ci/setup` (the authorization server). Not part of
# CI: it measures, it asserts nothing (a non-2xx answer or a socket error stops it).
# BENCHMARKS.md ("Authorization") has the figures.
set -euo pipefail

seconds="${1:-8}"
rounds="${2:-3}"

root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/.ci/bench/wrk.sh"
cd "$root"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
trap bench_cleanup EXIT

cargo build --release --example demo
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
demo="$target/release/examples/demo"

# The authorization server, on CPU 1 (it works only for the first request).
PORT=0 taskset -c 1 node .ci/auth-server/server.mjs >"$work/as.log" 2>"$work/as.err" &
pids+=("$!")
issuer=""
for _ in $(seq 1 300); do
    issuer="$(sed -n 's/^listening //p' "$work/as.log")"
    [[ -n "$issuer" ]] && break
    sleep 0.1
done
[[ -n "$issuer" ]] || { echo "the authorization server did not start:" >&2; cat "$work/as.err" >&2; exit 1; }

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_server open taskset -c 0 "$demo" --http 127.0.0.1:0
port="$(free_port)"
start_server auth taskset -c 0 "$demo" --http "127.0.0.1:$port" --auth-issuer "$issuer" --auth-audience "http://127.0.0.1:$port/mcp"
auth_url="http://127.0.0.1:$port/mcp"
token="$(curl -fsS -u client-a:secret-a -d grant_type=client_credentials \
    --data-urlencode "resource=$auth_url" "$issuer/token" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')"

wrk_call_script "$work/open.lua"
wrk_call_script "$work/auth.lua" "$token"

check_add open "$open_url"
check_add auth "$auth_url" -H "authorization: Bearer $token"

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "open: $open_url; auth: $auth_url (issuer $issuer); 32 connections, ${seconds} s per run"
printf '%-6s %-6s %10s %10s %12s\n' round server 'req/s' p50 'CPU µs/call'
for round in $(seq 1 "$rounds"); do
    for which in open auth; do
        u="${which}_url"
        p="${which}_pid"
        read -r rps p50 cpu < <(wrk_run "${!u}" 32 "$work/$which.lua" "${!p}" "$seconds")
        printf '%-6s %-6s %10s %10s %12s\n' "$round" "$which" "$rps" "$p50" "$cpu"
    done
done
