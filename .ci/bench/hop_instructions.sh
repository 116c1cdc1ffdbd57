#!/usr/bin/env bash
# Instructions per relayed `tools/call add(2, 3)` (2026-07-28, stateless, JSON answers),
# counted by callgrind in the hop's process: the floor hop (`.ci/bench/floor`'s `floor-hop`,
# the same call relayed with no MCP framework) and `ferrymcp-gateway` mounting the demo as
# `demo`, release builds on mimalloc, as gateway_hop.sh runs them. Unlike the CPU time of
# gateway_hop.sh, the count does not move with what else the VM runs, so it shows a change
# of the hop's own work on a noisy machine (within about 0.5 %: how many answers one wake-up
# serves varies).
#
#   bash .ci/bench/hop_instructions.sh [SECONDS] [CONNECTIONS]        # 10 s, 8 by default
#
# Each hop runs under callgrind twice: once serving nothing (start-up and shutdown alone),
# once under wrk for SECONDS at CONNECTIONS; the figure is (instructions of the loaded run -
# instructions of the idle run) / requests. The demo runs natively on CPU 1 with wrk. With
# GATEWAY_BEFORE=PATH (another build of ferrymcp-gateway) that build is counted too.
#
# Needs valgrind and wrk (Debian's packages). Not part of CI; BENCHMARKS.md ("The gateway
# hop in instructions") has the figures.
set -euo pipefail

seconds="${1:-10}"
connections="${2:-8}"

root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/.ci/bench/wrk.sh"
cd "$root"
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 1; }
hop_setup

# count NAME SECONDS COMMAND...: runs COMMAND (a hop serving on an address it announces)
# under callgrind on CPU 0, with wrk for SECONDS unless 0; prints "requests instructions".
count() {
    local name="$1" secs="$2"
    shift 2
    local out="$work/$name.$secs.callgrind"
    start_server "${name}_${secs}" taskset -c 0 valgrind -q --tool=callgrind --callgrind-out-file="$out" "$@"
    local pid_var="${name}_${secs}_pid" url_var="${name}_${secs}_url"
    local pid="${!pid_var}" hop_url="${!url_var}" requests=0
    if [[ "$secs" != 0 ]]; then
        local result
        result="$(taskset -c 1 wrk -t1 -c"$connections" -d"${secs}s" --timeout 10s -s "$work/gateway.lua" "$hop_url")"
        if grep -q 'Non-2xx\|Socket errors' <<<"$result"; then echo "$result" >&2; exit 1; fi
        requests="$(awk '/requests in/ {print $1}' <<<"$result")"
    fi
    # SIGTERM: a background job of a script ignores SIGINT; callgrind writes its counts
    # on either.
    kill -TERM "$pid"
    wait "$pid" || true
    echo "$requests $(awk '/^summary:/ {print $2; exit}' "$out")"
}

# per_call NAME COMMAND...: instructions per call of that hop.
per_call() {
    local name="$1" idle requests loaded
    shift
    read -r _ idle < <(count "$name" 0 "$@")
    read -r requests loaded < <(count "$name" "$seconds" "$@")
    echo $(((loaded - idle) / requests)) "$requests"
}

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${seconds} s at $connections connections"
read -r floor floor_n < <(per_call floor "$floor_target/release/floor-hop" 127.0.0.1:0 "$demo_url" demo)
read -r gateway gateway_n < <(per_call gateway target/release/ferrymcp-gateway --config "$work/gateway.toml" --http 127.0.0.1:0)
printf '%-10s %12s %10s\n' hop 'instr/call' requests
printf '%-10s %12s %10s\n' floor "$floor" "$floor_n" gateway "$gateway" "$gateway_n"
if [[ -n "${GATEWAY_BEFORE:-}" ]]; then
    read -r before before_n < <(per_call before "$GATEWAY_BEFORE" --config "$work/gateway.toml" --http 127.0.0.1:0)
    printf '%-10s %12s %10s\n' before "$before" "$before_n"
    awk -v g="$gateway" -v b="$before" 'BEGIN {printf "the gateway against the build before: %.3f\n", g / b}'
fi
awk -v g="$gateway" -v f="$floor" 'BEGIN {printf "the gateway against the floor hop: %.2f (%+d instructions per call)\n", g / f, g - f}'
