#!/usr/bin/env bash
# What telemetry costs a `tools/call add(2, 3)` over Streamable HTTP (2026-07-28, JSON answers)
# at 32 callers: release demos side by side, one plain (`off`), one with the Prometheus
# exporter (`metrics`: every call counted and timed per method and per tool), one with that
# and every request's span exported over OTLP/HTTP (`traced`: `--metrics --otlp`, to a
# small sink that answers 200 and counts what it got), one that keeps 1 % of the traces
# (`sampled`: the same with `--otlp-sample 0.01`, decided before the layer), and a second
# plain one (`control`, not run unless TELEMETRY_SIDES names it). Servers
# on CPU 0, wrk and the sink on CPU 1; rounds rotate the order so drift hits all alike. At
# the end the metered servers' /metrics must have counted the calls and the sink must have
# received spans.
#
#   bash .ci/bench/telemetry.sh [SECONDS_PER_RUN] [ROUNDS]
#   TELEMETRY_SIDES="off metrics sampled" bash .ci/bench/telemetry.sh   # some sides only
#   TELEMETRY_INSTRUCTIONS=10 bash .ci/bench/telemetry.sh 8 0           # instructions only
#   TELEMETRY_TOGETHER=1 bash .ci/bench/telemetry.sh 8 6                # the sides at once
#
# With TELEMETRY_TOGETHER set, each round starts the servers afresh and runs every side at
# the same time (all servers on CPU 0, each wrk on CPU 1), so that the VM's drift hits them
# alike within a round.
#
# With TELEMETRY_INSTRUCTIONS=SECONDS it then counts each side's instructions per call under
# callgrind at 32 connections (http_instructions.sh; needs valgrind): the figure that holds on
# a shared VM, whose wall clock moves by more than the cost measured here.
#
# Needs wrk, taskset and curl. Not part of CI: it measures, it asserts nothing but that
# the calls were answered and counted. BENCHMARKS.md ("Telemetry") has the figures.
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

cargo build --release --features otlp --example demo
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
demo="$target/release/examples/demo"

# The OTLP sink: answers every POST 200 and counts requests and bytes.
cat >"$work/sink.py" <<'PY'
import http.server, sys, threading
count = [0, 0]
lock = threading.Lock()
class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        with lock:
            count[0] += 1
            count[1] += len(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()
    def do_GET(self):
        text = f"{count[0]} {count[1]}\n".encode()
        self.send_response(200)
        self.send_header("content-length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Sink)
print(f"sink http://127.0.0.1:{server.server_address[1]}", flush=True)
server.serve_forever()
PY
taskset -c 1 python3 "$work/sink.py" >"$work/sink.log" 2>&1 &
pids+=("$!")
sink=""
for _ in $(seq 1 100); do
    sink="$(sed -n 's/^sink //p' "$work/sink.log")"
    [[ -n "$sink" ]] && break
    sleep 0.1
done
[[ -n "$sink" ]] || { echo "the OTLP sink did not start" >&2; exit 1; }

# start_sides: starts every side's server, stopping the one before it if there was one. The
# servers of a run are started once; with TELEMETRY_TOGETHER, afresh every round, so that
# what a process's memory layout happens to give or take (a few per cent either way on this
# VM, for the whole life of the process) is not carried through the run by one side.
start_sides() {
    local side p
    for side in off control metrics traced sampled; do
        p="${side}_pid"
        if [[ -n "${!p:-}" ]]; then
            kill "${!p}" 2>/dev/null || true
            wait "${!p}" 2>/dev/null || true
        fi
    done
    start_server off taskset -c 0 "$demo" --http 127.0.0.1:0
    # A second plain server: run beside `off`, it shows what the method itself puts between
    # two identical servers.
    start_server control taskset -c 0 "$demo" --http 127.0.0.1:0
    start_server metrics taskset -c 0 "$demo" --http 127.0.0.1:0 --metrics
    start_server traced taskset -c 0 "$demo" --http 127.0.0.1:0 --metrics --otlp "$sink/v1/traces"
    start_server sampled taskset -c 0 "$demo" --http 127.0.0.1:0 --metrics --otlp "$sink/v1/traces" \
        --otlp-sample 0.01
    for side in off control metrics traced sampled; do
        u="${side}_url"
        check_add "$side" "${!u}"
    done
}
wrk_call_script "$work/call.lua"
start_sides

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "off: $off_url; metrics: $metrics_url (--metrics); traced: $traced_url (--metrics --otlp $sink); sampled: $sampled_url (1 %); 32 connections, ${seconds} s per run"
printf '%-6s %-8s %10s %10s %12s\n' round side 'req/s' p50 'CPU µs/call'
read -r -a sides <<<"${TELEMETRY_SIDES:-off metrics traced sampled}"
for round in $(seq 1 "$rounds"); do
    if [[ -n "${TELEMETRY_TOGETHER:-}" ]]; then
        [[ "$round" -gt 1 ]] && start_sides
        # Every side at once, each under its own wrk: what the VM's neighbours do to one
        # they do to all, so the ratios hold where the figures of one side alone wander.
        # Started in a rotated order: the first started gets the CPU first.
        runs=()
        for i in "${!sides[@]}"; do
            which="${sides[$(((round + i) % ${#sides[@]}))]}"
            u="${which}_url"
            p="${which}_pid"
            wrk_run "${!u}" 32 "$work/call.lua" "${!p}" "$seconds" >"$work/together.$which" &
            runs+=("$!")
        done
        for run in "${runs[@]}"; do
            wait "$run" || { echo "a run failed" >&2; exit 1; }
        done
        for which in "${sides[@]}"; do
            read -r rps p50 cpu <"$work/together.$which"
            printf '%-6s %-8s %10s %10s %12s\n' "$round" "$which" "$rps" "$p50" "$cpu"
        done
        continue
    fi
    for i in "${!sides[@]}"; do
        which="${sides[$(((round + i) % ${#sides[@]}))]}"
        u="${which}_url"
        p="${which}_pid"
        read -r rps p50 cpu < <(wrk_run "${!u}" 32 "$work/call.lua" "${!p}" "$seconds")
        printf '%-6s %-8s %10s %10s %12s\n' "$round" "$which" "$rps" "$p50" "$cpu"
    done
done

for which in "${sides[@]}"; do
    [[ "$which" == off || "$which" == control ]] && continue
    u="${which}_url"
    counted="$(curl -fsS "${!u%/mcp}/metrics" |
        awk '/^mcp_tool_calls_total\{/ && /tool="add"/ && /outcome="ok"/ {print $2}')"
    [[ -n "$counted" && "$counted" -gt 0 ]] || { echo "$which counted no add calls" >&2; exit 1; }
    echo "$which counted $counted add calls"
done
if [[ "$rounds" -gt 0 ]]; then
    read -r posts bytes < <(curl -fsS "$sink/")
    [[ "$posts" -gt 0 ]] || { echo "the sink received no spans" >&2; exit 1; }
    echo "the OTLP sink received $posts exports, $bytes bytes"
fi

if [[ -n "${TELEMETRY_INSTRUCTIONS:-}" ]]; then
    declare -A side_args=(
        [off]=""
        [control]=""
        [metrics]="--metrics"
        [traced]="--metrics --otlp $sink/v1/traces"
        [sampled]="--metrics --otlp $sink/v1/traces --otlp-sample 0.01"
    )
    for which in "${sides[@]}"; do
        DEMO_ARGS="${side_args[$which]}" CONNECTIONS=32 \
            bash "$root/.ci/bench/http_instructions.sh" "$demo" "$TELEMETRY_INSTRUCTIONS" |
            sed "s/^/$which: /"
    done
fi
