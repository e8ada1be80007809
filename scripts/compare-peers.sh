#!/usr/bin/env bash
# leak-audit against its peers, in one run, on one allocation-heavy fixture with two leaks.
#
# Runs `Fixtures/Sources/LeakyChurn` (a view-model churn: about nine short-lived heap objects per
# screen) with the same workload size under each of:
#
#   plain                      the release build, nothing attached (the baseline)
#   plain, validate on         the same, with its view models calling MemoryLeakMonitor.validate
#   leak-audit run             the validating mode, audited (instrumented)
#   leak-audit run --budget    the non-validating mode, audited through the preloaded library with
#                              one --budget per view-model type (uninstrumented)
#   heaptrack                  the release build, then `heaptrack_print --print-leaks` on its data
#   valgrind --leak-check=full the release build (rebuilt with DWARF 4 C debug info when this
#                              valgrind cannot read the DWARF 5 that clang emits for LeakMonitor's C part)
#   AddressSanitizer           the same code built with -sanitize=address; LeakSanitizer at exit
#
# and prints one table: median wall time and peak RSS, each as a ratio to the plain run, and for
# each of the fixture's two leaks whether the tool found it, named its Swift type and named the
# line that allocated it, decided by grepping the tool's own output (see docs/comparison.md):
#
#   kept   a closed screen's LoginViewModel kept by an app-wide registry: still reachable
#   cycle  a CheckoutViewModel and its dismissal closure keeping each other: unreachable
#
# Usage: scripts/compare-peers.sh
# Environment (all optional):
#   SCREENS     workload size, the same for every tool (default 200000)
#   REPS        runs per tool, interleaved; medians are printed (default 7)
#   SLOW_REPS   runs under valgrind, the slowest (default 3)
#   LEAK_AUDIT_PEERS_SCRATCH           --scratch-path for leak-audit (default .build-peers)
#   LEAK_AUDIT_PEERS_FIXTURES_SCRATCH  --scratch-path for the fixture (default Fixtures/.build-peers;
#                                      the ASan and DWARF 4 builds add -asan and -dwarf4)
#   LEAK_AUDIT_PEERS_FIXTURES_PACKAGE  the package that has the LeakyChurn product (default Fixtures)
#   LEAK_AUDIT_PEERS_KEEP              a directory to copy each tool's output into (first run), to
#                                      read what the verdicts were drawn from
# When run as root, installs missing heaptrack, valgrind and GNU time from the distribution's
# packages (apt-get); a tool that cannot be had is shown as n/a with the reason. Times are printed,
# never asserted: the script exits 0 unless a build fails.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

SCREENS=${SCREENS:-200000}
REPS=${REPS:-7}
SLOW_REPS=${SLOW_REPS:-3}
root_scratch=${LEAK_AUDIT_PEERS_SCRATCH:-$root/.build-peers}
fixtures_scratch=${LEAK_AUDIT_PEERS_FIXTURES_SCRATCH:-$root/Fixtures/.build-peers}
fixtures_package=${LEAK_AUDIT_PEERS_FIXTURES_PACKAGE:-$root/Fixtures}
source_file="$root/Fixtures/Sources/LeakyChurn/main.swift"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build_failed=0

say() { echo "compare-peers: $*" >&2; }
die() {
    say "$*"
    exit 1
}

# --- tools ---------------------------------------------------------------------------------------

declare -A unavailable=() # tool -> why it is n/a

# ensure COMMAND PACKAGE: installs PACKAGE with apt-get when COMMAND is missing and we are root.
ensure() {
    local command=$1 package=$2
    [[ -x $command ]] || command -v "$command" >/dev/null 2>&1 && return 0
    if ((EUID == 0)) && command -v apt-get >/dev/null 2>&1; then
        say "installing $package..."
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package"; } \
            >"$work/apt-$package.log" 2>&1
    fi
    [[ -x $command ]] || command -v "$command" >/dev/null 2>&1
}

ensure /usr/bin/time time || unavailable[time]="GNU time is not installed (apt-get install time)"
ensure heaptrack heaptrack || unavailable[heaptrack]="heaptrack is not installed (apt-get install heaptrack)"
ensure heaptrack_print heaptrack || unavailable[heaptrack]="heaptrack_print is not installed"
ensure valgrind valgrind || unavailable[valgrind]="valgrind is not installed (apt-get install valgrind)"
gnu_time=""
[[ -z ${unavailable[time]:-} ]] && /usr/bin/time -f %M true >/dev/null 2>&1 && gnu_time=/usr/bin/time

# --- builds --------------------------------------------------------------------------------------

grep -q 'LeakyChurn' "$fixtures_package/Package.swift" 2>/dev/null \
    || die "$fixtures_package/Package.swift has no LeakyChurn target (add scenario(\"LeakyChurn\"), or set LEAK_AUDIT_PEERS_FIXTURES_PACKAGE)"
[[ -f $source_file ]] || die "no $source_file"

say "building leak-audit (release, as scripts/build-release.sh builds it for real use)..."
leak_audit=$("$root/scripts/build-release.sh" "$root_scratch" 2>"$work/build-root.log") \
    || { cat "$work/build-root.log" >&2; die "scripts/build-release.sh failed"; }
[[ -x $leak_audit ]] || die "no leak-audit at $leak_audit"

# fixture_build SCRATCH LOG [FLAGS...]: builds LeakyChurn (release) and prints the binary's path.
fixture_build() {
    local scratch=$1 log=$2
    shift 2
    swift build -c release --package-path "$fixtures_package" --scratch-path "$scratch" --product LeakyChurn "$@" \
        >"$log" 2>&1 || return 1
    echo "$(swift build -c release --package-path "$fixtures_package" --scratch-path "$scratch" --show-bin-path)/LeakyChurn"
}

say "building LeakyChurn (release)..."
fixture=$(fixture_build "$fixtures_scratch" "$work/build-fixture.log") \
    || { cat "$work/build-fixture.log" >&2; die "swift build of LeakyChurn failed"; }

# AddressSanitizer needs the toolchain's compiler-rt runtime: try a two-line program first.
asan_fixture=""
say "building LeakyChurn with -sanitize=address..."
printf 'final class Probe { var next: Probe? }\nlet probe = Probe()\nprint(probe.next == nil)\n' >"$work/probe.swift"
if ! swiftc -sanitize=address "$work/probe.swift" -o "$work/probe" >"$work/asan-probe.log" 2>&1 \
    || ! "$work/probe" >/dev/null 2>>"$work/asan-probe.log"; then
    unavailable[asan]="swiftc -sanitize=address does not work here: $(grep -m1 -i error "$work/asan-probe.log" || echo 'see its output')"
elif ! asan_fixture=$(fixture_build "$fixtures_scratch-asan" "$work/build-asan.log" --sanitize=address); then
    grep -v 'Cannot export local symbol' "$work/build-asan.log" >&2
    unavailable[asan]="the -sanitize=address build failed"
    build_failed=1
fi

# valgrind: the binary as built, unless this valgrind cannot read its debug info (Debian 12's
# 3.19 gives up on the DWARF 5 that clang emits for LeakMonitor's C part); then the same code with
# DWARF 4 debug info for the C targets. Its machine code is the same.
valgrind_fixture=$fixture
valgrind_note=""
if [[ -z ${unavailable[valgrind]:-} ]]; then
    if ! valgrind --leak-check=no "$fixture" leaky unmonitored 1 >/dev/null 2>"$work/valgrind-probe.log"; then
        say "valgrind cannot run the release build ($(grep -m1 -o 'Possibly corrupted debuginfo file\|unhandled dwarf2 abbrev form code [0-9a-fx]*' "$work/valgrind-probe.log" || echo 'see its output')); building it with -Xcc -gdwarf-4..."
        if valgrind_fixture=$(fixture_build "$fixtures_scratch-dwarf4" "$work/build-dwarf4.log" -Xcc -gdwarf-4) \
            && valgrind --leak-check=no "$valgrind_fixture" leaky unmonitored 1 >/dev/null 2>"$work/valgrind-probe4.log"; then
            valgrind_note="valgrind $(valgrind --version | sed 's/valgrind-//') cannot read the release build's debug info ($(grep -m1 -o 'Possibly corrupted debuginfo file' "$work/valgrind-probe.log" || echo 'it fails'): clang's DWARF 5 for LeakMonitor's C files); it ran the same code rebuilt with -Xcc -gdwarf-4 (identical .text)"
        else
            unavailable[valgrind]="valgrind cannot read this binary's debug info, even with DWARF 4 C debug info"
        fi
    fi
fi

# --- measuring -----------------------------------------------------------------------------------

# median VALUE...
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
calc() { awk "BEGIN { printf \"%.${2:-2}f\", $1 }"; }

declare -A walls=() peaks=() cpus=() statuses=()

# timed TOOL OUT COMMAND...: runs COMMAND (stdout to OUT, stderr to OUT.err), appends its wall time
# (ms) and the peak RSS of its largest process (kB, GNU time %M) to TOOL's lists, and records its
# exit status.
timed() {
    local tool=$1 out=$2
    shift 2
    local start end status=0 peak=""
    # Bash's own clock (microseconds), not a `date` process that would add its start to each time.
    start=${EPOCHREALTIME/[.,]/}
    if [[ -n $gnu_time ]]; then
        "$gnu_time" -f '%M %U %S' -o "$out.time" "$@" >"$out" 2>"$out.err" || status=$?
    else
        "$@" >"$out" 2>"$out.err" || status=$?
    fi
    end=${EPOCHREALTIME/[.,]/}
    local user=0 system=0
    [[ -n $gnu_time ]] && read -r peak user system < <(tail -n 1 "$out.time")
    walls[$tool]+=" $(((end - start) / 1000))"
    peaks[$tool]+=" $peak"
    cpus[$tool]+=" $(calc "$user + $system")"
    statuses[$tool]=$status
}

budgets=(--budget 'LeakyChurn.FeedViewModel=2' --budget 'LeakyChurn.LoginViewModel=1' --budget 'LeakyChurn.CheckoutViewModel=1')
tools=(plain validate leak-audit leak-audit-budget heaptrack valgrind asan)
declare -A label=(
    [plain]="plain (no tool)"
    [validate]="plain, validate on (no tool)"
    [leak-audit]="leak-audit run (instrumented)"
    [leak-audit-budget]="leak-audit run --budget (uninstrumented)"
    [heaptrack]="heaptrack"
    [valgrind]="valgrind --leak-check=full"
    [asan]="-sanitize=address (LeakSanitizer)"
)

# run_tool TOOL REP: one run of TOOL; its output goes to $work/TOOL.REP.
run_tool() {
    local tool=$1 rep=$2 out="$work/$1.$2"
    case $tool in
    plain) timed plain "$out" "$fixture" leaky unmonitored "$SCREENS" ;;
    validate) timed validate "$out" "$fixture" leaky monitored "$SCREENS" ;;
    leak-audit) timed leak-audit "$out" "$leak_audit" run "$fixture" leaky monitored "$SCREENS" ;;
    leak-audit-budget)
        timed leak-audit-budget "$out" "$leak_audit" run "${budgets[@]}" "$fixture" leaky unmonitored "$SCREENS"
        ;;
    heaptrack) timed heaptrack "$out" heaptrack -o "$work/heaptrack-data.$rep" "$fixture" leaky unmonitored "$SCREENS" ;;
    valgrind) timed valgrind "$out" valgrind --leak-check=full "$valgrind_fixture" leaky unmonitored "$SCREENS" ;;
    asan)
        local symbolizer
        symbolizer=$(command -v llvm-symbolizer || true)
        timed asan "$out" env ASAN_OPTIONS=detect_leaks=1 ${symbolizer:+ASAN_SYMBOLIZER_PATH=$symbolizer} \
            "$asan_fixture" leaky unmonitored "$SCREENS"
        ;;
    esac
}

available() {
    case $1 in
    heaptrack | valgrind | asan) [[ -z ${unavailable[$1]:-} ]] ;;
    *) true ;;
    esac
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(loadavg)
say "running LeakyChurn leaky, $SCREENS screens: $REPS interleaved runs per tool ($SLOW_REPS under valgrind)..."
"$fixture" leaky unmonitored "$SCREENS" >"$work/warm-up" 2>&1 || die "LeakyChurn failed: $(cat "$work/warm-up")"
for ((rep = 1; rep <= REPS; rep++)); do
    for tool in "${tools[@]}"; do
        available "$tool" || continue
        [[ $tool == valgrind ]] && ((rep > SLOW_REPS)) && continue
        run_tool "$tool" "$rep"
    done
    say "  round $rep of $REPS done"
done
load_after=$(loadavg)
[[ ${statuses[plain]} == 0 ]] || die "the plain run exited ${statuses[plain]}: $(cat "$work/plain.1.err")"

# A run that ended in a way its tool never ends on a working audit is n/a, not a figure.
expect_status() {
    local tool=$1 expected=$2
    available "$tool" || return 0
    if [[ ! " $expected " == *" ${statuses[$tool]} "* ]]; then
        unavailable[$tool]="exited ${statuses[$tool]}: $(grep -m1 -v '^$' "$work/$tool.1.err" | cut -c1-120)"
    fi
}
expect_status validate 0
expect_status leak-audit 1     # 1: types over budget
expect_status leak-audit-budget 1
expect_status heaptrack 0
expect_status valgrind 0
expect_status asan "1 23" # LeakSanitizer found leaks

# heaptrack's leak report comes from a separate step: heaptrack_print on the recorded data.
heaptrack_print_s=""
heaptrack_allocations=""
if available heaptrack; then
    data=$(ls "$work"/heaptrack-data.1.* 2>/dev/null | head -n 1)
    start=${EPOCHREALTIME/[.,]/}
    if [[ -n $data ]] && heaptrack_print --file "$data" --print-peaks 0 --print-allocators 0 --print-temporary 0 \
        --print-leaks 1 >"$work/heaptrack.report" 2>&1; then
        heaptrack_print_s=$(calc "(${EPOCHREALTIME/[.,]/} - $start) / 1e6")
        heaptrack_allocations=$(awk '/^[[:space:]]*allocations:/ { print $2; exit }' "$work/heaptrack.1" "$work/heaptrack.1.err")
    else
        unavailable[heaptrack]="heaptrack_print could not read the recorded data"
    fi
fi

# --- what each tool saw --------------------------------------------------------------------------

# The leaks: the type, the line that allocates it, how many instances leak at SCREENS.
login_line=$(grep -n 'let model = LoginViewModel(' "$source_file" | cut -d: -f1)
checkout_line=$(grep -n 'let model = CheckoutViewModel(' "$source_file" | cut -d: -f1)
[[ -n $login_line && -n $checkout_line ]] || die "cannot find the allocating lines in $source_file"
kept_count=$(awk -v n="$SCREENS" 'BEGIN { print int((n + 39) / 40) }')
cycle_count=$(awk -v n="$SCREENS" 'BEGIN { print int((n + 24) / 50) }')
declare -A leak_type=([kept]=LoginViewModel [cycle]=CheckoutViewModel)
declare -A leak_line=([kept]=$login_line [cycle]=$checkout_line)
declare -A leak_count=([kept]=$kept_count [cycle]=$cycle_count)

# leak_records TOOL: only the part of TOOL's output that reports leaks, one record per paragraph,
# so that nothing else (the fixture's own output) can count as the tool naming something.
leak_records() {
    case $1 in
    leak-audit | leak-audit-budget)
        # The report's EXCEEDED entries, each up to its blank line.
        awk '/^EXCEEDED / { on = 1 } on { print } /^$/ { if (on) print ""; on = 0 }' "$work/$1.1.err"
        ;;
    asan)
        awk '/^(Direct|Indirect) leak of/ { on = 1 } on { print } /^$/ { on = 0 }' "$work/asan.1.err"
        ;;
    valgrind)
        # Loss records: "... are definitely lost in loss record ..." up to the next empty "==PID==" line.
        awk '/ in loss record / { on = 1 } on { print } /^==[0-9]+== *$/ { if (on) print ""; on = 0 }' "$work/valgrind.1.err"
        ;;
    heaptrack)
        # Its MEMORY LEAKS section; a record starts at each "leaked over N calls from".
        awk '/^MEMORY LEAKS/ { on = 1; next } /^[A-Z][A-Z ]+$/ { on = 0 } on { if (/leaked over/) print ""; print }' "$work/heaptrack.report"
        ;;
    esac
}

# verdicts TOOL LEAK: prints "found type line" for one leak: yes/no; the type: yes (demangled,
# LeakyChurn.X), mangled (only the symbol), no, or - when not found; the line the same without mangled.
verdicts() {
    local tool=$1 leak=$2 records type line count found=no named_type=no named_line=no
    type=${leak_type[$leak]} line=${leak_line[$leak]} count=${leak_count[$leak]}
    records=$(leak_records "$tool")
    # The paragraphs that are about this leak: they name its type (demangled or as the mangled
    # allocating init, e.g. $s10LeakyChurn14LoginViewModelC...fC), pass through its allocating line,
    # or report (nearly) its number of instances as objects, blocks or calls.
    local mangled="10LeakyChurn${#type}${type}C"
    local about
    about=$(printf '%s\n' "$records" | awk -v RS= -v type="LeakyChurn.$type" -v mangled="$mangled" -v line="main.swift:$line" -v count="$count" '
        {
            hit = index($0, type) || index($0, mangled)
            if (!hit) { s = $0; while ((i = index(s, line)) > 0) { c = substr(s, i + length(line), 1); if (c !~ /[0-9]/) { hit = 1; break }; s = substr(s, i + 1) } }
            # "4,000 blocks", "4000 object(s)", "over 4000 calls": from 90% of the count (an instance
            # or two may be classed "possibly lost", or still be referenced from a stack slot) to all of it.
            s = $0
            while (!hit && match(s, /[0-9][0-9,]* (object|block|call)/)) {
                n = substr(s, RSTART, RLENGTH); sub(/ .*/, "", n); gsub(/,/, "", n)
                if (RSTART == 1 || substr(s, RSTART - 1, 1) !~ /[0-9,]/) if (n + 0 >= 0.9 * count && n + 0 <= count) hit = 1
                s = substr(s, RSTART + RLENGTH)
            }
            if (hit) { print; print "" }
        }')
    [[ -n $about ]] && found=yes
    if [[ $tool == leak-audit* ]]; then
        # leak-audit's finding is a budget exceeded by this type.
        grep -q "^EXCEEDED LeakyChurn.$type:" <<<"$records" && found=yes || found=no
    fi
    if [[ $found == yes ]]; then
        if grep -qF "LeakyChurn.$type" <<<"$about"; then named_type=yes
        elif grep -qF "$mangled" <<<"$about"; then named_type=mangled
        fi
        grep -qE "main\.swift:$line([^0-9]|$)" <<<"$about" && named_line=yes
    else
        named_type=- named_line=-
    fi
    echo "$found $named_type $named_line"
}

if [[ -n ${LEAK_AUDIT_PEERS_KEEP:-} ]]; then
    mkdir -p "$LEAK_AUDIT_PEERS_KEEP"
    for tool in "${tools[@]}"; do
        [[ -f $work/$tool.1 ]] || continue
        cp "$work/$tool.1" "$LEAK_AUDIT_PEERS_KEEP/$tool.stdout"
        cp "$work/$tool.1.err" "$LEAK_AUDIT_PEERS_KEEP/$tool.stderr"
    done
    [[ -f $work/heaptrack.report ]] && cp "$work/heaptrack.report" "$LEAK_AUDIT_PEERS_KEEP/heaptrack.print"
fi

# --- table ---------------------------------------------------------------------------------------

plain_wall=$(median ${walls[plain]})
plain_peak=""
[[ -n $gnu_time ]] && plain_peak=$(median ${peaks[plain]})

row() { printf '| %-41s | %9s | %7s | %9s | %7s | %-29s | %-29s | %-29s |\n' "$@"; }
echo
echo "leak-audit against its peers: $(uname -m), $(nproc) CPUs, $(swift --version 2>/dev/null | head -n 1 | sed 's/ (.*//')"
echo "fixture: LeakyChurn leaky, $SCREENS screens${heaptrack_allocations:+ ($heaptrack_allocations heap allocations, counted by heaptrack)}; leaks: kept = $kept_count LoginViewModel (main.swift:$login_line, reachable), cycle = $cycle_count CheckoutViewModel (main.swift:$checkout_line, unreachable)"
echo "runs: median of $REPS ($SLOW_REPS under valgrind), interleaved; load average before: $load_before, after: $load_after"
echo
row "tool" "wall time" "× plain" "peak RSS" "× plain" "found the leak (kept / cycle)" "named the type (kept / cycle)" "named the line (kept / cycle)"
row "---" "---:" "---:" "---:" "---:" "---" "---" "---"
for tool in "${tools[@]}"; do
    if [[ -n ${unavailable[$tool]:-} ]]; then
        row "${label[$tool]}" "n/a" "" "n/a" "" "n/a" "n/a" "n/a"
        continue
    fi
    wall=$(median ${walls[$tool]})
    wall_cell="$(calc "$wall / 1000" 3) s"
    wall_ratio="$(calc "$wall / $plain_wall")x"
    if [[ -n $gnu_time ]]; then
        peak=$(median ${peaks[$tool]})
        peak_cell="$(calc "$peak / 1024" 1) MB"
        peak_ratio="$(calc "$peak / $plain_peak")x"
    else
        peak_cell=n/a peak_ratio=""
    fi
    if [[ $tool == plain || $tool == validate ]]; then
        row "${label[$tool]}" "$wall_cell" "$wall_ratio" "$peak_cell" "$peak_ratio" "-" "-" "-"
        continue
    fi
    read -r kf kt kl < <(verdicts "$tool" kept)
    read -r cf ct cl < <(verdicts "$tool" cycle)
    row "${label[$tool]}" "$wall_cell" "$wall_ratio" "$peak_cell" "$peak_ratio" "$kf / $cf" "$kt / $ct" "$kl / $cl"
done
echo
echo "wall times of each run, ms (in the order run):"
for tool in "${tools[@]}"; do
    [[ -n ${unavailable[$tool]:-} ]] && continue
    echo "  ${label[$tool]}:${walls[$tool]}"
done
if [[ -n $gnu_time ]]; then
    plain_cpu=$(median ${cpus[plain]})
    cpu_line="CPU time (user + system of every process, median):"
    for tool in "${tools[@]}"; do
        [[ -n ${unavailable[$tool]:-} ]] && continue
        cpu=$(median ${cpus[$tool]})
        cpu_line+=" ${label[$tool]%% (*} $(calc "$cpu" 2) s"
        [[ $plain_cpu != 0 ]] && cpu_line+=" ($(calc "$cpu / $plain_cpu" 2)x)"
        cpu_line+=";"
    done
    echo
    echo "${cpu_line%;}"
fi
echo
echo "wall time: whole process, bash's clock; peak RSS: GNU time %M, the largest single process of the run"
echo "(leak-audit or its target; heaptrack's target or its interpreter; valgrind itself)."
echo "found: leak-audit reported the type over budget; the others had a leak record for it (its type,"
echo "mangled or not, its allocating line, or 90 to 100% of its instance count). named the type: the"
echo "demangled LeakyChurn.<Type> in that record (mangled: only \$s10LeakyChurn...); named the line:"
echo "main.swift:<allocating line> in it."
[[ -n $heaptrack_print_s ]] && echo "heaptrack: its leak report takes a second step, heaptrack_print, which took $heaptrack_print_s s more (not in the table)."
[[ -n $valgrind_note ]] && echo "valgrind: $valgrind_note."
for tool in "${tools[@]}"; do
    [[ -n ${unavailable[$tool]:-} ]] && echo "n/a ${label[$tool]}: ${unavailable[$tool]}"
done
[[ -n ${unavailable[time]:-} ]] && echo "n/a peak RSS: ${unavailable[time]}"
exit "$build_failed"
