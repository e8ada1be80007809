#!/usr/bin/env bash
# Fuzzes the record stream: bytes in leak-audit's channel, as a hostile target could write them,
# through the decoder, the ledgers, the report builder and every renderer (Fuzz/RecordStreamFuzzer).
# Builds the target with libFuzzer and AddressSanitizer in .build-fuzz/, starts from well-formed
# seed streams plus the corpus of earlier runs (.build-fuzz/corpus), and runs it for RUNS inputs
# (default 200,000, about a minute; docs/reliability.md gives a run of 10,000,000), split over JOBS
# fuzzer processes at once (default 1; one per core is fastest) that share the corpus. Prints
# libFuzzer's figures and exits 1 on a crash, a hang (10 s per input) or more than 2 GB of memory,
# naming the input that did it: replay it with `swift run RecordStreamFuzzer FILE`, or see its
# report with `swift run RecordStreamFuzzer --print FILE`.
#
# Usage: scripts/fuzz.sh [RUNS [JOBS]]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-200000}
jobs=${2:-1}
[[ $runs =~ ^[0-9]+$ && $jobs =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/fuzz.sh [RUNS [JOBS]]" >&2; exit 64; }
scratch=.build-fuzz
scripts/ensure-dependencies.sh

echo "fuzz: building RecordStreamFuzzer with -sanitize=fuzzer,address (release)..." >&2
# lld: gold fails on the sanitized link (an internal error in format_file_lineno).
build=(swift build -c release --scratch-path "$scratch" --product RecordStreamFuzzer
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld)
mkdir -p "$scratch"
"${build[@]}" >"$scratch/build.log" 2>&1 || { cat "$scratch/build.log" >&2; echo "fuzz: the build failed" >&2; exit 1; }
fuzzer="$(swift build -c release --scratch-path "$scratch" --show-bin-path)/RecordStreamFuzzer"

mkdir -p "$scratch/corpus" "$scratch/seeds" "$scratch/crashes"
"$fuzzer" --write-seeds "$scratch/seeds" >&2

per_job=$(((runs + jobs - 1) / jobs))
echo "fuzz: $runs runs ($jobs × $per_job)..." >&2
started=$(date +%s)
pids=()
for ((job = 0; job < jobs; job++)); do
    # Allocation stacks cost more than the rest of an input; leaks are Swift's to manage.
    ASAN_OPTIONS=malloc_context_size=0:detect_leaks=0 \
        "$fuzzer" "$scratch/corpus" "$scratch/seeds" -runs="$per_job" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$scratch/crashes/" -print_final_stats=1 >"$scratch/run-$job.log" 2>&1 &
    pids+=($!)
done
failed=()
for ((job = 0; job < jobs; job++)); do
    wait "${pids[$job]}" || failed+=("$job")
done
ended=$(date +%s)
executed=0
for ((job = 0; job < jobs; job++)); do
    log="$scratch/run-$job.log"
    ((jobs == 1)) || echo "job $job:"
    grep -E '^INFO: Seed:' "$log" || true
    grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)' "$log" || true
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" || true
    units=$(awk '/^stat::number_of_executed_units:/ { print $2 }' "$log")
    executed=$((executed + ${units:-0}))
done
echo "fuzz: $executed inputs executed in $((ended - started)) s, corpus $(find "$scratch/corpus" -type f | wc -l) inputs"
if ((${#failed[@]} > 0)); then
    for job in "${failed[@]}"; do
        grep -E 'ERROR|SUMMARY|Test unit written|crash-|timeout-|oom-' "$scratch/run-$job.log" | head -20
        echo "fuzz: FAILED (job $job); the whole log is $scratch/run-$job.log" >&2
    done
    exit 1
fi
echo "fuzz: no crash, hang or out-of-memory in $executed runs"
