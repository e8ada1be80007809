#!/usr/bin/env bash
# What tracking costs a program, in one run: prints a table of figures next to their aims.
#
#   1. ns per `validate` of a type within its budget, standalone and under `leak-audit run`:
#      `AllocationChurn validate-cost N` times batches of an instrumented class against an
#      otherwise identical class that does not call validate (monotonic clock, median of rounds),
#      so allocation is netted out. Median over several runs.
#   2. whole-run wall time of `AllocationChurn churn N` (a view-model churn: N tracked instances
#      created and dropped within budget, plus untracked allocations) plain against under
#      `leak-audit run`, as a ratio of medians over interleaved repetitions (bash's
#      $EPOCHREALTIME); also CPU time (target plus leak-audit) and peak RSS (GNU time %M when
#      /usr/bin/time exists, and the target's own VmHWM).
#   3. bytes of memory per tracked live instance: `AllocationChurn retain N` keeps N untracked, then
#      N tracked instances alive and reads /proc/self/status before and after; the difference per
#      instance is what tracking adds. Attached, the target also holds the record channel's pages
#      (a memfd shared with leak-audit, counted in RssShmem), and leak-audit keeps a ledger entry
#      per live instance, measured by sampling its RssAnon.
#   4. cost against a true plain program (AllocationChurnPlain: the same source without
#      LeakMonitor), each figure next to its aim: instructions counted by callgrind (repeatable
#      whatever else the machine runs) for the target alone, LeakMonitor alone, attached, under
#      --budget, the whole tree, and leak-audit per record; wall-time medians for --census with a
#      million live objects, exit to report with a million instances over budget from 1,024
#      stacks, the fixed cost of a run (leak-audit as scripts/build-release.sh builds it for real
#      use, against the aim, and as `swift build -c release` builds it), and 64 threads validating
#      at once (program alone).
#   5. a service-like workload against its plain twin, instructions of the whole process tree
#      (callgrind, every process summed): `AllocationChurn service N` serves N requests, each
#      allocating one tracked context, one untracked response and two arrays, and looking its key up
#      in a bounded cache (1,024 entries, second-chance eviction) whose evicted entries are tracked
#      and released. Rows: the plain twin, LeakMonitor alone, under `leak-audit run`, and the plain
#      twin under `leak-audit run --budget`, each with its ratio and aim (1.2x, 1.25x), what the
#      target spends per tracked object (counting, as LeakMonitor alone does, and stacks and records
#      apart), what leak-audit spends per record, and the whole tree net of leak-audit's fixed cost
#      (the per-event path alone); the whole-tree rows again with leak-audit as
#      scripts/build-release.sh builds it (the runtime linked in: a smaller fixed cost).
#
# Usage: scripts/benchmark.sh [service]
#   With `service`, only part 5 runs (after the builds).
# Environment (all optional):
#   LEAK_AUDIT_BENCH_SCRATCH           --scratch-path for the root package (default: .build-bench)
#   LEAK_AUDIT_BENCH_FIXTURES_SCRATCH  --scratch-path for Fixtures (default: Fixtures/.build-bench)
#   VALIDATE_N, CHURN_N, RETAIN_N      workload sizes; CHURN_REPS, VALIDATE_REPS repetitions
#   CG_CHURN_N (200000)                screens per callgrind run
#   CENSUS_N, OVER_N (1000000)         live objects for --census, instances over budget at exit
#   COST_REPS (5)                      interleaved repetitions of part 4's --census and exit-to-report times
#   FIXED_REPS (41)                    interleaved runs of `churn 1` for the fixed cost
#   THREADS_REPS (21)                  interleaved runs of `threads 64 10000`, plain and with validate
#   SERVICE_N (200000)                 requests per callgrind run of part 5
# Figures are printed, never asserted: the script exits 0 unless a build or a run fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

VALIDATE_N=${VALIDATE_N:-2000000}
VALIDATE_REPS=${VALIDATE_REPS:-3}
CHURN_N=${CHURN_N:-500000}
CHURN_REPS=${CHURN_REPS:-7}
RETAIN_N=${RETAIN_N:-1000000}
RETAIN_REPS=${RETAIN_REPS:-3}
CG_CHURN_N=${CG_CHURN_N:-200000}
CENSUS_N=${CENSUS_N:-1000000}
OVER_N=${OVER_N:-1000000}
COST_REPS=${COST_REPS:-5}
FIXED_REPS=${FIXED_REPS:-41}
THREADS_REPS=${THREADS_REPS:-21}
SERVICE_N=${SERVICE_N:-200000}

# --- build ---------------------------------------------------------------------------------------

benchmark_name=benchmark
# shellcheck source=scripts/benchmark-common.sh
source "$root/scripts/benchmark-common.sh"
echo "building leak-audit with the Swift runtime linked in (scripts/build-release.sh)..." >&2
leak_audit_linked=$(scripts/build-release.sh "${LEAK_AUDIT_BENCH_SCRATCH:-.build-bench}/linked" "${dwarf4[@]}") \
    || die "scripts/build-release.sh failed"

# --- 5. a service-like workload, the whole process tree against its plain twin --------------------

# service_cost: part 5's runs and its table.
service_cost() {
    command -v valgrind >/dev/null || die "valgrind is needed for instruction counts (apt-get install valgrind)"
    local budgets=(--budget 'AllocationChurnPlain.RequestContext=2' --budget 'AllocationChurnPlain.CachedResponse=1024')
    echo "counting instructions with callgrind (service ${SERVICE_N}: plain, LeakMonitor alone, attached, --budget)..." >&2
    instructions "$work/sp" "$plain" service "$SERVICE_N"
    instructions "$work/sa" "$churn" service "$SERVICE_N"
    instructions "$work/su" "$leak_audit" run "$churn" service "$SERVICE_N"
    instructions "$work/su1" "$leak_audit" run "$churn" service 1
    instructions "$work/sb" "$leak_audit" run "${budgets[@]}" "$plain" service "$SERVICE_N"
    instructions "$work/sb1" "$leak_audit" run "${budgets[@]}" "$plain" service 1
    instructions "$work/sl" "$leak_audit_linked" run "$churn" service "$SERVICE_N"
    instructions "$work/slb" "$leak_audit_linked" run "${budgets[@]}" "$plain" service "$SERVICE_N"
    instructions "$work/sl1" "$leak_audit_linked" run "$churn" service 1
    # Clean: within every budget standalone, and leak-audit exited 0 (instructions dies otherwise).
    [[ $(field context-peak "$work/sa.stdout") -le 2 && $(field cached-peak "$work/sa.stdout") -le 1024 ]] \
        || die "service went over a budget"
    [[ $(field attached "$work/su.stdout") == true ]] || die "AllocationChurn did not attach to leak-audit"
    local plain_ir alone_ir tree_ir target_ir reader_ir reader1_ir budget_tree_ir budget_target_ir budget_reader_ir
    local budget_reader1_ir misses tracked records
    plain_ir=$(tree_counted "$work/sp")
    alone_ir=$(tree_counted "$work/sa")
    tree_ir=$(tree_counted "$work/su")
    target_ir=$(counted "$work/su" AllocationChurn)
    reader_ir=$(counted "$work/su" leak-audit)
    reader1_ir=$(counted "$work/su1" leak-audit)
    budget_tree_ir=$(tree_counted "$work/sb")
    budget_target_ir=$(counted "$work/sb" AllocationChurnPlain)
    budget_reader_ir=$(counted "$work/sb" leak-audit)
    budget_reader1_ir=$(counted "$work/sb1" leak-audit)
    local linked_tree_ir linked_budget_tree_ir linked_reader1_ir
    linked_tree_ir=$(tree_counted "$work/sl")
    linked_budget_tree_ir=$(tree_counted "$work/slb")
    linked_reader1_ir=$(counted "$work/sl1" leak-audit)
    # Each request's context, and each cache miss's entry: allocated and, by the end, deallocated.
    misses=$((SERVICE_N - $(field cache-hits "$work/sa.stdout")))
    tracked=$((SERVICE_N + misses))
    records=$((2 * tracked))
    row6() { printf '| %-64s | %13s | %11s | %8s | %-8s |\n' "$@"; }
    per() { calc "$1 / $2" 1; }
    echo
    echo "a service-like workload: \`service ${SERVICE_N}\` (each request a tracked context, an untracked response"
    echo "and two arrays; a 1,024-entry cache, ${misses} misses, each a tracked entry evicted and released);"
    echo "instructions from callgrind, every process of the tree summed"
    echo
    row6 "configuration" "instructions" "per request" "vs plain" "aim"
    row6 "---" "---:" "---:" "---:" "---"
    row6 "plain twin (AllocationChurnPlain)" "$plain_ir" "$(per "$plain_ir" "$SERVICE_N")" "1.000x" "-"
    row6 "LeakMonitor alone, not attached" "$alone_ir" "$(per "$alone_ir" "$SERVICE_N")" "$(exact_ratio "$alone_ir" "$plain_ir")x" "-"
    row6 "\`leak-audit run\`, whole tree" "$tree_ir" "$(per "$tree_ir" "$SERVICE_N")" "$(exact_ratio "$tree_ir" "$plain_ir")x" "<= 1.2x"
    row6 "  the target" "$target_ir" "$(per "$target_ir" "$SERVICE_N")" "$(exact_ratio "$target_ir" "$plain_ir")x" "-"
    row6 "  leak-audit" "$reader_ir" "$(per "$reader_ir" "$SERVICE_N")" "" "-"
    row6 "plain twin, \`leak-audit run --budget\`, whole tree" "$budget_tree_ir" "$(per "$budget_tree_ir" "$SERVICE_N")" "$(exact_ratio "$budget_tree_ir" "$plain_ir")x" "<= 1.25x"
    row6 "  the target" "$budget_target_ir" "$(per "$budget_target_ir" "$SERVICE_N")" "$(exact_ratio "$budget_target_ir" "$plain_ir")x" "-"
    row6 "  leak-audit" "$budget_reader_ir" "$(per "$budget_reader_ir" "$SERVICE_N")" "" "-"
    row6 "target per tracked object (allocation and death), net of plain" "$(per "$((target_ir - plain_ir))" "$tracked")" "" "" "-"
    row6 "  counting (LeakMonitor alone, net of plain)" "$(per "$((alone_ir - plain_ir))" "$tracked")" "" "" "-"
    row6 "  stack and records (attached, net of LeakMonitor alone)" "$(per "$((target_ir - alone_ir))" "$tracked")" "" "" "-"
    row6 "  --budget, net of plain" "$(per "$((budget_target_ir - plain_ir))" "$tracked")" "" "" "-"
    row6 "leak-audit instructions per record, net of \`service 1\`" "$(per "$((reader_ir - reader1_ir))" "$records")" "" "" "-"
    row6 "  --budget" "$(per "$((budget_reader_ir - budget_reader1_ir))" "$records")" "" "" "-"
    row6 "leak-audit instructions, \`service 1\` (its fixed cost)" "$reader1_ir" "" "" "-"
    row6 "whole tree net of leak-audit's fixed cost: \`run\`" "$((tree_ir - reader1_ir))" "" "$(exact_ratio "$((tree_ir - reader1_ir))" "$plain_ir")x" "-"
    row6 "  \`run --budget\`" "$((budget_tree_ir - budget_reader1_ir))" "" "$(exact_ratio "$((budget_tree_ir - budget_reader1_ir))" "$plain_ir")x" "-"
    row6 "leak-audit as built by scripts/build-release.sh: \`run\`" "$linked_tree_ir" "$(per "$linked_tree_ir" "$SERVICE_N")" "$(exact_ratio "$linked_tree_ir" "$plain_ir")x" "<= 1.2x"
    row6 "  \`leak-audit run --budget\` on the plain twin" "$linked_budget_tree_ir" "$(per "$linked_budget_tree_ir" "$SERVICE_N")" "$(exact_ratio "$linked_budget_tree_ir" "$plain_ir")x" "<= 1.25x"
    row6 "  its fixed cost, \`service 1\`" "$linked_reader1_ir" "" "" "-"
}
# Instruction counts are exact: their ratios get a third decimal, so that one next to its aim
# (1.03, 1.05, 1.08) is not rounded onto it.
exact_ratio() { calc "$1 / $2" 3; }
if [[ ${1:-} == service ]]; then
    service_cost
    exit 0
fi

# --- helpers -------------------------------------------------------------------------------------


# run_fixture OUT MODE N: runs the fixture standalone, its stdout to OUT.
run_fixture() {
    "$churn" "$2" "$3" >"$1" 2>"$1.err" || { cat "$1.err" >&2; die "'AllocationChurn $2 $3' failed"; }
}

# run_attached OUT MODE N: runs the fixture under leak-audit; the report must be clean (exit 0).
run_attached() {
    local status=0
    "$leak_audit" run "$churn" "$2" "$3" >"$1" 2>"$1.err" || status=$?
    ((status == 0)) || { cat "$1.err" >&2; die "'leak-audit run AllocationChurn $2 $3' exited $status"; }
    [[ $(field attached "$1") == true ]] || die "AllocationChurn did not attach to leak-audit"
}

load_before=$(loadavg)

# --- 1. ns per validate --------------------------------------------------------------------------

echo "timing validate (${VALIDATE_REPS} x ${VALIDATE_N} calls, standalone and attached)..." >&2
declare -a v_plain=() v_attached=() d_plain=() d_attached=() h_plain=() h_attached=()
for ((rep = 0; rep < VALIDATE_REPS; rep++)); do
    run_fixture "$work/vp" validate-cost "$VALIDATE_N"
    run_attached "$work/va" validate-cost "$VALIDATE_N"
    v_plain+=("$(field ns-per-validate "$work/vp")")
    v_attached+=("$(field ns-per-validate "$work/va")")
    d_plain+=("$(field ns-per-tracked-dealloc "$work/vp")")
    d_attached+=("$(field ns-per-tracked-dealloc "$work/va")")
    h_plain+=("$(field ns-hook-per-untracked-dealloc "$work/vp")")
    h_attached+=("$(field ns-hook-per-untracked-dealloc "$work/va")")
done
untracked_object_ns=$(field ns-per-untracked-object "$work/vp")

# --- 2. whole run: plain against leak-audit run --------------------------------------------------

echo "timing churn ${CHURN_N} (${CHURN_REPS} interleaved repetitions, plain and attached)..." >&2
declare -a w_plain=() w_attached=() c_plain=() c_attached=() m_plain=() m_attached=()
declare -a t_plain=() t_attached=()
run_fixture "$work/warm" churn "$CHURN_N" # warm the page cache and the CPU
for ((rep = 0; rep < CHURN_REPS; rep++)); do
    timed "$work/cp" "$plain" churn "$CHURN_N"
    w_plain+=("$wall_ms") c_plain+=("$cpu_s") m_plain+=("$peak_kb")
    t_plain+=("$(field peak-rss-kb "$work/cp")")
    timed "$work/ca" "$leak_audit" run "$churn" churn "$CHURN_N"
    [[ $(field attached "$work/ca") == true ]] || die "AllocationChurn did not attach to leak-audit"
    w_attached+=("$wall_ms") c_attached+=("$cpu_s") m_attached+=("$peak_kb")
    t_attached+=("$(field peak-rss-kb "$work/ca")")
done
[[ $(field tracked-peak "$work/ca") -le 2 ]] || die "churn went over its budget"
# fixed_runs LEAK_AUDIT REPS PLAIN_TIMES AUDITED_TIMES: REPS interleaved runs of `churn 1`, plain and
# under LEAK_AUDIT, their wall times (ms) appended to the arrays named.
fixed_runs() {
    local -n plain_times=$3 audited_times=$4
    for ((rep = 0; rep < $2; rep++)); do
        timed "$work/fp" "$plain" churn 1
        plain_times+=("$wall_ms")
        timed "$work/fa" "$1" run "$churn" churn 1
        audited_times+=("$wall_ms")
    done
}
# The fixed part of the overhead: starting leak-audit, the channel, the report, with one screen.
declare -a f_plain=() f_attached=()
fixed_runs "$leak_audit" "$CHURN_REPS" f_plain f_attached

# --- 3. bytes per tracked live instance ----------------------------------------------------------

echo "measuring memory per tracked instance (retain ${RETAIN_N})..." >&2
declare -a r_anon_plain=() r_rss_plain=() r_anon_attached=() r_shmem_attached=() r_rss_attached=()
for ((rep = 0; rep < RETAIN_REPS; rep++)); do
    run_fixture "$work/rp" retain "$RETAIN_N"
    run_attached "$work/ra" retain "$RETAIN_N"
    r_anon_plain+=("$(field RssAnon-bytes-per-tracking "$work/rp")")
    r_rss_plain+=("$(field VmRSS-bytes-per-tracking "$work/rp")")
    r_anon_attached+=("$(field RssAnon-bytes-per-tracking "$work/ra")")
    r_shmem_attached+=("$(field RssShmem-bytes-per-tracking "$work/ra")")
    r_rss_attached+=("$(field VmRSS-bytes-per-tracking "$work/ra")")
done
instance_bytes=$(field RssAnon-bytes-per-untracked "$work/rp")
# leak-audit's own memory per live instance: its peak RssAnon auditing RETAIN_N live instances
# against auditing a thousand.
ledger_small=$(sampled_peak_anon_kb "$leak_audit" run "$churn" retain 1000)
ledger_large=$(sampled_peak_anon_kb "$leak_audit" run "$churn" retain "$RETAIN_N")
ledger_bytes=$(calc "($ledger_large - $ledger_small) * 1024 / ($RETAIN_N - 1000)")

# --- 4. cost against a true plain program ----------------------------------------------------------

command -v valgrind >/dev/null || die "valgrind is needed for instruction counts (apt-get install valgrind)"

echo "counting instructions with callgrind (churn ${CG_CHURN_N}: plain, LeakMonitor alone, attached, --budget)..." >&2
instructions "$work/ip" "$plain" churn "$CG_CHURN_N"
instructions "$work/ia" "$churn" churn "$CG_CHURN_N"
instructions "$work/iu" "$leak_audit" run "$churn" churn "$CG_CHURN_N"
instructions "$work/iu1" "$leak_audit" run "$churn" churn 1
instructions "$work/ib" "$leak_audit" run --budget 'AllocationChurnPlain.ScreenViewModel=2' "$plain" churn "$CG_CHURN_N"
ir_plain=$(counted "$work/ip" AllocationChurnPlain)
ir_alone=$(counted "$work/ia" AllocationChurn)
ir_target=$(counted "$work/iu" AllocationChurn)
ir_reader=$(counted "$work/iu" leak-audit)
ir_reader1=$(counted "$work/iu1" leak-audit)
ir_budget=$(counted "$work/ib" AllocationChurnPlain)
ir_budget_reader=$(counted "$work/ib" leak-audit)
# Each screen writes two records: its view model's allocation and deallocation.
records=$((2 * CG_CHURN_N))

echo "timing --census over ${CENSUS_N} live objects, exit to report over ${OVER_N} instances (${COST_REPS} interleaved repetitions), threads (${THREADS_REPS}), the fixed cost (${FIXED_REPS})..." >&2
declare -a census_plain=() census_audit=() report_ms=() fixed_plain=() fixed_audit=() fixed_linked=()
declare -a threads_plain=() threads_alone=()
for ((rep = 0; rep < COST_REPS; rep++)); do
    timed "$work/hp" "$plain" heap "$CENSUS_N"
    census_plain+=("$wall_ms")
    timed "$work/ha" "$leak_audit" run --census "$plain" heap "$CENSUS_N"
    census_audit+=("$wall_ms")
    exit_to_report "$OVER_N"
    report_ms+=("$exit_report_ms")
done
# 64 threads on 2 cores: the plain program alone takes 20 to 70 ms by how the scheduler places its
# threads, so that a median of a few runs moves the ratio by half: its own THREADS_REPS runs.
for ((rep = 0; rep < THREADS_REPS; rep++)); do
    "$plain" threads 64 10000 >"$work/tp"
    threads_plain+=("$(field threads-ms "$work/tp")")
    "$churn" threads 64 10000 >"$work/ta"
    threads_alone+=("$(field threads-ms "$work/ta")")
done
# The fixed cost is a few milliseconds, where one slow start moves a small median: FIXED_REPS
# runs of each leak-audit build, each build interleaved with plain runs of its own, so that no
# build's runs follow the other's (whose start loads the runtime's libraries). Measured once,
# minutes apart on a machine whose speed drifts: the linked-in build's fixed cost read 4.34 to
# 4.44 ms interleaved after the other build, 3.9 to 4.0 in a loop of its own.
declare -a fixed_plain_linked=()
fixed_runs "$leak_audit_linked" "$FIXED_REPS" fixed_plain_linked fixed_linked
fixed_runs "$leak_audit" "$FIXED_REPS" fixed_plain fixed_audit
grep -q '^EXCEEDED AllocationChurn.OverBudgetModel' "$work/ob.err" || die "over-budget's report (standard error) names no exceeded type"
instructions "$work/ic" "$leak_audit" run --census "$plain" heap "$CENSUS_N"
ir_census_reader=$(counted "$work/ic" leak-audit)
# leak-audit's memory per live instance, from its peak RssAnon at two sizes.
census_small=$(sampled_peak_anon_kb "$leak_audit" run --census "$plain" heap $((CENSUS_N / 10)))
census_large=$(sampled_peak_anon_kb "$leak_audit" run --census "$plain" heap "$CENSUS_N")
census_bytes=$(calc "($census_large - $census_small) * 1024 / ($CENSUS_N - $CENSUS_N / 10)")

# --- table ---------------------------------------------------------------------------------------

mvp=$(median "${v_plain[@]}") mva=$(median "${v_attached[@]}")
mdp=$(median "${d_plain[@]}") mda=$(median "${d_attached[@]}")
mhp=$(median "${h_plain[@]}") mha=$(median "${h_attached[@]}")
mwp=$(median "${w_plain[@]}") mwa=$(median "${w_attached[@]}")
mfp=$(median "${f_plain[@]}") mfa=$(median "${f_attached[@]}")
mtp=$(median "${t_plain[@]}") mta=$(median "${t_attached[@]}")
wall_ratio=$(calc "$mwa / $mwp")
per_screen_plain=$(calc "($mwp - $mfp) * 1e6 / $CHURN_N")
per_screen_overhead=$(calc "(($mwa - $mfa) - ($mwp - $mfp)) * 1e6 / $CHURN_N")
if [[ -n $gnu_time ]]; then
    mcp=$(median "${c_plain[@]}") mca=$(median "${c_attached[@]}")
    mmp=$(median "${m_plain[@]}") mma=$(median "${m_attached[@]}")
    cpu=("$mcp s" "$mca s" "$(calc "$mca / $mcp")x")
    tree=("$(calc "$mmp / 1024") MB" "$(calc "$mma / 1024") MB" "$(calc "$mma / $mmp")x")
else
    cpu=("n/a" "n/a" "no GNU time")
    tree=("n/a" "n/a" "no GNU time")
fi

# Two markdown tables: docs/benchmarks.md pastes this output as is.
row3() { printf '| %-56s | %10s | %10s | %-10s |\n' "$@"; }
row4() { printf '| %-56s | %10s | %14s | %6s | %-7s |\n' "$@"; }
echo
echo "leak-audit benchmark: $(uname -m), $(nproc) CPUs, $(swift --version 2>/dev/null | head -n 1 | sed 's/ (.*//')"
echo "load average before: $load_before, after: $(loadavg) (a busy machine makes every figure noisy)"
echo
row3 "per tracked instance" "standalone" "attached" "aim"
row3 "---" "---:" "---:" "---"
row3 "ns per validate, net of allocation (median of ${VALIDATE_REPS} runs)" "$mvp" "$mva" "< 100 ns"
row3 "ns per tracked deallocation (hook, registry, record)" "$mdp" "$mda" "-"
row3 "ns registration adds to an untracked deallocation (noisy)" "$mhp" "$mha" "-"
row3 "bytes per tracked live instance: target RssAnon" "$(median "${r_anon_plain[@]}")" "$(median "${r_anon_attached[@]}")" "< 64 bytes"
row3 "  + target RssShmem (channel pages not yet released)" "0" "$(median "${r_shmem_attached[@]}")" "-"
row3 "  = target VmRSS" "$(median "${r_rss_plain[@]}")" "$(median "${r_rss_attached[@]}")" "-"
row3 "  leak-audit's own RssAnon (its ledger)" "-" "$ledger_bytes" "-"
echo
row4 "churn ${CHURN_N} screens (median of ${CHURN_REPS} runs)" "plain" "leak-audit run" "ratio" "aim"
row4 "---" "---:" "---:" "---:" "---"
row4 "whole-run wall time" "$mwp ms" "$mwa ms" "${wall_ratio}x" "< 1.3x"
row4 "CPU time, user + system (leak-audit included)" "${cpu[@]}" "-"
row4 "fixed cost: wall time of \`churn 1\`" "$mfp ms" "$mfa ms" "" "-"
row4 "wall time per screen, net of the fixed cost" "$per_screen_plain ns" "+$per_screen_overhead ns" "" "-"
row4 "peak RSS of the target (its VmHWM)" "$(calc "$mtp / 1024") MB" "$(calc "$mta / 1024") MB" "$(calc "$mta / $mtp")x" "-"
row4 "peak RSS, largest process (GNU time %M)" "${tree[@]}" "-"
echo
row5() { printf '| %-62s | %14s | %14s | %-10s |\n' "$@"; }
ratio() { calc "$1 / $2"; }
mcp4=$(median "${census_plain[@]}") mca4=$(median "${census_audit[@]}")
mfp4=$(median "${fixed_plain[@]}") mfa4=$(median "${fixed_audit[@]}")
mflp4=$(median "${fixed_plain_linked[@]}") mfl4=$(median "${fixed_linked[@]}")
mtp4=$(median "${threads_plain[@]}") mta4=$(median "${threads_alone[@]}")
echo "cost against a true plain program (AllocationChurnPlain: no LeakMonitor); instructions from callgrind"
echo
row5 "figure" "measured" "plain" "aim"
row5 "---" "---:" "---:" "---"
row5 "target instructions, attached, churn ${CG_CHURN_N} (vs plain)" "$(exact_ratio "$ir_target" "$ir_plain")x" "$ir_plain" "<= 1.03x"
row5 "  LeakMonitor alone, not attached (vs plain)" "$(exact_ratio "$ir_alone" "$ir_plain")x" "" "-"
row5 "target instructions, --budget on the plain program (vs plain)" "$(exact_ratio "$ir_budget" "$ir_plain")x" "" "<= 1.05x"
row5 "whole tree instructions, attached (vs plain)" "$(exact_ratio "$((ir_target + ir_reader))" "$ir_plain")x" "" "<= 1.08x"
row5 "  whole tree, --budget (vs plain)" "$(exact_ratio "$((ir_budget + ir_budget_reader))" "$ir_plain")x" "" "-"
row5 "leak-audit instructions per record (net of \`churn 1\`)" "$(calc "($ir_reader - $ir_reader1) / $records")" "" "<= 100"
row5 "  leak-audit instructions, \`churn 1\` (its fixed cost)" "$ir_reader1" "" "-"
row5 "--census, ${CENSUS_N} live objects: wall (vs plain)" "$(ratio "$mca4" "$mcp4")x" "$mcp4 ms" "<= 2x"
row5 "  leak-audit instructions" "$ir_census_reader" "" "-"
row5 "leak-audit bytes per live instance, tracked (\`retain\`)" "$ledger_bytes" "" "<= 32"
row5 "  under --census (\`heap\`)" "$census_bytes" "" "-"
row5 "exit to report written, ${OVER_N} over budget, 1,024 stacks (ms)" "$(median "${report_ms[@]}")" "" "<= 50 ms"
row5 "fixed cost of a run: \`churn 1\` under leak-audit minus plain (ms)" "$(calc "$mfl4 - $mflp4")" "$mflp4 ms" "<= 5 ms"
row5 "  leak-audit from \`swift build -c release\` (runtime not linked in)" "$(calc "$mfa4 - $mfp4")" "$mfp4 ms" "-"
row5 "64 threads x 10,000 validate, program alone: wall (vs plain)" "$(ratio "$mta4" "$mtp4")x" "$mtp4 ms" "<= 2x"
echo
echo "context: an untracked probe object costs ${untracked_object_ns} ns to create and drop and ${instance_bytes} bytes"
echo "to keep alive; a churn screen makes 1 tracked and about 8 untracked heap objects."
service_cost
