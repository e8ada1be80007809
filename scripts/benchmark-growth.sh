#!/usr/bin/env bash
# How leak-audit's costs grow with the number of live instances, from 1 to 1,000,000: for each N,
# with the AllocationChurn fixture (scripts/benchmark-common.sh builds it and leak-audit in release),
#
#   memory      leak-audit's peak RssAnon auditing `retain N` (N tracked instances alive at once),
#               and per instance net of N = 1
#   report      from the target's exit to the report written, `over-budget N` (N instances over
#               budget at exit, from up to 1,024 stacks), median of REPS runs
#   reader      leak-audit's instructions for `over-budget N` (callgrind), and per instance net of
#               N = 1: decoding, the ledger, the report
#   census      `--census` over `heap N` (N live objects; the fixture keeps at least 40,000):
#               wall time against the plain program, median of REPS runs
#
# Usage: scripts/benchmark-growth.sh
# Environment: GROWTH_NS (default "1 1000 100000 1000000"), REPS (default 3), and the scratch-path
# variables of scripts/benchmark-common.sh. Figures are printed, never asserted: the script exits 0
# unless a build or a run fails. It needs valgrind for the instruction counts.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

GROWTH_NS=${GROWTH_NS:-"1 1000 100000 1000000"}
REPS=${REPS:-3}

benchmark_name=benchmark-growth
# shellcheck source=scripts/benchmark-common.sh
source "$root/scripts/benchmark-common.sh"
command -v valgrind >/dev/null || die "valgrind is needed for instruction counts (apt-get install valgrind)"

# reader_instructions N: leak-audit's own instructions (callgrind) for `leak-audit run over-budget N`.
reader_instructions() {
    local prefix="$work/cg-$1"
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$prefix.%p" \
        "$leak_audit" run "$churn" over-budget "$1" >"$prefix.stdout" 2>"$prefix.stderr" || true
    local file
    for file in "$prefix".*[0-9]; do
        if grep -q '^cmd:.*leak-audit run' "$file"; then
            awk '/^summary:/ { print $2 }' "$file"
            return
        fi
    done
    die "no callgrind output of leak-audit for over-budget $1"
}

load_before=$(loadavg)
declare -A memory_kb report_ms reader census_ratio census_objects
for n in $GROWTH_NS; do
    echo "N = $n: memory, exit to report, instructions, census..." >&2
    memory_kb[$n]=$(sampled_peak_anon_kb "$leak_audit" run "$churn" retain "$n")
    declare -a reports=() plains=() audits=()
    for ((rep = 0; rep < REPS; rep++)); do
        exit_to_report "$n"
        reports+=("$exit_report_ms")
        timed "$work/hp" "$plain" heap "$n"
        plains+=("$wall_ms")
        timed "$work/ha" "$leak_audit" run --census "$plain" heap "$n"
        audits+=("$wall_ms")
    done
    report_ms[$n]=$(median "${reports[@]}")
    census_ratio[$n]=$(calc "$(median "${audits[@]}") / $(median "${plains[@]}")")
    census_objects[$n]=$(field objects "$work/hp")
    reader[$n]=$(reader_instructions "$n")
done

first=${GROWTH_NS%% *}
echo
echo "leak-audit growth: x86_64, $(nproc) CPUs, $(swift --version 2>/dev/null | head -n 1 | sed 's/.*Swift version \([0-9.]*\).*/Swift version \1/')"
echo "load average before: $load_before, after: $(loadavg); medians of $REPS runs"
echo
printf '| %9s | %16s | %16s | %14s | %16s | %16s | %14s |\n' "N" "leak-audit RssAnon" "bytes/instance" "exit→report ms" "leak-audit instr" "instr/instance" "--census × plain"
printf '| %9s | %16s | %16s | %14s | %16s | %16s | %14s |\n' "---:" "---:" "---:" "---:" "---:" "---:" "---:"
for n in $GROWTH_NS; do
    per_byte="-"
    per_instruction="-"
    if [[ $n != "$first" ]]; then
        per_byte=$(calc "(${memory_kb[$n]} - ${memory_kb[$first]}) * 1024 / ($n - $first)")
        per_instruction=$(calc "(${reader[$n]} - ${reader[$first]}) / ($n - $first)")
    fi
    printf '| %9s | %13.1f MB | %16s | %14s | %16s | %16s | %7sx (%s objects) |\n' "$n" "$(calc "${memory_kb[$n]} / 1024")" \
        "$per_byte" "${report_ms[$n]}" "${reader[$n]}" "$per_instruction" "${census_ratio[$n]}" "${census_objects[$n]}"
done
