# Sourced by the benchmark scripts (not run): builds leak-audit, Fixtures' AllocationChurn and
# AllocationChurnPlain (the same program without LeakMonitor: the true plain baseline) in release,
# and sets `leak_audit`, `churn`, `plain`, `work` (a temporary directory removed at exit) and
# `gnu_time`, `dwarf4` (the build flags), and the helpers `die`, `median`, `field`, `calc`, `timed`,
# `exit_to_report`, `sampled_peak_anon_kb`, `loadavg`, and for callgrind `instructions`, `counted` and
# `tree_counted`. Builds emit DWARF 4, which valgrind 3.19 can read (clang's
# and swiftc's default, DWARF 5, makes callgrind give up), into scratch paths of their own so that
# the everyday debug build is not rebuilt: LEAK_AUDIT_BENCH_SCRATCH and
# LEAK_AUDIT_BENCH_FIXTURES_SCRATCH (default .build-bench and Fixtures/.build-bench). Expects
# `benchmark_name` to be set and the working directory to be the repository's root.

root_scratch=(--scratch-path "${LEAK_AUDIT_BENCH_SCRATCH:-.build-bench}")
fixtures_scratch=(--scratch-path "${LEAK_AUDIT_BENCH_FIXTURES_SCRATCH:-Fixtures/.build-bench}")
dwarf4=(-Xswiftc -dwarf-version=4 -Xcc -gdwarf-4)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

die() {
    echo "$benchmark_name: $*" >&2
    exit 1
}

echo "building leak-audit, AllocationChurn and AllocationChurnPlain (release)..." >&2
swift build -c release "${root_scratch[@]}" "${dwarf4[@]}" >"$work/build-root.log" 2>&1 \
    || { cat "$work/build-root.log" >&2; die "swift build of leak-audit failed"; }
for product in AllocationChurn AllocationChurnPlain; do
    swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" "${dwarf4[@]}" --product "$product" \
        >"$work/build-fixtures.log" 2>&1 \
        || { cat "$work/build-fixtures.log" >&2; die "swift build of Fixtures' $product failed"; }
done
leak_audit="$(swift build -c release "${root_scratch[@]}" "${dwarf4[@]}" --show-bin-path)/leak-audit"
fixtures_bin="$(swift build -c release --package-path Fixtures "${fixtures_scratch[@]}" "${dwarf4[@]}" --show-bin-path)"
churn="$fixtures_bin/AllocationChurn"
plain="$fixtures_bin/AllocationChurnPlain"
[[ -x $leak_audit ]] || die "no leak-audit binary at $leak_audit"
[[ -x $churn ]] || die "no AllocationChurn binary at $churn"
[[ -x $plain ]] || die "no AllocationChurnPlain binary at $plain"

# median VALUE...: the middle value (mean of the two middle ones for an even count).
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

gnu_time=""
[[ -x /usr/bin/time ]] && /usr/bin/time -f %M true >/dev/null 2>&1 && gnu_time=/usr/bin/time

# field NAME FILE: the value of the `NAME value` line the fixture printed.
field() {
    awk -v name="$1" '$1 == name { print $2; found = 1 } END { if (!found) exit 1 }' "$2" \
        || die "no '$1' in the output of a run ($2)"
}

# calc EXPRESSION [DECIMALS]: floating-point arithmetic, to 2 decimals unless told.
calc() {
    awk "BEGIN { printf \"%.${2:-2}f\", $1 }"
}

# timed OUT COMMAND...: runs COMMAND with stdout to OUT; sets wall_ms, and with GNU time
# cpu_s (user + system, children included) and peak_kb (largest process of the tree).
timed() {
    local out=$1
    shift
    local start end status=0
    # Bash's own clock, in microseconds (its decimal point is the locale's): a `date` process after
    # the command would add its own start, about 1 ms, to every wall time.
    start=${EPOCHREALTIME/[.,]/}
    if [[ -n $gnu_time ]]; then
        "$gnu_time" -f '%U %S %M' -o "$out.time" "$@" >"$out" 2>"$out.err" || status=$?
    else
        "$@" >"$out" 2>"$out.err" || status=$?
    fi
    end=${EPOCHREALTIME/[.,]/}
    ((status == 0)) || { cat "$out.err" >&2; die "'$*' exited $status"; }
    wall_ms=$(calc "($end - $start) / 1000" 3)
    cpu_s=n/a
    peak_kb=n/a
    if [[ -n $gnu_time ]]; then
        read -r user system peak_kb < <(tail -n 1 "$out.time")
        cpu_s=$(calc "$user + $system")
    fi
}

# exit_to_report N: `leak-audit run AllocationChurn over-budget N` (N instances over budget at exit;
# standard output to $work/ob, error to $work/ob.err); sets exit_report_ms to the time from the
# fixture's last reading of the clock, just before it returned, to leak-audit's exit (ms).
exit_to_report() {
    "$leak_audit" run "$churn" over-budget "$1" >"$work/ob" 2>"$work/ob.err" || true
    local reported=${EPOCHREALTIME/[.,]/}000 # nanoseconds, read without starting a process
    exit_report_ms=$(calc "($reported - $(field ended-realtime-ns "$work/ob")) / 1e6")
}

# sampled_peak_anon_kb COMMAND...: runs COMMAND and prints the highest RssAnon (kB) its own
# process reached, sampled every 5 ms from /proc (stdout of COMMAND goes to $work/sampled).
sampled_peak_anon_kb() {
    "$@" >"$work/sampled" 2>"$work/sampled.err" &
    local pid=$! peak=0 key value unit
    while kill -0 "$pid" 2>/dev/null; do
        while read -r key value unit; do
            [[ $key == RssAnon: ]] && ((value > peak)) && peak=$value
        done 2>/dev/null <"/proc/$pid/status" || true
        sleep 0.005
    done
    wait "$pid" || { cat "$work/sampled.err" >&2; die "'$*' failed"; }
    echo "$peak"
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# instructions OUT_PREFIX COMMAND...: runs COMMAND (and every process it starts) under callgrind,
# one file per process in OUT_PREFIX.<pid>; prints nothing.
instructions() {
    local prefix=$1
    shift
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$prefix.%p" "$@" \
        >"$prefix.stdout" 2>"$prefix.stderr" || { tail -n 20 "$prefix.stderr" >&2; die "callgrind of '$*' failed"; }
}

# counted PREFIX NAME: the instructions of the one process of PREFIX whose command was NAME.
counted() {
    local file
    for file in "$1".[0-9]*; do
        if grep -q "^cmd: *[^ ]*/$2\( \|$\)" "$file"; then
            awk '/^summary:/ { print $2 }' "$file"
            return
        fi
    done
    die "no callgrind output of $2 in $1.*"
}

# tree_counted PREFIX: the instructions of every process of PREFIX together (the whole tree).
tree_counted() {
    local file total=0 count
    for file in "$1".[0-9]*; do
        count=$(awk '/^summary:/ { print $2 }' "$file")
        total=$((total + count))
    done
    ((total > 0)) || die "no callgrind output in $1.*"
    echo "$total"
}
