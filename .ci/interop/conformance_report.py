#!/usr/bin/env python3
"""Writes CONFORMANCE.md from one run of the official MCP conformance suite.

    conformance_report.py EXPECTED_FAILURES_YML SUITE_VERSION OUT_MD LABEL=RESULTS_DIR...

Each LABEL=RESULTS_DIR is one pass of the suite (`all`, or a requirement set such as
`2026-07-28`); RESULTS_DIR is its `-o` folder: one
`server-<scenario>-<timestamp>/checks.json` per scenario. EXPECTED_FAILURES_YML is the suite's baseline format (`server:` then `- scenario`
or `- scenario:check-id`), where the comment lines above an entry give its reason and fix.

A scenario is `pass` when no check failed, `expected failure` when every failed check is
listed (or the scenario is), `UNEXPECTED FAILURE` otherwise, and `UNEXPECTED PASS` when a
listed scenario or check passed. Exits 1 if any scenario is unexpected. Standard library only.
"""

import json
import re
import sys
from pathlib import Path

# As the suite judges a run with a baseline: a WARNING (a SHOULD not met) fails too.
FAILED = {"FAILURE", "ERROR", "WARNING"}
TIMESTAMP = re.compile(r"-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def read_baseline(path):
    """Returns {entry: reason}: each `- entry` under `server:` with its comment block."""
    entries, comment, section = {}, [], None
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line:
            comment = []
        elif line.startswith("#"):
            comment.append(line.lstrip("#").strip())
        elif line.endswith(":") and not line.startswith("-"):
            section, comment = line[:-1], []
        elif line.endswith(": []") and not line.startswith("-"):
            # An empty list: no expected failures in this section.
            section, comment = line[: -len(": []")], []
        elif line.startswith("- ") and section == "server":
            entry = line[2:].split("#", 1)[0].strip().strip("'\"")
            entries[entry] = " ".join(comment)
            comment = []
    return entries


def read_results(results):
    """Returns {scenario: [check, ...]} from the suite's result folders."""
    scenarios = {}
    for folder in sorted(Path(results).iterdir()):
        name = TIMESTAMP.sub("", folder.name)
        name = name[len("server-"):] if name.startswith("server-") else name
        checks_file = folder / "checks.json"
        checks = json.loads(checks_file.read_text()) if checks_file.exists() else None
        scenarios[name] = checks
    return scenarios


def classify(name, checks, baseline):
    """Returns (result, failed check ids, reasons of the entries that apply)."""
    if checks is None:
        return "UNEXPECTED FAILURE", ["(no checks.json: the scenario did not run)"], []
    failed = sorted({c["id"] for c in checks if c.get("status") in FAILED})
    succeeded = {c["id"] for c in checks if c.get("status") == "SUCCESS"}
    whole = name in baseline
    listed = {e.split(":", 1)[1] for e in baseline if e.startswith(name + ":")}
    reasons = [baseline[e] for e in baseline if e == name or e.split(":", 1)[0] == name]
    if whole:
        return ("expected failure" if failed else "UNEXPECTED PASS"), failed, reasons
    if not set(failed) <= listed:
        return "UNEXPECTED FAILURE", failed, reasons
    # As the suite does: a listed check that passed is stale; one that is absent or
    # skipped (the scenario stopped earlier) is tolerated.
    if (listed - set(failed)) & succeeded:
        return "UNEXPECTED PASS", failed, reasons
    return ("expected failure" if failed else "pass"), failed, reasons


PASSES = {
    "all": "Every server scenario (`--suite all`), each at the protocol version the suite "
           "infers for it",
    "2025-11-25": "The scenarios revision 2025-11-25 requires (`--requirements 2025-11-25`), "
                  "on the 2025-11-25 wire (the `initialize` handshake)",
    "2026-07-28": "The scenarios revision 2026-07-28 requires (`--requirements 2026-07-28`), "
                  "on the 2026-07-28 wire (per-request `_meta`)",
}


def table(label, results, baseline):
    """One pass's section: its rows and counts."""
    scenarios = read_results(results)
    rows, counts = [], {}
    for name, checks in scenarios.items():
        result, failed, reasons = classify(name, checks, baseline)
        counts[result] = counts.get(result, 0) + 1
        ok = sum(1 for c in checks or [] if c.get("status") not in FAILED)
        total = len(checks or [])
        note = "; ".join(r for r in reasons if r)
        if failed:
            note = f"failed: {', '.join(failed)}" + (f". {note}" if note else "")
        rows.append(f"| `{name}` | {result} | {ok}/{total} | {note} |")
    if label == "all":
        # Every scenario ran, so an entry naming none of them is stale.
        for entry in baseline:
            if entry.split(":", 1)[0] not in scenarios:
                counts["UNEXPECTED PASS"] = counts.get("UNEXPECTED PASS", 0) + 1
                rows.append(f"| `{entry}` | UNEXPECTED PASS | - | listed, but the suite has "
                            "no such scenario |")
    summary = ", ".join(f"{n} {r}" for r, n in sorted(counts.items()))
    lines = [
        f"## {label}",
        "",
        f"{PASSES.get(label, label)}: {len(scenarios)} scenarios, {summary}.",
        "",
        "| scenario | result | checks passed | notes |",
        "|---|---|---|---|",
        *rows,
        "",
    ]
    return lines, rows, f"{label}: {len(scenarios)} scenarios, {summary}"


def main(baseline_path, version, out, *passes):
    baseline = read_baseline(baseline_path)
    text = [
        "# Conformance",
        "",
        "<!-- Generated by .ci/interop/conformance.sh --write; do not edit by hand. -->",
        "",
        f"The official MCP conformance suite, `@modelcontextprotocol/conformance@{version}`, "
        "against `examples/conformance.rs` over Streamable HTTP, in three passes. Expected "
        "failures, with their reasons and fixes, are listed in "
        "`.ci/interop/expected-failures.yml`; with such a baseline the suite counts a "
        "WARNING (an unmet SHOULD) as a failure, and so does this table.",
        "",
    ]
    bad = []
    for spec in passes:
        label, results = spec.split("=", 1)
        lines, rows, summary = table(label, results, baseline)
        text += lines
        bad += [f"{label} {row}" for row in rows if "UNEXPECTED" in row]
        print(f"conformance {version}, {summary}")
    Path(out).write_text("\n".join(text))
    for row in bad:
        print("  " + row, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
