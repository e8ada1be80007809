#!/usr/bin/env bash
# Load runs for docs/reliability.md: ConcurrentLoad's own counts next to the report's, for many
# threads creating and freeing at once (with LeakMonitor and through --budget), a million
# instances alive at once, and a 64-slot ring that makes writers wait. Prints one line per run:
# what the program counted, what leak-audit reported, whether they agree, records dropped, and
# the wall time. Exits 1 if any run disagrees. Release builds (scripts/benchmark-common.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
benchmark_name=load
source scripts/benchmark-common.sh
swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" --product ConcurrentLoad \
    >"$work/build-load.log" 2>&1 || { cat "$work/build-load.log" >&2; die "swift build of ConcurrentLoad failed"; }
load="$(dirname "$churn")/ConcurrentLoad"

failures=0
# run LABEL TYPE ENV... -- LEAK-AUDIT-OPTIONS... -- PROGRAM-ARGUMENTS...
run() {
    local label=$1 type=$2
    shift 2
    local environment=() options=()
    while [[ $1 != -- ]]; do environment+=("$1"); shift; done
    shift
    while [[ $1 != -- ]]; do options+=("$1"); shift; done
    shift
    local started ended
    started=$(date +%s.%N)
    env "${environment[@]}" "$leak_audit" run --output-json "$work/report.json" "${options[@]}" "$load" "$@" \
        >"$work/stdout" 2>"$work/stderr" || true
    ended=$(date +%s.%N)
    python3 - "$work/report.json" "$work/stdout" "$type" "$label" "$started" "$ended" <<'PY' || failures=$((failures + 1))
import json, re, sys
report, stdout, type_name, label, started, ended = sys.argv[1:]
seconds = float(ended) - float(started)
said = re.search(r"peak (\d+) total (\d+) alive (\d+)", open(stdout).read())
counted = tuple(int(x) for x in said.groups())
data = json.load(open(report))
entry = next(t for t in data["types"] if t["name"] == type_name)
reported = (entry["peakLive"], entry["allocatedTotal"], entry["liveAtExit"])
agree = counted == reported
print(f"{label:<44} program {counted}  report {reported}  {'exact' if agree else 'DIFFERENT'}"
      f"  dropped {data['summary']['droppedRecords']}  {seconds:.2f} s")
sys.exit(0 if agree and data["summary"]["droppedRecords"] == 0 else 1)
PY
}

echo "(peak, allocated, alive at exit)"
run "64 threads x 10,000, LeakMonitor" ConcurrentLoad.Session -- -- 64 10000
run "64 threads x 10,000, --budget" ConcurrentLoad.Plain -- --budget ConcurrentLoad.Plain=1 -- 64 10000 plain
run "1 thread x 1,000,000 alive at once" ConcurrentLoad.Session -- -- 1 1000000
run "64 threads x 15,625 = 1,000,000 alive at once" ConcurrentLoad.Session -- -- 64 15625
run "64 x 15,625 through --budget" ConcurrentLoad.Plain -- --budget ConcurrentLoad.Plain=1 -- 64 15625 plain
run "8 x 20,000 in a 64-slot ring (writers wait)" ConcurrentLoad.Session LEAK_AUDIT_CHANNEL_SLOTS=64 -- -- 8 20000
[[ $failures -eq 0 ]] || die "$failures run(s) disagreed with the program's own counts"
