#!/usr/bin/env bash
# `tools/call add(2, 3)` over Streamable HTTP (2026-07-28, stateless, JSON answers) against
# the floor (`.ci/bench/floor`: axum and serde doing what any conforming server must, no MCP
# framework) and the demo (a mount, a middleware and the tasks extension on the way), both
# release builds, in one run. Each server is pinned to CPU 0 with one runtime worker, and wrk
# to CPU 1; the servers alternate within each round so that drift on the machine hits both
# alike.
#
#   bash .ci/bench/http_floor.sh [SECONDS_PER_RUN] [ROUNDS]        # 8 s, 2 rounds by default
#   FLOOR_ALLOCATOR=mimalloc bash .ci/bench/http_floor.sh 8 2       # both servers on mimalloc
#
# Both servers use the system allocator (glibc's) unless FLOOR_ALLOCATOR=mimalloc, which
# builds both with their `mimalloc` feature (the allocator ferrymcp-gateway ships with), in
# target directories of their own.
#
# Needs wrk (Debian's package) and taskset (util-linux). Prints one line per run and, at the
# end, the means per server and the demo's against the floor's: throughput at 1 and 32
# connections, p50 at 1, and the server's CPU per call. Not part of CI: it measures, it
# asserts nothing (a run with a non-2xx answer or a socket error stops it). BENCHMARKS.md
# ("Against the floor") has the figures.
set -euo pipefail

seconds="${1:-8}"
rounds="${2:-2}"

root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/.ci/bench/wrk.sh"
cd "$root"
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }

target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
case "${FLOOR_ALLOCATOR:-system}" in
system)
    demo_target="$target" floor_target="$target/bench-floor" features=()
    ;;
mimalloc)
    demo_target="$target/bench-mimalloc" floor_target="$target/bench-floor-mimalloc"
    features=(--features mimalloc)
    ;;
*)
    echo "FLOOR_ALLOCATOR is system or mimalloc, not ${FLOOR_ALLOCATOR}" >&2
    exit 1
    ;;
esac
CARGO_TARGET_DIR="$demo_target" cargo build --release --example demo "${features[@]}"
(cd .ci/bench/floor && CARGO_TARGET_DIR="$floor_target" cargo build --release --locked "${features[@]}")

work="$(mktemp -d)"
pids=()
trap bench_cleanup EXIT

start_server floor taskset -c 0 "$floor_target/release/ferrymcp-bench-floor" 127.0.0.1:0
# One core each, so one runtime worker each: the floor builds its runtime with one, the demo
# reads TOKIO_WORKER_THREADS.
start_server demo env TOKIO_WORKER_THREADS=1 taskset -c 0 "$demo_target/release/examples/demo" --http 127.0.0.1:0

wrk_call_script "$work/call.lua"
check_add floor "$floor_url"
check_add demo "$demo_url"

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "floor: $floor_url; demo: working tree ($demo_url); allocator: ${FLOOR_ALLOCATOR:-system}; ${seconds} s per run, $rounds rounds"
printf '%-6s %-6s %-12s %10s %10s %12s\n' round server connections 'req/s' p50 'CPU µs/call'
results="$work/results"
for round in $(seq 1 "$rounds"); do
    for c in 1 32; do
        order="floor demo"
        ((round % 2 == 0)) && order="demo floor"
        for which in $order; do
            u="${which}_url"
            p="${which}_pid"
            read -r rps p50 cpu < <(wrk_run "${!u}" "$c" "$work/call.lua" "${!p}" "$seconds")
            printf '%-6s %-6s %-12s %10s %10s %12s\n' "$round" "$which" "$c" "$rps" "$p50" "$cpu"
            echo "$which $c $rps $p50 $cpu" >>"$results"
        done
    done
done

# Means per server and connection count; p50 in µs (wrk prints us, ms or s).
python3 - "$results" <<'PY'
import sys, collections
def micros(text):
    for unit, factor in (("us", 1.0), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    server, c, rps, p50, cpu = line.split()
    rows[(server, int(c))].append((float(rps), micros(p50), float(cpu)))
mean = lambda xs: sum(xs) / len(xs)
stat = {k: tuple(mean([r[i] for r in v]) for i in range(3)) for k, v in rows.items()}
print()
print("| server | c=1 req/s | c=1 p50 µs | c=32 req/s | CPU µs/call (c=32) |")
print("|---|---:|---:|---:|---:|")
for server in ("floor", "demo"):
    one, many = stat[(server, 1)], stat[(server, 32)]
    print(f"| {server} | {one[0]:,.0f} | {one[1]:.0f} | {many[0]:,.0f} | {many[2]:.1f} |")
f1, d1, f32, d32 = stat[("floor", 1)], stat[("demo", 1)], stat[("floor", 32)], stat[("demo", 32)]
print()
print(f"demo / floor at 32 connections: {d32[0] / f32[0]:.2f} of the throughput, "
      f"{d32[2] / f32[2]:.1f}x the CPU per call; at 1: p50 {d1[1] - f1[1]:+.0f} µs")
PY
