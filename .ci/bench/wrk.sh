# Shared by the HTTP bench scripts in this folder (sourced, not run): the wrk script of a
# 2026-07-28 `tools/call add(2, 3)`, one measured wrk run, and starting, checking and stopping
# the servers under test.

# The JSON body of the call.
WRK_BODY='{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"}}}}'

# wrk_call_script FILE [BEARER]: writes the wrk Lua script posting the call, with
# `Authorization: Bearer BEARER` when given.
wrk_call_script() {
    cat >"$1" <<LUA
wrk.method = "POST"
wrk.body = '$WRK_BODY'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "add"
LUA
    if [[ -n "${2:-}" ]]; then
        echo "wrk.headers[\"Authorization\"] = \"Bearer $2\"" >>"$1"
    fi
}

# CPU time (user + system) a process has used, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# wrk_run URL CONNECTIONS SCRIPT PID SECONDS: wrk on CPU 1; prints "requests/s p50
# cpu-µs-per-call" (the server's own CPU time over the requests wrk completed: steadier
# than throughput on a shared VM). A non-2xx answer or a socket error stops the script.
wrk_run() {
    local out before_ticks after_ticks
    before_ticks="$(cpu_ticks "$4")"
    out="$(taskset -c 1 wrk -t1 -c"$2" -d"$5s" --latency -s "$3" "$1")"
    after_ticks="$(cpu_ticks "$4")"
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

# bench_cleanup: stops the processes in `pids` and removes `work` (the scripts' EXIT trap).
bench_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# start_server NAME COMMAND...: runs COMMAND in the background (output to $work/NAME.log,
# its pid added to `pids`) and waits for the `http://.../mcp` URL it announces; sets `url`,
# `${NAME}_url` and `${NAME}_pid`. Needs `work` and `pids` set.
start_server() {
    local name="$1"
    shift
    "$@" >"$work/$name.log" 2>&1 &
    pids+=("$!")
    printf -v "${name}_pid" '%s' "$!"
    url=""
    for _ in $(seq 1 300); do
        url="$(grep -o 'http://[0-9.:]*/mcp' "$work/$name.log" | head -n1 || true)"
        if [[ -n "$url" ]]; then
            printf -v "${name}_url" '%s' "$url"
            return
        fi
        sleep 0.1
    done
    echo "$name did not announce its URL:" >&2
    cat "$work/$name.log" >&2
    exit 1
}

# check_add NAME URL [CURL_ARGS...]: posts the call once and stops the script unless the
# answer is add(2, 3) = 5.
check_add() {
    local name="$1" url="$2" answer
    shift 2
    answer="$(curl -s "$url" -H 'content-type: application/json' \
        -H 'accept: application/json, text/event-stream' -H 'mcp-protocol-version: 2026-07-28' \
        -H 'mcp-method: tools/call' -H 'mcp-name: add' "$@" -d "$WRK_BODY")"
    [[ "$answer" == *'"structuredContent":{"result":5}'* ]] || {
        echo "$name does not answer add(2,3) with 5: $answer" >&2
        exit 1
    }
}

# hop_setup: what both hop scripts start from. Checks for wrk; builds the demo,
# `ferrymcp-gateway` and the floor hop (mimalloc) in release, setting `floor_target`, the
# floor's target directory; sets `work` and `pids` with the cleanup trap; starts the demo on
# CPU 1 (`demo_url`, `demo_pid`); and writes, in `work`, the gateway's config mounting the
# demo as `demo` (gateway.toml), the wrk script of the direct call (direct.lua) and that of
# the relayed one, `demo_add` (gateway.lua). Run from the project's root.
hop_setup() {
    command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 1; }
    cargo build --release --example demo
    cargo build --release -p ferrymcp-proxy --features gateway --bin ferrymcp-gateway
    floor_target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/bench-floor-mimalloc"
    (cd .ci/bench/floor && CARGO_TARGET_DIR="$floor_target" cargo build --release --locked --features mimalloc)

    work="$(mktemp -d)"
    pids=()
    trap bench_cleanup EXIT
    start_server demo taskset -c 1 target/release/examples/demo --http 127.0.0.1:0
    printf 'name = "gateway"\n\n[[upstream]]\nnamespace = "demo"\nurl = "%s"\n' "$demo_url" \
        >"$work/gateway.toml"
    wrk_call_script "$work/direct.lua"
    sed -e 's/"name":"add"/"name":"demo_add"/' -e 's/\["Mcp-Name"\] = "add"/["Mcp-Name"] = "demo_add"/' \
        "$work/direct.lua" >"$work/gateway.lua"
}
