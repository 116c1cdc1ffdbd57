#!/usr/bin/env bash
# The Redis engine's figures (examples/redis_load.rs) before and after, in one run: BASE_REV's
# build and the working tree's, run alternately against one Redis of its own.
#
#   bash .ci/bench/redis_engine.sh [BASE_REV] [ROUNDS]      # 7750afc and 5 rounds by default
#
# BASE_REV is checked out with `git worktree add --detach` under the target directory
# (bench-base/worktree) and built there with its own target directory (bench-base/target), so
# later runs only rebuild what changed. The redis-server (Debian's package: redis-server,
# redis-tools) is started on a free loopback port with no persistence and stopped at exit;
# every run starts on a FLUSHALL. Rounds alternate the order (before first in odd rounds,
# after first in even ones) so that drift on the machine hits both alike. Each run's output
# is kept under bench-base/results-<time>/, with the load average next to it.
#
# The table gives, per row, the mean and median of each side and after/before of both (for
# get latencies, lower is better, so a ratio above 1 is a slowdown there). The "after" binary
# also prints what each phase cost Redis (`cost` lines): their means close the output.
# Settings: REDIS_LOAD_TASKS (20000), REDIS_LOAD_GETS (5000), REDIS_LOAD_WORKERS (1,2,4).
# Not part of CI: it measures, it asserts nothing (a failed run stops it).
set -euo pipefail

base_rev="${1:-7750afc}"
rounds="${2:-5}"
tasks="${REDIS_LOAD_TASKS:-20000}"
gets="${REDIS_LOAD_GETS:-5000}"
workers="${REDIS_LOAD_WORKERS:-1,2,4}"

root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
for tool in redis-server redis-cli python3; do
    command -v "$tool" >/dev/null || {
        echo "$tool is missing (Debian: apt-get install -y redis-server redis-tools python3)" >&2
        exit 1
    }
done

target="$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bench="$target/bench-base"
base_tree="$bench/worktree"
out="$bench/results-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out/bin"

redis_pid=""
cleanup() {
    if [[ -n "$redis_pid" ]]; then
        kill "$redis_pid" 2>/dev/null || true
        wait "$redis_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

# The base build: a detached worktree at BASE_REV, reused across runs.
if [[ -d "$base_tree" ]]; then
    git -C "$base_tree" checkout --quiet --detach "$base_rev"
else
    mkdir -p "$bench"
    git worktree add --detach "$base_tree" "$base_rev" >/dev/null
fi
base_commit="$(git -C "$base_tree" rev-parse --short HEAD)"
(cd "$base_tree" && CARGO_TARGET_DIR="$bench/target" \
    cargo build --release --features redis --example redis_load)
cargo build --release --features redis --example redis_load
# Copies, so that a build during the run cannot change what is measured.
cp "$bench/target/release/examples/redis_load" "$out/bin/before"
cp "$target/release/examples/redis_load" "$out/bin/after"

# A free loopback port: one nobody answers on.
port=""
for _ in $(seq 1 50); do
    candidate=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$candidate") 2>/dev/null; then
        port="$candidate"
        break
    fi
done
[[ -n "$port" ]] || { echo "no free port found" >&2; exit 1; }
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --logfile "$out/redis.log" &
redis_pid="$!"
for _ in $(seq 1 100); do
    [[ "$(redis-cli -p "$port" ping 2>/dev/null)" == PONG ]] && break
    kill -0 "$redis_pid" 2>/dev/null || { echo "redis-server exited:" >&2; cat "$out/redis.log" >&2; exit 1; }
    sleep 0.1
done
[[ "$(redis-cli -p "$port" ping 2>/dev/null)" == PONG ]] || { echo "redis-server did not answer" >&2; exit 1; }
url="redis://127.0.0.1:$port/0"

echo "machine: $(nproc) vCPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(redis-server --version | cut -d' ' -f1-3)"
echo "before: $base_rev ($base_commit); after: working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo ', modified'))"
echo "runs: $tasks tasks, $gets gets, workers $workers; $rounds rounds, alternating; output in $out"

run() {
    local side="$1" round="$2" file="$out/$1-$2.txt"
    redis-cli -p "$port" FLUSHALL >/dev/null
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >"$file"
    "$out/bin/$side" --url "$url" --tasks "$tasks" --gets "$gets" --workers "$workers" >>"$file"
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$file"
    echo "round $round $side: $(grep -c '^redis: ' "$file") Redis rows, load $(head -n1 "$file" | cut -d' ' -f2) -> $(tail -n1 "$file" | cut -d' ' -f2)"
}

for round in $(seq 1 "$rounds"); do
    if ((round % 2 == 1)); then
        run before "$round"
        run after "$round"
    else
        run after "$round"
        run before "$round"
    fi
done

python3 - "$out" "$rounds" <<'EOF'
import re, statistics, sys
from pathlib import Path

out, rounds = Path(sys.argv[1]), int(sys.argv[2])

def micros(text):
    """A Rust `Duration` Debug value (`58.1µs`, `1.2ms`, `900ns`, `1.5s`) in µs."""
    m = re.fullmatch(r"([0-9.]+)(ns|µs|us|ms|s)", text)
    value, unit = float(m.group(1)), m.group(2)
    return value * {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}[unit]

def parse(path):
    rows, costs, loads = {}, {}, []
    for line in path.read_text().splitlines():
        if line.startswith("load "):
            loads.append(float(line.split()[1]))
        elif m := re.match(r"redis: submit ([0-9.]+) tasks/s", line):
            rows["submit /s"] = float(m.group(1))
        elif m := re.match(r"redis: get p50 (\S+) p99 (\S+)", line):
            rows["get p50 µs"] = micros(m.group(1))
            rows["get p99 µs"] = micros(m.group(2))
        elif m := re.match(r"redis: drain with (\d+) worker process\(es\): ([0-9.]+) completed/s \(Redis busy ([0-9.]+) %", line):
            rows[f"completed/s, {m.group(1)} worker(s)"] = float(m.group(2))
            rows[f"Redis busy %, {m.group(1)} worker(s)"] = float(m.group(3))
        elif m := re.match(r"redis: cost ([^:]+): ([0-9.]+) us Redis CPU, ([0-9.]+) B in, ([0-9.]+) B out per ([a-z ]+) \(", line):
            costs[m.group(1)] = (m.group(5), float(m.group(2)), float(m.group(3)), float(m.group(4)))
    return rows, costs, loads

runs = {side: [parse(out / f"{side}-{r}.txt") for r in range(1, rounds + 1)] for side in ("before", "after")}
names = list(runs["before"][0][0])
names += [n for n in runs["after"][0][0] if n not in names]

def column(side, name):
    return [rows[name] for rows, _, _ in runs[side] if name in rows]

print()
print("| row | before (mean / median) | after (mean / median) | after/before, means | after/before, medians | before, per round | after, per round |")
print("|---|---:|---:|---:|---:|---|---|")
fmt = lambda v: f"{v:,.1f}" if v < 1000 else f"{v:,.0f}"
for name in names:
    b, a = column("before", name), column("after", name)
    if not b or not a:
        continue
    bm, bd, am, ad = statistics.mean(b), statistics.median(b), statistics.mean(a), statistics.median(a)
    print(f"| {name} | {fmt(bm)} / {fmt(bd)} | {fmt(am)} / {fmt(ad)} | {am / bm:.3f} | {ad / bd:.3f} "
          f"| {' '.join(fmt(v) for v in b)} | {' '.join(fmt(v) for v in a)} |")

loads = [l for side in runs.values() for _, _, ls in side for l in ls]
print()
print(f"load average (1 min) at the runs' starts and ends: {min(loads):.2f} to {max(loads):.2f}, mean {statistics.mean(loads):.2f}")

phases = list(runs["after"][0][1])
if phases:
    print()
    print("What each phase cost Redis (after build; mean over rounds, readings' own cost taken off):")
    print()
    print("| phase | per | Redis CPU µs | bytes in | bytes out |")
    print("|---|---|---:|---:|---:|")
    for phase in phases:
        samples = [costs[phase] for _, costs, _ in runs["after"] if phase in costs]
        per = samples[0][0]
        cpu, bin_, bout = (statistics.mean(s[i] for s in samples) for i in (1, 2, 3))
        spread = f" ({min(s[1] for s in samples):.1f}–{max(s[1] for s in samples):.1f})"
        print(f"| {phase} | {per} | {cpu:.1f}{spread} | {bin_:.0f} | {bout:.0f} |")
EOF
