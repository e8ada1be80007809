#!/usr/bin/env bash
# Fuzzes what a hostile target can hand leak-audit, with one libFuzzer target each:
# RecordStreamFuzzer, bytes in leak-audit's channel, through the decoder, the ledgers, the report
# builder and every renderer (Fuzz/RecordStreamFuzzer); HeapGraphFuzzer, a stopped process's
# memory, registers and module records, through the malloc chunk walk, the reading of Swift
# metadata, the retaining-path search and its naming (Fuzz/HeapGraphFuzzer, `--retainers`);
# ReportFuzzer, a saved report's bytes, through the strict JSON report reader and every renderer
# (Fuzz/ReportFuzzer, `leak-audit report`); ELFFuzzer, an image file's bytes, through the readers of
# the target's executable and libraries (Fuzz/ELFFuzzer).
# Builds each target with libFuzzer and AddressSanitizer in .build-fuzz/, starts from its
# well-formed seeds plus the corpus of earlier runs (.build-fuzz/TARGET/corpus), and runs it for
# RUNS inputs (default 200,000, about a minute each; docs/reliability.md gives longer runs), split
# over JOBS fuzzer processes at once (default 1; one per core is fastest) that share the corpus.
# TARGET fuzzes one target only; MAX_SECONDS (environment) stops each target's jobs after that long
# even if RUNS are not done. Prints libFuzzer's figures and exits 1 on a crash, a hang (10 s
# per input) or more than 2 GB of memory, naming the input that did it: replay it with
# `swift run TARGET FILE`, or see what it reads as with `swift run TARGET --print FILE`.
#
# Usage: scripts/fuzz.sh [RUNS [JOBS [TARGET]]]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
jobs=${2:-1}
targets=(RecordStreamFuzzer HeapGraphFuzzer ReportFuzzer ELFFuzzer)
[[ $runs =~ ^[0-9]+$ && $jobs =~ ^[1-9][0-9]*$ && ( -z ${3:-} || " ${targets[*]} " == *" ${3:-} "* ) ]] || {
    echo "usage: scripts/fuzz.sh [RUNS [JOBS [RecordStreamFuzzer|HeapGraphFuzzer|ReportFuzzer|ELFFuzzer]]]" >&2
    exit 64
}
[[ -z ${3:-} ]] || targets=("$3")
scratch=.build-fuzz
scripts/ensure-dependencies.sh
# The record stream's corpus was .build-fuzz/corpus before the heap walk had a target of its own.
if [[ -d $scratch/corpus && ! -e $scratch/RecordStreamFuzzer/corpus ]]; then
    mkdir -p "$scratch/RecordStreamFuzzer" && mv "$scratch/corpus" "$scratch/RecordStreamFuzzer/corpus"
fi

# Fuzzes one target; returns 1 when a job failed.
fuzz() {
    local target=$1 dir="$scratch/$1"
    echo "fuzz: building $target with -sanitize=fuzzer,address (release)..." >&2
    # lld: gold fails on the sanitized link (an internal error in format_file_lineno).
    local build=(swift build -c release --scratch-path "$scratch" --product "$target"
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld)
    mkdir -p "$dir/corpus" "$dir/seeds" "$dir/crashes"
    "${build[@]}" >"$dir/build.log" 2>&1 || { cat "$dir/build.log" >&2; echo "fuzz: the build failed" >&2; exit 1; }
    local fuzzer
    fuzzer="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/$target"
    "$fuzzer" --write-seeds "$dir/seeds" >&2

    local per_job=$(((runs + jobs - 1) / jobs)) job
    # A saved report is larger than a channel's ring of 64 slots: its seeds are up to 4 KB compact.
    local max_len=4096
    [[ $target != ReportFuzzer ]] || max_len=16384
    echo "fuzz: $target, $runs runs ($jobs × $per_job)..." >&2
    local started ended
    started=$(date +%s)
    local pids=()
    for ((job = 0; job < jobs; job++)); do
        # Allocation stacks cost more than the rest of an input; leaks are Swift's to manage. Swift's
        # own backtracer is off: it would catch a trap first and trip the sanitizer reading the stack,
        # where libFuzzer reports the trap's stack and saves its input.
        SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=malloc_context_size=0:detect_leaks=0 \
            "$fuzzer" "$dir/corpus" "$dir/seeds" -runs="$per_job" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$dir/crashes/" -print_final_stats=1 ${MAX_SECONDS:+-max_total_time="$MAX_SECONDS"} \
            >"$dir/run-$job.log" 2>&1 &
        pids+=($!)
    done
    local failed=()
    for ((job = 0; job < jobs; job++)); do
        wait "${pids[$job]}" || failed+=("$job")
    done
    ended=$(date +%s)
    local executed=0 log units
    for ((job = 0; job < jobs; job++)); do
        log="$dir/run-$job.log"
        ((jobs == 1)) || echo "job $job:"
        grep -E '^INFO: Seed:' "$log" || true
        grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" || true
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
        units=$(awk '/^stat::number_of_executed_units:/ { print $2 }' "$log")
        executed=$((executed + ${units:-0}))
    done
    echo "fuzz: $target: $executed inputs executed in $((ended - started)) s, corpus $(find "$dir/corpus" -type f | wc -l) inputs"
    if ((${#failed[@]} > 0)); then
        for job in "${failed[@]}"; do
            grep -E 'ERROR|SUMMARY|Test unit written|crash-|timeout-|oom-|deadly signal|Fatal error|^ +#[0-9]+ ' \
                "$dir/run-$job.log" | head -60
            echo "fuzz: $target FAILED (job $job); the whole log is $dir/run-$job.log" >&2
        done
        return 1
    fi
    echo "fuzz: $target: no crash, hang or out-of-memory in $executed runs"
}

status=0
for target in "${targets[@]}"; do
    fuzz "$target" || status=1
done
exit $status
