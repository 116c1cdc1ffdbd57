#!/usr/bin/env bash
# Instructions per `tools/call add(2, 3)` over Streamable HTTP (2026-07-28, one kept-alive
# connection), counted by callgrind: repeatable whatever else the machine is doing, unlike
# the wall-clock figures of http_calls.sh on a shared VM.
#
#   bash .ci/bench/http_instructions.sh DEMO_BINARY [SECONDS]
#
# Runs the demo under callgrind twice: once serving nothing (start-up and shutdown alone),
# once under wrk for SECONDS (default 15) with CONNECTIONS connections (default 1); prints
# the requests served and (instructions of the loaded run - instructions of the idle run) /
# requests. Needs valgrind
# and wrk (Debian's packages). Not part of CI; BENCHMARKS.md ("HTTP edge") has the figures.
#
# HTTP_ADDR (default 127.0.0.1:0) is the address served, DEMO_ARGS more arguments for the
# demo (word-split), BEARER a token sent with every call: with them the same count is taken
# of the demo as an OAuth resource server (BENCHMARKS.md, "Authorization").
set -euo pipefail

binary="${1:?usage: http_instructions.sh DEMO_BINARY [SECONDS]}"
seconds="${2:-15}"
work="$(mktemp -d)"
source "$(dirname "$0")/wrk.sh"
trap 'rm -rf "$work"' EXIT

wrk_call_script "$work/call.lua" "${BEARER:-}"
# shellcheck disable=SC2206 # DEMO_ARGS is a list of words on purpose
extra=(${DEMO_ARGS:-})

# measure SECONDS: prints "requests instructions" for one callgrind run
measure() {
    local out="$work/cg.$1.out" log="$work/log.$1"
    valgrind --tool=callgrind --callgrind-out-file="$out" "$binary" --http "${HTTP_ADDR:-127.0.0.1:0}" "${extra[@]}" >"$log" 2>&1 &
    local pid=$! url=""
    for _ in $(seq 1 600); do
        # Only a whole line: under valgrind the announcement may be read half written.
        url="$(sed -n 's|^listening on \(http://.*/mcp\)$|\1|p' "$log" | head -n1)"
        [[ -n "$url" ]] && break
        sleep 0.1
    done
    [[ -n "$url" ]] || { cat "$log" >&2; exit 1; }
    local requests=0
    if [[ "$1" != 0 ]]; then
        local result
        result="$(wrk -t1 -c"${CONNECTIONS:-1}" -d"$1s" --timeout 10s -s "$work/call.lua" "$url")"
        if grep -q 'Non-2xx\|Socket errors' <<<"$result"; then echo "$result" >&2; exit 1; fi
        requests="$(awk '/requests in/ {print $1}' <<<"$result")"
    fi
    # Ctrl-C is handled once the server runs; give it a moment after the announcement.
    sleep 3
    kill -INT "$pid"
    wait "$pid" || true
    echo "$requests $(awk '/^summary:/ {print $2; exit}' "$out")"
}

read -r _ idle < <(measure 0)
read -r requests loaded < <(measure "$seconds")
echo "$binary ${extra[*]}: $requests requests at ${CONNECTIONS:-1} connections, $(( (loaded - idle) / requests )) instructions per call"
