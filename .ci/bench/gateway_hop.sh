#!/usr/bin/env bash
# The gateway hop's own cost: `tools/call add(2, 3)` over Streamable HTTP (2026-07-28,
# stateless, JSON answers) straight to the demo, through `ferrymcp-gateway` (mimalloc)
# mounting the demo as `demo` (the call is then `demo_add`), and through the floor hop
# (`.ci/bench/floor`'s `floor-hop`, mimalloc: the same call relayed with no MCP framework,
# the result passed through as raw JSON), release builds, in one run. The gateway and the
# floor hop run on CPU 0, as the servers of http_floor.sh do; the demo and wrk share CPU 1
# (sharing CPU 0 with the demo made each call a pair of context switches in the gateway's
# account). The paths alternate within each round. A hop's CPU is its process's CPU per
# call.
#
#   bash .ci/bench/gateway_hop.sh [SECONDS_PER_RUN] [ROUNDS]        # 8 s, 2 rounds by default
#
# With GATEWAY_BEFORE=PATH (another build of ferrymcp-gateway, e.g. one built at an older
# commit and copied aside), that gateway runs beside the new one, on CPU 0 too, and its
# path ("before") alternates with the others: a before/after of the hop in one run. Build
# it with the same profile (a commit before fat LTO needs CARGO_PROFILE_RELEASE_LTO=fat and
# CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1) unless the profile is what is compared.
#
# Needs wrk and taskset. Not part of CI: it measures, it asserts nothing (a run with a
# non-2xx answer or a socket error stops it). BENCHMARKS.md ("The gateway hop") has the
# figures.
set -euo pipefail

seconds="${1:-8}"
rounds="${2:-2}"

root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/.ci/bench/wrk.sh"
cd "$root"
hop_setup
start_server gateway taskset -c 0 target/release/ferrymcp-gateway --config "$work/gateway.toml" \
    --http 127.0.0.1:0
start_server floor taskset -c 0 "$floor_target/release/floor-hop" 127.0.0.1:0 "$demo_url" demo
paths="direct floor gateway"
if [[ -n "${GATEWAY_BEFORE:-}" ]]; then
    start_server before taskset -c 0 "$GATEWAY_BEFORE" --config "$work/gateway.toml" \
        --http 127.0.0.1:0
    paths="direct floor gateway before"
fi

check_add demo "$demo_url"
for hop in gateway floor; do
    hop_url="${hop}_url"
    answer="$(curl -s "${!hop_url}" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
        -H 'mcp-method: tools/call' -H 'mcp-name: demo_add' -d "${WRK_BODY/\"add\"/\"demo_add\"}")"
    [[ "$answer" == *'"result":5'* ]] || { echo "the $hop hop does not answer demo_add: $answer" >&2; exit 1; }
done

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "demo $demo_url, floor hop $floor_url, gateway $gateway_url; ${seconds} s per run, $rounds rounds"
printf '%-6s %-8s %-12s %10s %10s %14s %14s\n' round path connections 'req/s' p50 'demo µs/call' 'gateway µs/call'
results="$work/results"
for round in $(seq 1 "$rounds"); do
    for c in 1 32; do
        order="$paths"
        ((round % 2 == 0)) && order="$(tr ' ' '\n' <<<"$paths" | tac | xargs)"
        for path in $order; do
            case "$path" in
            direct) u="$demo_url" hop_pid="$gateway_pid" script=direct ;;
            floor) u="$floor_url" hop_pid="$floor_pid" script=gateway ;;
            gateway) u="$gateway_url" hop_pid="$gateway_pid" script=gateway ;;
            before) u="$before_url" hop_pid="$before_pid" script=gateway ;;
            esac
            before="$(cpu_ticks "$hop_pid")"
            read -r rps p50 cpu < <(wrk_run "$u" "$c" "$work/$script.lua" "$demo_pid" "$seconds")
            after="$(cpu_ticks "$hop_pid")"
            requests="$(awk -v r="$rps" -v s="$seconds" 'BEGIN {printf "%d", r * s}')"
            hop="$(awk -v t="$((after - before))" -v hz="$(getconf CLK_TCK)" -v n="$requests" \
                'BEGIN {printf "%.1f", t / hz * 1e6 / n}')"
            printf '%-6s %-8s %-12s %10s %10s %14s %14s\n' "$round" "$path" "$c" "$rps" "$p50" "$cpu" "$hop"
            echo "$path $c $rps $p50 $cpu $hop" >>"$results"
        done
    done
done

python3 - "$results" <<'PY'
import sys, collections
def micros(text):
    for unit, factor in (("us", 1.0), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * factor
    return float(text)
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    path, c, rps, p50, demo, hop = line.split()
    rows[(path, int(c))].append((float(rps), micros(p50), float(demo), float(hop)))
mean = lambda xs: sum(xs) / len(xs)
stat = {k: tuple(mean([r[i] for r in v]) for i in range(4)) for k, v in rows.items()}
print()
print("| path | c=1 req/s | c=1 p50 µs | c=32 req/s | demo CPU µs/call (c=32) | gateway CPU µs/call (c=32) |")
print("|---|---:|---:|---:|---:|---:|")
for path in ("direct", "floor", "gateway", "before"):
    if (path, 1) not in stat:
        continue
    one, many = stat[(path, 1)], stat[(path, 32)]
    print(f"| {path} | {one[0]:,.0f} | {one[1]:.0f} | {many[0]:,.0f} | {many[2]:.1f} | {many[3]:.1f} |")
g1, g32 = stat[("gateway", 1)], stat[("gateway", 32)]
f1, f32 = stat[("floor", 1)], stat[("floor", 32)]
print()
print(f"the hop: {g32[3]:.1f} µs of the gateway's CPU per call at 32 connections "
      f"({g1[3]:.1f} at 1); p50 at 1 connection {g1[1] - stat[('direct', 1)][1]:+.0f} µs")
print(f"the floor hop: {f32[3]:.1f} µs of its CPU per call at 32 connections "
      f"({f1[3]:.1f} at 1); p50 at 1 connection {f1[1] - stat[('direct', 1)][1]:+.0f} µs; "
      f"the gateway above the floor: {g32[3] - f32[3]:+.1f} µs per call")
PY
