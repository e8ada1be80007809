#!/usr/bin/env bash
# What --retainers costs, in one run: prints a table of figures next to their aims.
#
# Each case runs a mode of `AllocationChurn` under `leak-audit run` without and with --retainers,
# interleaved, REPS times: the medians of wall time (bash's clock) and of leak-audit's peak RSS
# (GNU time %M), the difference, which is the heap walk's (stopping the target, copying it,
# finding every object, the paths and the dominator tree), and that difference per object.
#
#   heap N           N live objects, 20,000 of them view models leaked in a global registry
#                    (each with one more object), for each N of HEAP_SIZES
#   chain N          N objects each holding the next, the last holding them all, and the 20,000
#                    leaked view models: the dominator tree's worst shape (CHAIN_N)
#   list N           a list of N nodes from a global to one leaked view model: a path of N steps
#                    (LIST_N)
#   reservation G    an untouched read-only reservation of G GiB beside the 20,000 leaked view
#                    models among 40,000 objects (RESERVATION_GIB)
#   unreachable N    `heap` of N objects of which 5,000 cycles (15,000 objects) and 2,000
#                    over-retained objects nothing reaches (UNREACHABLE_N): without and with
#                    --unreachable (the whole walk), then --retainers without and with --unreachable
#                    (the grouping of the unreachable objects alone)
#
# The leaked view models are budgeted with --budget so that they are over budget at exit; each
# report is checked to name the registry (or the list) as their holder.
#
# Usage: scripts/benchmark-retainers.sh
# Environment (all optional):
#   LEAK_AUDIT_BENCH_SCRATCH           --scratch-path for the root package (default: .build-bench)
#   LEAK_AUDIT_BENCH_FIXTURES_SCRATCH  --scratch-path for Fixtures (default: Fixtures/.build-bench)
#   HEAP_SIZES (default "1000000 10000000 25000000"; empty: no heap case), CHAIN_N (default 1000000),
#   LIST_N (default 2000000), RESERVATION_GIB (default 64), UNREACHABLE_N (default 1000000), REPS (default 3)
# Figures are printed, never asserted: the script exits 0 unless a build or a run fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

HEAP_SIZES=${HEAP_SIZES-1000000 10000000 25000000}
CHAIN_N=${CHAIN_N:-1000000}
LIST_N=${LIST_N:-2000000}
RESERVATION_GIB=${RESERVATION_GIB:-64}
UNREACHABLE_N=${UNREACHABLE_N:-1000000}
REPS=${REPS:-3}

benchmark_name=benchmark-retainers
# shellcheck source=scripts/benchmark-common.sh
source "$root/scripts/benchmark-common.sh"
[[ -x /usr/bin/time ]] && /usr/bin/time -f %M true >/dev/null 2>&1 || die "GNU time (/usr/bin/time) is needed for peak RSS"

# run OPTIONS MODE N BUDGET EXPECTED: one audited run; prints "milliseconds peak-KB". With
# --retainers, checks that the report holds EXPECTED leaked view models in its retainers; with
# --unreachable, that it holds the 5,000 cycles and 2,000 over-retained objects of mode unreachable
# (once the report carries "unreachable").
run() {
    local option=$1 mode=$2 count=$3 budget=$4 expected=$5 start end status
    start=${EPOCHREALTIME/[.,]/} # microseconds, read without starting a process
    status=0
    # shellcheck disable=SC2086 # OPTIONS are words
    /usr/bin/time -f %M -o "$work/rss" "$leak_audit" run $option --budget "AllocationChurn.DetailViewModel=$budget" \
        --format json --output "$work/report.json" "$churn" "$mode" "$count" >"$work/out" 2>"$work/err" || status=$?
    end=${EPOCHREALTIME/[.,]/}
    # Exit 1: the leaked view models are over budget, as intended.
    [[ $status == 1 ]] || { cat "$work/err" >&2; die "$mode $count: leak-audit exited $status (expected 1)"; }
    if [[ $option == *--unreachable* ]]; then
        python3 - "$work/report.json" <<'PY' || die "$mode $count: the report does not hold the unreachable cycles"
import json, sys
report = json.load(open(sys.argv[1]))
if "unreachable" in report:
    groups = {g["shape"]: g["count"] for g in report["unreachable"]["groups"] if not g.get("isInternal")}
    assert groups.get("cycle") == 5000 and groups.get("overRetained") == 2000, groups
PY
    fi
    if [[ $option == *--retainers* ]]; then
        python3 - "$work/report.json" "$expected" <<'PY' || die "$mode $count: the report has no retainers for the leaked view models"
import json, sys
report = json.load(open(sys.argv[1]))
groups = [t.get("retainers") or [] for t in report["types"] if t["name"].endswith("DetailViewModel")]
assert groups and sum(g["count"] for g in groups[0]) == int(sys.argv[2]), groups
PY
    fi
    echo "$(((end - start) / 1000)) $(tail -1 "$work/rss")"
}

# measure MODE N BUDGET EXPECTED OBJECTS [BASE WALK]: one row of the table: runs with options BASE
# (default none) against runs with options WALK (default --retainers).
measure() {
    local mode=$1 count=$2 budget=$3 expected=$4 objects=$5 base=${6:-} walk=${7:---retainers} ms kb
    local plain_ms=() walk_ms=() plain_kb=() walk_kb=()
    for _ in $(seq "$REPS"); do
        read -r ms kb < <(run "$base" "$mode" "$count" "$budget" "$expected")
        plain_ms+=("$ms") plain_kb+=("$kb")
        read -r ms kb < <(run "$walk" "$mode" "$count" "$budget" "$expected")
        walk_ms+=("$ms") walk_kb+=("$kb")
    done
    local p_ms w_ms p_kb w_kb
    p_ms=$(median "${plain_ms[@]}") w_ms=$(median "${walk_ms[@]}")
    p_kb=$(median "${plain_kb[@]}") w_kb=$(median "${walk_kb[@]}")
    printf '%-22s %12s %10s %10s %10s %10s %10s %10s %12s\n' "$mode $count${8:-}" "$objects" "$p_ms" "$w_ms" \
        "$((w_ms - p_ms))" "$((p_kb / 1024))" "$((w_kb / 1024))" "$(((w_kb - p_kb) / 1024))" \
        "$(awk "BEGIN { printf \"%.0f\", ($w_kb - $p_kb) * 1024 / $objects }")"
}

printf '%-22s %12s %10s %10s %10s %10s %10s %10s %12s\n' case objects "plain ms" "walk ms" "+ms" "plain MB" \
    "walk MB" "+MB" "+bytes/obj"
for count in $HEAP_SIZES; do measure heap "$count" 10 20000 "$count"; done
measure chain "$CHAIN_N" 10 20000 $((CHAIN_N + 40000))
measure list "$LIST_N" 0 1 $((LIST_N + 2))
measure reservation "$RESERVATION_GIB" 10 20000 40000
measure unreachable "$UNREACHABLE_N" 10 20000 "$UNREACHABLE_N" "" --unreachable " (walk)"
measure unreachable "$UNREACHABLE_N" 10 20000 "$UNREACHABLE_N" --retainers "--retainers --unreachable" " (grouping)"
echo
echo "aim: under 2,000 ms and 200 MB added at 1,000,000 objects, linear beyond;"
echo "at most 64 bytes added per object beyond the copy of the target's heap"
