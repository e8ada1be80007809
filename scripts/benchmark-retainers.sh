#!/usr/bin/env bash
# What --retainers costs, in one run: prints a table of figures next to their aims.
#
# `AllocationChurn heap N` keeps N objects alive, 20,000 of them view models leaked in a global
# registry (each with one more object), budgeted with --budget so that they are over budget at
# exit. The same run under `leak-audit run` without and with --retainers, interleaved, REPS times:
# the medians of wall time (bash's clock) and of leak-audit's peak RSS (GNU time %M), and the
# difference, which is the heap walk's: stopping the target, copying it, finding every object,
# the paths and the dominator tree. Sizes double from N/4 to N, to show how it grows.
#
# Usage: scripts/benchmark-retainers.sh
# Environment (all optional):
#   LEAK_AUDIT_BENCH_SCRATCH           --scratch-path for the root package (default: .build-bench)
#   LEAK_AUDIT_BENCH_FIXTURES_SCRATCH  --scratch-path for Fixtures (default: Fixtures/.build-bench)
#   HEAP_N (default 1000000), REPS (default 5)
# Figures are printed, never asserted: the script exits 0 unless a build or a run fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

HEAP_N=${HEAP_N:-1000000}
REPS=${REPS:-5}

benchmark_name=benchmark-retainers
# shellcheck source=scripts/benchmark-common.sh
source "$root/scripts/benchmark-common.sh"
[[ -x /usr/bin/time ]] && /usr/bin/time -f %M true >/dev/null 2>&1 || die "GNU time (/usr/bin/time) is needed for peak RSS"


# run OPTION N: one audited run; prints "milliseconds peak-KB".
run() {
    local option=$1 count=$2 start end status
    start=${EPOCHREALTIME/[.,]/} # microseconds, read without starting a process
    status=0
    /usr/bin/time -f %M -o "$work/rss" "$leak_audit" run $option --budget 'AllocationChurn.DetailViewModel=10' \
        --format json --output "$work/report.json" "$churn" heap "$count" >"$work/out" 2>"$work/err" || status=$?
    end=${EPOCHREALTIME/[.,]/}
    # Exit 1: the leaked view models are over budget, as intended.
    [[ $status == 1 ]] || { cat "$work/err" >&2; die "leak-audit exited $status (expected 1)"; }
    if [[ -n $option ]]; then
        python3 - "$work/report.json" <<'PY' || die "the report has no retainers for the leaked view models"
import json, sys
report = json.load(open(sys.argv[1]))
groups = [t.get("retainers") or [] for t in report["types"] if t["name"].endswith("DetailViewModel")]
assert groups and sum(g["count"] for g in groups[0]) == 20000, groups
PY
    fi
    echo "$(((end - start) / 1000)) $(tail -1 "$work/rss")"
}

printf '%-10s %12s %12s %12s %12s %12s %12s\n' objects "plain ms" "walk ms" "+ms" "plain MB" "walk MB" "+MB"
for count in $((HEAP_N / 4)) $((HEAP_N / 2)) "$HEAP_N"; do
    plain_ms=() walk_ms=() plain_kb=() walk_kb=()
    for _ in $(seq "$REPS"); do
        read -r ms kb < <(run "" "$count")
        plain_ms+=("$ms") plain_kb+=("$kb")
        read -r ms kb < <(run --retainers "$count")
        walk_ms+=("$ms") walk_kb+=("$kb")
    done
    p_ms=$(median "${plain_ms[@]}") w_ms=$(median "${walk_ms[@]}")
    p_kb=$(median "${plain_kb[@]}") w_kb=$(median "${walk_kb[@]}")
    printf '%-10s %12s %12s %12s %12s %12s %12s\n' "$count" "$p_ms" "$w_ms" "$(awk "BEGIN { print $w_ms - $p_ms }")" \
        "$(awk "BEGIN { printf \"%.0f\", $p_kb / 1024 }")" "$(awk "BEGIN { printf \"%.0f\", $w_kb / 1024 }")" \
        "$(awk "BEGIN { printf \"%.0f\", ($w_kb - $p_kb) / 1024 }")"
done
echo
echo "aim (issue 11): under 2,000 ms and under 200 MB added at 1,000,000 objects and 20,000 leaked instances"
