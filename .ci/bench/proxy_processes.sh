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
source "$root/.ci/bench/wrk.sh"
cd "$root"
cargo build --release --example demo --example proxy_load
cargo build --release -p ferrymcp-proxy --features gateway --bin ferrymcp-gateway

work="$(mktemp -d)"
pids=()
trap bench_cleanup EXIT

start_server demo target/release/examples/demo --http 127.0.0.1:0
upstream="$url"
printf 'name = "gateway"\n\n[[upstream]]\nnamespace = "demo"\nurl = "%s"\n' "$upstream" \
    >"$work/gateway.toml"
start_server gateway target/release/ferrymcp-gateway --config "$work/gateway.toml" --http 127.0.0.1:0
gateway="$url"

echo "machine: $(nproc) vCPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "upstream $upstream (demo), gateway $gateway (ferrymcp-gateway)"
target/release/examples/proxy_load --upstream-url "$upstream" --gateway-url "$gateway" \
    --gateway-tool demo_add "$@"
