#!/usr/bin/env bash
# The proxy hop as deployed: the demo server and `ferrymcp-gateway` in front of it, each its own
# process, driven over loopback HTTP by `examples/proxy_load.rs` in a third process.
#
#   bash .ci/bench/proxy_processes.sh [proxy_load options]   # e.g. --calls 5000 --seconds 5
#
# Release builds of the demo, `ferrymcp-gateway` (which runs on mimalloc) and the driver; the
# direct rows call the demo's `add`, the proxied rows the gateway's `demo_add`. Not part of
# CI: it measures, it asserts nothing. BENCHMARKS.md ("Proxy hop") has the figures.
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
cargo build --release --example demo --example proxy_load
cargo build --release -p ferrymcp-proxy --features gateway --bin ferrymcp-gateway

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# Starts "$@" in the background (output to $work/$name.log) and sets `url` to the URL it
# announces.
start() {
    local name="$1"
    shift
    "$@" >"$work/$name.log" 2>&1 &
    pids+=("$!")
    url=""
    for _ in $(seq 1 300); do
        url="$(grep -o 'http://[0-9.:]*/mcp' "$work/$name.log" | head -n1 || true)"
        [[ -n "$url" ]] && return
        sleep 0.1
    done
    echo "$name did not announce its URL:" >&2
    cat "$work/$name.log" >&2
    exit 1
}

start demo target/release/examples/demo --http 127.0.0.1:0
upstream="$url"
printf 'name = "gateway"\n\n[[upstream]]\nnamespace = "demo"\nurl = "%s"\n' "$upstream" \
    >"$work/gateway.toml"
start gateway target/release/ferrymcp-gateway --config "$work/gateway.toml" --http 127.0.0.1:0
gateway="$url"

echo "machine: $(nproc) vCPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "upstream $upstream (demo), gateway $gateway (ferrymcp-gateway)"
target/release/examples/proxy_load --upstream-url "$upstream" --gateway-url "$gateway" \
    --gateway-tool demo_add "$@"
