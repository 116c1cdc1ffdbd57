#!/usr/bin/env bash
# Runs every server scenario of the official MCP conformance suite (the version pinned in
# package.json here) against examples/conformance.rs over HTTP, then each revision's
# required scenarios on that revision's wire, and writes the table of scenario -> result.
#
#   .ci/interop/conformance.sh            # report into $INTEROP_CACHE/CONFORMANCE.md
#   .ci/interop/conformance.sh --write    # ... and update CONFORMANCE.md in the repo
#
# Exits non-zero on any unexpected failure, and on any unexpected pass: a scenario or check
# listed in expected-failures.yml that passes (remove its entry). Builds the example first.

set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap interop_stop_servers EXIT

WRITE=false
if [[ "${1:-}" == "--write" ]]; then WRITE=true; fi

cd "$INTEROP_ROOT"
interop_npm
SUITE_VERSION=$(node -p 'require(process.argv[1]).version' \
    "$INTEROP_CACHE/node_modules/@modelcontextprotocol/conformance/package.json")

interop_example conformance
interop_serve "$EXAMPLE" --http 127.0.0.1:0

# Three passes: every scenario as the suite picks its version, then the scenarios each
# revision requires on that revision's wire (a scenario in both runs twice).
PASSES=("all --suite all" "2025-11-25 --requirements 2025-11-25"
    "2026-07-28 --requirements 2026-07-28")
RESULTS="$INTEROP_CACHE/results"
rm -rf "$RESULTS"
suite_rc=0
report_args=()
for pass in "${PASSES[@]}"; do
    read -r label args <<<"$pass"
    read -r -a args <<<"$args"
    echo "---- conformance pass: $label (${args[*]})"
    # The suite exits non-zero on an unexpected failure or a stale baseline entry; the
    # report below applies the same rules and names them.
    conformance server --url "$SERVER_URL" "${args[@]}" -o "$RESULTS/$label" \
        --expected-failures .ci/interop/expected-failures.yml \
        >"$INTEROP_CACHE/suite-$label.log" 2>&1 || suite_rc=$?
    # Only the suite's baseline verdict is shown: its per-scenario and total `N passed, M
    # failed` lines count expected failures as failed, and CI logs are read for such
    # closing lines. The full log stays in suite-$label.log; the table is the report.
    sed -n '/^Total: /,$p' "$INTEROP_CACHE/suite-$label.log" | tail -n +2
    report_args+=("$label=$RESULTS/$label")
done

report_rc=0
python3 .ci/interop/conformance_report.py .ci/interop/expected-failures.yml \
    "$SUITE_VERSION" "$INTEROP_CACHE/CONFORMANCE.md" "${report_args[@]}" || report_rc=$?

if $WRITE; then
    cp "$INTEROP_CACHE/CONFORMANCE.md" CONFORMANCE.md
    echo "wrote CONFORMANCE.md"
elif ! diff -q CONFORMANCE.md "$INTEROP_CACHE/CONFORMANCE.md" >/dev/null; then
    echo "note: CONFORMANCE.md differs from this run's table (.ci/interop/conformance.sh --write updates it):"
    diff CONFORMANCE.md "$INTEROP_CACHE/CONFORMANCE.md" || true
fi

if ((report_rc != 0 || suite_rc != 0)); then
    interop_die "conformance: unexpected results (report exit $report_rc, suite exit $suite_rc; logs: $INTEROP_CACHE/suite-*.log)"
fi
