#!/usr/bin/env bash
# `tools/call add(2, 3)` over Streamable HTTP (2026-07-28, stateless, JSON answers) against
# two release builds of the demo side by side: BEFORE_REV's and the working tree's. Each
# server is pinned to CPU 0 and wrk to CPU 1; rounds alternate before/after so that drift
# on the machine hits both alike.
#
#   bash .ci/bench/http_calls.sh BEFORE_REV [SECONDS_PER_RUN] [ROUNDS]
#
# Needs wrk (Debian's package) and taskset (util-linux). BEFORE_TARGET_DIR reuses a target
# directory for the BEFORE build; BEFORE_DEMO names an already built BEFORE demo binary. Not part of CI: it measures, it asserts nothing (a run with
# a non-2xx answer or a socket error stops it). BENCHMARKS.md ("HTTP edge") has the figures.
set -euo pipefail

before_rev="${1:?usage: http_calls.sh BEFORE_REV [SECONDS_PER_RUN] [ROUNDS]}"
seconds="${2:-8}"
rounds="${3:-3}"

root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/.ci/bench/wrk.sh"
cd "$root"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

work="$(mktemp -d)"
pids=()
cleanup() {
    git worktree remove --force "$work/before" 2>/dev/null || true
    bench_cleanup
}
trap cleanup EXIT

before_demo="${BEFORE_DEMO:-}"
if [[ -z "$before_demo" ]]; then
    git worktree add --detach "$work/before" "$before_rev" >/dev/null
    before_target="${BEFORE_TARGET_DIR:-$work/before-target}"
    # An older commit's release profile may predate LTO: both builds use today's.
    (cd "$work/before" && CARGO_TARGET_DIR="$before_target" CARGO_PROFILE_RELEASE_LTO=fat \
        CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 cargo build --release --example demo)
    before_demo="$before_target/release/examples/demo"
fi
cargo build --release --example demo
after_target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"

start_server before taskset -c 0 "$before_demo" --http 127.0.0.1:0
start_server after taskset -c 0 "$after_target/release/examples/demo" --http 127.0.0.1:0

wrk_call_script "$work/call.lua"

check_add before "$before_url"
check_add after "$after_url"

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "before: $before_rev ($before_url); after: working tree ($after_url); ${seconds} s per run"
printf '%-6s %-7s %-12s %10s %10s %12s\n' round build connections 'req/s' p50 'CPU µs/call'
for round in $(seq 1 "$rounds"); do
    for c in 1 32; do
        for which in before after; do
            u="${which}_url"
            p="${which}_pid"
            read -r rps p50 cpu < <(wrk_run "${!u}" "$c" "$work/call.lua" "${!p}" "$seconds")
            printf '%-6s %-7s %-12s %10s %10s %12s\n' "$round" "$which" "$c" "$rps" "$p50" "$cpu"
        done
    done
done
