#!/usr/bin/env bash
# The proxy hop, ours and tower-mcp's, on this machine, in alternating rounds.
#
#   bash .ci/bench/proxy_vs_tower.sh [ROUNDS]        # 3 rounds by default
#
# Ours: `examples/proxy_load.rs` (system allocator, as theirs). Theirs: the `overhead` example
# of the `mcp-proxy` crate 0.4.3 (tower-mcp 0.18), the harness behind tower-mcp's published
# "the proxy adds roughly 50 µs to p50" (Apple M4 Pro), downloaded from crates.io, checked
# against a pinned SHA-256 and built outside this workspace (about 9 minutes the first time,
# under $FERRYMCP_BENCH_DIR, by default ~/.cache/ferrymcp-bench).
# Both drive `tools/call` over loopback HTTP, direct and through a proxy, in one process on a
# multi-thread tokio runtime with as many workers as cores. Not part of CI: it measures, it
# asserts nothing. BENCHMARKS.md ("Proxy hop") has the figures and how to read them.
set -euo pipefail

rounds="${1:-3}"
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${FERRYMCP_BENCH_DIR:-$HOME/.cache/ferrymcp-bench}/tower-mcp-proxy-lto"
crate_version="0.4.3"
crate_sha256="b7410b1ca3c7bc7ea83483a83ea7e2cf42ab5503b4db99a89c45a82953ad4bfa"
src="$work/mcp-proxy-$crate_version"

if [[ ! -x "$src/target/release/examples/overhead" ]]; then
    mkdir -p "$work"
    crate="$work/mcp-proxy-$crate_version.crate"
    curl -sSfL -o "$crate" \
        "https://static.crates.io/crates/mcp-proxy/mcp-proxy-$crate_version.crate"
    echo "$crate_sha256  $crate" | sha256sum --check --quiet
    tar xzf "$crate" -C "$work"
    # Only the harness's needs: no OpenTelemetry, metrics, OAuth or discovery.
    # With our release profile (fat LTO, one codegen unit), so that both sides are built alike.
    (cd "$src" && CARGO_TARGET_DIR="$src/target" CARGO_PROFILE_RELEASE_LTO=fat \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
        cargo build --release --locked --no-default-features --example overhead)
fi

(cd "$root" && cargo build --release --example proxy_load)

echo "machine: $(nproc) vCPUs, $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$rounds"); do
    echo
    echo "== round $round: ours (examples/proxy_load.rs)"
    "$root/target/release/examples/proxy_load" --calls 2000 --concurrency 32 --seconds 3
    echo
    echo "== round $round: tower-mcp's mcp-proxy $crate_version (examples/overhead.rs)"
    "$src/target/release/examples/overhead"
done
