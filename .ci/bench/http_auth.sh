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
cd "$root"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

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

# start NAME ARGS...: a demo on CPU 0; sets `url` and `${NAME}_pid`.
start() {
    local name="$1"
    shift
    taskset -c 0 "$demo" "$@" >"$work/$name.log" 2>&1 &
    pids+=("$!")
    printf -v "${name}_pid" '%s' "$!"
    url=""
    for _ in $(seq 1 300); do
        url="$(grep -o 'http://[0-9.:]*/mcp' "$work/$name.log" | tail -n1 || true)"
        grep -q '^listening on ' "$work/$name.log" && break
        sleep 0.1
    done
    grep -q '^listening on ' "$work/$name.log" || { echo "$name did not start:" >&2; cat "$work/$name.log" >&2; exit 1; }
}

start open --http 127.0.0.1:0
open_url="$url"
port="$(free_port)"
start auth --http "127.0.0.1:$port" --auth-issuer "$issuer" --auth-audience "http://127.0.0.1:$port/mcp"
auth_url="http://127.0.0.1:$port/mcp"
token="$(curl -fsS -u client-a:secret-a -d grant_type=client_credentials \
    --data-urlencode "resource=$auth_url" "$issuer/token" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["access_token"])')"

body='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'
for which in open auth; do
    cat >"$work/$which.lua" <<EOF
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "add"
EOF
done
echo "wrk.headers[\"Authorization\"] = \"Bearer $token\"" >>"$work/auth.lua"

for which in open auth; do
    u="${which}_url"
    extra=()
    [[ $which == auth ]] && extra=(-H "authorization: Bearer $token")
    answer="$(curl -s "${!u}" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
        -H 'mcp-method: tools/call' -H 'mcp-name: add' "${extra[@]}" -d "$body")"
    [[ "$answer" == *'"structuredContent":{"result":5}'* ]] || {
        echo "$which does not answer add(2,3) with 5: $answer" >&2
        exit 1
    }
done

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run URL SCRIPT PID: prints "requests/s p50 cpu-µs-per-call".
run() {
    local out before_ticks after_ticks
    before_ticks="$(cpu_ticks "$3")"
    out="$(taskset -c 1 wrk -t1 -c32 -d"${seconds}s" --latency -s "$2" "$1")"
    after_ticks="$(cpu_ticks "$3")"
    if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
        echo "errors during the run against $1:" >&2
        echo "$out" >&2
        exit 1
    fi
    local rps p50 requests cpu
    rps="$(awk '/Requests\/sec/ {print $2}' <<<"$out")"
    p50="$(awk '$1 == "50%" {print $2}' <<<"$out")"
    requests="$(awk '/requests in/ {print $1}' <<<"$out")"
    cpu="$(awk -v t="$((after_ticks - before_ticks))" -v hz="$(getconf CLK_TCK)" -v n="$requests" \
        'BEGIN {printf "%.1f", t / hz * 1e6 / n}')"
    echo "$rps $p50 $cpu"
}

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "open: $open_url; auth: $auth_url (issuer $issuer); 32 connections, ${seconds} s per run"
printf '%-6s %-6s %10s %10s %12s\n' round server 'req/s' p50 'CPU µs/call'
for round in $(seq 1 "$rounds"); do
    for which in open auth; do
        u="${which}_url"
        p="${which}_pid"
        read -r rps p50 cpu < <(run "${!u}" "$work/$which.lua" "${!p}")
        printf '%-6s %-6s %10s %10s %12s\n' "$round" "$which" "$rps" "$p50" "$cpu"
    done
done
